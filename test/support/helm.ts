import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { builtTool } from '../fleet/fleet.js';

/** The cached Helm CLI (one of the fleet's binaries, built on first need; build-fleet-binaries.mjs --helm prints its path). */
let binary: string | undefined;

export function helmBinary(): string {
  binary ??= builtTool('--helm');
  return binary;
}

export interface HelmResult {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs helm with a home of its own under `home` (HELM_CACHE_HOME and the rest), so a run neither
 * reads nor leaves a user's repositories or plugins.
 */
export function helm(args: string[], opts: { home: string; timeoutMs?: number }): Promise<HelmResult> {
  const env = {
    ...process.env,
    HELM_CACHE_HOME: resolve(opts.home, 'cache'),
    HELM_CONFIG_HOME: resolve(opts.home, 'config'),
    HELM_DATA_HOME: resolve(opts.home, 'data'),
  };
  return new Promise((done) => {
    execFile(helmBinary(), args, { env, timeout: opts.timeoutMs ?? 60_000, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : 1) : 0;
      done({ code, stdout, stderr });
    });
  });
}
