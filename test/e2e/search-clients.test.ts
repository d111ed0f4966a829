import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { join } from 'node:path';
import { stringify as toYaml } from 'yaml';
import type { MemberInfo } from '../fleet/fleet.js';
import { memberRequest } from '../fleet/http.js';
import { startFlotillaProcess, writeProxyKubeconfig, type FlotillaProcess } from '../support/flotilla-process.js';
import { kubectl, kubectlSession } from '../support/kubectl.js';
import { until } from '../support/poll.js';
import { clientsDir, startInformer, type InformerRun } from '../support/informer.js';
import { pythonClientBin, pythonClientScript, runPython } from '../support/python.js';
import { bruteForce, flotillaKey, listedKeys, membersOwn, selectorOf, type Listed, type Obj, type Terms } from '../support/search-oracle.js';
import type { TenantSpec } from '../../src/tenancy/tenant.js';

/**
 * Fleet search through real clients (docs/search.md, "Tested clients"): kubectl 1.27 and 1.33, a
 * client-go informer, the Python client, and callers whose member RBAC or tenant narrows what they
 * read (alice, bob, two tenants). Pods in namespace `scl` of every member, made in two batches a
 * second apart, two of them owned by a ConfigMap; every answer equals the brute-force filter of the
 * members' own lists (test/support/search-oracle.ts).
 */
const fleet = inject('fleet');
const [east, west, north] = fleet.members as [MemberInfo, MemberInfo, MemberInfo];
const NS = 'scl';
const PODS = `/api/v1/namespaces/${NS}/pods`;
const LABELS: Record<string, Record<string, string>> = { [east.name]: { region: 'us', env: 'prod' }, [west.name]: { region: 'us' }, [north.name]: { region: 'eu', env: 'prod' } };
const TENANTS: TenantSpec[] = [
  { id: 'acme', users: [], groups: ['acme-admins'], clusterScoped: {} },
  { id: 'globex', users: [], groups: ['globex-admins'], clusterScoped: {} },
];
let flotilla: FlotillaProcess;
/** Where the second batch starts: Unix seconds of its first creationTimestamp. */
let secondBatch: number;
const configs: Record<string, string> = {};
const tokenOf = (user: string) => fleet.users.find((u) => u.name === user)!.token;

async function must(m: MemberInfo, method: string, path: string, body?: unknown): Promise<void> {
  const res = await memberRequest(m, method, path, body);
  if (res.status >= 300 && !(method === 'POST' && res.status === 409) && !(method === 'DELETE' && res.status === 404)) throw new Error(`${m.name}: ${method} ${path}: ${res.status} ${res.body.slice(0, 300)}`);
}

const pod = (name: string, ownerReferences?: unknown[]) => ({ apiVersion: 'v1', kind: 'Pod', metadata: { name, ...(ownerReferences ? { ownerReferences } : {}) }, spec: { containers: [{ name: 'c', image: 'example.com/c:1' }] } });

/** The members' pods and ConfigMaps in a namespace: the pods to filter, both kinds as owners. */
async function held(ns = NS): Promise<{ pods: Listed[]; population: Listed[] }> {
  const pods = await membersOwn(fleet.members, `/api/v1/namespaces/${ns}/pods`, 'Pod');
  return { pods, population: [...pods, ...(await membersOwn(fleet.members, `/api/v1/namespaces/${ns}/configmaps`, 'ConfigMap'))] };
}

const OWNER_TERM: Terms = { owner: { kind: 'ConfigMap', name: 'owner-cm' } };

