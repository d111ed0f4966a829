import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';

/**
 * `npm run bench` as the tests run it: the compiled runner as a child process with its own bench
 * directory under `work`, its output collected; `stop()` ends it by its PID if it still runs (a
 * test that failed or timed out).
 */
export interface BenchProcess {
  done: Promise<{ code: number | null; stdout: string; stderr: string }>;
  stop(): Promise<void>;
}

export function startBench(root: string, work: string, args: string[]): BenchProcess {
  const child: ChildProcess = spawn(process.execPath, [join(root, 'dist', 'bench', 'run.js'), ...args], {
    cwd: root,
    env: { ...process.env, FLOTILLA_BENCH_DIR: join(work, 'run') },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const done = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
  return {
    done,
    stop: async () => {
      if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
      const closed = new Promise((resolve) => child.once('close', resolve));
      process.kill(child.pid, 'SIGTERM');
      await closed;
    },
  };
}
