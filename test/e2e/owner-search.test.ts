import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { findProjectRoot, type MemberInfo } from '../fleet/fleet.js';
import { memberJson, memberRequest } from '../fleet/http.js';
import { expectConverged } from '../support/compare.js';
import { startFlotillaProcess, type FlotillaProcess } from '../support/flotilla-process.js';

/**
 * Owner search on real objects: Deployments on two members, their ReplicaSets and pods made by the
 * members' controllers, cached by a flotilla process; then, flotilla stopped, its store opened in a
 * child process and asked through StoreOwnerSearch. What each owner term admits must be exactly
 * the pods whose ownerReferences chain, read from the member itself, reaches that Deployment.
 */
const NS = 'owner-search';
const fleet = inject('fleet');
const members: MemberInfo[] = fleet.members.slice(0, 2);
const [first, second] = members as [MemberInfo, MemberInfo];
const dir = join(fleet.dir, 'owner-search');
let flotilla: FlotillaProcess | undefined;

const RESOURCES = [
  { group: 'apps', version: 'v1', resource: 'deployments', namespaces: [NS] },
  { group: 'apps', version: 'v1', resource: 'replicasets', namespaces: [NS] },
  { version: 'v1', resource: 'pods', namespaces: [NS] },
];

const deployment = (name: string, replicas: number) => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name },
  spec: { replicas, selector: { matchLabels: { app: name } }, template: { metadata: { labels: { app: name } }, spec: { containers: [{ name, image: `example.com/${name}:1` }] } } },
});

interface Owned {
  metadata: { name: string; uid: string; ownerReferences?: { uid: string }[] };
}

/**
 * Opens the stopped flotilla's store and answers each query (an OwnerRef, clusters, namespace,
 * depth, the resource read) twice: by testing every stored object, and by the list plan, which
 * reads the owner index. Prints JSON: per query, both answers as member/name.
 */
const ASK_STORE = `
  const { Store } = await import('./dist/src/store/store.js');
  const { StoreOwnerSearch } = await import('./dist/src/view/owner-predicate.js');
  const { buildReadView, VIEW_STEPS } = await import('./dist/src/view/steps.js');
  const { planPage } = await import('./dist/src/mux/list-plan.js');
  const { SnapshotRegistry } = await import('./dist/src/mux/snapshots.js');
  const [dataDir, clustersJson, queriesJson] = process.argv.slice(-3);
  const clusters = JSON.parse(clustersJson);
  const store = Store.open(dataDir, { verify: false });
  const keys = ['apps/v1/deployments', 'apps/v1/replicasets', 'v1/pods'];
  const cached = keys.map((k) => ({ info: store.resourceInfo(k), clusters }));
  const catalog = { resource: (k) => cached[keys.indexOf(k)], cachedResources: () => cached };
  const search = new StoreOwnerSearch(store, catalog);
  const snapshots = new SnapshotRegistry(store);
  const answers = JSON.parse(queriesJson).map((q) => {
    const found = search.find(q.owner, q.clusters, q.namespace);
    if (found.length === 0) return null;
    const p = search.ownedBy(found, q.depth);
    const resource = catalog.resource(q.resource);
    const tested = [...store.entries(q.resource)].filter((e) => p.test(e, () => store.metaOf(q.resource, e))).map((e) => e.cluster + '/' + e.name).sort();
    const view = buildReadView({ resource, watching: false }, [...VIEW_STEPS, { name: 'owner', apply: (v) => v.require(p) }]);
    const plan = planPage(store, { resource, view, snapshots, caller: 'e2e' });
    const listed = plan.entries.map((e) => e.cluster + '/' + e.name).sort();
    return { tested, listed };
  });
  console.log(JSON.stringify(answers));
  snapshots.close();
  await store.close();
`;

beforeAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  for (const m of members) {
    const ns = await memberRequest(m, 'POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
    if (ns.status !== 201 && ns.status !== 409) throw new Error(`namespace on ${m.name}: ${ns.status}`);
    for (let i = 0; i < 100 && (await memberRequest(m, 'GET', `/api/v1/namespaces/${NS}/serviceaccounts/default`)).status !== 200; i++) await new Promise((r) => setTimeout(r, 100));
    // The same name on both members; a second Deployment beside it on the first.
    for (const d of m === first ? [deployment('web', 2), deployment('api', 1)] : [deployment('web', 2)]) await memberJson(m, 'POST', `/apis/apps/v1/namespaces/${NS}/deployments`, d);
  }
  flotilla = await startFlotillaProcess({ fleet, dir, members, resources: RESOURCES });
  // Every pod made (kwok runs them), and flotilla holding what the members hold.
  for (const m of members) {
    const want = m === first ? 3 : 2;
    for (let i = 0; i < 300 && (await memberJson<{ items: Owned[] }>(m, 'GET', `/api/v1/namespaces/${NS}/pods`)).items.length < want; i++) await new Promise((r) => setTimeout(r, 100));
  }
  for (const r of ['/apis/apps/v1/namespaces/owner-search/deployments', '/apis/apps/v1/namespaces/owner-search/replicasets', '/api/v1/namespaces/owner-search/pods']) {
    await expectConverged(flotilla.endpoint, members, r, 60_000);
  }
  await flotilla.stop();
  flotilla = undefined;
}, 180_000);

afterAll(async () => {
  await flotilla?.stop();
});

/** The member's own answer: its pods whose owners' owners include the Deployment `name`. */
async function podsOf(m: MemberInfo, name: string): Promise<{ uid: string; sets: string[]; pods: string[] }> {
  const d = await memberJson<Owned>(m, 'GET', `/apis/apps/v1/namespaces/${NS}/deployments/${name}`);
  const sets = (await memberJson<{ items: Owned[] }>(m, 'GET', `/apis/apps/v1/namespaces/${NS}/replicasets`)).items.filter((rs) => rs.metadata.ownerReferences?.some((o) => o.uid === d.metadata.uid));
  const setUids = new Set(sets.map((rs) => rs.metadata.uid));
  const pods = (await memberJson<{ items: Owned[] }>(m, 'GET', `/api/v1/namespaces/${NS}/pods`)).items.filter((p) => p.metadata.ownerReferences?.some((o) => setUids.has(o.uid)));
  return { uid: d.metadata.uid, sets: sets.map((rs) => `${m.name}/${rs.metadata.name}`), pods: pods.map((p) => `${m.name}/${p.metadata.name}`) };
}

describe('owner search over a store flotilla filled from real members', () => {
  it('admits exactly the pods a Deployment owns through its ReplicaSets, in its own member and namespace', async () => {
    const web1 = await podsOf(first, 'web');
    const web2 = await podsOf(second, 'web');
    const api = await podsOf(first, 'api');
    expect([web1.pods.length, web2.pods.length, api.pods.length]).toEqual([2, 2, 1]);
    const both = [first.name, second.name];
    const queries = [
      { owner: { kind: 'Deployment', name: 'web' }, clusters: [first.name], namespace: NS, resource: 'v1/pods' },
      { owner: { kind: 'Deployment', name: 'web' }, clusters: both, resource: 'v1/pods' },
      { owner: { uid: web1.uid }, clusters: both, namespace: NS, resource: 'v1/pods' },
      { owner: { kind: 'Deployment', name: 'web' }, clusters: [first.name], namespace: NS, depth: 1, resource: 'v1/pods' },
      { owner: { kind: 'Deployment', name: 'web' }, clusters: [first.name], namespace: NS, depth: 1, resource: 'apps/v1/replicasets' },
      { owner: { kind: 'Deployment', name: 'api' }, clusters: [second.name], namespace: NS, resource: 'v1/pods' },
    ];
    const run = spawnSync(process.execPath, ['--input-type=module', '-e', ASK_STORE, join(dir, 'data'), JSON.stringify(both), JSON.stringify(queries)], { cwd: findProjectRoot(), encoding: 'utf8' });
    expect(run.status, run.stderr).toBe(0);
    const answers = JSON.parse(run.stdout.trim().split('\n').at(-1)!) as ({ tested: string[]; listed: string[] } | null)[];
    const expected = [web1.pods, [...web1.pods, ...web2.pods], web1.pods, [], web1.sets].map((names) => [...names].sort());
    for (const [i, want] of expected.entries()) {
      expect(answers[i]?.tested, `query ${i} tested`).toEqual(want);
      expect(answers[i]?.listed, `query ${i} listed`).toEqual(want);
    }
    // api is not on the second member: not found.
    expect(answers[5]).toBeNull();
  });
});
