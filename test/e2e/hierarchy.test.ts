import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { join } from 'node:path';
import type { MemberInfo } from '../fleet/fleet.js';
import { memberRequest } from '../fleet/http.js';
import { DEFAULT_RESOURCES, startFlotillaProcess, type FlotillaProcess } from '../support/flotilla-process.js';
import { kubectl, kubectlSession } from '../support/kubectl.js';
import { until } from '../support/poll.js';
import { openWatch, type WatchEvent } from '../support/watch-client.js';
import { clientsDir, startInformer } from '../support/informer.js';
import { decodeGlobalRV } from '../../src/api/global-rv.js';

/**
 * Hierarchy selectors on the real fleet. The tree `hy-team-a → {hy-a-1 → hy-a-1-x, hy-a-2}` is
 * made with HNC's subnamespace annotation on east and west; north has `hy-team-a` and an
 * `hy-a-1` of its own that is a root (the same name, another tree: it must not be selected).
 * Every namespace holds a pod on every member that has it, named after both (a client's cache
 * keys objects by namespace and name, so names differ from member to member).
 */
const fleet = inject('fleet');
const [east, west, north] = fleet.members as [MemberInfo, MemberInfo, MemberInfo];
const CLUSTER = 'search.flotilla.io/cluster';
const SUB = 'hnc.x-k8s.io/subnamespace-of';
const TEAM = 'hy-team-a.tree.hnc.x-k8s.io/depth';
const TREE: Record<string, string | undefined> = { 'hy-team-a': undefined, 'hy-a-1': 'hy-team-a', 'hy-a-1-x': 'hy-a-1', 'hy-a-2': 'hy-team-a', 'hy-other': undefined };
/** Every namespace the test makes somewhere. */
const EXTRA = [...Object.keys(TREE), 'hy-c1', 'hy-c2', 'hy-hc', 'hy-orphan', 'hy-late'];
let flotilla: FlotillaProcess;
const HC_CRD = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'hierarchyconfigurations.hnc.x-k8s.io' },
  spec: {
    group: 'hnc.x-k8s.io',
    scope: 'Namespaced',
    names: { plural: 'hierarchyconfigurations', singular: 'hierarchyconfiguration', kind: 'HierarchyConfiguration' },
    versions: [{ name: 'v1alpha2', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', properties: { spec: { type: 'object', properties: { parent: { type: 'string' } } } } } } }],
  },
};

interface Pod {
  metadata: { name: string; namespace: string; uid: string; resourceVersion: string; annotations?: Record<string, string> };
}
interface List<T> {
  metadata: { resourceVersion: string; continue?: string; remainingItemCount?: number };
  items: T[];
}

async function must(m: MemberInfo, method: string, path: string, body?: unknown, contentType?: string): Promise<void> {
  const res = await memberRequest(m, method, path, body, { contentType });
  if (res.status >= 300 && !(method === 'POST' && res.status === 409)) throw new Error(`${m.name}: ${method} ${path}: ${res.status} ${res.body.slice(0, 300)}`);
}

const namespace = (name: string, parent?: string) => ({ apiVersion: 'v1', kind: 'Namespace', metadata: { name, ...(parent ? { annotations: { [SUB]: parent } } : {}) } });
const pod = (name: string, labels: Record<string, string> = {}) => ({ apiVersion: 'v1', kind: 'Pod', metadata: { name, labels }, spec: { containers: [{ name: 'c', image: 'example.com/i:1' }] } });
const reparent = (m: MemberInfo, ns: string, parent: string | null) => must(m, 'PATCH', `/api/v1/namespaces/${ns}`, { metadata: { annotations: { [SUB]: parent } } }, 'application/merge-patch+json');

/** What a selection must hold: `cluster/namespace/name` of the pods in those namespaces of those members. */
function podsOf(spec: Record<string, string[]>): string[] {
  return Object.entries(spec).flatMap(([cluster, nss]) => nss.map((ns) => `${cluster}/${ns}/p-${ns}-${cluster}`)).sort();
}
const keyOf = (p: Pod) => `${p.metadata.annotations![CLUSTER]}/${p.metadata.namespace ?? ''}/${p.metadata.name}`;

async function list(path: string): Promise<{ list: List<Pod>; warnings: string[] }> {
  const res = await memberRequest(flotilla.endpoint, 'GET', path);
  if (res.status !== 200) throw new Error(`GET ${path}: ${res.status} ${res.body.slice(0, 300)}`);
  const w = res.headers['warning'];
  return { list: JSON.parse(res.body) as List<Pod>, warnings: w === undefined ? [] : Array.isArray(w) ? w : [w] };
}
/** Until flotilla shows east's hy-a-1-x under hy-team-a again (after a test moved and restored it). */
async function restored(): Promise<void> {
  await until('east hy-a-1-x back under hy-team-a', async () => {
    const res = await memberRequest(flotilla.endpoint, 'GET', `/clusters/${east.name}/api/v1/namespaces/hy-a-1-x`);
    return res.status === 200 && (JSON.parse(res.body) as { metadata: { labels?: Record<string, string> } }).metadata.labels?.['hy-team-a.tree.hnc.x-k8s.io/depth'] === '2';
  });
}
const selected = async (selector: string, base = '/api/v1/pods') => (await list(`${base}?labelSelector=${encodeURIComponent(selector)}`)).list.items.map(keyOf).sort();

/** A namespace a previous run deleted may still be terminating: wait until it is gone. */
async function gone(m: MemberInfo, ns: string): Promise<void> {
  await until(`${m.name}: ${ns} not terminating`, async () => {
    const res = await memberRequest(m, 'GET', `/api/v1/namespaces/${ns}`);
    return res.status === 404 || (JSON.parse(res.body) as { status?: { phase?: string } }).status?.phase !== 'Terminating';
  }, 120_000);
}

beforeAll(async () => {
  for (const m of fleet.members) for (const ns of EXTRA) await gone(m, ns);
  for (const m of [east, west]) {
    for (const [ns, parent] of Object.entries(TREE)) {
      await must(m, 'POST', '/api/v1/namespaces', namespace(ns, parent));
      await until(`${m.name}: ${ns}'s default service account`, async () => (await memberRequest(m, 'GET', `/api/v1/namespaces/${ns}/serviceaccounts/default`)).status === 200);
      await must(m, 'POST', `/api/v1/namespaces/${ns}/pods`, pod(`p-${ns}-${m.name}`, ns === 'hy-a-2' ? { app: 'web' } : {}));
    }
  }
  for (const ns of ['hy-team-a', 'hy-a-1']) {
    await must(north, 'POST', '/api/v1/namespaces', namespace(ns));
    await until(`north: ${ns}'s default service account`, async () => (await memberRequest(north, 'GET', `/api/v1/namespaces/${ns}/serviceaccounts/default`)).status === 200);
    await must(north, 'POST', `/api/v1/namespaces/${ns}/pods`, pod(`p-${ns}-${north.name}`));
  }
  // HierarchyConfigurations (HNC's CRD) on east: a namespace's configured parent.
  const crd = await memberRequest(east, 'POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', HC_CRD);
  if (crd.status !== 201 && crd.status !== 409) throw new Error(`CRD: ${crd.status} ${crd.body}`);
  await until('east serves hierarchyconfigurations', async () => (await memberRequest(east, 'GET', '/apis/hnc.x-k8s.io/v1alpha2/hierarchyconfigurations')).status === 200);
  flotilla = await startFlotillaProcess({
    fleet,
    dir: join(fleet.dir, 'flotilla-hierarchy'),
    resources: [...DEFAULT_RESOURCES, { group: 'hnc.x-k8s.io', version: 'v1alpha2', resource: 'hierarchyconfigurations', clusters: [east.name] }],
  });
}, 300_000);

afterAll(async () => {
  await flotilla?.stop();
  for (const m of fleet.members) for (const ns of EXTRA) await memberRequest(m, 'DELETE', `/api/v1/namespaces/${ns}`);
  await memberRequest(east, 'DELETE', `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${HC_CRD.metadata.name}`);
});

const SUBTREE = ['hy-team-a', 'hy-a-1', 'hy-a-1-x', 'hy-a-2'];

describe('a hierarchy selector on a list', () => {
  it('selects the subtree in every member, by each member’s own tree', async () => {
    expect(await selected(TEAM)).toEqual(podsOf({ [east.name]: SUBTREE, [west.name]: SUBTREE, [north.name]: ['hy-team-a'] }));
    expect(await selected('hy-a-1.tree.hnc.x-k8s.io/depth')).toEqual(podsOf({ [east.name]: ['hy-a-1', 'hy-a-1-x'], [west.name]: ['hy-a-1', 'hy-a-1-x'], [north.name]: ['hy-a-1'] }));
  });

  it('by depth, negated, and with ordinary label and field selectors', async () => {
    expect(await selected(`${TEAM} in (0,1)`)).toEqual(podsOf({ [east.name]: ['hy-team-a', 'hy-a-1', 'hy-a-2'], [west.name]: ['hy-team-a', 'hy-a-1', 'hy-a-2'], [north.name]: ['hy-team-a'] }));
    expect(await selected(`${TEAM}=2`)).toEqual(podsOf({ [east.name]: ['hy-a-1-x'], [west.name]: ['hy-a-1-x'] }));
    expect(await selected(`${TEAM}!=0,${TEAM}`)).toEqual(podsOf({ [east.name]: ['hy-a-1', 'hy-a-1-x', 'hy-a-2'], [west.name]: ['hy-a-1', 'hy-a-1-x', 'hy-a-2'] }));
    // Everything but the subtree: among this test's namespaces, hy-other everywhere and north's own hy-a-1.
    const outside = (await selected(`!${TEAM}`)).filter((k) => k.split('/')[1]!.startsWith('hy-'));
    expect(outside).toEqual(podsOf({ [east.name]: ['hy-other'], [west.name]: ['hy-other'], [north.name]: ['hy-a-1'] }));
    expect(await selected(`${TEAM},app=web`)).toEqual(podsOf({ [east.name]: ['hy-a-2'], [west.name]: ['hy-a-2'] }));
    const fielded = (await list(`/api/v1/pods?labelSelector=${encodeURIComponent(TEAM)}&fieldSelector=${encodeURIComponent('metadata.namespace=hy-a-1')}`)).list.items.map(keyOf).sort();
    expect(fielded).toEqual(podsOf({ [east.name]: ['hy-a-1'], [west.name]: ['hy-a-1'] }));
    // In one namespace and under one member's path too.
    expect(await selected(TEAM, '/api/v1/namespaces/hy-a-1/pods')).toEqual(podsOf({ [east.name]: ['hy-a-1'], [west.name]: ['hy-a-1'] }));
    expect(await selected(TEAM, `/clusters/${north.name}/api/v1/pods`)).toEqual(podsOf({ [north.name]: ['hy-team-a'] }));
  });

  it('pages within the selection: limit, continue and remainingItemCount right', async () => {
    const whole = await selected(TEAM);
    const seen: string[] = [];
    let token: string | undefined;
    let pages = 0;
    do {
      const { list: page } = await list(`/api/v1/pods?labelSelector=${encodeURIComponent(TEAM)}&limit=3${token ? `&continue=${encodeURIComponent(token)}` : ''}`);
      expect(page.items.length).toBeLessThanOrEqual(3);
      seen.push(...page.items.map(keyOf));
      if (page.metadata.remainingItemCount !== undefined) expect(page.metadata.remainingItemCount + seen.length).toBe(whole.length);
      token = page.metadata.continue;
      expect(++pages).toBeLessThan(20);
    } while (token);
    expect(seen.sort()).toEqual(whole);
  });

  it('kubectl get pods -A -l and get ns -l list what the tree selects', async () => {
    const pods = await kubectl(flotilla.kubeconfig, ['get', 'pods', '-A', '-l', TEAM, '--no-headers']);
    expect(pods.code, pods.stderr).toBe(0);
    // NAMESPACE, NAME, CLUSTER, …
    const rows = pods.stdout.trim().split('\n').map((l) => l.split(/\s+/)).map(([ns, name, cluster]) => `${cluster}/${ns}/${name}`).sort();
    expect(rows).toEqual(podsOf({ [east.name]: SUBTREE, [west.name]: SUBTREE, [north.name]: ['hy-team-a'] }));
    const nss = await kubectl(flotilla.kubeconfig, ['get', 'ns', '-l', `${TEAM} in (1,2)`, '--no-headers']);
    expect(nss.code, nss.stderr).toBe(0);
    // NAME, CLUSTER, …
    expect(nss.stdout.trim().split('\n').map((l) => l.split(/\s+/)).map(([name, cluster]) => `${cluster}/${name}`).sort()).toEqual(
      [east.name, west.name].flatMap((c) => ['hy-a-1', 'hy-a-1-x', 'hy-a-2'].map((ns) => `${c}/${ns}`)).sort(),
    );
  });
});

describe('a hierarchy selector on a watch', () => {
  const moved = (events: WatchEvent[], type: string, cluster: string, ns: string) => events.some((e) => e.type === type && e.object.metadata?.namespace === ns && e.object.metadata.annotations?.[CLUSTER] === cluster);

  it('follows the tree: a namespace moved away is DELETED, moved back ADDED; a resumed watch replays it', async () => {
    const path = `/api/v1/pods?labelSelector=${encodeURIComponent(TEAM)}`;
    const before = (await list(path)).list;
    const w = await openWatch(flotilla.endpoint, `${path}&watch=1&resourceVersion=${before.metadata.resourceVersion}&timeoutSeconds=60`);
    try {
      await reparent(east, 'hy-a-2', 'hy-other');
      await w.until((es) => moved(es, 'DELETED', east.name, 'hy-a-2'));
      expect(await selected(TEAM)).toEqual(podsOf({ [east.name]: ['hy-team-a', 'hy-a-1', 'hy-a-1-x'], [west.name]: SUBTREE, [north.name]: ['hy-team-a'] }));
      // Resumed from before the move: replayed as selected then, then told what left.
      const resumed = await openWatch(flotilla.endpoint, `${path}&watch=1&resourceVersion=${before.metadata.resourceVersion}&timeoutSeconds=60`);
      try {
        await resumed.until((es) => moved(es, 'DELETED', east.name, 'hy-a-2'));
      } finally {
        resumed.close();
      }
      await reparent(east, 'hy-a-2', 'hy-team-a');
      await w.until((es) => moved(es, 'ADDED', east.name, 'hy-a-2'));
      // Only what moved, only once each way.
      const seen = w.events.filter((e) => e.type !== 'BOOKMARK').map((e) => `${e.type} ${e.object.metadata!.annotations![CLUSTER]}/${e.object.metadata!.namespace}/${e.object.metadata!.name}`);
      expect(seen).toEqual([`DELETED ${east.name}/hy-a-2/p-hy-a-2-${east.name}`, `ADDED ${east.name}/hy-a-2/p-hy-a-2-${east.name}`]);
      // Each event's RV resumes after it.
      const last = w.events.filter((e) => e.type === 'ADDED').at(-1)!;
      expect(decodeGlobalRV(last.object.metadata!.resourceVersion!)[east.name]).toMatch(/^[0-9]+$/);
    } finally {
      w.close();
    }
  });

  it('a parent that comes after its child: a watch resumed from before it came is told the child entered', async () => {
    const LATE = 'hy-late.tree.hnc.x-k8s.io/depth';
    await must(west, 'POST', '/api/v1/namespaces', namespace('hy-orphan', 'hy-late'));
    await until('west: hy-orphan default service account', async () => (await memberRequest(west, 'GET', '/api/v1/namespaces/hy-orphan/serviceaccounts/default')).status === 200);
    await must(west, 'POST', '/api/v1/namespaces/hy-orphan/pods', pod(`p-hy-orphan-${west.name}`));
    const path = `/api/v1/pods?labelSelector=${encodeURIComponent(LATE)}`;
    await until('hy-orphan pod cached', async () => (await selected('hy-orphan.tree.hnc.x-k8s.io/depth')).length === 1);
    // Its parent is missing: hy-orphan is a root, and nothing is under hy-late.
    const before = (await list(path)).list;
    expect(before.items).toEqual([]);
    await must(west, 'POST', '/api/v1/namespaces', namespace('hy-late'));
    await until('hy-orphan under hy-late', async () => (await selected(LATE)).length === 1);
    const resumed = await openWatch(flotilla.endpoint, `${path}&watch=1&resourceVersion=${before.metadata.resourceVersion}&timeoutSeconds=60`);
    try {
      await resumed.until((es) => moved(es, 'ADDED', west.name, 'hy-orphan'));
    } finally {
      resumed.close();
    }
  });

  it('kubectl get pods -A -w -l shows the moves as they happen', async () => {
    const session = kubectlSession(flotilla.kubeconfig, ['get', 'pods', '-A', '-w', '-l', TEAM, '--output-watch-events']);
    try {
      await session.waitForOutput(new RegExp(`p-hy-a-1-x-${west.name}`), 20_000);
      await reparent(west, 'hy-a-1', null);
      // EVENT, NAMESPACE, NAME, CLUSTER, …
      await session.waitForOutput(new RegExp(`DELETED\\s+hy-a-1-x\\s+p-hy-a-1-x-${west.name}\\s+${west.name}\\s`), 20_000);
      await reparent(west, 'hy-a-1', 'hy-team-a');
      await session.waitForOutput(new RegExp(`DELETED\\s+hy-a-1-x\\s+p-hy-a-1-x-${west.name}\\s+${west.name}\\s[\\s\\S]*ADDED\\s+hy-a-1-x\\s+p-hy-a-1-x-${west.name}\\s+${west.name}\\s`), 20_000);
    } finally {
      await session.stop();
    }
  });

  it('a client-go informer with the selector converges through moves with no relist', async () => {
    const run = startInformer({ bin: join(clientsDir(), 'informer'), kubeconfig: flotilla.kubeconfig, mode: 'informer', watchList: false, selector: TEAM });
    await run.synced;
    await reparent(east, 'hy-a-1', 'hy-other');
    await must(east, 'POST', '/api/v1/namespaces/hy-a-1-x/pods', pod('p-late'));
    await until('flotilla to drop east hy-a-1', async () => !(await selected(TEAM)).includes(`${east.name}/hy-a-1/p-hy-a-1-${east.name}`));
    await reparent(east, 'hy-a-1', 'hy-team-a');
    await until('flotilla to show east hy-a-1 again', async () => (await selected(TEAM)).includes(`${east.name}/hy-a-1-x/p-late`));
    // Away again, so that the end state tells an informer that heard the moves from one that did not.
    await reparent(east, 'hy-a-1', 'hy-other');
    await until('flotilla to drop east hy-a-1 again', async () => !(await selected(TEAM)).includes(`${east.name}/hy-a-1-x/p-late`));
    const fresh = (await list(`/api/v1/pods?labelSelector=${encodeURIComponent(TEAM)}`)).list.items.map((p) => `${p.metadata.namespace}/${p.metadata.name} ${p.metadata.uid} ${p.metadata.annotations![CLUSTER]}:${decodeGlobalRV(p.metadata.resourceVersion)[p.metadata.annotations![CLUSTER]!]}`).sort();
    await new Promise((r) => setTimeout(r, 500));
    const { lines, lists, log } = await run.dump();
    expect(lines).toEqual(fresh);
    expect(lists).toBe(1);
    expect(log).not.toMatch(/falling back|unable to decode|Failed to watch|failed to list|Unhandled Error/i);
    await reparent(east, 'hy-a-1', 'hy-team-a');
    await restored();
  });
});

describe('namespaces as flotilla shows them', () => {
  const labelsOf = async (path: string, accept?: string) => {
    const res = await memberRequest(flotilla.endpoint, 'GET', path, undefined, accept ? { accept } : {});
    expect(res.status, res.body).toBe(200);
    return res.body;
  };
  const depth = (ancestor: string) => `${ancestor}.tree.hnc.x-k8s.io/depth`;

  it('carry their tree labels in every form: object, list, Table, PartialObjectMetadata, kubectl --show-labels', async () => {
    const want = { [depth('hy-a-1-x')]: '0', [depth('hy-a-1')]: '1', [depth('hy-team-a')]: '2', 'kubernetes.io/metadata.name': 'hy-a-1-x' };
    const own = JSON.parse(await labelsOf(`/clusters/${east.name}/api/v1/namespaces/hy-a-1-x`)) as { metadata: { labels: Record<string, string> } };
    expect(own.metadata.labels).toEqual(want);
    const partial = JSON.parse(await labelsOf(`/clusters/${east.name}/api/v1/namespaces/hy-a-1-x`, 'application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io')) as { metadata: { labels: Record<string, string> } };
    expect(partial.metadata.labels).toEqual(want);
    const listed = JSON.parse(await labelsOf('/api/v1/namespaces')) as List<{ metadata: { name: string; labels: Record<string, string>; annotations: Record<string, string> } }>;
    const northA1 = listed.items.find((n) => n.metadata.name === 'hy-a-1' && n.metadata.annotations[CLUSTER] === north.name)!;
    // North's hy-a-1 is alone there (no parent, no children): shown as stored, as the member has it.
    expect(northA1.metadata.labels).toEqual({ 'kubernetes.io/metadata.name': 'hy-a-1' });
    const table = JSON.parse(await labelsOf(`/clusters/${west.name}/api/v1/namespaces/hy-a-2`, 'application/json;as=Table;v=v1;g=meta.k8s.io')) as { rows: { object: { metadata: { labels: Record<string, string> } } }[] };
    expect(table.rows[0]!.object.metadata.labels).toEqual({ [depth('hy-a-2')]: '0', [depth('hy-team-a')]: '1', 'kubernetes.io/metadata.name': 'hy-a-2' });
    const shown = await kubectl(flotilla.kubeconfig, ['get', 'ns', 'hy-a-1-x', '--show-labels', '--no-headers'], {});
    expect(shown.code, shown.stderr).toBe(0);
    for (const line of shown.stdout.trim().split('\n')) expect(line).toContain(`${depth('hy-team-a')}=2`);
  });

  it('written back as read (an update), it leaves its tree labels behind: the member never holds them', async () => {
    const path = `/clusters/${west.name}/api/v1/namespaces/hy-a-2`;
    const read = JSON.parse(await labelsOf(path)) as { metadata: { labels: Record<string, string> } };
    expect(read.metadata.labels[depth('hy-team-a')]).toBe('1');
    read.metadata.labels['note'] = 'updated';
    const put = await memberRequest(flotilla.endpoint, 'PUT', path, read);
    expect(put.status, put.body).toBe(200);
    const own = JSON.parse((await memberRequest(west, 'GET', '/api/v1/namespaces/hy-a-2')).body) as { metadata: { labels: Record<string, string> } };
    expect(own.metadata.labels).toEqual({ note: 'updated', 'kubernetes.io/metadata.name': 'hy-a-2' });
  });

  it('a namespace whose parent moves is MODIFIED with its new labels on a namespace watch', async () => {
    const watchFromNow = async () => openWatch(flotilla.endpoint, `/clusters/${east.name}/api/v1/namespaces?watch=1&resourceVersion=${(await list('/api/v1/namespaces')).list.metadata.resourceVersion}&timeoutSeconds=60`);
    const labelled = (name: string, ancestor: string) => (es: WatchEvent[]) =>
      es.some((e) => e.type === 'MODIFIED' && e.object.metadata?.name === name && (e.object.metadata as { labels?: Record<string, string> }).labels?.[depth(ancestor)] !== undefined);
    // Away, and once flotilla has told its watchers (it gathers moves for 100 ms), back: the watch
    // below opens as soon as flotilla shows that, among moves flotilla gathers together whose
    // trees before and after are the same, and must hear all its own move relabelled.
    await reparent(east, 'hy-a-1', 'hy-other');
    await until('east hy-a-1-x under hy-other', async () => {
      const res = await memberRequest(flotilla.endpoint, 'GET', `/clusters/${east.name}/api/v1/namespaces/hy-a-1-x`);
      return res.status === 200 && (JSON.parse(res.body) as { metadata: { labels?: Record<string, string> } }).metadata.labels?.[depth('hy-other')] === '2';
    });
    await new Promise((r) => setTimeout(r, 500));
    const back = await watchFromNow();
    try {
      await reparent(east, 'hy-a-1', 'hy-team-a');
      await back.until(labelled('hy-a-1', 'hy-team-a'));
    } finally {
      back.close();
    }
    const w = await watchFromNow();
    try {
      await reparent(east, 'hy-a-1', 'hy-other');
      // hy-a-1's own event, hy-a-1-x's, which nothing on the member changed, and hy-other's: alone
      // before (shown without tree labels), the root of a tree now.
      await w.until((es) => labelled('hy-a-1', 'hy-other')(es) && labelled('hy-a-1-x', 'hy-other')(es) && labelled('hy-other', 'hy-other')(es));
      const last = w.events.filter((e) => e.object.metadata?.name === 'hy-a-1-x').at(-1)!;
      expect((last.object.metadata as { labels: Record<string, string> }).labels).toEqual({ [depth('hy-a-1-x')]: '0', [depth('hy-a-1')]: '1', [depth('hy-other')]: '2', 'kubernetes.io/metadata.name': 'hy-a-1-x' });
    } finally {
      w.close();
      await reparent(east, 'hy-a-1', 'hy-team-a');
      await restored();
    }
  });
});

describe('a HierarchyConfiguration', () => {
  it('names the parent, before the annotation, and moving it moves the namespace', async () => {
    await must(east, 'POST', '/api/v1/namespaces', namespace('hy-hc', 'hy-other'));
    await until('east: hy-hc default service account', async () => (await memberRequest(east, 'GET', '/api/v1/namespaces/hy-hc/serviceaccounts/default')).status === 200);
    await must(east, 'POST', '/api/v1/namespaces/hy-hc/pods', pod(`p-hy-hc-${east.name}`));
    await until('hy-hc under hy-other', async () => (await selected('hy-other.tree.hnc.x-k8s.io/depth')).includes(`${east.name}/hy-hc/p-hy-hc-${east.name}`));
    const hc = { apiVersion: 'hnc.x-k8s.io/v1alpha2', kind: 'HierarchyConfiguration', metadata: { name: 'hierarchy' }, spec: { parent: 'hy-a-2' } };
    await must(east, 'POST', '/apis/hnc.x-k8s.io/v1alpha2/namespaces/hy-hc/hierarchyconfigurations', hc);
    await until('hy-hc under hy-a-2', async () => (await selected(`${TEAM}=2`)).includes(`${east.name}/hy-hc/p-hy-hc-${east.name}`));
    expect(await selected('hy-other.tree.hnc.x-k8s.io/depth')).toEqual(podsOf({ [east.name]: ['hy-other'], [west.name]: ['hy-other'] }));
    await must(east, 'DELETE', '/apis/hnc.x-k8s.io/v1alpha2/namespaces/hy-hc/hierarchyconfigurations/hierarchy');
    await until('hy-hc back under hy-other', async () => (await selected('hy-other.tree.hnc.x-k8s.io/depth')).includes(`${east.name}/hy-hc/p-hy-hc-${east.name}`));
  });
});

describe('a resource read live (not cached)', () => {
  // Every namespace has the member's kube-root-ca.crt ConfigMap; ConfigMaps are not cached here.
  const rootCAs = (spec: Record<string, string[]>) => Object.entries(spec).flatMap(([cluster, nss]) => nss.map((ns) => `${cluster}/${ns}/kube-root-ca.crt`)).sort();
  const SUBTREE_CAS = rootCAs({ [east.name]: SUBTREE, [west.name]: SUBTREE, [north.name]: ['hy-team-a'] });

  it('is selected by the tree: the members get the rest of the selector, lists and watches keep what the tree selects', async () => {
    const path = `/api/v1/configmaps?labelSelector=${encodeURIComponent(TEAM)}`;
    const { list: l, warnings } = await list(path);
    expect(l.items.map(keyOf).sort()).toEqual(SUBTREE_CAS);
    expect(warnings.join('\n')).not.toMatch(/hierarchy selectors/);
    // With an ordinary requirement beside it, the members apply that one.
    expect((await list(`/api/v1/configmaps?labelSelector=${encodeURIComponent(`${TEAM},app=none`)}`)).list.items).toEqual([]);
    expect((await list(`/api/v1/configmaps?labelSelector=${encodeURIComponent(`${TEAM}=2`)}`)).list.items.map(keyOf).sort()).toEqual(rootCAs({ [east.name]: ['hy-a-1-x'], [west.name]: ['hy-a-1-x'] }));
    // A watch from now starts with the selected objects, as the members' watches do.
    const res = await memberRequest(flotilla.endpoint, 'GET', `${path}&watch=1&timeoutSeconds=2`, undefined, { timeoutMs: 20_000 });
    expect(res.status, res.body).toBe(200);
    const added = res.body.trim().split('\n').map((line) => JSON.parse(line) as { type: string; object: Pod }).filter((e) => e.type === 'ADDED').map((e) => keyOf(e.object)).sort();
    expect(added).toEqual(SUBTREE_CAS);
  });
});

describe('a tree that cannot be a tree', () => {
  it('a cycle is cut and reported in /status and a Warning, and never loops', async () => {
    await must(west, 'POST', '/api/v1/namespaces', namespace('hy-c1', 'hy-c2'));
    await must(west, 'POST', '/api/v1/namespaces', namespace('hy-c2', 'hy-c1'));
    await until('the cycle in /status', async () => {
      const status = JSON.parse((await memberRequest(flotilla.endpoint, 'GET', '/status')).body) as { hierarchy: { problems: { cluster: string; namespace: string; problem: string }[] } };
      return status.hierarchy.problems.some((p) => p.cluster === west.name && p.namespace === 'hy-c1' && p.problem === 'cycle');
    });
    const { list: l, warnings } = await list(`/api/v1/namespaces?labelSelector=${encodeURIComponent('hy-c1.tree.hnc.x-k8s.io/depth')}`);
    expect(l.items.map(keyOf).sort()).toEqual([`${west.name}//hy-c1`, `${west.name}//hy-c2`]);
    expect(warnings.join('\n')).toMatch(new RegExp(`cluster ${west.name}: namespace hy-c1 is cut from its parent`));
  });
});
