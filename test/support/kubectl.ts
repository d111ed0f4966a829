import { execFile, execFileSync, spawn } from 'node:child_process';
import { existsSync, realpathSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

/**
 * Runs a real kubectl (optionally a given minor version: installed beside it as kubectl.1.NN, or
 * built from its Go module by build-fleet-binaries.mjs --kubectl for the newer ones).
 */
export interface KubectlResult {
  code: number;
  stdout: string;
  stderr: string;
}

let kubectlDir: string | undefined;
let builtDir: string | undefined;

/** The minors newer than the machine's kubectl.1.NN, built and cached from their releases. */
export const BUILT_KUBECTL_VERSIONS = ['1.34', '1.35'];

/**
 * `kubectl.1.NN` lives beside the real path of `kubectl`, which is usually a symlink on PATH, or,
 * for BUILT_KUBECTL_VERSIONS, in build-fleet-binaries.mjs's cache (built on first need).
 */
export function kubectlBinary(version?: string): string {
  if (!version) return 'kubectl';
  kubectlDir ??= dirname(realpathSync(execFileSync('sh', ['-c', 'command -v kubectl'], { encoding: 'utf8' }).trim()));
  const beside = join(kubectlDir, `kubectl.${version}`);
  if (existsSync(beside)) return beside;
  if (BUILT_KUBECTL_VERSIONS.includes(version)) {
    const script = resolve(import.meta.dirname, '..', '..', 'scripts', 'build-fleet-binaries.mjs');
    builtDir ??= execFileSync('node', [script, '--kubectl'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim();
    const built = join(builtDir, `kubectl.${version}`);
    if (existsSync(built)) return built;
  }
  throw new Error(`kubectl ${version} is not installed beside kubectl (looked for ${beside})`);
}

export function kubectl(kubeconfig: string, args: string[], opts: { version?: string; timeoutMs?: number; input?: string } = {}): Promise<KubectlResult> {
  const bin = kubectlBinary(opts.version);
  return new Promise((resolve) => {
    const child = execFile(bin, ['--kubeconfig', kubeconfig, ...args], { timeout: opts.timeoutMs ?? 30_000, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? ((err as { code: number }).code) : 1) : 0;
      resolve({ code, stdout, stderr });
    });
    child.stdin?.end(opts.input);
  });
}

/** A kubectl that keeps running (logs -f, port-forward, attach) until the test stops it by its PID. */
export interface KubectlSession {
  readonly pid: number;
  stdout(): string;
  stderr(): string;
  /** Resolves with the first match in stdout; rejects on timeout or when kubectl exits first. */
  waitForOutput(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  stop(): Promise<void>;
}

export function kubectlSession(kubeconfig: string, args: string[], opts: { version?: string } = {}): KubectlSession {
  const child = spawn(kubectlBinary(opts.version), ['--kubeconfig', kubeconfig, ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
  if (child.pid === undefined) throw new Error(`kubectl ${args.join(' ')} did not start`);
  const pid = child.pid;
  let out = '';
  let err = '';
  let exited = false;
  child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
  const exit = new Promise<void>((resolve) => child.once('exit', () => {
    exited = true;
    resolve();
  }));
  return {
    pid,
    stdout: () => out,
    stderr: () => err,
    async waitForOutput(pattern, timeoutMs = 15_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const m = pattern.exec(out);
        if (m) return m;
        if (exited) throw new Error(`kubectl ${args.join(' ')} exited before printing ${pattern}; stdout: ${out.slice(-500)} stderr: ${err.slice(-500)}`);
        if (Date.now() > deadline) throw new Error(`kubectl ${args.join(' ')} printed no ${pattern} in ${timeoutMs} ms; stdout: ${out.slice(-500)} stderr: ${err.slice(-500)}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    },
    async stop() {
      if (exited) return;
      process.kill(pid, 'SIGTERM');
      const timer = setTimeout(() => {
        if (!exited) process.kill(pid, 'SIGKILL');
      }, 5000);
      await exit;
      clearTimeout(timer);
    },
  };
}

export async function kubectlOk(kubeconfig: string, args: string[], opts: { version?: string; input?: string } = {}): Promise<string> {
  const r = await kubectl(kubeconfig, args, opts);
  if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')} failed (${r.code}): ${r.stderr}`);
  return r.stdout;
}
