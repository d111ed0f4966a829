import { afterEach, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Store, type Change, type ChangeType } from '../../../src/store/store.js';
import { decodeObject } from '../../../src/ingest/decode.js';
import { encodeObjects, viewObjects } from '../../../src/ingest/batch.js';

/**
 * The event log (src/store/event-log.ts) through the store's face, its one user: a real LMDB
 * environment in a scratch directory. store.test.ts holds the window, the resume index and the
 * previous states; these are what a watch resumed across a restart, a snapshot or a relist needs.
 */
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function scratch(): string {
  const dir = mkdtempSync(join(tmpdir(), 'flotilla-event-log-'));
  dirs.push(dir);
  return dir;
}

function change(cluster: string, name: string, rv: string, type: ChangeType = 'ADDED'): Change {
  const o = viewObjects(encodeObjects([decodeObject({ metadata: { namespace: 'a', name, uid: `${cluster}-${name}`, resourceVersion: rv } }, { cluster, apiVersion: 'v1', kind: 'Pod', dropManagedFields: true })]))[0]!;
  return { type, rv, ...o };
}

const pods = (cluster: string) => ({ cluster, resource: 'v1/pods' });
const logged = (store: Store, afterSeq = 0, snapshot?: ReturnType<Store['snapshot']>) => [...store.logged('v1/pods', afterSeq, snapshot)].map((e) => `${e.seq} ${e.cluster}@${e.rv}`);

describe('the event log', () => {
  it("forgets a cluster's events when its member's history is rewritten, and starts its log at the new list", async () => {
    const store = Store.open(scratch());
    await store.commit(pods('east'), [change('east', 'x', '500'), change('east', 'y', '501')], { rv: '501' }, { log: true, logStartRV: '499' });
    await store.commit(pods('west'), [change('west', 'x', '21')], { rv: '21' }, { log: true, logStartRV: '20' });
    // East's etcd restored: its RVs go back to 300; what it now holds replaces the cache in one commit.
    await store.commit(pods('east'), [change('east', 'y', '290', 'MODIFIED')], { rv: '300' }, { log: true, logStartRV: '300', restartLog: true });
    expect(logged(store)).toEqual(['3 west@21', '4 east@290']);
    expect(store.logStart('v1/pods')).toEqual({ east: '300', west: '20' });
    // A client holding east 300 resumes from there, never through the old history's 500 and 501.
    expect(store.resumeSeq('v1/pods', { east: '300', west: '21' })).toBeUndefined();
    await store.commit(pods('east'), [change('east', 'z', '301')], { rv: '301' }, { log: true });
    expect(logged(store, store.resumeSeq('v1/pods', { east: '300', west: '21' }))).toEqual(['5 east@301']);
    await store.close();
  });

  it('numbers on after a restart, so a watch resumes across it', async () => {
    const dir = scratch();
    const before = Store.open(dir);
    await before.commit(pods('east'), [change('east', 'x', '11'), change('east', 'y', '12')], { rv: '12' }, { log: true });
    await before.commit(pods('west'), [change('west', 'x', '21')], { rv: '21' }, { log: true });
    await before.close();

    const after = Store.open(dir);
    expect(after.lastSeq()).toBe(3);
    await after.commit(pods('east'), [change('east', 'x', '13', 'MODIFIED')], { rv: '13' }, { log: true });
    expect(logged(after)).toEqual(['1 east@11', '2 east@12', '3 west@21', '4 east@13']);
    // A client that had east 12 and west 21 before the restart gets exactly what came after.
    const resume = after.resumeSeq('v1/pods', { east: '12', west: '21' });
    expect(resume).toBe(3);
    expect(logged(after, resume)).toEqual(['4 east@13']);
    await after.close();
  });

  it('is read as a snapshot saw it, whatever commits after', async () => {
    const store = Store.open(scratch());
    await store.commit(pods('east'), [change('east', 'x', '11')], { rv: '11' }, { log: true });
    const snapshot = store.snapshot();
    try {
      await store.commit(pods('east'), [change('east', 'x', '12', 'MODIFIED'), change('east', 'y', '13')], { rv: '13' }, { log: true });
      expect(store.lastSeq(snapshot)).toBe(1);
      expect(logged(store, 0, snapshot)).toEqual(['1 east@11']);
      expect(store.resumeSeq('v1/pods', { east: '11' }, snapshot)).toBeUndefined();
      // Without it, the latest.
      expect(store.lastSeq()).toBe(3);
      expect(logged(store)).toEqual(['1 east@11', '2 east@12', '3 east@13']);
      expect(store.resumeSeq('v1/pods', { east: '11' })).toBe(1);
    } finally {
      snapshot.done();
      await store.close();
    }
  });

  it('keeps a relisted cluster’s log start when the window drops its events from before the relist', async () => {
    const store = Store.open(scratch(), { eventLogSize: 3 });
    await store.commit(pods('east'), [change('east', 'x', '11'), change('east', 'y', '12')], { rv: '12' }, { log: true });
    await store.commit(pods('west'), [change('west', 'x', '21')], { rv: '21' }, { log: true });
    // east relists at 50 (its watch expired): nothing of east before 50 can be replayed.
    await store.commit(pods('east'), [change('east', 'z', '50')], { rv: '50' }, { log: false, logStartRV: '50' });
    expect(store.logStart('v1/pods')).toEqual({ east: '50' });
    // The window (3) drops east 11 and 12 and west 21: east's start stays at the relist, west's moves.
    await store.commit(pods('east'), [change('east', 'x', '51', 'MODIFIED'), change('east', 'y', '52', 'MODIFIED'), change('east', 'z', '53', 'MODIFIED')], { rv: '53' }, { log: true });
    expect(logged(store)).toEqual(['5 east@51', '6 east@52', '7 east@53']);
    expect(store.logStart('v1/pods')).toEqual({ east: '50', west: '21' });
    await store.close();
  });
});