async function makeNamespace(m: MemberInfo, ns: string): Promise<void> {
  await must(m, 'DELETE', `/api/v1/namespaces/${ns}`);
  await until(`${m.name}: ${ns} gone`, async () => (await memberRequest(m, 'GET', `/api/v1/namespaces/${ns}`)).status === 404, 120_000);
  await must(m, 'POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
  await until(`${m.name}: ${ns}'s default ServiceAccount`, async () => (await memberRequest(m, 'GET', `/api/v1/namespaces/${ns}/serviceaccounts/default`)).status === 200);
}

const rbac = '/apis/rbac.authorization.k8s.io/v1';
const binding = (kind: 'RoleBinding' | 'ClusterRoleBinding', name: string, role: { kind: 'Role' | 'ClusterRole'; name: string }, subject: { kind: 'User' | 'Group'; name: string }) => ({
  apiVersion: 'rbac.authorization.k8s.io/v1', kind, metadata: { name },
  subjects: [{ ...subject, apiGroup: 'rbac.authorization.k8s.io' }], roleRef: { ...role, apiGroup: 'rbac.authorization.k8s.io' },
});
const reader = (resources: string[]) => ({ apiGroups: [''], resources, verbs: ['get', 'list', 'watch'] });

beforeAll(async () => {
  for (const m of fleet.members) await makeNamespace(m, NS);
  const batch = async (suffix: string) => {
    for (const [i, m] of fleet.members.entries()) {
      for (const n of ['api-gateway', 'checkout-api', 'web', 'webhook', 'cart'].filter((_, j) => (j + i) % 3 !== 1)) await must(m, 'POST', PODS, pod(`${n}-${suffix}`));
    }
  };
  await batch('a');
  await new Promise((r) => setTimeout(r, 1100 - (Date.now() % 1000)));
  secondBatch = Math.ceil(Date.now() / 1000);
  await new Promise((r) => setTimeout(r, secondBatch * 1000 - Date.now() + 5));
  await batch('b');
  // On east and north: a ConfigMap owning one pod.
  for (const m of [east, north]) {
    await must(m, 'POST', `/api/v1/namespaces/${NS}/configmaps`, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'owner-cm' } });
    const uid = (JSON.parse((await memberRequest(m, 'GET', `/api/v1/namespaces/${NS}/configmaps/owner-cm`)).body) as { metadata: { uid: string } }).metadata.uid;
    await must(m, 'POST', PODS, pod(`owned-${m.name}`, [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'owner-cm', uid }]));
  }
  // alice reads pods in scl on east, not its ConfigMaps; bob reads pods everywhere on west and north, ConfigMaps on north.
  await must(east, 'POST', `${rbac}/namespaces/${NS}/roles`, { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: { name: 'pod-reader' }, rules: [reader(['pods'])] });
  await must(east, 'POST', `${rbac}/namespaces/${NS}/rolebindings`, binding('RoleBinding', 'alice-pods', { kind: 'Role', name: 'pod-reader' }, { kind: 'User', name: 'alice' }));
  for (const m of [west, north]) {
    await must(m, 'POST', `${rbac}/clusterroles`, { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: 'scl-bob-reader' }, rules: [reader(m === north ? ['pods', 'configmaps'] : ['pods'])] });
    await must(m, 'POST', `${rbac}/clusterrolebindings`, binding('ClusterRoleBinding', 'scl-bob', { kind: 'ClusterRole', name: 'scl-bob-reader' }, { kind: 'User', name: 'bob' }));
  }
  // Each tenant's scl on east and west: the same names in both, and a name only globex has. The
  // tenants' admins may read pods in every namespace of east and west, so that only the tenant's
  // view keeps the other's out.
  for (const m of [east, west]) {
    await must(m, 'POST', `${rbac}/clusterroles`, { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: 'scl-tenant-reader' }, rules: [reader(['pods'])] });
    for (const t of TENANTS) {
      await must(m, 'POST', `${rbac}/clusterrolebindings`, binding('ClusterRoleBinding', `scl-${t.id}`, { kind: 'ClusterRole', name: 'scl-tenant-reader' }, { kind: 'Group', name: `${t.id}-admins` }));
      const ns = `${t.id}-${NS}`;
      await makeNamespace(m, ns);
      for (const n of ['api-1', `${t.id}-web`, ...(t.id === 'globex' ? ['secret-plan'] : [])]) await must(m, 'POST', `/api/v1/namespaces/${ns}/pods`, pod(n));
    }
  }
  const dir = join(fleet.dir, 'flotilla-search-clients');
  flotilla = await startFlotillaProcess({
    fleet,
    dir,
    fleetFile: toYaml({
      clusters: fleet.members.map((m) => ({ name: m.name, kubeconfig: m.kubeconfig, labels: LABELS[m.name] })),
      resources: [{ version: 'v1', resource: 'namespaces' }, { version: 'v1', resource: 'pods' }, { version: 'v1', resource: 'configmaps' }],
      authentication: { tokenReviewCluster: east.name },
      tenants: TENANTS,
    }),
  });
  for (const user of ['alice', 'bob', 'admin@acme', 'admin@globex']) {
    configs[user] = join(dir, `${user}.kubeconfig`);
    writeProxyKubeconfig(configs[user], flotilla.url, fleet.caFile, tokenOf(user));
  }
  const every = async () => ({ served: (await listedKeys(flotilla.endpoint, PODS)).items, held: bruteForce((await held()).pods, {}, LABELS) });
  await until('flotilla holds every pod', async () => {
    const { served, held: want } = await every();
    return JSON.stringify(served) === JSON.stringify(want);
  }).catch(async () => {
    const { served, held: want } = await every();
    expect(served).toEqual(want);
  });
}, 300_000);

