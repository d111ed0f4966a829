import { describe, expect, it } from 'vitest';
import { TransactionQueue } from '../../../src/store/transaction-queue.js';

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

  it('gives urgent tasks waiting together one transaction, up to the batch weight', async () => {
    const t = fakeTransact([]);
    let transactions = 0;
    const q = new TransactionQueue((fn) => {
      transactions++;
      return t.transact(fn);
    }, 10);
    const done = [
      q.run(() => t.log.push('u1'), true, 4),
      q.run(() => t.log.push('bulk'), false, 100),
      q.run(() => t.log.push('u2'), true, 4),
      q.run(() => t.log.push('u3'), true, 4),
      q.run(() => t.log.push('u4'), true, 6),
      q.run(() => t.log.push('u5'), true, 4),
    ];
    await Promise.all(done);
    // u1 went alone (nothing else was queued yet); u2+u3 fit 10, u4 (6) + u5 (4) do too; bulk last.
    expect(t.log).toEqual(['u1', 'u2', 'u3', 'u4', 'u5', 'bulk']);
    expect(transactions).toBe(4);
    expect(t.maxOpen()).toBe(1);
  });

  it('rejects only the task that threw when its transaction is shared', async () => {
    const t = fakeTransact([]);
    const q = new TransactionQueue(t.transact, 10);
    const first = q.run(() => t.log.push('first'), true);
    const failed = q.run(() => {
      throw new Error('boom');
    }, true);
    const sibling = q.run(() => t.log.push('sibling'), true);
    await first;
    await expect(failed).rejects.toThrow('boom');
    await sibling;
    expect(t.log).toEqual(['first', 'sibling']);
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
