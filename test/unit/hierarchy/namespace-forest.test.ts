import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { NamespaceForest, NAMESPACES } from '../../../src/hierarchy/namespace-forest.js';
import { SUBNAMESPACE_OF } from '../../../src/hierarchy/namespace-tree.js';
import type { Store, StoreEvent, StoreListener } from '../../../src/store/store.js';

/**
 * The forest reads the store's namespaces and hears its batches; only those two parts of the
 * store are used, so the batches are handed to it here as the store would publish them.
 */
class Batches {
  private readonly listeners = new Map<string, StoreListener>();
  private rv = 100;
  get lastRV(): number {
    return this.rv;
  }
  readonly store = {
    entries: () => [],
    subscribe: (resource: string, l: StoreListener) => {
      this.listeners.set(resource, l);
      return () => this.listeners.delete(resource);
    },
  } as unknown as Store;

  namespace(type: StoreEvent['type'], name: string, parent?: string): void {
    const doc = { metadata: { name, ...(parent ? { annotations: { [SUBNAMESPACE_OF]: parent } } : {}) } };
    const rv = String(++this.rv);
    this.listeners.get(NAMESPACES)?.([{ seq: this.rv, cluster: 'east', type, namespace: '', name, rv, bytes: Buffer.from(JSON.stringify(doc)), meta: Buffer.alloc(0) }]);
  }
}

let batches: Batches;
let forest: NamespaceForest;
let heard: Record<string, string[]>[];
beforeEach(() => {
  vi.useFakeTimers();
  batches = new Batches();
  forest = new NamespaceForest(batches.store);
  heard = [];
  forest.onChange((relabelled) => heard.push(Object.fromEntries([...relabelled].map(([c, names]) => [c, [...names].sort()]))));
  for (const [ns, parent] of [['team', undefined], ['a', 'team'], ['a-x', 'a'], ['other', undefined]] as const) batches.namespace('ADDED', ns, parent);
  vi.advanceTimersByTime(1000);
  heard = [];
});
afterEach(() => {
  forest.close();
  vi.useRealTimers();
});

describe('NamespaceForest', () => {
  it('names what a move relabelled, though the same gathering moved it back first', () => {
    batches.namespace('MODIFIED', 'a', 'other');
    vi.advanceTimersByTime(1000);
    heard = [];
    // Moved back and away again in one gathering: a watch that opened in between saw only the
    // second move, while the trees before and after are the same.
    batches.namespace('MODIFIED', 'a', 'team');
    batches.namespace('MODIFIED', 'a', 'other');
    vi.advanceTimersByTime(1000);
    // team: alone (shown without tree labels) at the end, its only child gone again.
    expect(heard).toEqual([{ east: ['a', 'a-x', 'other', 'team'] }]);
    expect(forest.tree('east').ancestors('a-x')).toEqual(['a-x', 'a', 'other']);
  });

  it('a namespace alone comes and goes without telling anyone; a missing parent that comes does', () => {
    batches.namespace('ADDED', 'lone');
    batches.namespace('DELETED', 'lone');
    vi.advanceTimersByTime(1000);
    expect(heard).toEqual([]);
    batches.namespace('ADDED', 'child', 'later');
    vi.advanceTimersByTime(1000);
    // Its parent is missing: it is a root, and alone.
    expect(heard).toEqual([{}]);
    batches.namespace('ADDED', 'later');
    vi.advanceTimersByTime(1000);
    expect(heard.at(-1)).toEqual({ east: ['child'] });
    expect(forest.tree('east').ancestors('child')).toEqual(['child', 'later']);
    // A watch resumed from before the parent came is replayed with the tree of its time, where
    // child (whose objects it may have listed) was a root.
    const parentCame = batches.lastRV;
    expect(forest.treeAt('east', String(parentCame - 1))?.ancestors('child')).toEqual(['child']);
    expect(forest.treeAt('east', String(parentCame))?.ancestors('child')).toEqual(['child', 'later']);
  });
});
