import { describe, expect, it } from 'vitest';
import { BufferPool } from '../../../src/util/buffer-pool.js';
import { SplicedListReader, splicedList } from '../../../src/api/fleet-object/index.js';
import { joinPieces } from '../../../src/util/byte-edits.js';

describe('a buffer pool', () => {
  it('gives back the smallest kept buffer that is large enough, each to one taker', () => {
    const pool = new BufferPool(1 << 20, 1 << 19);
    const small = pool.take(1000);
    const large = pool.take(100_000);
    pool.give(large);
    pool.give(small);
    // Given twice: kept once, so two takers never share it.
    pool.give(small);
    expect(pool.bytes).toBe(101_000);
    expect(pool.take(500) === small).toBe(true);
    expect(pool.take(500) === large).toBe(true);
    expect(pool.bytes).toBe(0);
    expect(pool.take(500) === small).toBe(false);
  });

  it('keeps no more than its bounds, the larger buffers first', () => {
    const pool = new BufferPool(300_000, 200_000);
    pool.give(Buffer.allocUnsafeSlow(250_000));
    expect(pool.bytes).toBe(0);
    pool.give(Buffer.allocUnsafeSlow(100_000));
    pool.give(Buffer.allocUnsafeSlow(150_000));
    expect(pool.bytes).toBe(250_000);
    // Room is made by dropping the smaller ones; a buffer smaller than all kept is not kept.
    pool.give(Buffer.allocUnsafeSlow(200_000));
    expect(pool.bytes).toBe(200_000);
    pool.give(Buffer.allocUnsafeSlow(150_000));
    expect(pool.bytes).toBe(200_000);
  });

  it('serves list readers one after another without one list’s bytes showing in the next', () => {
    const pool = new BufferPool(8 << 20, 4 << 20);
    const list = (n: number, tag: string) =>
      Buffer.from(JSON.stringify({ kind: 'ConfigMapList', apiVersion: 'v1', metadata: { resourceVersion: '5' }, items: Array.from({ length: n }, (_, i) => ({ metadata: { name: `${tag}-${i}`, resourceVersion: String(i + 1) }, data: { k: tag.repeat(50) } })) }));
    const read = (body: Buffer) => {
      const r = new SplicedListReader('west', { pool });
      for (let at = 0; at < body.length; at += 2048) r.push(body.subarray(at, at + 2048));
      const l = r.end()!;
      const items = joinPieces(l.items, r.body).toString();
      r.release();
      expect(r.body.length).toBe(0);
      return items;
    };
    const big = list(3000, 'a');
    const small = list(10, 'b');
    expect(read(big)).toBe(joinPieces(splicedList(big, 'west')!.items, big).toString());
    expect(pool.bytes).toBeGreaterThan(big.length);
    // The next list gets the same buffer, written over: its own bytes only.
    expect(read(small)).toBe(joinPieces(splicedList(small, 'west')!.items, small).toString());
  });
});
