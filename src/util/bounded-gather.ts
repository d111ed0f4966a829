import { Readable } from 'node:stream';

/** A body gathered whole, or, past the bound, what sends the same bytes as they were. */
export type Gathered = { whole: Buffer } | { passOn: Buffer | Readable };

/**
 * An answer's payload (a Buffer, a string or a stream) as one Buffer when it is at most `limit`
 * bytes; past that, a stream of every byte (those read so far, then the rest), so that what is
 * re-encoded whole is bounded and a larger answer still goes out as it was.
 */
export async function gatherUpTo(payload: unknown, limit: number): Promise<Gathered | undefined> {
  if (Buffer.isBuffer(payload)) return payload.length <= limit ? { whole: payload } : { passOn: payload };
  if (typeof payload === 'string') return gatherUpTo(Buffer.from(payload), limit);
  if (!payload || typeof (payload as Readable).pipe !== 'function') return undefined;
  const source = (payload as Readable)[Symbol.asyncIterator]();
  const chunks: Buffer[] = [];
  let length = 0;
  for (;;) {
    const next = await source.next();
    if (next.done) return { whole: Buffer.concat(chunks, length) };
    const chunk = Buffer.isBuffer(next.value) ? next.value : Buffer.from(next.value as string);
    chunks.push(chunk);
    length += chunk.length;
    if (length > limit) return { passOn: Readable.from(rest(chunks, source)) };
  }
}

async function* rest(read: Buffer[], source: AsyncIterator<unknown>): AsyncGenerator<Buffer> {
  yield* read;
  for (let next = await source.next(); !next.done; next = await source.next()) yield Buffer.isBuffer(next.value) ? next.value : Buffer.from(next.value as string);
}
