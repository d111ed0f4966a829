import { execFile, execFileSync } from 'node:child_process';
import { existsSync, realpathSync } from 'node:fs';
import { dirname, join } from 'node:path';

/** Runs a real kubectl (optionally a given minor version, installed beside it as kubectl.1.NN). */
export interface KubectlResult {
  code: number;
  stdout: string;
  stderr: string;
}

let kubectlDir: string | undefined;

/** `kubectl.1.NN` lives beside the real path of `kubectl`, which is usually a symlink on PATH. */
export function kubectlBinary(version?: string): string {
  if (!version) return 'kubectl';
  kubectlDir ??= dirname(realpathSync(execFileSync('sh', ['-c', 'command -v kubectl'], { encoding: 'utf8' }).trim()));
  const bin = join(kubectlDir, `kubectl.${version}`);
  if (!existsSync(bin)) throw new Error(`kubectl ${version} is not installed beside kubectl (looked for ${bin})`);
  return bin;
}

export function kubectl(kubeconfig: string, args: string[], opts: { version?: string; timeoutMs?: number } = {}): Promise<KubectlResult> {
  const bin = kubectlBinary(opts.version);
  return new Promise((resolve) => {
    execFile(bin, ['--kubeconfig', kubeconfig, ...args], { timeout: opts.timeoutMs ?? 30_000, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? ((err as { code: number }).code) : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

export async function kubectlOk(kubeconfig: string, args: string[], opts: { version?: string } = {}): Promise<string> {
  const r = await kubectl(kubeconfig, args, opts);
  if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')} failed (${r.code}): ${r.stderr}`);
  return r.stdout;
}
