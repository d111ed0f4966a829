import { describe, expect, it } from 'vitest';
import { PassThrough } from 'node:stream';
import { LiveReadLimits } from '../../../src/forward/live-read-limits.js';

const MiB = 1024 * 1024;

describe('the live reads’ buffer', () => {
  it('lets reads hold up to its capacity together, and gives their bytes back once each is done', () => {
    const limits = new LiveReadLimits(10 * MiB, 10);
    const a = limits.hold();
    const b = limits.hold();
    expect(a.take(6 * MiB)).toBe(true);
    expect(b.take(4 * MiB)).toBe(true);
    expect(limits.stats().buffer.heldBytes).toBe(10 * MiB);
    a.release();
    a.release();
    expect(limits.stats().buffer.heldBytes).toBe(4 * MiB);
    b.release();
    expect(limits.stats().buffer).toEqual({ heldBytes: 0, capacityBytes: 10 * MiB, refusedBusy: 0, refusedTooLarge: 0 });
  });

  it('refuses a read that others crowd out with 429 and Retry-After, and every later take of it', () => {
    const limits = new LiveReadLimits(10 * MiB, 10);
    const big = limits.hold();
    expect(big.take(8 * MiB)).toBe(true);
    const late = limits.hold();
    expect(late.take(1 * MiB)).toBe(true);
    expect(late.take(2 * MiB)).toBe(false);
    expect(late.isRefused).toBe(true);
    // Room again, but a refused read stays refused: its answer would be missing what it dropped.
    big.release();
    expect(late.take(1)).toBe(false);
    const refusal = late.refusal();
    expect([refusal.code, refusal.reason, refusal.retryAfterSeconds]).toEqual([429, 'TooManyRequests', 1]);
    expect(refusal.message).toMatch(/10 MiB, options\.liveReads\.maxBufferMiB/);
    late.release();
    expect(limits.stats().buffer).toMatchObject({ heldBytes: 0, refusedBusy: 1, refusedTooLarge: 0 });
  });

  it('refuses a read larger than the whole buffer with 429 without Retry-After, telling the caller to page', () => {
    const limits = new LiveReadLimits(10 * MiB, 10);
    const huge = limits.hold();
    expect(huge.take(9 * MiB)).toBe(true);
    expect(huge.take(2 * MiB)).toBe(false);
    const refusal = huge.refusal();
    expect([refusal.code, refusal.reason, refusal.retryAfterSeconds]).toEqual([429, 'TooManyRequests', undefined]);
    expect(refusal.message).toMatch(/more than the 10 MiB .* list it in pages \(limit and continue; kubectl --chunk-size\)/);
    huge.release();
    expect(limits.stats().buffer).toMatchObject({ heldBytes: 0, refusedBusy: 0, refusedTooLarge: 1 });
  });

  it('takes nothing for a read already done', () => {
    const limits = new LiveReadLimits(MiB, 10);
    const done = limits.hold();
    done.release();
    expect(done.take(1)).toBe(false);
    expect(limits.stats().buffer.heldBytes).toBe(0);
  });
});

describe('live watches', () => {
  const closed = (s: PassThrough) => new Promise<void>((resolve) => s.once('close', () => resolve()));

  it('are counted while open, with what their clients have not read', async () => {
    const limits = new LiveReadLimits(MiB, 10);
    const out = new PassThrough({ highWaterMark: 4 });
    expect(limits.hold().startWatch(out)).toBe(true);
    out.write('not read yet');
    expect(limits.stats().watches).toEqual({ open: 1, max: 10, queuedBytes: 12, refused: 0 });
    expect(limits.stats().buffer.heldBytes).toBe(0);
    out.destroy();
    await closed(out);
    expect(limits.stats().watches).toMatchObject({ open: 0, queuedBytes: 0 });
  });

  it('past maxWatches open are refused with 429 and Retry-After, until one closes', async () => {
    const limits = new LiveReadLimits(MiB, 2);
    const [a, b, c] = [new PassThrough(), new PassThrough(), new PassThrough()];
    expect(limits.hold().startWatch(a)).toBe(true);
    expect(limits.hold().startWatch(b)).toBe(true);
    const third = limits.hold();
    expect(third.startWatch(c)).toBe(false);
    const refusal = third.watchRefusal();
    expect([refusal.code, refusal.reason, refusal.retryAfterSeconds]).toEqual([429, 'TooManyRequests', 1]);
    expect(refusal.message).toMatch(/as many live watches open as it may \(2, options\.liveReads\.maxWatches\)/);
    expect(limits.stats().watches).toMatchObject({ open: 2, refused: 1 });
    a.destroy();
    await closed(a);
    expect(limits.hold().startWatch(c)).toBe(true);
    expect(limits.stats().watches).toMatchObject({ open: 2, refused: 1 });
  });
});
