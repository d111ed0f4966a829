import { afterEach, describe, expect, it, vi } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Store, type Change } from '../../../src/store/store.js';
import { decodeObject } from '../../../src/ingest/decode.js';
import { encodeObjects, viewObjects } from '../../../src/ingest/batch.js';
import type { CachedResource, ResourceCatalog } from '../../../src/cacher/cache-roles.js';
import { gvrKey } from '../../../src/api/resource-info.js';
import { StoreOwnerSearch } from '../../../src/view/owner-predicate.js';
import type { ObjectPredicate } from '../../../src/view/read-view.js';
import type { OwnerRef } from '../../../src/view/owner-search.js';
import { buildReadView, VIEW_STEPS } from '../../../src/view/steps.js';
import { planPage } from '../../../src/mux/list-plan.js';
import { SnapshotRegistry } from '../../../src/mux/snapshots.js';

/** The owner term's predicate as the router and the step make it: the owners found, then what they own; null when none is found. */
function owned(search: StoreOwnerSearch, owner: OwnerRef, clusters: readonly string[], namespace: string | undefined, depth: number | undefined) {
  const found = search.find(owner, clusters, namespace);
  return found.length === 0 ? null : search.ownedBy(found, depth);
}

/**
 * Owner search over a store: Deployments own ReplicaSets own Pods, in two members and two
 * namespaces, with a cycle and a uid two members share (one restored from the other's backup).
 */
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const CLUSTERS = ['east', 'west'];
function resource(group: string, resource: string, kind: string): CachedResource {
  const info = { group, version: 'v1', resource, kind, namespaced: true, singularName: kind.toLowerCase(), shortNames: [], categories: [], memberVerbs: [] };
  return { info, clusters: CLUSTERS };
}
const DEPLOYMENTS = resource('apps', 'deployments', 'Deployment');
const REPLICASETS = resource('apps', 'replicasets', 'ReplicaSet');
const PODS = resource('', 'pods', 'Pod');
const CONFIGMAPS = resource('', 'configmaps', 'ConfigMap');

type Kinded = { r: CachedResource; cluster: string; namespace: string; name: string; uid: string; owners?: Kinded[] };

function changeOf(o: Kinded): Change {
  const { info } = o.r;
  const ownerReferences = (o.owners ?? []).map((w) => ({ apiVersion: w.r.info.group ? `${w.r.info.group}/v1` : 'v1', kind: w.r.info.kind, name: w.name, uid: w.uid }));
  const ctx = { cluster: o.cluster, apiVersion: info.group ? `${info.group}/v1` : 'v1', kind: info.kind, dropManagedFields: true };
  const enc = viewObjects(encodeObjects([decodeObject({ metadata: { namespace: o.namespace, name: o.name, uid: o.uid, resourceVersion: '5', ownerReferences } }, ctx)]))[0]!;
  return { type: 'ADDED', rv: '5', ...enc };
}

async function put(store: Store, ...objects: Kinded[]): Promise<void> {
  for (const o of objects) await store.commit({ cluster: o.cluster, resource: gvrKey(o.r.info) }, [changeOf(o)], { rv: '5' }, { log: true });
}

/** One member's Deployment `web` in a namespace: two ReplicaSets, two pods each; uids spelled from where they are. */
function deployment(cluster: string, namespace: string, uid = `${cluster}-${namespace}-web`) {
  const d: Kinded = { r: DEPLOYMENTS, cluster, namespace, name: 'web', uid };
  const sets = [1, 2].map((i): Kinded => ({ r: REPLICASETS, cluster, namespace, name: `web-${i}`, uid: `${uid}-rs${i}`, owners: [d] }));
  const pods = sets.flatMap((rs, i) => [1, 2].map((j): Kinded => ({ r: PODS, cluster, namespace, name: `web-${i + 1}-${j}`, uid: `${rs.uid}-p${j}`, owners: [rs] })));
  return { d, sets, pods, all: [d, ...sets, ...pods] };
}

async function fleet() {
  const dir = mkdtempSync(join(tmpdir(), 'flotilla-owner-search-'));
  dirs.push(dir);
  const store = Store.open(dir);
  const east = deployment('east', 'shop');
  const west = deployment('west', 'shop');
  const other = deployment('east', 'other');
  // Not anything's: a pod with no owner, and one whose owner is not cached.
  const loose: Kinded = { r: PODS, cluster: 'east', namespace: 'shop', name: 'loose', uid: 'loose' };
  const orphan: Kinded = { r: PODS, cluster: 'east', namespace: 'shop', name: 'orphan', uid: 'orphan', owners: [{ r: REPLICASETS, cluster: 'east', namespace: 'shop', name: 'gone', uid: 'gone' }] };
  await put(store, ...east.all, ...west.all, ...other.all, loose, orphan);
  const catalog: ResourceCatalog = {
    resource: (key) => [DEPLOYMENTS, REPLICASETS, PODS, CONFIGMAPS].find((r) => gvrKey(r.info) === key),
    cachedResources: () => [DEPLOYMENTS, REPLICASETS, PODS, CONFIGMAPS],
  };
  return { store, search: new StoreOwnerSearch(store, catalog), east, west, other, loose, orphan };
}

