import { afterEach, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KEY_SEP, Store, StoreFullError, type Change, type ChangeType, type StoreEvent } from '../../../src/store/store.js';
import { decodeObject, type IngestContext, type RawObject } from '../../../src/ingest/decode.js';
import { makePod } from '../../../bench/lib/pods.js';
import { decodeMeta } from '../../../src/store/meta-record.js';
import { encodeObjects, viewObjects } from '../../../src/ingest/batch.js';
import { fieldIndexKey } from '../../../src/store/meta-record.js';

const dirs: string[] = [];
function openStore(eventLogSize?: number): { store: Store; dir: string } {
  const dir = mkdtempSync(join(tmpdir(), 'flotilla-store-'));
  dirs.push(dir);
  return { store: Store.open(dir, { eventLogSize }), dir };
}
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function change(cluster: string, namespace: string, name: string, rv: string, type: ChangeType = 'ADDED', labels?: Record<string, string>): Change {
  const ctx: IngestContext = { cluster, apiVersion: 'v1', kind: 'Pod', dropManagedFields: true };
  // Through the same encoding the ingest workers use.
  const o = viewObjects(encodeObjects([decodeObject({ metadata: { namespace, name, uid: `${cluster}-${name}`, resourceVersion: rv, labels } }, ctx)]))[0]!;
  return { type, rv, ...o };
}

/** Whether this process may mount a small tmpfs (root with CAP_SYS_ADMIN): the disk-full test needs a real full filesystem. */
function tmpfsMountable(): boolean {
  const probe = mkdtempSync(join(tmpdir(), 'flotilla-mount-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', probe], { stdio: 'ignore' });
    execFileSync('umount', [probe], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  } finally {
    rmSync(probe, { recursive: true, force: true });
  }
}

const pods = (cluster: string, namespace?: string) => ({ cluster, resource: 'v1/pods', ...(namespace ? { namespace } : {}) });

