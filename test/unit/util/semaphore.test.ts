import { describe, expect, it } from 'vitest';
import { Semaphore } from '../../../src/util/semaphore.js';

describe('Semaphore', () => {
  it('admits up to the limit and hands slots on in FIFO order', async () => {
    const sem = new Semaphore(2);
    const r1 = await sem.acquire();
    const r2 = await sem.acquire();
    const order: number[] = [];
    const p3 = sem.acquire().then((r) => (order.push(3), r));
    const p4 = sem.acquire().then((r) => (order.push(4), r));
    await new Promise((r) => setTimeout(r, 5));
    expect(order).toEqual([]);
    r1();
    r1(); // releasing twice frees one slot only
    const r3 = await p3;
    expect(order).toEqual([3]);
    expect(sem.inUse).toBe(2);
    r2();
    await p4;
    expect(order).toEqual([3, 4]);
    r3();
    expect(sem.inUse).toBe(1);
  });

  it('tryAcquire takes a free slot and never one a waiter is owed', async () => {
    const sem = new Semaphore(1);
    const r1 = sem.tryAcquire();
    expect(r1).toBeDefined();
    expect(sem.tryAcquire()).toBeUndefined();
    const waiting = sem.acquire();
    r1!();
    // The slot went to the waiter on release: nothing is free for a newcomer.
    expect(sem.tryAcquire()).toBeUndefined();
    (await waiting)();
    expect(sem.inUse).toBe(0);
    expect(sem.tryAcquire()).toBeDefined();
  });

  it('drops a waiter whose signal aborts', async () => {
    const sem = new Semaphore(1);
    const r1 = await sem.acquire();
    const ac = new AbortController();
    const waiting = sem.acquire(ac.signal);
    ac.abort(new Error('stop'));
    await expect(waiting).rejects.toThrow('stop');
    r1();
    expect(sem.inUse).toBe(0);
  });
});