afterAll(async () => {
  await flotilla?.stop();
  for (const m of fleet.members) {
    for (const ns of [NS, ...TENANTS.map((t) => `${t.id}-${NS}`)]) await memberRequest(m, 'DELETE', `/api/v1/namespaces/${ns}`);
    for (const name of ['scl-bob', ...TENANTS.map((t) => `scl-${t.id}`)]) await memberRequest(m, 'DELETE', `${rbac}/clusterrolebindings/${name}`);
    for (const name of ['scl-bob-reader', 'scl-tenant-reader']) await memberRequest(m, 'DELETE', `${rbac}/clusterroles/${name}`);
  }
});

/** kubectl's pods in scl for a selector, as keys. */
async function viaKubectl(version: string | undefined, selector: string, extra: string[] = [], config = flotilla.kubeconfig): Promise<string[]> {
  const r = await kubectl(config, ['get', 'pods', '-n', NS, '-o', 'json', '-l', selector, ...extra], version ? { version } : {});
  if (r.code !== 0) throw new Error(`kubectl ${version ?? ''} -l ${selector}: ${r.stderr}`);
  return (JSON.parse(r.stdout) as { items: Obj[] }).items.map(flotillaKey).sort();
}

describe.each(['1.27', '1.33'])('kubectl %s', (version) => {
  it('get -l with each kind of term, and --chunk-size, equal the brute force', async () => {
    const { pods, population } = await held();
    const cases: Terms[] = [
      { clusterLabel: { key: 'region', op: 'in', values: ['us'] } },
      { clusterLabel: { key: 'region', op: 'notin', values: ['us'] }, contains: 'API' },
      { clusterLabel: { key: 'env', op: '!', values: [] } },
      { contains: 'hook' },
      OWNER_TERM,
      { after: secondBatch, clusterLabel: { key: 'env', op: 'exists', values: [] } },
    ];
    for (const t of cases) {
      const want = bruteForce(pods, t, LABELS, population);
      expect(want.length, selectorOf(t)).toBeGreaterThan(0);
      expect(await viaKubectl(version, selectorOf(t)), selectorOf(t)).toEqual(want);
    }
    const t: Terms = { clusterLabel: { key: 'region', op: '=', values: ['us'] }, contains: 'e' };
    expect(await viaKubectl(version, selectorOf(t), ['--chunk-size=2'])).toEqual(bruteForce(pods, t, LABELS));
  });

  it('get -w: the selection, then a pod made that matches; one that does not is never shown', async () => {
    const v = version.replace('.', '');
    const t: Terms = { clusterLabel: { key: 'region', op: '=', values: ['us'] }, contains: `late-${v}` };
    const w = kubectlSession(flotilla.kubeconfig, ['get', 'pods', '-n', NS, '-w', '-l', selectorOf(t), '-o', 'jsonpath={.metadata.annotations.search\\.flotilla\\.io/cluster}/{.metadata.name}{"\\n"}'], { version });
    try {
      // Nothing matches yet: made after the watch is open, north's (region eu) first, then west's.
      await new Promise((r) => setTimeout(r, 1000));
      await must(north, 'POST', PODS, pod(`late-${v}`));
      await must(west, 'POST', PODS, pod(`zz-${v}`));
      await must(west, 'POST', PODS, pod(`late-${v}`));
      await w.waitForOutput(new RegExp(`^${west.name}/late-${v}$`, 'm'), 20_000);
      expect([...new Set(w.stdout().trim().split('\n'))]).toEqual([`${west.name}/late-${v}`]);
      expect(bruteForce((await held()).pods, t, LABELS)).toContain(`${west.name}/late-${v}`);
    } finally {
      await w.stop();
    }
  });
});

