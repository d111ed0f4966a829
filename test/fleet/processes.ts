import { spawn, type ChildProcess } from 'node:child_process';
import { openSync, closeSync, readFileSync, writeFileSync, existsSync, appendFileSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Every process the fleet starts goes through here, so that each one can be stopped by its PID:
 * on a normal stop, on SIGINT/SIGTERM of the parent, on the parent's exit, and, when the parent
 * itself was SIGKILLed, on the next start (from the PID file left behind).
 */
export interface Supervised {
  readonly name: string;
  readonly pid: number;
  readonly logPath: string;
  readonly child: ChildProcess;
  exited: boolean;
  exitCode: number | null;
}

const live = new Set<Supervised>();
let handlersInstalled = false;

function installExitHandlers(): void {
  if (handlersInstalled) return;
  handlersInstalled = true;
  // 'exit' handlers must be synchronous: a plain SIGKILL per PID is all that can run there.
  process.on('exit', () => {
    for (const p of live) killQuietly(p.pid, 'SIGKILL');
  });
  // A signal with no handler ends Node without 'exit' handlers; when nobody else (a CLI doing a
  // graceful stop) listens for it, this one stops the children and exits.
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.on(signal, () => {
      if (process.listenerCount(signal) > 1) return;
      for (const p of live) killQuietly(p.pid, 'SIGKILL');
      process.exit(signal === 'SIGINT' ? 130 : 143);
    });
  }
}

function killQuietly(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    // already gone
  }
}

export interface StartOptions {
  name: string;
  command: string;
  args: string[];
  logPath: string;
  pidFile: string;
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /**
   * Started as the leader of a process group of its own, so that what it starts in turn (and may
   * leave behind when it is cut short) can be stopped with it: killProcessGroup.
   */
  ownGroup?: boolean;
}

export function startProcess(opts: StartOptions): Supervised {
  installExitHandlers();
  const fd = openSync(opts.logPath, 'a');
  const child = spawn(opts.command, opts.args, {
    stdio: ['ignore', fd, fd],
    env: opts.env ?? process.env,
    cwd: opts.cwd,
    detached: opts.ownGroup ?? false,
  });
  closeSync(fd);
  if (child.pid === undefined) throw new Error(`${opts.name}: failed to start ${opts.command}`);
  const proc: Supervised = { name: opts.name, pid: child.pid, logPath: opts.logPath, child, exited: false, exitCode: null };
  live.add(proc);
  appendFileSync(opts.pidFile, `${child.pid} ${opts.command}\n`);
  child.on('exit', (code) => {
    proc.exited = true;
    proc.exitCode = code;
    live.delete(proc);
  });
  return proc;
}

/**
 * SIGKILL to every process left in the group of a process started with `ownGroup` (the group is
 * that process's PID): what it started and left running when it exited.
 */
export function killProcessGroup(proc: Supervised): void {
  killQuietly(-proc.pid, 'SIGKILL');
}

/** SIGKILL at once, as a crash would end it; resolves once the process has exited. */
export async function killProcess(proc: Supervised): Promise<void> {
  if (proc.exited) return;
  const exited = new Promise<void>((resolve) => proc.child.once('exit', () => resolve()));
  killQuietly(proc.pid, 'SIGKILL');
  await exited;
}

/** SIGTERM, then SIGKILL after a grace period; resolves once the process has exited. */
export async function stopProcess(proc: Supervised, graceMs = 5000): Promise<void> {
  if (proc.exited) return;
  const exited = new Promise<void>((resolve) => proc.child.once('exit', () => resolve()));
  killQuietly(proc.pid, 'SIGTERM');
  const timer = setTimeout(() => killQuietly(proc.pid, 'SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
}

/**
 * The fields of a /proc stat file (a process's or one thread's) after the command name, so that
 * `[0]` is field 3 (the state) of proc(5): the name (field 2) may hold spaces and parentheses, so
 * fields are counted from its last closing parenthesis.
 */
export function procStatFields(path: string): string[] {
  const stat = readFileSync(path, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

/**
 * The processes recorded in a PID file that still run the binary recorded with them (a PID may
 * have been reused since by something else).
 */
export function livePids(pidFile: string): { pid: number; command: string }[] {
  if (!existsSync(pidFile)) return [];
  const live: { pid: number; command: string }[] = [];
  for (const line of readFileSync(pidFile, 'utf8').split('\n')) {
    const [pidText, command] = line.split(' ', 2);
    const pid = Number(pidText);
    if (!Number.isInteger(pid) || pid <= 0 || !command) continue;
    let cmdline = '';
    try {
      cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[0] ?? '';
    } catch {
      continue;
    }
    if (cmdline === command) live.push({ pid, command });
  }
  return live;
}

/** Kills the live processes of a PID file an earlier run never got to stop (see livePids). */
export function reapStalePids(pidFile: string): number {
  if (!existsSync(pidFile)) return 0;
  const live = livePids(pidFile);
  for (const p of live) killQuietly(p.pid, 'SIGKILL');
  writeFileSync(pidFile, '');
  return live.length;
}

/**
 * `dir` made empty for a fresh start: the processes an earlier run left there (its PID file) are
 * stopped first, then whatever it held (data, certificates, logs) goes.
 */
export function freshProcessDir(dir: string): void {
  reapStalePids(join(dir, 'pids'));
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
}

export function tailLog(path: string, lines = 30): string {
  try {
    return readFileSync(path, 'utf8').split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}