describe('Store', () => {
  it('lists a resource in namespace/name/cluster order, by namespace, and by cluster', async () => {
    const { store } = openStore();
    await store.commit(pods('west'), [change('west', 'b', 'p', '1'), change('west', 'a', 'z', '2')], { rv: '2' }, { log: false });
    await store.commit(pods('east'), [change('east', 'b', 'p', '5')], { rv: '5' }, { log: false });
    await store.commit({ cluster: 'east', resource: 'v1/configmaps' }, [change('east', 'a', 'cm', '6')], { rv: '6' }, { log: false });
    const all = [...store.entries('v1/pods')].map((e) => `${e.namespace}/${e.name}@${e.cluster}`);
    expect(all).toEqual(['a/z@west', 'b/p@east', 'b/p@west']);
    expect([...store.entries('v1/pods', { namespace: 'b' })].map((e) => e.cluster)).toEqual(['east', 'west']);
    expect([...store.entries('v1/pods', { cluster: 'west' })].map((e) => e.name)).toEqual(['z', 'p']);
    expect(store.lookup('v1/pods', 'b', 'p').map((e) => e.cluster)).toEqual(['east', 'west']);
    expect(store.lookup('v1/pods', 'b', 'p', 'west')).toHaveLength(1);
    expect(store.syncStates('v1/pods').map((s) => [s.cluster, s.sync.rv])).toEqual([['east', '5'], ['west', '2']]);
    expect(store.latestRVs('v1/pods')).toEqual({ east: '5', west: '2' });
    await store.close();
  });

  it('keeps long keys inside their namespace range (lmdb writes long strings unescaped)', async () => {
    const { store } = openStore();
    const long = `web-north-67744b7647-7tq8c.18ea997ba46c626b-${'x'.repeat(40)}`;
    const labels = { app: 'web' };
    await store.commit(pods('north'), [change('north', 'fidelity', 'short', '1', 'ADDED', labels), change('north', 'fidelity', long, '2', 'ADDED', labels)], { rv: '2' }, { log: false });
    expect([...store.entries('v1/pods', { namespace: 'fidelity' })].map((e) => e.name)).toEqual(['short', long]);
    expect([...store.entries('v1/pods')].map((e) => e.name)).toEqual(['short', long]);
    expect([...store.keysLabelled('v1/pods', 'app', 'web')]).toHaveLength(2);
    expect(store.refsOf(pods('north', 'fidelity')).map((r) => r.name)).toEqual(['short', long]);
    await store.close();
  });

  it('numbers changes nobody listened to, so a watch that starts later resumes in sequence', async () => {
    const { store } = openStore();
    const scope = pods('east', 'quiet');
    const names = Array.from({ length: 450 }, (_, i) => `q-${String(i).padStart(4, '0')}`);
    await store.commit(scope, names.map((n, i) => change('east', 'quiet', n, String(i + 1))), { rv: '450' }, { log: false });
    expect(store.lastSeq()).toBe(450);
    const heard: StoreEvent[] = [];
    store.subscribe('v1/pods', (evs) => heard.push(...evs));
    await store.commit(scope, [change('east', 'quiet', 'q-0000', '451', 'MODIFIED')], { rv: '451' }, { log: true });
    expect(heard.map((e) => [e.name, e.seq, e.type])).toEqual([['q-0000', 451, 'MODIFIED']]);
    expect([...store.logged('v1/pods')].map((e) => e.seq)).toEqual([451]);
    await store.close();
  });

  it('writes a large first list in slices yet numbers its events in order, and pages refs back', async () => {
    const { store } = openStore();
    const scope = pods('east', 'big');
    const names = Array.from({ length: 450 }, (_, i) => `p-${String(i).padStart(4, '0')}`);
    const heard: StoreEvent[] = [];
    store.subscribe('v1/pods', (evs) => heard.push(...evs));
    await store.commit(scope, names.map((n, i) => change('east', 'big', n, String(i + 1), 'ADDED', { app: 'web' })), { rv: '450' }, { log: false, fresh: true });
    expect(heard.map((e) => e.name)).toEqual(names);
    expect(heard.map((e) => e.seq)).toEqual(names.map((_, i) => i + 1));
    expect(store.lastSeq()).toBe(450);
    expect(store.syncState(scope)?.rv).toBe('450');
    expect([...store.keysLabelled('v1/pods', 'app', 'web')]).toHaveLength(450);
    const paged: string[] = [];
    for await (const refs of store.refsOfPaged(scope, 100)) {
      expect(refs.length).toBeLessThanOrEqual(100);
      paged.push(...refs.map((r) => r.name));
    }
    expect(paged).toEqual(names);
    // Another cluster's and another namespace's objects stay out of the scope's pages.
    await store.commit(pods('west', 'big'), [change('west', 'big', 'p-0000', '1')], { rv: '1' }, { log: true });
    await store.commit(pods('east', 'bigger'), [change('east', 'bigger', 'p-0000', '2')], { rv: '2' }, { log: true });
    let n = 0;
    for await (const refs of store.refsOfPaged(scope, 7)) n += refs.length;
    expect(n).toBe(450);
    await store.close();
  });

  it('writes every label index key exactly: multi-byte names, many long entries, then a diff and a delete', async () => {
    const { store } = openStore();
    // A cluster name of multi-byte characters (the keys' suffix), and more entry bytes than the key buffer starts with.
    const cluster = 'zürich-øst';
    const scope = pods(cluster, 'ns');
    const labels = Object.fromEntries(Array.from({ length: 120 }, (_, i) => [`l${i}`, `${i}-${'v'.repeat(60)}`]));
    await store.commit(scope, [change(cluster, 'ns', 'a', '1', 'ADDED', labels), change(cluster, 'ns', 'b', '1', 'ADDED', { l0: labels.l0!, x: 'only-b' })], { rv: '1' }, { log: false, fresh: true });
    const names = (label: string, value: string) => [...store.keysLabelled('v1/pods', label, value)].map((k) => k.split(KEY_SEP).slice(2).join('/'));
    for (const [k, v] of Object.entries(labels)) expect(names(k, v)).toEqual(k === 'l0' ? [`a/${cluster}`, `b/${cluster}`] : [`a/${cluster}`]);
    expect(names('x', 'only-b')).toEqual([`b/${cluster}`]);
    // A diff: one label changed, one gone, one new; the rest stay.
    const changed: Record<string, string> = { ...labels, l1: 'changed', fresh: 'yes' };
    delete changed.l119;
    await store.commit(scope, [change(cluster, 'ns', 'a', '2', 'MODIFIED', changed)], { rv: '2' }, { log: true });
    expect(names('l1', labels.l1!)).toEqual([]);
    expect(names('l1', 'changed')).toEqual([`a/${cluster}`]);
    expect(names('l119', labels.l119!)).toEqual([]);
    expect(names('fresh', 'yes')).toEqual([`a/${cluster}`]);
    expect(names('l2', labels.l2!)).toEqual([`a/${cluster}`]);
    await store.commit(scope, [change(cluster, 'ns', 'a', '3', 'DELETED', changed)], { rv: '3' }, { log: true });
    for (const [k, v] of Object.entries(changed)) expect(names(k, v)).toEqual(k === 'l0' ? [`b/${cluster}`] : []);
    await store.close();
  });

  it('keeps the label index right when one batch changes an object twice', async () => {
    const { store } = openStore();
    const scope = pods('east', 'twice');
    await store.commit(scope, [change('east', 'twice', 'x', '1', 'ADDED', { v: '1' })], { rv: '1' }, { log: true });
    await store.commit(scope, [change('east', 'twice', 'x', '2', 'MODIFIED', { v: '2' }), change('east', 'twice', 'x', '3', 'MODIFIED', { v: '3' })], { rv: '3' }, { log: true });
    expect([...store.keysLabelled('v1/pods', 'v', '1')]).toEqual([]);
    expect([...store.keysLabelled('v1/pods', 'v', '2')]).toEqual([]);
    expect([...store.keysLabelled('v1/pods', 'v', '3')]).toHaveLength(1);
    await store.commit(scope, [change('east', 'twice', 'x', '4', 'MODIFIED', { v: '4' }), change('east', 'twice', 'x', '5', 'DELETED', { v: '4' })], { rv: '5' }, { log: true });
    expect([...store.keysLabelled('v1/pods', 'v', '3')]).toEqual([]);
    expect([...store.keysLabelled('v1/pods', 'v', '4')]).toEqual([]);
    await store.close();
  });

  it('enters selective fields in the index (a node\'s pods), but not empty or low-cardinality ones', async () => {
    const { store } = openStore();
    const ctx: IngestContext = { cluster: 'east', apiVersion: 'v1', kind: 'Pod', dropManagedFields: true };
    const pod = (name: string, nodeName?: string): Change => {
      const o = viewObjects(encodeObjects([decodeObject({ metadata: { namespace: 'n', name, uid: name, resourceVersion: '1' }, spec: { nodeName }, status: { phase: 'Running' } }, ctx)]))[0]!;
      return { type: 'ADDED', rv: '1', ...o };
    };
    await store.commit(pods('east', 'n'), [pod('a', 'node-1'), pod('b', 'node-2'), pod('c', 'node-1'), pod('d')], { rv: '1' }, { log: false });
    expect([...store.keysLabelled('v1/pods', fieldIndexKey('spec.nodeName'), 'node-1')].map((k) => k.split(KEY_SEP)[2])).toEqual(['a', 'c']);
    expect([...store.keysLabelled('v1/pods', fieldIndexKey('spec.nodeName'), '')]).toEqual([]);
    expect([...store.keysLabelled('v1/pods', fieldIndexKey('status.phase'), 'Running')]).toEqual([]);
    // Moved to another node in a later transaction: the entry to remove comes from the stored meta record.
    await store.commit(pods('east', 'n'), [{ ...pod('a', 'node-2'), type: 'MODIFIED' }], { rv: '2' }, { log: true });
    expect([...store.keysLabelled('v1/pods', fieldIndexKey('spec.nodeName'), 'node-1')].map((k) => k.split(KEY_SEP)[2])).toEqual(['c']);
    expect([...store.keysLabelled('v1/pods', fieldIndexKey('spec.nodeName'), 'node-2')].map((k) => k.split(KEY_SEP)[2])).toEqual(['a', 'b']);
    await store.close();
  });

  it('lists one cluster from its own index and counts what follows a key without reading it', async () => {
    const { store } = openStore();
    for (const c of ['east', 'west']) {
      await store.commit(pods(c, 'a'), ['p1', 'p2', 'p3'].map((n, i) => change(c, 'a', n, String(i + 1))), { rv: '3' }, { log: true });
      await store.commit(pods(c, 'b'), [change(c, 'b', 'p1', '4')], { rv: '4' }, { log: true });
    }
    const names = (es: Iterable<{ namespace: string; name: string; cluster: string }>) => [...es].map((e) => `${e.cluster}/${e.namespace}/${e.name}`);
    expect(names(store.entries('v1/pods', { cluster: 'west' }))).toEqual(['west/a/p1', 'west/a/p2', 'west/a/p3', 'west/b/p1']);
    expect(names(store.entries('v1/pods', { cluster: 'west', namespace: 'a' }))).toEqual(['west/a/p1', 'west/a/p2', 'west/a/p3']);
    const all = [...store.entries('v1/pods')];
    const from = all.find((e) => e.cluster === 'west' && e.name === 'p2')!.key;
    expect(names(store.entries('v1/pods', { cluster: 'west', startKey: from }))).toEqual(['west/a/p2', 'west/a/p3', 'west/b/p1']);
    expect(store.countFrom('v1/pods', { cluster: 'west', startKey: from })).toBe(3);
    expect(store.countFrom('v1/pods', { cluster: 'west', namespace: 'a', startKey: from })).toBe(2);
    // Without a cluster: every member's copies from that key on (a/p2 west, a/p3 east+west, b/p1 east+west).
    expect(store.countFrom('v1/pods', { startKey: from })).toBe(5);
    expect(store.countFrom('v1/pods', { startKey: from })).toBe([...store.entries('v1/pods', { startKey: from })].length);
    await store.close();
  });

  it('finds where a watch resumes in the log without reading it from the start, also after trimming', async () => {
    const { store } = openStore(1000);
    await store.commit(pods('east'), [change('east', 'a', 'x', '10'), change('east', 'a', 'y', '12')], { rv: '12' }, { log: true }); // seq 1, 2
    await store.commit(pods('west'), [change('west', 'a', 'x', '11')], { rv: '11' }, { log: true }); // seq 3
    await store.commit(pods('east'), [change('east', 'a', 'x', '15', 'MODIFIED')], { rv: '15' }, { log: true }); // seq 4
    expect(store.resumeSeq('v1/pods', { east: '10' })).toBe(1); // east's rv 12 (seq 2) is next
    expect(store.resumeSeq('v1/pods', { east: '12', west: '10' })).toBe(2); // west's rv 11 (seq 3)
    expect(store.resumeSeq('v1/pods', { east: '15', west: '11' })).toBeUndefined();
    expect(store.resumeSeq('v1/pods', { east: 'not-a-number' })).toBe(0);
    const after = (since: Record<string, string>) => [...store.logged('v1/pods', store.resumeSeq('v1/pods', since) ?? Infinity)].map((e) => `${e.cluster}@${e.rv}`);
    expect(after({ east: '12', west: '10' })).toEqual(['west@11', 'east@15']);
    // Past the window the oldest go, from the index too.
    const many = Array.from({ length: 1200 }, (_, i) => change('east', 'b', `p${i}`, String(100 + i)));
    await store.commit(pods('east', 'b'), many.slice(0, 600), { rv: '699' }, { log: true }); // seq 5..604
    await store.commit(pods('east', 'b'), many.slice(600), { rv: '1299' }, { log: true }); // seq 605..1204; 1..204 trimmed
    expect(store.logStart('v1/pods')).toEqual({ east: '299', west: '11' });
    expect(store.resumeSeq('v1/pods', { east: '299' })).toBe(204);
    expect(after({ east: '1298' })).toEqual(['east@1299']);
    await store.close();
  });

  it('keeps the log and the label index exact when many clusters commit in one transaction', async () => {
    const { store } = openStore(1000);
    const filler = Array.from({ length: 995 }, (_, i) => change('east', 'f', `p${i}`, String(i + 1)));
    for (let i = 0; i < filler.length; i += 199) await store.commit(pods('east'), filler.slice(i, i + 199), { rv: String(i + 199) }, { log: true });
    // Ten clusters' events at once: the queue hands all but the first over as one transaction,
    // and each task trims the log past 1000 events on its own.
    const clusters = Array.from({ length: 10 }, (_, i) => `c${i}`);
    await Promise.all(
      clusters.map((c, i) =>
        store.commit(pods(c), [change(c, 'a', 'x', String(2000 + i), 'ADDED', { team: 'blue' }), change(c, 'a', 'y', String(3000 + i), 'ADDED', { team: 'blue' })], { rv: String(3000 + i) }, { log: true }),
      ),
    );
    const logged = [...store.logged('v1/pods')];
    expect(logged).toHaveLength(1000);
    expect(logged.map((e) => e.seq)).toEqual(Array.from({ length: 1000 }, (_, i) => 16 + i));
    expect(store.logStart('v1/pods')).toEqual({ east: '15' });
    expect([...store.keysLabelled('v1/pods', 'team', 'blue')]).toHaveLength(20);
    // The next commit continues the sequence, and the index follows a relabelling.
    await store.commit(pods('c0'), [change('c0', 'a', 'x', '4000', 'MODIFIED', { team: 'red' })], { rv: '4000' }, { log: true });
    expect([...store.logged('v1/pods')].map((e) => e.seq).slice(-2)).toEqual([1015, 1016]);
    expect([...store.keysLabelled('v1/pods', 'team', 'blue')]).toHaveLength(19);
    await store.close();
  });

  it('empties a store written in an older key layout', async () => {
    const { store, dir } = openStore();
    await store.commit(pods('east'), [change('east', 'a', 'x', '1')], { rv: '1' }, { log: true });
    await store.close();
    const { open } = await import('lmdb');
    const raw = open({ path: dir, maxDbs: 16 });
    const logs = raw.openDB({ name: 'logs' });
    await logs.remove('\u0000format');
    // A database only older layouts had: the upgrade drops it rather than leave its pages behind.
    await raw.openDB({ name: 'labelsOf' }).put('v1/pods\u0005a\u0005x\u0005east', 'app=web');
    // The label index before its keys were bytes (format 8), with lmdb-js's own key comparator.
    await raw.openDB({ name: 'labels', encoding: 'binary' }).put('v1/pods\u0005app=web\u0005v1/pods\u0005a\u0005x\u0005east', Buffer.alloc(0));
    await raw.close();
    const again = Store.open(dir);
    expect([...again.entries('v1/pods')]).toEqual([]);
    expect(again.syncState(pods('east'))).toBeUndefined();
    // Numbering starts over with the log it numbered.
    expect(again.lastSeq()).toBe(0);
    expect([...again.logged('v1/pods')]).toEqual([]);
    await again.close();
    // Named databases are keys of the environment's main database.
    const after = open({ path: dir, maxDbs: 16 });
    expect([...after.getKeys()]).toContain('objects');
    expect([...after.getKeys()]).not.toContain('labelsOf');
    expect([...after.getKeys()]).not.toContain('labels');
    expect([...after.getKeys()]).toContain('labelIndex');
    await after.close();
  });

  it('creates 8 KB pages, and keeps serving a store an older flotilla created with 4 KB pages', async () => {
    const { open } = await import('lmdb');
    const pageSizeOf = async (dir: string) => {
      const raw = open({ path: dir, maxDbs: 16 });
      const size = (raw.getStats() as { pageSize: number }).pageSize;
      await raw.close();
      return size;
    };
    const { store, dir } = openStore();
    await store.commit(pods('east'), [change('east', 'a', 'x', '1')], { rv: '1' }, { log: false });
    await store.close();
    expect(await pageSizeOf(dir)).toBe(8192);

    const older = mkdtempSync(join(tmpdir(), 'flotilla-store-'));
    dirs.push(older);
    const legacy = open({ path: older, maxDbs: 16, pageSize: 4096 });
    await legacy.put('k', 'v');
    await legacy.close();
    const reopened = Store.open(older);
    await reopened.commit(pods('east'), [change('east', 'a', 'y', '2')], { rv: '2' }, { log: false });
    expect([...reopened.entries('v1/pods')].map((e) => e.name)).toEqual(['y']);
    await reopened.close();
    expect(await pageSizeOf(older)).toBe(4096);
  });

  it('stores objects compressed and reads back their exact bytes; a store compressed with another dictionary is emptied', async () => {
    const { open } = await import('lmdb');
    const { store, dir } = openStore();
    const ctx: IngestContext = { cluster: 'east', apiVersion: 'v1', kind: 'Pod', dropManagedFields: true };
    const written = viewObjects(encodeObjects(Array.from({ length: 2000 }, (_, i) => decodeObject(makePod(i, 'shop') as RawObject, ctx))));
    // The ingest workers compress what they decode; an object that comes without that form
    // (odd ones here) is compressed by lmdb-js as it is written. Both read back the same.
    expect(written.every((o) => o.stored !== undefined)).toBe(true);
    const changes: Change[] = written.map((o, i) => ({ type: 'ADDED', rv: String(i + 1), ...o, ...(i % 2 ? { stored: undefined } : {}) }));
    for (let i = 0; i < changes.length; i += 200) await store.commit(pods('east'), changes.slice(i, i + 200), { rv: String(i + 200) }, { log: false });
    const read = new Map([...store.entries('v1/pods')].map((e) => [e.name, Buffer.from(e.bytes)]));
    expect(read.size).toBe(2000);
    for (const c of changes) expect(read.get(c.name)?.equals(c.bytes), c.name).toBe(true);
    expect(store.lookup('v1/pods', 'shop', changes[7]!.name)[0]!.bytes.equals(changes[7]!.bytes)).toBe(true);
    expect(store.lookup('v1/pods', 'shop', changes[8]!.name)[0]!.bytes.equals(changes[8]!.bytes)).toBe(true);
    await store.close();

    const served = changes.reduce((n, c) => n + c.bytes.length, 0);
    const raw = open({ path: dir, maxDbs: 16 });
    const asStored = raw.openDB({ name: 'objects', encoding: 'binary' });
    // Both ways, kept in lmdb-js's compressed form (its header byte) and smaller than served.
    for (const c of changes.slice(0, 2)) {
      const kept = [...asStored.getRange()].find((e) => String(e.key).includes(c.name))!.value as Buffer;
      expect(kept[0]).toBe(254);
      expect(kept.length).toBeLessThan(c.bytes.length / 2);
    }
    const s = asStored.getStats() as { pageSize: number; treeLeafPageCount: number; treeBranchPageCount: number; overflowPages: number };
    const fileBytes = (s.treeLeafPageCount + s.treeBranchPageCount + s.overflowPages) * s.pageSize;
    // Uncompressed, the leaves alone hold every byte served and then some (1.7 times as many here).
    expect(fileBytes / served).toBeLessThan(0.9);
    // The format record as a flotilla whose dictionary differs would have written it.
    const logs = raw.openDB({ name: 'logs' });
    await logs.put('\u0000format', { ...(logs.get('\u0000format') as object), dictionary: 'another' });
    await raw.close();
    const again = Store.open(dir);
    expect([...again.entries('v1/pods')]).toEqual([]);
    await again.close();
  });

  it('deletes, reconciles per scope, and keeps everything across a reopen', async () => {
    const { store, dir } = openStore();
    const scope = pods('east', 'a');
    await store.commit(scope, [change('east', 'a', 'x', '1'), change('east', 'a', 'y', '2')], { rv: '2' }, { log: true });
    await store.commit(pods('east', 'b'), [change('east', 'b', 'x', '3')], { rv: '3' }, { log: true });
    await store.commit(scope, [change('east', 'a', 'x', '4', 'DELETED')], { rv: '4' }, { log: true });
    expect(store.refsOf(scope)).toEqual([{ namespace: 'a', name: 'y' }]);
    expect(store.refsOf(pods('east'))).toHaveLength(2);
    await store.close();
    const again = Store.open(dir);
    expect(again.syncState(scope)).toEqual({ rv: '4' });
    const y = again.lookup('v1/pods', 'a', 'y')[0]!;
    expect(JSON.parse(y.bytes.toString()).metadata.uid).toBe('east-y');
    expect(again.metaOf('v1/pods', y)).toMatchObject({ uid: 'east-y', rv: '2' });
    // The event log and its sequence survive the reopen.
    expect([...again.logged('v1/pods')].map((e) => `${e.seq}:${e.type}:${e.name}@${e.rv}`)).toEqual(['1:ADDED:x@1', '2:ADDED:y@2', '3:ADDED:x@3', '4:DELETED:x@4']);
    expect(again.lastSeq()).toBe(4);
    await again.close();
  });

  it('tells listeners about each committed batch, in order, after the commit', async () => {
    const { store } = openStore();
    const heard: string[] = [];
    const off = store.subscribe('v1/pods', (events: readonly StoreEvent[]) => {
      // The change is already readable when listeners hear of it.
      for (const e of events) heard.push(`${e.seq}:${e.type}:${e.name}:${store.lookup('v1/pods', e.namespace, e.name).length}`);
    });
    await store.commit(pods('east'), [change('east', 'a', 'p', '1'), change('east', 'a', 'q', '2')], { rv: '2' }, { log: false });
    await store.commit(pods('east'), [change('east', 'a', 'p', '3', 'DELETED')], { rv: '3' }, { log: true });
    off();
    await store.commit(pods('east'), [change('east', 'a', 'r', '4')], { rv: '4' }, { log: true });
    expect(heard).toEqual(['1:ADDED:p:1', '2:ADDED:q:1', '3:DELETED:p:0']);
    // Only logged changes are replayable.
    expect([...store.logged('v1/pods')].map((e) => e.seq)).toEqual([3, 4]);
    expect([...store.logged('v1/pods', 3)].map((e) => e.seq)).toEqual([4]);
    await store.close();
  });

  it('trims the log to its window and moves each cluster’s log start past what it dropped', async () => {
    const { store } = openStore(3);
    await store.commit(pods('east'), [], { rv: '10' }, { log: false, logStartRV: '10' });
    await store.commit(pods('west'), [], { rv: '20' }, { log: false, logStartRV: '20' });
    for (let i = 1; i <= 3; i++) await store.commit(pods('east'), [change('east', 'a', `e${i}`, String(10 + i))], { rv: String(10 + i) }, { log: true });
    await store.commit(pods('west'), [change('west', 'a', 'w1', '21'), change('west', 'a', 'w2', '22')], { rv: '22' }, { log: true });
    expect([...store.logged('v1/pods')].map((e) => e.name)).toEqual(['e3', 'w1', 'w2']);
    expect(store.logStart('v1/pods')).toEqual({ east: '12', west: '20' });
    await store.close();
  });

  it('keeps the label index in step with adds, relabels and deletes', async () => {
    const { store } = openStore();
    const scope = pods('east');
    await store.commit(scope, [change('east', 'a', 'p', '1', 'ADDED', { app: 'web', tier: 'fe' }), change('east', 'b', 'q', '2', 'ADDED', { app: 'web' })], { rv: '2' }, { log: false });
    const web = () => [...store.keysLabelled('v1/pods', 'app', 'web')].map((k) => store.entryAt(k)!.name);
    expect(web()).toEqual(['p', 'q']);
    await store.commit(scope, [change('east', 'a', 'p', '3', 'MODIFIED', { app: 'api' })], { rv: '3' }, { log: true });
    expect(web()).toEqual(['q']);
    expect([...store.keysLabelled('v1/pods', 'app', 'api')]).toHaveLength(1);
    expect([...store.keysLabelled('v1/pods', 'tier', 'fe')]).toEqual([]);
    await store.commit(scope, [change('east', 'b', 'q', '4', 'DELETED')], { rv: '4' }, { log: true });
    expect(web()).toEqual([]);
    await store.close();
  });

  it('keeps each cluster\'s latest RV right across commits, namespace scopes, lists in progress and drops', async () => {
    const { store } = openStore();
    // What the records say, read afresh from LMDB, against what the store keeps between commits.
    const fresh = () => {
      const snapshot = store.snapshot();
      try {
        return store.latestRVs('v1/pods', snapshot);
      } finally {
        snapshot.done();
      }
    };
    await store.commit(pods('east'), [], { rv: '5' }, { log: true });
    expect(store.latestRVs('v1/pods')).toEqual({ east: '5' });
    const steps: [ReturnType<typeof pods>, string, { dropSync?: boolean }?][] = [
      [pods('west'), '7'],
      [pods('east'), '9'],
      // A cluster cached by namespace: its oldest scope counts; one in the middle of a list has no RV.
      [pods('north', 'a'), '12'],
      [pods('north', 'b'), '10'],
      [pods('north', 'c'), ''],
      [pods('north', 'b'), '15'],
      [pods('north', 'a'), '', { dropSync: true }],
      [pods('west'), '', { dropSync: true }],
    ];
    for (const [scope, rv, opts] of steps) {
      await store.commit(scope, [], { rv }, { log: true, ...opts });
      expect(store.latestRVs('v1/pods')).toEqual(fresh());
    }
    expect(store.latestRVs('v1/pods')).toEqual({ east: '9', north: '15' });
    await store.close();
  });

  it('drops a scope as DELETED events and forgets its sync state', async () => {
    const { store } = openStore();
    await store.commit(pods('east'), [change('east', 'a', 'p', '1')], { rv: '1' }, { log: false });
    const heard: string[] = [];
    store.subscribe('v1/pods', (events) => heard.push(...events.map((e) => `${e.type}:${e.name}`)));
    await store.dropScope(pods('east'));
    expect(heard).toEqual(['DELETED:p']);
    expect([...store.entries('v1/pods')]).toEqual([]);
    expect(store.syncState(pods('east'))).toBeUndefined();
    expect(store.latestRVs('v1/pods')).toEqual({});
    await store.close();
  });

  it.skipIf(!tmpfsMountable())('refuses writes on a nearly full volume instead of dying of SIGBUS, and writes again once space is free', async () => {
    const mnt = mkdtempSync(join(tmpdir(), 'flotilla-full-'));
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=48m', 'tmpfs', mnt]);
    try {
      // Space someone else holds on the volume, given back later.
      writeFileSync(join(mnt, 'filler'), Buffer.alloc(16 * 1024 ** 2));
      const store = Store.open(join(mnt, 'data'), { minFreeBytes: 8 * 1024 ** 2 });
      const ctx: IngestContext = { cluster: 'east', apiVersion: 'v1', kind: 'Pod', dropManagedFields: true };
      // 20 objects of ~100 KB per commit: a few commits fill what is left.
      const batch = (b: number): Change[] =>
        viewObjects(encodeObjects(Array.from({ length: 20 }, (_, i) => decodeObject({ metadata: { namespace: 'a', name: `p-${b}-${i}`, uid: `u-${b}-${i}`, resourceVersion: String(b), annotations: { pad: 'x'.repeat(100_000) } } }, ctx)))).map((o) => ({ type: 'ADDED', rv: String(b), ...o }));
      let written = 0;
      let refused: unknown;
      for (let b = 1; b <= 40 && refused === undefined; b++) {
        try {
          await store.commit(pods('east'), batch(b), { rv: String(b) }, { log: true });
          written = b;
        } catch (e) {
          refused = e;
        }
      }
      expect(refused).toBeInstanceOf(StoreFullError);
      expect((refused as Error).message).toMatch(/nearly full/);
      expect(written).toBeGreaterThan(0);
      // Everything acknowledged before the refusal is there, and nothing of the refused commit.
      expect([...store.entries('v1/pods')]).toHaveLength(written * 20);
      expect(store.syncState(pods('east'))?.rv).toBe(String(written));
      expect(store.health()).toMatchObject({ writable: false, full: { message: expect.stringMatching(/nearly full/) } });
      // A new store opens on a full volume (flotilla starts, not ready) and writes nothing, its format record included, until there is room.
      const another = Store.open(join(mnt, 'another'), { minFreeBytes: 8 * 1024 ** 2 });
      await expect(another.commit(pods('east'), batch(1), { rv: '1' }, { log: true })).rejects.toBeInstanceOf(StoreFullError);
      rmSync(join(mnt, 'filler'));
      await store.commit(pods('east'), batch(written + 1), { rv: String(written + 1) }, { log: true });
      expect(store.health()).toEqual({ writable: true });
      expect([...store.entries('v1/pods')]).toHaveLength((written + 1) * 20);
      await store.close();
      await another.commit(pods('east'), batch(1), { rv: '1' }, { log: true });
      await another.close();
      // The format record went with the first write: reopened, the store keeps what it holds.
      const reopened = Store.open(join(mnt, 'another'), { minFreeBytes: 1024 ** 2 });
      expect([...reopened.entries('v1/pods')]).toHaveLength(20);
      await reopened.close();
    } finally {
      execFileSync('umount', [mnt]);
      rmSync(mnt, { recursive: true, force: true });
    }
  });
});

