import { describe, expect, it } from 'vitest';
import { TransactionQueue } from '../../src/store/transaction-queue.js';

/** A stand-in for lmdb-js's async transaction: runs the callback later, records overlap. */
function fakeTransact(log: string[]) {
  let open = 0;
  let maxOpen = 0;
  const transact = async (fn: () => void) => {
    open++;
    maxOpen = Math.max(maxOpen, open);
    await new Promise((r) => setTimeout(r, 2));
    try {
      fn();
    } finally {
      open--;
    }
  };
  return { transact, maxOpen: () => maxOpen, log };
}

describe('TransactionQueue', () => {
  it('hands over one transaction at a time, urgent ones ahead of queued bulk ones', async () => {
    const t = fakeTransact([]);
    const q = new TransactionQueue(t.transact);
    const done = [
      q.run(() => t.log.push('bulk-1'), false),
      q.run(() => t.log.push('bulk-2'), false),
      q.run(() => t.log.push('bulk-3'), false),
      q.run(() => t.log.push('urgent'), true),
    ];
    await Promise.all(done);
    // bulk-1 was already handed over when the others arrived.
    expect(t.log).toEqual(['bulk-1', 'urgent', 'bulk-2', 'bulk-3']);
    expect(t.maxOpen()).toBe(1);
  });

  it('rejects the caller whose transaction failed and goes on with the rest', async () => {
    const t = fakeTransact([]);
    const q = new TransactionQueue(t.transact);
    const failed = q.run(() => {
      throw new Error('boom');
    }, false);
    const next = q.run(() => t.log.push('after'), false);
    await expect(failed).rejects.toThrow('boom');
    await next;
    expect(t.log).toEqual(['after']);
  });
});
