import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { applyLinesInBatches } from '../../../src/cacher/line-batches.js';

/** A stream that hands out `chunks` as it is read, counting how many were taken. */
function chunkStream(chunks: string[]): Readable & { taken: () => number } {
  let i = 0;
  const stream = new Readable({
    highWaterMark: 1,
    read() {
      if (i < chunks.length) this.push(Buffer.from(chunks[i++]!));
      else this.push(null);
    },
  }) as Readable & { taken: () => number };
  stream.taken = () => i;
  return stream;
}

const lines = (n: number) => Array.from({ length: n }, (_, k) => `{"n":${k}}\n`);
const tick = () => new Promise((r) => setTimeout(r, 5));

describe('applyLinesInBatches', () => {
  it('applies every whole line once, in order, across lines cut by chunk edges', async () => {
    const text = lines(50).join('');
    const chunks: string[] = [];
    for (let at = 0; at < text.length; at += 7) chunks.push(text.slice(at, at + 7));
    const applied: string[] = [];
    await applyLinesInBatches(chunkStream(chunks), async (b) => {
      expect(b.at(-1)).toBe(10);
      applied.push(b.toString());
      await tick();
    }, 1 << 20);
    expect(applied.join('')).toBe(text);
  });

  it('takes the lines that came during an apply together into the next one', async () => {
    const chunks = lines(40);
    const sizes: number[] = [];
    await applyLinesInBatches(chunkStream(chunks), async (b) => {
      sizes.push(b.toString().split('\n').length - 1);
      await tick();
    }, 1 << 20);
    expect(sizes.reduce((a, b) => a + b, 0)).toBe(40);
    // The first apply holds one line; the stream is read on while it runs, so the rest come in a
    // few batches rather than one apply per chunk.
    expect(sizes[0]).toBe(1);
    expect(sizes.length).toBeLessThan(10);
    expect(Math.max(...sizes)).toBeGreaterThan(10);
  });

  it('stops reading ahead once maxPendingBytes wait for an apply', async () => {
    const chunks = lines(100);
    const stream = chunkStream(chunks);
    const lineBytes = Buffer.byteLength(chunks[0]!);
    let release!: () => void;
    const firstApply = new Promise<void>((r) => (release = r));
    let applies = 0;
    const done = applyLinesInBatches(stream, async () => {
      if (applies++ === 0) await firstApply;
    }, 5 * lineBytes);
    await tick();
    await tick();
    // One line in the held apply, five waiting, and what the stream itself buffers (a chunk or two).
    expect(stream.taken()).toBeGreaterThanOrEqual(6);
    expect(stream.taken()).toBeLessThanOrEqual(9);
    release();
    await done;
    expect(stream.taken()).toBe(100);
  });

  it('ends the stream and throws when an apply throws, applying nothing after it', async () => {
    const stream = chunkStream(lines(1000));
    let applies = 0;
    const run = applyLinesInBatches(stream, async () => {
      applies++;
      await tick();
      if (applies === 2) throw new Error('store full');
    }, 1 << 20);
    await expect(run).rejects.toThrow('store full');
    expect(applies).toBe(2);
    expect(stream.destroyed).toBe(true);
  });

  it('returns from a failed stream only once the apply in flight has finished', async () => {
    const stream = new Readable({ read() {} });
    let finished = false;
    const run = applyLinesInBatches(stream, async () => {
      await tick();
      await tick();
      finished = true;
    }, 1 << 20);
    stream.push(Buffer.from('{"a":1}\n'));
    await new Promise((r) => setImmediate(r));
    stream.destroy(new Error('connection reset'));
    await expect(run).rejects.toThrow('connection reset');
    expect(finished).toBe(true);
  });
});
