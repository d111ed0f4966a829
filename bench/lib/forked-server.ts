import { fork, type ChildProcess } from 'node:child_process';
import type { BenchContext } from './context.js';

/**
 * Forks a bench helper server (a script that listens on 127.0.0.1 and sends its port over IPC),
 * its stop adopted by the context so a failed scenario still stops it by PID.
 */
export async function forkServer(ctx: BenchContext, script: string, spec: unknown): Promise<{ proc: ChildProcess; port: number; stop: () => Promise<void> }> {
  const proc = fork(script, [JSON.stringify(spec)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const exited = new Promise((r) => proc.once('exit', r));
  const stop = async () => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
    await exited;
  };
  ctx.adopt(stop);
  try {
    const port = await new Promise<number>((resolve, reject) => {
      proc.once('message', (m: { port: number }) => resolve(m.port));
      proc.once('exit', (code) => reject(new Error(`${script} exited (${code}) before it listened`)));
    });
    return { proc, port, stop };
  } catch (e) {
    await stop();
    throw e;
  }
}
