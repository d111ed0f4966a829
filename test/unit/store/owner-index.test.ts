import { afterEach, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KEY_SEP, Store, type Change, type ChangeType } from '../../../src/store/store.js';
import { decodeObject } from '../../../src/ingest/decode.js';
import { encodeObjects, viewObjects } from '../../../src/ingest/batch.js';

/** The owner index: owners and uids entered in the label index at every commit, kept across a restart. */
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function newDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'flotilla-owners-'));
  dirs.push(dir);
  return dir;
}

const PODS = 'v1/pods';
const scope = { cluster: 'east', resource: PODS };
const rs = (uid: string) => ({ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: `rs-${uid}`, uid, controller: true });
const cm = (uid: string) => ({ apiVersion: 'v1', kind: 'ConfigMap', name: `cm-${uid}`, uid });

function pod(name: string, uid: string, owners: object[], type: ChangeType = 'ADDED', rv = '5'): Change {
  const o = viewObjects(encodeObjects([decodeObject({ metadata: { namespace: 'shop', name, uid, resourceVersion: rv, ownerReferences: owners } }, { cluster: 'east', apiVersion: 'v1', kind: 'Pod', dropManagedFields: true })]))[0]!;
  return { type, rv, ...o };
}

const names = (keys: Iterable<string>) => [...keys].map((k) => k.split(KEY_SEP)[2]);

describe('owner index', () => {
  it('enters every owner of an object and its own uid, and follows modifications and deletions', async () => {
    const store = Store.open(newDir());
    await store.commit(scope, [pod('p1', 'u1', [rs('r1'), cm('c1')]), pod('p2', 'u2', [rs('r1')]), pod('p3', 'u3', [])], { rv: '5' }, { log: false, fresh: true });
    expect(names(store.keysOwnedBy(PODS, 'apps/ReplicaSet/r1'))).toEqual(['p1', 'p2']);
    expect(names(store.keysOwnedBy(PODS, '/ConfigMap/c1'))).toEqual(['p1']);
    expect(names(store.keysWithUid(PODS, 'u3'))).toEqual(['p3']);
    expect(store.metaOf(PODS, { namespace: 'shop', name: 'p1', cluster: 'east' })?.owners).toEqual(['apps/ReplicaSet/r1', '/ConfigMap/c1']);
    expect(store.hasOwnersOfKind(PODS, 'apps/ReplicaSet')).toBe(true);
    expect(store.hasOwnersOfKind(PODS, 'apps/Deployment')).toBe(false);
    // A prefix of a kind is not that kind.
    expect(store.hasOwnersOfKind(PODS, 'apps/Replica')).toBe(false);

    // p1 adopted by r2 and released by c1; p2 deleted.
    await store.commit(scope, [pod('p1', 'u1', [rs('r2')], 'MODIFIED', '6'), pod('p2', 'u2', [rs('r1')], 'DELETED', '7')], { rv: '7' }, { log: true });
    expect(names(store.keysOwnedBy(PODS, 'apps/ReplicaSet/r1'))).toEqual([]);
    expect(names(store.keysOwnedBy(PODS, 'apps/ReplicaSet/r2'))).toEqual(['p1']);
    expect(names(store.keysOwnedBy(PODS, '/ConfigMap/c1'))).toEqual([]);
    expect(names(store.keysWithUid(PODS, 'u2'))).toEqual([]);
    expect(store.hasOwnersOfKind(PODS, '/ConfigMap')).toBe(false);
    await store.close();
  });

  it('keeps the entries through a restart (warm start reads what the last run wrote)', async () => {
    const dir = newDir();
    const first = Store.open(dir);
    await first.commit(scope, [pod('p1', 'u1', [rs('r1'), rs('r2')]), pod('p2', 'u2', [rs('r2')])], { rv: '5' }, { log: false, fresh: true });
    const before = [[...first.keysOwnedBy(PODS, 'apps/ReplicaSet/r2')], [...first.keysWithUid(PODS, 'u1')]];
    await first.close();
    const again = Store.open(dir);
    expect(again.health().rebuilt).toBeFalsy();
    expect([[...again.keysOwnedBy(PODS, 'apps/ReplicaSet/r2')], [...again.keysWithUid(PODS, 'u1')]]).toEqual(before);
    expect(names(again.keysOwnedBy(PODS, 'apps/ReplicaSet/r1'))).toEqual(['p1']);
    // A deletion after the restart removes what the previous run entered (worked out from the stored meta record).
    await again.commit(scope, [pod('p1', 'u1', [rs('r1'), rs('r2')], 'DELETED', '8')], { rv: '8' }, { log: true });
    expect(names(again.keysOwnedBy(PODS, 'apps/ReplicaSet/r1'))).toEqual([]);
    expect(names(again.keysOwnedBy(PODS, 'apps/ReplicaSet/r2'))).toEqual(['p2']);
    await again.close();
  });

  it('finds the namespaces holding a name from a cluster’s own index, and counts commits', async () => {
    const store = Store.open(newDir());
    expect(store.commitCount).toBe(0);
    await store.commit(scope, [pod('web', 'u1', []), pod('web-2', 'u2', [])], { rv: '5' }, { log: false, fresh: true });
    expect(store.commitCount).toBe(1);
    expect(store.namespacesOfName(PODS, 'east', 'web')).toEqual(['shop']);
    expect(store.namespacesOfName(PODS, 'east', 'eb')).toEqual([]);
    expect(store.namespacesOfName(PODS, 'west', 'web')).toEqual([]);
    await store.close();
  });
});