describe('a client-go informer with search terms in its label selector', () => {
  const started: InformerRun[] = [];
  afterEach(() => {
    for (const run of started.splice(0)) run.stop();
  });

  it.each([false, true, 'default'] as const)('watch-list %s: its synced store is the brute force; a pod made that matches is added, one that does not is not; no fallback, no relist', async (watchList) => {
    const t: Terms = { clusterLabel: { key: 'region', op: 'in', values: ['us'] }, contains: 'api' };
    const run = startInformer({ bin: join(clientsDir(), 'informer'), kubeconfig: flotilla.kubeconfig, mode: 'informer', watchList, selector: selectorOf(t), namespace: NS });
    started.push(run);
    await run.synced;
    const tag = `cg${String(watchList).slice(0, 2)}`;
    for (const [m, name] of [[north, `${tag}-api`], [west, `${tag}-zz`], [west, `${tag}-api`]] as const) await must(m, 'POST', PODS, pod(name));
    await until('flotilla holds the new pods', async () => (await listedKeys(flotilla.endpoint, PODS, { selector: `search.flotilla.io/name-prefix=${tag}` })).items.length === 3);
    await new Promise((r) => setTimeout(r, 1500));
    const want = bruteForce((await held()).pods, t, LABELS);
    expect(want).toContain(`${west.name}/${tag}-api`);
    const { lines, lists, watches, log } = await run.dump();
    // `<namespace>/<name> <uid> <cluster>:<RV>` as `<cluster>/<name>`.
    expect(lines.map((l) => `${l.split(' ')[2]!.split(':')[0]}/${l.split(' ')[0]!.split('/')[1]}`).sort()).toEqual(want);
    expect(log).not.toMatch(/falling back|unable to decode|Failed to watch|failed to list|Unhandled Error/i);
    expect({ lists, watchesAtLeast: watches >= 1 }).toEqual({ lists: watchList === false ? 1 : 0, watchesAtLeast: true });
  });
});

describe('the Python client with search terms in label_selector', () => {
  it('list_namespaced_pod and list_pod_for_all_namespaces equal the brute force; a watch adds the pod made that matches only', async () => {
    const t: Terms = { clusterLabel: { key: 'env', op: '=', values: ['prod'] }, contains: 'API' };
    const run = runPython(pythonClientBin(), pythonClientScript('search_reader.py'), [flotilla.kubeconfig, NS, selectorOf(t), '30']);
    try {
      const { pods } = await held();
      const want = bruteForce(pods, t, LABELS);
      expect(want.length).toBeGreaterThan(0);
      const list = await run.line<{ namespaced: string[]; all: string[] }>('list');
      const asKey = (k: string) => `${k.split('/')[0]}/${k.split('/')[2]}`;
      expect(list.namespaced.map(asKey).sort()).toEqual(want);
      // All namespaces: scl's, and the tenants' namespaces' `api-1` on east (env=prod; west is not).
      const mine = [NS, ...TENANTS.map((tn) => `${tn.id}-${NS}`)];
      const everywhere = (await Promise.all(mine.map(async (ns) => bruteForce(await membersOwn(fleet.members, `/api/v1/namespaces/${ns}/pods`), t, LABELS).map((k) => `${k.split('/')[0]}/${ns}/${k.split('/')[1]}`)))).flat();
      expect(list.all.filter((k) => mine.includes(k.split('/')[1]!)).sort()).toEqual(everywhere.sort());
      await must(west, 'POST', PODS, pod('py-api'));
      await must(north, 'POST', PODS, pod('py-web'));
      await must(north, 'POST', PODS, pod('py-api'));
      run.finishInput(['py-api']);
      expect(await run.line('done', 45_000)).toEqual({ reason: 'seen' });
      const events = run.lines.filter((l) => 'event' in l).map((l) => l['event'] as { type: string; key: string });
      // Pods already listed may change (scheduled, started): MODIFIED. What enters is the one made that matches only.
      expect(events.filter((e) => e.type !== 'MODIFIED').map((e) => `${e.type} ${e.key}`)).toEqual([`ADDED ${north.name}/${NS}/py-api`]);
      expect(events.map((e) => e.key)).not.toContain(`${west.name}/${NS}/py-api`);
      expect(events.map((e) => e.key)).not.toContain(`${north.name}/${NS}/py-web`);
    } finally {
      await run.stop();
    }
  });
});