const admits = (store: Store, p: ObjectPredicate, o: Kinded) => p.test(o, () => store.metaOf(gvrKey(o.r.info), o));
const admitted = (store: Store, p: ObjectPredicate, objects: Kinded[]) => objects.filter((o) => admits(store, p, o)).map((o) => `${o.cluster}/${o.namespace}/${o.name}`);

describe('owner search', () => {
  it('follows every level by default, direct children only at depth 1', async () => {
    const { store, search, east } = await fleet();
    const every = owned(search, { kind: 'Deployment', name: 'web' }, ['east'], 'shop', undefined)!;
    expect(admitted(store, every, east.all)).toEqual([...east.sets, ...east.pods].map((o) => `east/shop/${o.name}`));
    const direct = owned(search, { kind: 'Deployment', name: 'web' }, ['east'], 'shop', 1)!;
    expect(admitted(store, direct, east.all)).toEqual(east.sets.map((o) => `east/shop/${o.name}`));
    const two = owned(search, { uid: east.d.uid }, ['east'], 'shop', 2)!;
    expect(admitted(store, two, east.pods)).toHaveLength(4);
    expect([every.name, direct.name]).toEqual(['owner:east/east-shop-web:8', 'owner:east/east-shop-web:1']);
    expect(every.needsMeta).toBe(true);
    await store.close();
  });

  it('keeps to the owner’s member and namespace: another member’s or namespace’s namesake owns nothing here', async () => {
    const { store, search, east, west, other, loose, orphan } = await fleet();
    const everything = [...east.all, ...west.all, ...other.all, loose, orphan];
    const eastShop = owned(search, { kind: 'deployment', name: 'web' }, ['east'], 'shop', undefined)!;
    expect(admitted(store, eastShop, everything)).toHaveLength(6);
    expect(admitted(store, eastShop, [...west.all, ...other.all, loose, orphan])).toEqual([]);
    // Several namesakes: each owns its own, in its member and namespace.
    const all = owned(search, { kind: 'Deployment.apps', name: 'web' }, CLUSTERS, undefined, undefined)!;
    expect(admitted(store, all, everything)).toHaveLength(18);
    // A pod of east/shop claiming an owner of east/other is not other's dependent here.
    const stray: Kinded = { r: PODS, cluster: 'east', namespace: 'shop', name: 'stray', uid: 'stray', owners: [other.sets[0]!] };
    await put(store, stray);
    expect(admits(store, all, stray)).toBe(false);
    // The clusters given bound where the owner is looked for.
    expect(owned(search, { uid: west.d.uid }, ['east'], undefined, undefined)).toBeNull();
    expect(owned(search, { kind: 'Deployment', name: 'web' }, ['east'], 'nowhere', undefined)).toBeNull();
    expect(owned(search, { kind: 'Service', name: 'web' }, CLUSTERS, 'shop', undefined)).toBeNull();
    // By uid, in another namespace than the one read: not found there.
    expect(owned(search, { uid: other.d.uid }, ['east'], 'shop', undefined)).toBeNull();
    await store.close();
  });

  it('matches a uid only in the member where the owner was found, when two members share it', async () => {
    const { store, search } = await fleet();
    const a = deployment('east', 'twin', 'shared-uid');
    const b = deployment('west', 'twin', 'shared-uid');
    await put(store, ...a.all, ...b.all);
    const eastOnly = owned(search, { uid: 'shared-uid' }, ['east'], undefined, undefined)!;
    expect(admitted(store, eastOnly, [...a.pods, ...b.pods])).toEqual(a.pods.map((p) => `east/twin/${p.name}`));
    const both = owned(search, { uid: 'shared-uid' }, CLUSTERS, undefined, undefined)!;
    expect(admitted(store, both, [...a.pods, ...b.pods])).toHaveLength(8);
    await store.close();
  });

  it('ends on a cycle of owner references', async () => {
    const { store, search } = await fleet();
    const x: Kinded = { r: CONFIGMAPS, cluster: 'east', namespace: 'loop', name: 'x', uid: 'x' };
    const y: Kinded = { r: CONFIGMAPS, cluster: 'east', namespace: 'loop', name: 'y', uid: 'y', owners: [x] };
    x.owners = [y];
    const z: Kinded = { r: CONFIGMAPS, cluster: 'east', namespace: 'loop', name: 'z', uid: 'z', owners: [y] };
    const unrelated: Kinded = { r: CONFIGMAPS, cluster: 'east', namespace: 'loop', name: 'u', uid: 'u' };
    await put(store, x, y, z, unrelated);
    const ofX = owned(search, { uid: 'x' }, ['east'], 'loop', undefined)!;
    expect(admitted(store, ofX, [x, y, z, unrelated])).toEqual(['east/loop/x', 'east/loop/y', 'east/loop/z']);
    const ofU = owned(search, { uid: 'u' }, ['east'], 'loop', undefined)!;
    expect(admitted(store, ofU, [x, y, z])).toEqual([]);
    // The walk down comes back to x and stops there.
    expect(ofX.indexLookup!('v1/configmaps')!.values.sort()).toEqual(['/ConfigMap/x', '/ConfigMap/y', '/ConfigMap/z']);
    await store.close();
  });

  it('admits a dependent that appears after the predicate was made (a new ReplicaSet’s pod, on a watch)', async () => {
    const { store, search, east } = await fleet();
    const p = owned(search, { kind: 'Deployment', name: 'web' }, ['east'], 'shop', undefined)!;
    const rs3: Kinded = { r: REPLICASETS, cluster: 'east', namespace: 'shop', name: 'web-3', uid: 'rs3', owners: [east.d] };
    const pod: Kinded = { r: PODS, cluster: 'east', namespace: 'shop', name: 'web-3-1', uid: 'rs3-p1', owners: [rs3] };
    await put(store, pod);
    // Its ReplicaSet not cached yet: not known to be the Deployment's.
    expect(admits(store, p, pod)).toBe(false);
    await put(store, rs3);
    expect(admits(store, p, pod)).toBe(true);
    await store.close();
  });

  it('finds a dependent committed before its owner (a pod before its ReplicaSet), in lists and by the predicate', async () => {
    const { store, search } = await fleet();
    const snapshots = new SnapshotRegistry(store);
    const d: Kinded = { r: DEPLOYMENTS, cluster: 'west', namespace: 'late', name: 'api', uid: 'late-d' };
    const rs: Kinded = { r: REPLICASETS, cluster: 'west', namespace: 'late', name: 'api-1', uid: 'late-rs', owners: [d] };
    const pod: Kinded = { r: PODS, cluster: 'west', namespace: 'late', name: 'api-1-1', uid: 'late-p', owners: [rs] };
    await put(store, pod);
    await put(store, rs);
    await put(store, d);
    const p = owned(search, { kind: 'Deployment', name: 'api' }, CLUSTERS, 'late', undefined)!;
    expect(admits(store, p, pod)).toBe(true);
    const view = buildReadView({ resource: PODS, watching: false, namespace: 'late' }, [...VIEW_STEPS, { name: 'owner', apply: (v) => v.require(p) }]);
    expect(planPage(store, { resource: PODS, view, snapshots, caller: 'c' }).entries.map((e) => e.name)).toEqual(['api-1-1']);
    snapshots.close();
    await store.close();
  });

  it('narrows a list to what the owner’s descendants own, with the same answer as a scan', async () => {
    const { store, search, east } = await fleet();
    const snapshots = new SnapshotRegistry(store);
    const list = (p: ObjectPredicate | null) => {
      const view = buildReadView({ resource: PODS, watching: false }, [...VIEW_STEPS, { name: 'owner', apply: (v) => v.require(p!) }]);
      const plan = planPage(store, { resource: PODS, view, snapshots, caller: 'c' });
      return plan.entries.map((e) => `${e.cluster}/${e.namespace}/${e.name}`);
    };
    const every = owned(search, { kind: 'Deployment', name: 'web' }, CLUSTERS, 'shop', undefined)!;
    expect(every.indexLookup!(gvrKey(PODS.info))!.values).toHaveLength(4);
    const scan = [...store.entries(gvrKey(PODS.info))].filter((e) => every.test(e, () => store.metaOf(gvrKey(PODS.info), e))).map((e) => `${e.cluster}/${e.namespace}/${e.name}`);
    // From the index: the resource's range is not read.
    const ranges = vi.spyOn(store, 'entries');
    expect(list(every)).toEqual(scan);
    expect(ranges).not.toHaveBeenCalled();
    ranges.mockRestore();
    expect(scan).toHaveLength(8);
    // Depth 1: the Deployment owns no pod directly; its ReplicaSets are not looked for.
    const direct = owned(search, { uid: east.d.uid }, ['east'], 'shop', 1)!;
    expect(direct.indexLookup!(gvrKey(PODS.info))!.values).toEqual([]);
    expect(list(direct)).toEqual([]);
    snapshots.close();
    await store.close();
  });
});
