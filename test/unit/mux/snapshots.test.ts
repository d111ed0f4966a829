import { describe, expect, it } from 'vitest';
import { SnapshotRegistry } from '../../../src/mux/snapshots.js';
import type { Snapshot, Store } from '../../../src/store/store.js';

/** A store whose snapshots only count how many are open. */
function countingStore(): { store: Store; open: () => number } {
  let open = 0;
  const store = { snapshot: () => (open++, { done: () => void open-- }) as unknown as Snapshot } as unknown as Store;
  return { store, open: () => open };
}

describe('SnapshotRegistry budgets snapshots per caller', () => {
  it('one caller’s lists release only its own oldest snapshots', () => {
    const { store, open } = countingStore();
    const reg = new SnapshotRegistry(store, 60_000, 1024, 16);
    const alices = reg.create('user:alice').id;
    const bobs = Array.from({ length: 70 }, () => reg.create('user:bob').id);
    expect(reg.get(alices)).toBeDefined();
    expect(bobs.slice(0, 54).every((id) => reg.get(id) === undefined)).toBe(true);
    expect(bobs.slice(54).every((id) => reg.get(id) !== undefined)).toBe(true);
    expect(open()).toBe(17);
    reg.close();
    expect(open()).toBe(0);
  });

  it('past the global bound, the caller holding the most gives one up', () => {
    const { store } = countingStore();
    const reg = new SnapshotRegistry(store, 60_000, 4, 3);
    const a = reg.create('a').id;
    const b = [reg.create('b').id, reg.create('b').id, reg.create('b').id];
    const c = reg.create('c').id;
    expect(reg.size).toBe(4);
    expect(reg.get(b[0]!)).toBeUndefined();
    expect([a, c, b[1]!, b[2]!].every((id) => reg.get(id) !== undefined)).toBe(true);
    reg.close();
  });
});
