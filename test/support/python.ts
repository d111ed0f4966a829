import { execFileSync, spawn } from 'node:child_process';
import { join } from 'node:path';
import { findProjectRoot } from '../fleet/fleet.js';

/**
 * Python test clients (test/clients/python) run with the venv scripts/python-client.mjs makes, and
 * speak JSON lines on stdout. The venv's location is that script's alone: asking it (which also
 * installs the venv if `scripts/ensure.mjs` has not) keeps one definition of where it lives.
 */
const root = findProjectRoot();

export function pythonClientBin(): string {
  return execFileSync('node', [join(root, 'scripts', 'python-client.mjs')], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim();
}

export function pythonClientScript(name: string): string {
  return join(root, 'test', 'clients', 'python', name);
}

export type JsonLine = Record<string, unknown>;

export interface PythonRun {
  readonly pid: number;
  /** Every line printed so far, parsed. */
  readonly lines: JsonLine[];
  /** The first line with this top-level key (waiting for it if need be); rejects if the script exits first. */
  line<T>(key: string, timeoutMs?: number): Promise<T>;
  /** Writes these lines to the script's stdin and closes it. */
  finishInput(lines: string[]): void;
  /** Resolves with the exit code once the script ends by itself. */
  readonly exited: Promise<number | null>;
  stderr(): string;
  /** Kills the script by its PID if it still runs. */
  stop(): Promise<void>;
}

export function runPython(python: string, script: string, args: string[]): PythonRun {
  // -u: unbuffered, so each line reaches us when printed even if the script forgets to flush.
  const child = spawn(python, ['-u', script, ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
  const lines: JsonLine[] = [];
  let partial = '';
  let err = '';
  let ended = false;
  const waiters = new Set<() => void>();
  const wake = () => {
    for (const w of waiters) w();
  };
  child.stdout.on('data', (d: Buffer) => {
    partial += d.toString();
    const parts = partial.split('\n');
    partial = parts.pop()!;
    for (const p of parts) if (p.trim()) lines.push(JSON.parse(p) as JsonLine);
    wake();
  });
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number | null>((resolve) =>
    child.once('close', (code) => {
      ended = true;
      wake();
      resolve(code);
    }),
  );
  // A script that dies early must not leave a failed write to its stdin unhandled.
  child.stdin.on('error', () => undefined);
  return {
    pid: child.pid!,
    lines,
    exited,
    stderr: () => err,
    line<T>(key: string, timeoutMs = 30_000): Promise<T> {
      return new Promise<T>((resolve, reject) => {
        const check = () => {
          const found = lines.find((l) => key in l);
          if (found) {
            done();
            resolve(found[key] as T);
          } else if (ended) {
            done();
            reject(new Error(`${script} exited without a "${key}" line; stdout ${JSON.stringify(lines)}; stderr ${err.slice(-2000)}`));
          }
        };
        const timer = setTimeout(() => {
          done();
          reject(new Error(`no "${key}" line from ${script} in ${timeoutMs} ms; stdout ${JSON.stringify(lines)}; stderr ${err.slice(-2000)}`));
        }, timeoutMs);
        const done = () => {
          clearTimeout(timer);
          waiters.delete(check);
        };
        waiters.add(check);
        check();
      });
    },
    finishInput(input: string[]) {
      child.stdin.end(input.map((l) => `${l}\n`).join(''));
    },
    async stop() {
      if (ended) return;
      try {
        process.kill(child.pid!, 'SIGKILL');
      } catch {
        // already gone
      }
      await exited;
    },
  };
}
