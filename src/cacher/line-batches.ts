import { WatchLines } from '../api/json-watch.js';

/**
 * Applies a watch stream's whole lines in order, one apply at a time, while reading on: the lines
 * that arrive during an apply go together into the next one. Applying a batch takes a round trip
 * to a decode worker and an LMDB commit, each waiting for a turn of the event loop; one apply per
 * chunk read made that cost per chunk, so a busy loop (a fan-out to many watchers) capped the
 * events a cacher took in and its backlog grew without bound. Batching what waited makes the
 * batches grow with the backlog instead.
 *
 * Reading ahead stops once `maxPendingBytes` wait: a member faster than the store then waits in
 * TCP, not in memory. Whatever made it stop (the stream's end or error, or an apply that threw),
 * it returns only once no apply runs, so the caller never starts another watch beside one that
 * is still committing. An apply that throws ends the stream (`destroy`) and its error is thrown.
 */
export interface LineStream extends AsyncIterable<Buffer> {
  destroy(): void;
}

export async function applyLinesInBatches(stream: LineStream, apply: (lines: Buffer) => Promise<void>, maxPendingBytes: number): Promise<void> {
  const lines = new WatchLines();
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  let applying = false;
  let idle: Promise<void> = Promise.resolve();
  let failure: { error: unknown } | undefined;

  const applyPending = async (): Promise<void> => {
    try {
      while (pending.length > 0) {
        const lines = pending.length === 1 ? pending[0]! : Buffer.concat(pending, pendingBytes);
        pending = [];
        pendingBytes = 0;
        await apply(lines);
      }
    } catch (e) {
      failure = { error: e };
      pending = [];
      stream.destroy();
    } finally {
      // Synchronous with the loop's last look at `pending`: a line queued after it starts a new run.
      applying = false;
    }
  };

  try {
    for await (const chunk of stream) {
      if (failure) break;
      const whole = lines.push(chunk);
      if (whole.length === 0) continue;
      pending.push(whole);
      pendingBytes += whole.length;
      if (!applying) {
        applying = true;
        idle = applyPending();
      }
      if (pendingBytes >= maxPendingBytes) await idle;
    }
  } catch (e) {
    await idle;
    throw failure ? failure.error : e;
  }
  await idle;
  if (failure) throw failure.error;
}