describe('callers whose RBAC or tenant narrows what they read', () => {
  it('alice and bob: a search returns only what their member RBAC lets them read; an owner they may not read owns nothing', async () => {
    const { pods, population } = await held();
    await until('alice and bob may read pods through flotilla', async () => (await listedKeys(flotilla.endpoint, PODS, { token: tokenOf('alice') })).status === 200 && (await listedKeys(flotilla.endpoint, PODS, { token: tokenOf('bob') })).status === 200);
    const readable: Record<string, (key: string) => boolean> = { alice: (k) => k.startsWith(`${east.name}/`), bob: (k) => !k.startsWith(`${east.name}/`) };
    const cases: Terms[] = [
      { cluster: { op: 'in', values: [east.name, west.name] } },
      { contains: 'api' },
      { clusterLabel: { key: 'env', op: 'exists', values: [] }, after: secondBatch },
    ];
    for (const user of ['alice', 'bob']) {
      for (const t of cases) expect(await viaKubectl(undefined, selectorOf(t), [], configs[user]), `${user} ${selectorOf(t)}`).toEqual(bruteForce(pods, t, LABELS).filter(readable[user]!));
    }
    // Naming only what she may not read: an empty list, not a 403.
    const hidden = await listedKeys(flotilla.endpoint, PODS, { selector: selectorOf({ cluster: { op: 'in', values: [west.name, north.name] } }), token: tokenOf('alice') });
    expect(hidden).toEqual({ status: 200, items: [], pages: 1 });
    // owner-cm owns a pod on east and on north. alice may not read east's ConfigMaps: nothing;
    // bob may read north's: north's pod only.
    expect(bruteForce(pods, OWNER_TERM, LABELS, population)).toEqual([`${east.name}/owned-${east.name}`, `${north.name}/owned-${north.name}`]);
    expect(await viaKubectl(undefined, selectorOf(OWNER_TERM), [], configs['alice'])).toEqual([]);
    expect(await viaKubectl(undefined, selectorOf(OWNER_TERM), [], configs['bob'])).toEqual([`${north.name}/owned-${north.name}`]);
  });

  it('a tenant: its own pods in its own names, never another tenant\'s; a term matching only another\'s is an empty list', async () => {
    for (const t of TENANTS) {
      const { pods } = await held(`${t.id}-${NS}`);
      const config = configs[`admin@${t.id}`]!;
      for (const terms of [{ contains: 'api' }, { prefix: t.id }, { cluster: { op: 'in', values: [west.name] } }, { clusterLabel: { key: 'region', op: '=', values: ['us'] } }] as Terms[]) {
        const r = await kubectl(config, ['get', 'pods', '-n', NS, '-o', 'json', '-l', selectorOf(terms)]);
        expect(r.code, r.stderr).toBe(0);
        const items = (JSON.parse(r.stdout) as { items: Obj[] }).items;
        expect(items.map(flotillaKey).sort(), `${t.id} ${selectorOf(terms)}`).toEqual(bruteForce(pods, terms, LABELS));
        expect(items.every((o) => o.metadata.namespace === NS), `${t.id}: in its own names`).toBe(true);
        // All namespaces: the same in scl (other tests' namespaces of the tenant aside), in its own names.
        const all = (JSON.parse((await kubectl(config, ['get', 'pods', '-A', '-o', 'json', '-l', selectorOf(terms)])).stdout) as { items: Obj[] }).items;
        expect(all.filter((o) => o.metadata.namespace === NS).map(flotillaKey).sort()).toEqual(bruteForce(pods, terms, LABELS));
        expect(all.filter((o) => /^(acme|globex)-/.test(o.metadata.namespace ?? '')), `${t.id}: in its own names`).toEqual([]);
      }
      // Only globex has a pod named secret-plan; acme's search for it is empty, and says nothing of it.
      for (const path of [PODS, '/api/v1/pods']) {
        const res = await memberRequest(flotilla.endpoint, 'GET', `${path}?labelSelector=${encodeURIComponent('search.flotilla.io/name-contains=secret')}`, undefined, { token: tokenOf(`admin@${t.id}`) });
        expect(res.status, `${t.id} ${path}`).toBe(200);
        const names = (JSON.parse(res.body) as { items: Obj[] }).items.map((o) => o.metadata.name);
        expect(names, `${t.id} ${path}`).toEqual(t.id === 'globex' ? ['secret-plan', 'secret-plan'] : []);
        if (t.id === 'acme') expect([res.body, JSON.stringify(res.headers)].join()).not.toMatch(/globex|secret/);
      }
    }
  });
});
