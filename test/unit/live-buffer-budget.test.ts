import { describe, expect, it } from 'vitest';
import { PassThrough } from 'node:stream';
import { LiveBufferBudget } from '../../src/forward/live-buffer-budget.js';

const MiB = 1024 * 1024;

describe('the live reads’ buffer budget', () => {
  it('lets reads hold up to its capacity together, and gives their bytes back once each is done', () => {
    const budget = new LiveBufferBudget(10 * MiB);
    const a = budget.hold();
    const b = budget.hold();
    expect(a.take(6 * MiB)).toBe(true);
    expect(b.take(4 * MiB)).toBe(true);
    expect(budget.stats().heldBytes).toBe(10 * MiB);
    a.release();
    a.release();
    expect(budget.stats().heldBytes).toBe(4 * MiB);
    b.release();
    expect(budget.stats()).toEqual({ heldBytes: 0, capacityBytes: 10 * MiB, refusedBusy: 0, refusedTooLarge: 0, watches: 0, watchQueuedBytes: 0 });
  });

  it('refuses a read that others crowd out with 429 and Retry-After, and every later take of it', () => {
    const budget = new LiveBufferBudget(10 * MiB);
    const big = budget.hold();
    expect(big.take(8 * MiB)).toBe(true);
    const late = budget.hold();
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
    expect(budget.stats()).toMatchObject({ heldBytes: 0, refusedBusy: 1, refusedTooLarge: 0 });
  });

  it('refuses a read larger than the whole budget with 429 without Retry-After, telling the caller to page', () => {
    const budget = new LiveBufferBudget(10 * MiB);
    const huge = budget.hold();
    expect(huge.take(9 * MiB)).toBe(true);
    expect(huge.take(2 * MiB)).toBe(false);
    const refusal = huge.refusal();
    expect([refusal.code, refusal.reason, refusal.retryAfterSeconds]).toEqual([429, 'TooManyRequests', undefined]);
    expect(refusal.message).toMatch(/more than the 10 MiB .* list it in pages \(limit and continue; kubectl --chunk-size\)/);
    huge.release();
    expect(budget.stats()).toMatchObject({ heldBytes: 0, refusedBusy: 0, refusedTooLarge: 1 });
  });

  it('takes nothing for a read already done', () => {
    const budget = new LiveBufferBudget(MiB);
    const done = budget.hold();
    done.release();
    expect(done.take(1)).toBe(false);
    expect(budget.stats().heldBytes).toBe(0);
  });
});

describe('live watches counted beside the budget', () => {
  it('are counted while open, with what their clients have not read', () => {
    const budget = new LiveBufferBudget(MiB);
    const out = new PassThrough({ highWaterMark: 4 });
    budget.hold().watching(out);
    out.write('not read yet');
    expect(budget.stats()).toMatchObject({ watches: 1, watchQueuedBytes: 12, heldBytes: 0 });
    out.destroy();
    return new Promise<void>((resolve) =>
      out.once('close', () => {
        expect(budget.stats()).toMatchObject({ watches: 0, watchQueuedBytes: 0 });
        resolve();
      }),
    );
  });
});