describe('Store change events carry what a MODIFIED object was', () => {
  it('live and logged, also when the same object changes twice in one batch', async () => {
    const { store } = openStore();
    const seen: StoreEvent[] = [];
    const unsubscribe = store.subscribe('v1/pods', (evs) => seen.push(...evs));
    await store.commit(pods('east'), [change('east', 'a', 'p', '1', 'ADDED', { team: 'blue' })], { rv: '1' }, { log: true });
    await store.commit(pods('east'), [change('east', 'a', 'p', '2', 'MODIFIED', { team: 'red' }), change('east', 'a', 'p', '3', 'MODIFIED', { team: 'blue' })], { rv: '3' }, { log: true });
    const labelsOf = (b: Buffer | undefined) => (b ? decodeMeta(b).labels : undefined);
    expect(seen.map((e) => [e.type, labelsOf(e.prevMeta)?.['team']])).toEqual([['ADDED', undefined], ['MODIFIED', 'blue'], ['MODIFIED', 'red']]);
    expect([...store.logged('v1/pods')].map((e) => [e.type, labelsOf(e.prevMeta)?.['team']])).toEqual([['ADDED', undefined], ['MODIFIED', 'blue'], ['MODIFIED', 'red']]);
    // And the bytes it had, for a watch it leaves: the stored state, or the batch's earlier change.
    const teamOf = (b: Buffer | undefined) => (b ? (JSON.parse(b.toString()) as { metadata: { labels?: Record<string, string> } }).metadata.labels?.['team'] : undefined);
    expect(seen.map((e) => teamOf(e.prevBytes))).toEqual([undefined, 'blue', 'red']);
    expect([...store.logged('v1/pods')].map((e) => teamOf(e.prevBytes))).toEqual([undefined, 'blue', 'red']);
    // The label index followed both changes of the batch.
    expect([...store.keysLabelled('v1/pods', 'team', 'blue')]).toHaveLength(1);
    expect([...store.keysLabelled('v1/pods', 'team', 'red')]).toHaveLength(0);
    unsubscribe();
    await store.close();
  });
});
