import { fork, type ChildProcess } from 'node:child_process';
import type { BenchContext } from './context.js';

/**
 * Forks a bench helper (a script that sends one message over IPC once it is ready), its stop
 * adopted by the context so a failed scenario still stops it by PID. Resolves with that message.
 */
export async function forkHelper<Ready>(ctx: BenchContext, script: string, args: string[]): Promise<{ proc: ChildProcess; ready: Ready; stop: () => Promise<void> }> {
  const proc = fork(script, args, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const exited = new Promise((r) => proc.once('exit', r));
  const stop = async () => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
    await exited;
  };
  ctx.adopt(stop);
  try {
    const ready = await new Promise<Ready>((resolve, reject) => {
      proc.once('message', (m: Ready) => resolve(m));
      proc.once('exit', (code) => reject(new Error(`${script} exited (${code}) before it was ready`)));
    });
    return { proc, ready, stop };
  } catch (e) {
    await stop();
    throw e;
  }
}

/** Forks a bench helper server: a script that listens on 127.0.0.1 and sends its port over IPC. */
export async function forkServer(ctx: BenchContext, script: string, spec: unknown): Promise<{ proc: ChildProcess; port: number; stop: () => Promise<void> }> {
  const { proc, ready, stop } = await forkHelper<{ port: number }>(ctx, script, [JSON.stringify(spec)]);
  return { proc, port: ready.port, stop };
}
