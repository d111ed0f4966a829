import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { join } from 'node:path';
import fc from 'fast-check';
import { stringify as toYaml } from 'yaml';
import type { MemberInfo } from '../fleet/fleet.js';
import { memberRequest } from '../fleet/http.js';
import { startFlotillaProcess, writeProxyKubeconfig, type FlotillaProcess } from '../support/flotilla-process.js';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { kubectl, kubectlBinary } from '../support/kubectl.js';
import { commandsOnPath } from '../support/commands-on-path.js';
import { until } from '../support/poll.js';
import { openWatch } from '../support/watch-client.js';
import { CLUSTER, bruteForce as bruteForceOver, flotillaKey, listedKeys, membersOwn as membersOwnAt, selectorOf, type Listed, type Obj, type Terms } from '../support/search-oracle.js';

/**
 * Fleet search on the real fleet (docs/search.md): members labelled in the fleet file, ConfigMaps
 * (cached) and Secrets (read live) in namespace `srch` of every member, made in two batches a
 * second or more apart. Every answer is compared with a brute-force filter of the members' own
 * lists, written here from the documented rules, not from flotilla's code.
 */
const fleet = inject('fleet');
const [east, west, north] = fleet.members as [MemberInfo, MemberInfo, MemberInfo];
const NS = 'srch';
const LABELS: Record<string, Record<string, string>> = { [east.name]: { region: 'us', env: 'prod' }, [west.name]: { region: 'us' }, [north.name]: { region: 'eu', env: 'prod' } };
let flotilla: FlotillaProcess;
let aliceConfig: string;
/** Where the second batch starts: Unix seconds of its first creationTimestamp. */
let secondBatch: number;

async function must(m: MemberInfo, method: string, path: string, body?: unknown): Promise<void> {
  const res = await memberRequest(m, method, path, body);
  if (res.status >= 300 && !(method === 'POST' && res.status === 409) && !(method === 'DELETE' && res.status === 404)) throw new Error(`${m.name}: ${method} ${path}: ${res.status} ${res.body.slice(0, 300)}`);
}

/** Every member's own objects of a resource in `srch`. */
const membersOwn = (resource: 'configmaps' | 'secrets') => membersOwnAt(fleet.members, `/api/v1/namespaces/${NS}/${resource}`, resource === 'configmaps' ? 'ConfigMap' : 'Secret');

const bruteForce = (all: Listed[], t: Terms, population?: Listed[]) => bruteForceOver(all, t, LABELS, population);

async function raw(path: string, opts: { token?: string; accept?: string } = {}): Promise<{ status: number; body: string; items: string[]; warnings: string[] }> {
  const res = await memberRequest(flotilla.endpoint, 'GET', path, undefined, opts);
  const doc = res.status === 200 ? (JSON.parse(res.body) as { items?: Obj[] }) : {};
  const w = res.headers['warning'];
  return { status: res.status, body: res.body, items: (doc.items ?? []).map(flotillaKey).sort(), warnings: w === undefined ? [] : Array.isArray(w) ? w : [w] };
}

const selected = async (resource: string, t: Terms | string, token?: string) =>
  raw(`/api/v1/namespaces/${NS}/${resource}?labelSelector=${encodeURIComponent(typeof t === 'string' ? t : selectorOf(t))}`, token ? { token } : {});

async function viaKubectl(args: string[], config = flotilla.kubeconfig): Promise<string[]> {
  const r = await kubectl(config, ['get', 'configmaps', '-n', NS, '-o', 'json', ...args]);
  if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')}: ${r.stderr}`);
  return (JSON.parse(r.stdout) as { items: Obj[] }).items.map(flotillaKey).sort();
}

const NAMES = ['Api-Gateway', 'checkout-api', 'web', 'webhook', 'cart'];
const cm = (name: string) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name } });

/** The owner chains' kinds, each cached in `srch` and listed from the members with its Kind. */
const OWNED = [
  { path: `/api/v1/namespaces/${NS}/configmaps`, kind: 'ConfigMap' },
  { path: `/api/v1/namespaces/${NS}/pods`, kind: 'Pod' },
  { path: `/apis/apps/v1/namespaces/${NS}/replicasets`, kind: 'ReplicaSet' },
  { path: `/apis/apps/v1/namespaces/${NS}/deployments`, kind: 'Deployment' },
] as const;
const ownedPopulation = async () => (await Promise.all(OWNED.map((r) => membersOwnAt(fleet.members, r.path, r.kind)))).flat();

/** Deployments (their ReplicaSets and pods made by the members' controller manager); names that hold no "web" (the find test's). */
const deployment = (name: string, replicas: number) => ({
  apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name },
  spec: { replicas, selector: { matchLabels: { app: name } }, template: { metadata: { labels: { app: name } }, spec: { containers: [{ name: 'c', image: `example.com/${name}:1` }] } } },
});
const DEPLOYMENTS: Record<string, [string, number][]> = { [east.name]: [['dpa', 2], ['dpb', 1]], [west.name]: [['dpa', 1]], [north.name]: [] };

/**
 * Hand-made chains of ConfigMaps (ownerReferences by uid), 1 to 3 levels under each root, and on
 * each member a pod at the end of its first chain; what each member gets is random, seeded.
 */
async function makeOwnerChains(m: MemberInfo, shape: number[]): Promise<void> {
  const uidOf = async (path: string) => (JSON.parse((await memberRequest(m, 'GET', path)).body) as { metadata: { uid: string } }).metadata.uid;
  let firstLeaf: { name: string; uid: string } | undefined;
  for (const [r, levels] of shape.entries()) {
    let parents = [{ name: `chn${r}`, uid: '' }];
    await must(m, 'POST', `/api/v1/namespaces/${NS}/configmaps`, cm(parents[0]!.name));
    parents[0]!.uid = await uidOf(`/api/v1/namespaces/${NS}/configmaps/${parents[0]!.name}`);
    for (let level = 1; level <= levels; level++) {
      // Two children under the root, one under each after.
      const children = parents.flatMap((p) => (level === 1 ? [`${p.name}-x`, `${p.name}-y`] : [`${p.name}-z`]).map((name) => ({ name, parent: p })));
      const made: { name: string; uid: string }[] = [];
      for (const { name, parent } of children) {
        await must(m, 'POST', `/api/v1/namespaces/${NS}/configmaps`, { ...cm(name), metadata: { name, ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: parent.name, uid: parent.uid }] } });
        made.push({ name, uid: await uidOf(`/api/v1/namespaces/${NS}/configmaps/${name}`) });
      }
      parents = made;
    }
    firstLeaf ??= parents[0];
  }
  if (firstLeaf) {
    await must(m, 'POST', `/api/v1/namespaces/${NS}/pods`, {
      apiVersion: 'v1', kind: 'Pod', metadata: { name: 'chn-pod', ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: firstLeaf.name, uid: firstLeaf.uid }] },
      spec: { containers: [{ name: 'c', image: 'example.com/c:1' }] },
    });
  }
}

beforeAll(async () => {
  // Names are lower-case on the members; the search's case-insensitivity is tested by its needles.
  const randomNames = fc.sample(fc.stringMatching(/^[a-z][a-z0-9]{1,6}$/), { numRuns: 6, seed: 52 });
  for (const m of fleet.members) {
    await must(m, 'DELETE', `/api/v1/namespaces/${NS}`);
    await until(`${m.name}: ${NS} gone`, async () => (await memberRequest(m, 'GET', `/api/v1/namespaces/${NS}`)).status === 404, 120_000);
    await must(m, 'POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
  }
  const batch = async (suffix: string) => {
    for (const [i, m] of fleet.members.entries()) {
      for (const n of [...NAMES, ...randomNames].filter((_, j) => (j + i) % 3 !== 0)) await must(m, 'POST', `/api/v1/namespaces/${NS}/configmaps`, cm(`${n.toLowerCase()}-${suffix}`));
    }
  };
  await batch('a');
  // The second batch a whole second later at least: created-after and -before tell them apart.
  await new Promise((r) => setTimeout(r, 1100 - (Date.now() % 1000)));
  secondBatch = Math.ceil(Date.now() / 1000);
  await new Promise((r) => setTimeout(r, secondBatch * 1000 - Date.now() + 5));
  await batch('b');
  const chainShapes = fc.sample(fc.array(fc.integer({ min: 1, max: 3 }), { minLength: 1, maxLength: 2 }), { numRuns: fleet.members.length, seed: 52 });
  for (const [i, m] of fleet.members.entries()) {
    await until(`${m.name}: ${NS}'s default ServiceAccount`, async () => (await memberRequest(m, 'GET', `/api/v1/namespaces/${NS}/serviceaccounts/default`)).status === 200);
    for (const [name, replicas] of DEPLOYMENTS[m.name]!) await must(m, 'POST', `/apis/apps/v1/namespaces/${NS}/deployments`, deployment(name, replicas));
    await makeOwnerChains(m, chainShapes[i]!);
  }
  await must(east, 'POST', `/api/v1/namespaces/${NS}/secrets`, { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'api-key' }, stringData: { k: 'v' } });
  await must(west, 'POST', `/api/v1/namespaces/${NS}/secrets`, { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'web-key' }, stringData: { k: 'v' } });
  // alice may read ConfigMaps in srch on east only.
  const rbac = '/apis/rbac.authorization.k8s.io/v1';
  await must(east, 'POST', `${rbac}/namespaces/${NS}/roles`, { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: { name: 'cm-reader' }, rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'watch'] }] });
  await must(east, 'POST', `${rbac}/namespaces/${NS}/rolebindings`, { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name: 'alice-cm' }, subjects: [{ kind: 'User', name: 'alice', apiGroup: 'rbac.authorization.k8s.io' }], roleRef: { kind: 'Role', name: 'cm-reader', apiGroup: 'rbac.authorization.k8s.io' } });
  const dir = join(fleet.dir, 'flotilla-search');
  flotilla = await startFlotillaProcess({
    fleet,
    dir,
    fleetFile: toYaml({
      clusters: fleet.members.map((m) => ({ name: m.name, kubeconfig: m.kubeconfig, labels: LABELS[m.name] })),
      resources: [
        { version: 'v1', resource: 'namespaces' },
        { version: 'v1', resource: 'configmaps', namespaces: [NS] },
        { version: 'v1', resource: 'pods', namespaces: [NS] },
        { group: 'apps', version: 'v1', resource: 'replicasets', namespaces: [NS] },
        { group: 'apps', version: 'v1', resource: 'deployments', namespaces: [NS] },
      ],
      authentication: { tokenReviewCluster: east.name },
    }),
  });
  aliceConfig = join(dir, 'alice.kubeconfig');
  writeProxyKubeconfig(aliceConfig, flotilla.url, fleet.caFile, fleet.users.find((u) => u.name === 'alice')!.token);
  // Every ConfigMap, the members' own kube-root-ca.crt included, as the members hold it now.
  const every = async () => ({ served: (await selected('configmaps', {})).items, held: bruteForce(await membersOwn('configmaps'), {}) });
  await until('flotilla holds every ConfigMap', async () => {
    const { served, held } = await every();
    return JSON.stringify(served) === JSON.stringify(held);
  }).catch(async () => {
    const { served, held } = await every();
    expect(served).toEqual(held);
  });
  // Every Deployment's pods made, and flotilla holding the owner chains' kinds as the members do.
  const replicas = Object.values(DEPLOYMENTS).flat().reduce((n, [, r]) => n + r, 0);
  await until('the Deployments\' pods made', async () => (await membersOwnAt(fleet.members, `/api/v1/namespaces/${NS}/pods`)).filter(({ o }) => o.metadata.name.startsWith('dp')).length === replicas, 120_000);
  for (const r of OWNED) {
    const keys = async () => ({ served: (await listedKeys(flotilla.endpoint, r.path)).items, held: bruteForce(await membersOwnAt(fleet.members, r.path), {}) });
    await until(`flotilla holds every ${r.kind}`, async () => {
      const { served, held } = await keys();
      return JSON.stringify(served) === JSON.stringify(held);
    }, 60_000).catch(async () => {
      const { served, held } = await keys();
      expect(served, r.kind).toEqual(held);
    });
  }
}, 300_000);

afterAll(async () => {
  await flotilla?.stop();
  for (const m of fleet.members) await memberRequest(m, 'DELETE', `/api/v1/namespaces/${NS}`);
});

describe('search terms in kubectl get -l', () => {
  it('each kind of term selects what a brute-force filter of the members\' own lists selects', async () => {
    const all = await membersOwn('configmaps');
    const cases: Terms[] = [
      { clusterLabel: { key: 'region', op: 'in', values: ['us'] } },
      { clusterLabel: { key: 'region', op: 'notin', values: ['us'] } },
      { clusterLabel: { key: 'env', op: '!', values: [] } },
      { clusterLabel: { key: 'env', op: '=', values: ['prod'] }, cluster: { op: 'notin', values: [east.name] } },
      { cluster: { op: 'in', values: [west.name] } },
      { contains: 'API' },
      { prefix: 'Web' },
      { after: secondBatch },
      { before: secondBatch, contains: 'a' },
    ];
    for (const t of cases) {
      const want = bruteForce(all, t);
      expect(want.length, selectorOf(t)).toBeGreaterThan(0);
      expect(await viaKubectl(['-l', selectorOf(t)]), selectorOf(t)).toEqual(want);
    }
    // A date is UTC midnight: every object here is created after today's.
    const today = new Date().toISOString().slice(0, 10);
    expect(await viaKubectl(['-l', `search.flotilla.io/created-after=${today}`])).toEqual(bruteForce(all, {}));
    // Search terms beside an ordinary requirement: the requirement still holds (no ConfigMap has the label).
    expect(await viaKubectl(['-l', 'search.flotilla.io/name-contains=api,app=none'])).toEqual([]);
  });

  it('a ReplicaSet\'s hash finds it and its pods, whole, one character in, after its Deployment\'s name and as a prefix, as the brute force does', async () => {
    // Named by the members' controller manager: `<deployment>-<hash>` and `<deployment>-<hash>-<suffix>`, a hash of 9 or 10 characters.
    const paths = { pods: `/api/v1/namespaces/${NS}/pods`, replicasets: `/apis/apps/v1/namespaces/${NS}/replicasets` } as const;
    const own = { pods: await membersOwnAt(fleet.members, paths.pods, 'Pod'), replicasets: await membersOwnAt(fleet.members, paths.replicasets, 'ReplicaSet') };
    const hashes = [...new Set(own.replicasets.map(({ o }) => o.metadata.name.split('-')[1]!))];
    expect(hashes.length).toBeGreaterThan(1);
    for (const hash of hashes) {
      const deploy = own.replicasets.find(({ o }) => o.metadata.name.endsWith(`-${hash}`))!.o.metadata.name.split('-')[0]!;
      for (const t of [{ contains: hash }, { contains: hash.slice(1) }, { contains: `${deploy.slice(1)}-${hash.slice(0, 7)}` }, { prefix: `${deploy}-${hash.slice(0, 6)}` }] as Terms[]) {
        for (const r of ['pods', 'replicasets'] as const) {
          const want = bruteForce(own[r], t);
          expect(want.length, `${r} ${selectorOf(t)}`).toBeGreaterThan(0);
          expect((await raw(`${paths[r]}?labelSelector=${encodeURIComponent(selectorOf(t))}`)).items, `${r} ${selectorOf(t)}`).toEqual(want);
        }
      }
    }
  });

  it('a paged list (--chunk-size) equals the unpaged one; Table, metadata and query parameters agree', async () => {
    const all = await membersOwn('configmaps');
    const t: Terms = { clusterLabel: { key: 'region', op: '=', values: ['us'] }, contains: 'e' };
    const want = bruteForce(all, t);
    expect(await viaKubectl(['-l', selectorOf(t), '--chunk-size=2'])).toEqual(want);
    // Table (kubectl's default output): the NAME column.
    const table = await kubectl(flotilla.kubeconfig, ['get', 'configmaps', '-n', NS, '-l', selectorOf(t), '--no-headers']);
    expect(table.stdout.trim().split('\n').map((l) => l.split(/\s+/)[0]).sort()).toEqual(want.map((k) => k.split('/')[1]).sort());
    const meta = await raw(`/api/v1/namespaces/${NS}/configmaps?labelSelector=${encodeURIComponent(selectorOf(t))}`, { accept: 'application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io' });
    expect(meta.items).toEqual(want);
    // As query parameters, with an RFC 3339 time a label value cannot hold.
    const iso = new Date(secondBatch * 1000).toISOString().replace('.000', '');
    const q = await raw(`/api/v1/namespaces/${NS}/configmaps?cluster.search.flotilla.io/region=us&search.flotilla.io/name-contains=E&search.flotilla.io/created-after=${encodeURIComponent(iso)}`);
    expect(q.items).toEqual(bruteForce(all, { ...t, after: secondBatch }));
  });

  it('a get applies the query parameters\' terms: 404 where they leave the object out', async () => {
    const name = 'web-b';
    const holders = (await membersOwn('configmaps')).filter(({ o }) => o.metadata.name === name).map(({ cluster }) => cluster);
    const other = fleet.members.map((m) => m.name).find((c) => !holders.includes(c));
    expect((await raw(`/api/v1/namespaces/${NS}/configmaps/${name}?${CLUSTER}=${holders[1]}`)).body).toContain(`"${CLUSTER}":"${holders[1]}"`);
    if (other) expect((await raw(`/api/v1/namespaces/${NS}/configmaps/${name}?${CLUSTER}=${other}`)).status).toBe(404);
    expect((await raw(`/api/v1/namespaces/${NS}/configmaps/${name}?search.flotilla.io/name-contains=zzz`)).status).toBe(404);
  });

  it('an unknown term, or a bad value, is a 400 naming it', async () => {
    const r = await kubectl(flotilla.kubeconfig, ['get', 'configmaps', '-n', NS, '-l', 'search.flotilla.io/fuzzy=x']);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('unknown search term "search.flotilla.io/fuzzy"');
    const bad = await selected('configmaps', 'search.flotilla.io/created-after=2026-02-30');
    expect(bad.status).toBe(400);
    expect(bad.body).toContain('search.flotilla.io/created-after');
    const op = await raw(`/api/v1/namespaces/${NS}/configmaps?search.flotilla.io/owner-depth=0`);
    expect(op.status).toBe(400);
    expect(op.body).toContain('search.flotilla.io/owner-depth');
  });

  it('as alice, a search returns only what she may read, whatever it names', async () => {
    const all = await membersOwn('configmaps');
    const alice = fleet.users.find((u) => u.name === 'alice')!.token;
    await until('alice may read east\'s ConfigMaps through flotilla', async () => (await selected('configmaps', {}, alice)).status === 200);
    for (const t of [{ cluster: { op: 'in', values: [east.name, west.name] } }, { contains: 'api' }, { clusterLabel: { key: 'env', op: 'exists', values: [] } }] as Terms[]) {
      const want = bruteForce(all, t).filter((k) => k.startsWith(`${east.name}/`));
      expect(await viaKubectl(['-l', selectorOf(t)], aliceConfig), selectorOf(t)).toEqual(want);
    }
    // Naming only what she may not read: nothing, not a count or a hint of it.
    const hidden = await selected('configmaps', { cluster: { op: 'in', values: [west.name] } }, alice);
    expect(hidden.status).toBe(200);
    expect(hidden.items).toEqual([]);
    // Warnings name the members she may not read that the search keeps, not those its cluster terms leave out.
    expect((await selected('configmaps', { cluster: { op: 'in', values: [east.name] } }, alice)).warnings).toEqual([]);
    const warned = (await selected('configmaps', { cluster: { op: 'in', values: [east.name, west.name] } }, alice)).warnings.join('\n');
    expect(warned).toContain(`cluster ${west.name}:`);
    expect(warned).not.toContain(north.name);
  });

  it('owner terms: an owner the caller may not read owns nothing for it, as if it did not exist', async () => {
    // On east, in srch: one ConfigMap owned by the namespace srch itself (alice may not read
    // namespaces), one owned by another ConfigMap (which she may read).
    const nsUid = (JSON.parse((await memberRequest(east, 'GET', `/api/v1/namespaces/${NS}`)).body) as { metadata: { uid: string } }).metadata.uid;
    await must(east, 'POST', `/api/v1/namespaces/${NS}/configmaps`, cm('owner-cm'));
    const cmUid = (JSON.parse((await memberRequest(east, 'GET', `/api/v1/namespaces/${NS}/configmaps/owner-cm`)).body) as { metadata: { uid: string } }).metadata.uid;
    const owned = (name: string, ref: { apiVersion: string; kind: string; name: string; uid: string }) => ({ ...cm(name), metadata: { name, ownerReferences: [ref] } });
    await must(east, 'POST', `/api/v1/namespaces/${NS}/configmaps`, owned('owned-by-ns', { apiVersion: 'v1', kind: 'Namespace', name: NS, uid: nsUid }));
    await must(east, 'POST', `/api/v1/namespaces/${NS}/configmaps`, owned('owned-by-cm', { apiVersion: 'v1', kind: 'ConfigMap', name: 'owner-cm', uid: cmUid }));
    const byNamespace = 'search.flotilla.io/owner-kind=Namespace,search.flotilla.io/owner-name=' + NS;
    const byConfigMap = 'search.flotilla.io/owner-kind=ConfigMap,search.flotilla.io/owner-name=owner-cm';
    await until('flotilla to hold both', async () => (await selected('configmaps', byNamespace)).items.length === 1 && (await selected('configmaps', byConfigMap)).items.length === 1);
    expect((await selected('configmaps', `search.flotilla.io/owner-uid=${nsUid}`)).items).toEqual([`${east.name}/owned-by-ns`]);
    const alice = fleet.users.find((u) => u.name === 'alice')!.token;
    expect((await selected('configmaps', byConfigMap, alice)).items).toEqual([`${east.name}/owned-by-cm`]);
    // She may read the ConfigMap it owns, but not the namespace: the answer must not tell her it exists.
    for (const term of [byNamespace, `search.flotilla.io/owner-uid=${nsUid}`]) {
      const hidden = await selected('configmaps', term, alice);
      expect({ status: hidden.status, items: hidden.items, warnings: hidden.warnings.filter((w) => w.includes(NS) || w.includes('Namespace')) }, term).toEqual({ status: 200, items: [], warnings: [] });
    }
  });

  it('find across kinds: every cached kind the caller may read, paged, as the brute force; a kind it may not read is left out without a word', async () => {
    const FIND = '/apis/search.flotilla.io/v1alpha1/find';
    type FoundPage = { kind: string; metadata: { continue?: string }; items: (Obj & { kind: string })[] };
    const findAll = async (query: string, token?: string): Promise<{ status: number; items: string[]; pages: number }> => {
      const items: string[] = [];
      let next: string | undefined;
      let pages = 0;
      do {
        const res = await memberRequest(flotilla.endpoint, 'GET', `${FIND}?${query}${next ? `&continue=${encodeURIComponent(next)}` : ''}`, undefined, token ? { token } : {});
        if (res.status !== 200) return { status: res.status, items: [res.body], pages };
        const page = JSON.parse(res.body) as FoundPage;
        expect(page.kind).toBe('FindResultList');
        items.push(...page.items.map((o) => `${o.kind} ${flotillaKey(o)}`));
        next = page.metadata.continue;
        pages++;
      } while (next);
      return { status: 200, items: items.sort(), pages };
    };
    // What the members hold whose names hold "web", of the two kinds flotilla caches here.
    const namespaces = (await Promise.all(fleet.members.map(async (m) => (JSON.parse((await memberRequest(m, 'GET', '/api/v1/namespaces')).body) as { items: Obj[] }).items.map((o) => ({ cluster: m.name, o }))))).flat();
    const want = [
      ...bruteForce(await membersOwn('configmaps'), { contains: 'web' }).map((k) => `ConfigMap ${k}`),
      ...bruteForce(namespaces, { contains: 'web' }).map((k) => `Namespace ${k}`),
    ].sort();
    expect(want.length).toBeGreaterThan(3);
    const whole = await findAll('q=WEB');
    expect(whole).toEqual({ status: 200, items: want, pages: 1 });
    // Three at a time: the same objects, over pages that run from one kind into the next.
    const paged = await findAll('q=web&limit=3');
    expect(paged.items).toEqual(want);
    expect(paged.pages).toBeGreaterThanOrEqual(Math.ceil(want.length / 3));
    // Search terms as a list takes them, and kinds.
    expect((await findAll(`q=web&kinds=configmaps&labelSelector=${encodeURIComponent(`${CLUSTER}=${east.name}`)}`)).items).toEqual(want.filter((k) => k.startsWith(`ConfigMap ${east.name}/`)));
    expect((await findAll('q=web&kinds=nope')).status).toBe(400);
    // alice may list ConfigMaps in srch on east, and no namespace anywhere: those are left out, and nothing says so.
    const alice = fleet.users.find((u) => u.name === 'alice')!.token;
    const res = await memberRequest(flotilla.endpoint, 'GET', `${FIND}?q=web&namespace=${NS}`, undefined, { token: alice });
    expect({ status: res.status, warning: res.headers['warning'] }).toEqual({ status: 200, warning: undefined });
    expect((await findAll(`q=web&namespace=${NS}`, alice)).items).toEqual(want.filter((k) => k.startsWith(`ConfigMap ${east.name}/`)));
    // kubectl flotilla find: the same rows.
    const bin = commandsOnPath(join(fleet.dir, 'flotilla-search', 'bin'));
    const found = await promisify(execFile)(kubectlBinary(), ['flotilla', 'find', 'web', '--kubeconfig', flotilla.kubeconfig], { env: { ...process.env, PATH: `${bin}:${process.env.PATH}` } });
    const rows = found.stdout.trim().split('\n').slice(1).map((l) => l.split(/\s+/)).map(([kind, cluster, ns, name]) => (kind === 'Namespace' ? `${kind} ${cluster}/${ns}` : `${kind} ${cluster}/${name}`));
    expect(rows.sort()).toEqual(want);
  });

  it('a live read (Secrets are not cached): the members get no search terms, the merged answer and a watch\'s events are filtered', async () => {
    const all = await membersOwn('secrets');
    for (const t of [{ contains: 'API' }, { cluster: { op: 'notin', values: [east.name] } }, { clusterLabel: { key: 'region', op: '=', values: ['eu'] } }] as Terms[]) {
      expect((await selected('secrets', t)).items, selectorOf(t)).toEqual(bruteForce(all, t));
    }
    const owner = await selected('secrets', 'search.flotilla.io/owner-uid=x');
    expect(owner.status).toBe(400);
    // A Table without row objects (includeObject=None) keeps the rows the name term selects, their objects null as asked.
    const none = await raw(`/api/v1/namespaces/${NS}/secrets?includeObject=None&labelSelector=${encodeURIComponent('search.flotilla.io/name-contains=API')}`, { accept: 'application/json;as=Table;v=v1;g=meta.k8s.io' });
    const rows = (JSON.parse(none.body) as { rows: { cells: string[]; object: unknown }[] }).rows;
    expect(rows.map((r) => `${r.cells[1]}/${r.cells[0]}`).sort()).toEqual(bruteForce(all, { contains: 'API' } as Terms));
    expect(rows.every((r) => r.object === null)).toBe(true);
    // A live watch: the members' events filtered as they pass.
    const w = await openWatch(flotilla.endpoint, `/api/v1/namespaces/${NS}/secrets?watch=1&labelSelector=${encodeURIComponent('search.flotilla.io/name-contains=LW')}`);
    expect(w.status).toBe(200);
    const secret = (name: string) => ({ apiVersion: 'v1', kind: 'Secret', metadata: { name }, stringData: { k: 'v' } });
    try {
      await must(west, 'POST', `/api/v1/namespaces/${NS}/secrets`, secret('zz-live'));
      await must(west, 'POST', `/api/v1/namespaces/${NS}/secrets`, secret('lw-live'));
      await must(west, 'DELETE', `/api/v1/namespaces/${NS}/secrets/lw-live`);
      const events = await w.until((es) => es.some((e) => e.type === 'DELETED'), 20_000);
      expect(events.map((e) => `${e.type} ${e.object.metadata?.name}`)).toEqual(['ADDED lw-live', 'DELETED lw-live']);
    } finally {
      w.close();
      await must(west, 'DELETE', `/api/v1/namespaces/${NS}/secrets/zz-live`);
    }
  });

  it('a watch: objects enter and leave the selection as they are made and deleted; watch-list starts from the selection', async () => {
    const t: Terms = { prefix: 'MVX', cluster: { op: 'notin', values: [east.name] } };
    const w = await openWatch(flotilla.endpoint, `/api/v1/namespaces/${NS}/configmaps?watch=1&labelSelector=${encodeURIComponent(selectorOf(t))}`);
    expect(w.status).toBe(200);
    try {
      await must(east, 'POST', `/api/v1/namespaces/${NS}/configmaps`, cm('mvx-east'));
      await must(west, 'POST', `/api/v1/namespaces/${NS}/configmaps`, cm('mvx-west'));
      await must(west, 'POST', `/api/v1/namespaces/${NS}/configmaps`, cm('other-west'));
      await must(west, 'DELETE', `/api/v1/namespaces/${NS}/configmaps/mvx-west`);
      const events = await w.until((es) => es.some((e) => e.type === 'DELETED'), 20_000);
      expect(events.map((e) => `${e.type} ${e.object.metadata?.name}`)).toEqual(['ADDED mvx-west', 'DELETED mvx-west']);
    } finally {
      w.close();
      await must(east, 'DELETE', `/api/v1/namespaces/${NS}/configmaps/mvx-east`);
      await must(west, 'DELETE', `/api/v1/namespaces/${NS}/configmaps/other-west`);
    }
    const sel: Terms = { contains: 'api', clusterLabel: { key: 'region', op: '=', values: ['us'] } };
    const wl = await openWatch(flotilla.endpoint, `/api/v1/namespaces/${NS}/configmaps?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&labelSelector=${encodeURIComponent(selectorOf(sel))}`);
    try {
      const initial = await wl.until((es) => es.some((e) => e.type === 'BOOKMARK' && e.object.metadata?.annotations?.['k8s.io/initial-events-end'] === 'true'), 20_000);
      expect(initial.filter((e) => e.type === 'ADDED').map((e) => flotillaKey(e.object as unknown as Obj)).sort()).toEqual(bruteForce(await membersOwn('configmaps'), sel));
    } finally {
      wl.close();
    }
  });

  it('property: random cluster labels, names and creation times select what the brute force does, paged or not', async () => {
    const all = await membersOwn('configmaps');
    const names = all.map(({ o }) => o.metadata.name);
    const seconds = [...new Set(all.map(({ o }) => Date.parse(o.metadata.creationTimestamp) / 1000))];
    const clusters = fleet.members.map((m) => m.name);
    const needle = fc.constantFrom(...names).chain((n) => fc.tuple(fc.nat(n.length - 1), fc.integer({ min: 1, max: 3 })).map(([i, len]) => n.slice(i, i + len)))
      .filter((s) => /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(s))
      .chain((s) => fc.boolean().map((upper) => (upper ? s.toUpperCase() : s)));
    const time = fc.constantFrom(...seconds).chain((s) => fc.integer({ min: -1, max: 1 }).map((d) => s + d));
    const terms: fc.Arbitrary<Terms> = fc.record({
      clusterLabel: fc.option(fc.record({ key: fc.constantFrom('region', 'env'), op: fc.constantFrom('=', '!=', 'in', 'notin', 'exists', '!'), values: fc.subarray(['us', 'eu', 'prod'], { minLength: 1 }) }), { nil: undefined }),
      cluster: fc.option(fc.record({ op: fc.constantFrom('in', 'notin'), values: fc.subarray(clusters, { minLength: 1 }) }), { nil: undefined }),
      contains: fc.option(needle, { nil: undefined }),
      prefix: fc.option(fc.constantFrom(...names).map((n) => n.slice(0, 2)), { nil: undefined }),
      after: fc.option(time, { nil: undefined }),
      before: fc.option(time, { nil: undefined }),
    }) as fc.Arbitrary<Terms>;
    await fc.assert(fc.asyncProperty(terms, fc.integer({ min: 1, max: 4 }), async (t, limit) => {
      const want = bruteForce(all, t);
      expect((await selected('configmaps', t)).items, selectorOf(t)).toEqual(want);
      // Paged through continue tokens.
      const paged: string[] = [];
      let cont = '';
      do {
        const page = await memberRequest(flotilla.endpoint, 'GET', `/api/v1/namespaces/${NS}/configmaps?limit=${limit}&labelSelector=${encodeURIComponent(selectorOf(t))}${cont ? `&continue=${encodeURIComponent(cont)}` : ''}`);
        const doc = JSON.parse(page.body) as { metadata: { continue?: string }; items: Obj[] };
        paged.push(...doc.items.map(flotillaKey));
        cont = doc.metadata.continue ?? '';
      } while (cont);
      expect(paged.sort(), `${selectorOf(t)} limit=${limit}`).toEqual(want);
    }), { numRuns: 25, seed: 52 });
  });

  it('property: random owner chains (Deployment → ReplicaSet → Pod, and ConfigMap chains) select what the brute force does, by uid or kind and name, at any depth, paged or not', async () => {
    const population = await ownedPopulation();
    const ownerOf = new Set(population.flatMap(({ cluster, o }) => (o.metadata.ownerReferences ?? []).map((r) => `${cluster}/${r.uid}`)));
    // Owners that own something, and a few that own nothing.
    const owners = population.filter(({ cluster, o }) => ownerOf.has(`${cluster}/${o.metadata.uid}`) || o.metadata.name.startsWith('checkout-api'));
    expect(new Set(owners.map((x) => x.kind))).toEqual(new Set(['ConfigMap', 'ReplicaSet', 'Deployment']));
    const clusters = fleet.members.map((m) => m.name);
    const kinds = OWNED.filter((r) => r.kind !== 'Deployment');
    // The kinds listed are mostly those the owner owns something of (at some depth), else any.
    const owning = (x: Listed) => kinds.filter((r) => bruteForce(population.filter((y) => y.kind === r.kind), { owner: { uid: x.o.metadata.uid! } }, population).length > 0);
    const ownerAndListed = fc.constantFrom(...owners).chain((x) => fc.tuple(fc.constant(x), fc.constantFrom(...(owning(x).length > 0 ? [...owning(x), ...owning(x), ...kinds] : kinds))));
    const depth = fc.option(fc.integer({ min: 1, max: 3 }), { nil: undefined });
    const cases = fc.tuple(ownerAndListed, fc.boolean(), depth, fc.oneof({ arbitrary: fc.constant(undefined), weight: 2 }, { arbitrary: fc.record({ op: fc.constantFrom('in' as const, 'notin' as const), values: fc.subarray(clusters, { minLength: 1 }) }), weight: 1 }))
      .map(([[x, r], byUid, d, cluster]) => ({
        r,
        t: {
          owner: { ...(byUid ? { uid: x.o.metadata.uid! } : { kind: x.kind!, name: x.o.metadata.name }), ...(d !== undefined ? { depth: d } : {}) },
          ...(cluster ? { cluster } : {}),
        } as Terms,
      }));
    let nonEmpty = 0;
    await fc.assert(fc.asyncProperty(cases, fc.option(fc.integer({ min: 1, max: 3 }), { nil: undefined }), async ({ r, t }, limit) => {
      const want = bruteForce(population.filter((x) => x.kind === r.kind), t, population);
      if (want.length > 0) nonEmpty++;
      const got = await listedKeys(flotilla.endpoint, r.path, { selector: selectorOf(t), ...(limit !== undefined ? { limit } : {}) });
      expect(got, `${r.kind} ${selectorOf(t)} limit=${limit}`).toEqual({ status: 200, items: want, pages: got.pages });
    }), { numRuns: 40, seed: 52 });
    // The property is not vacuous: most owners chosen own something of the kind listed.
    expect(nonEmpty).toBeGreaterThan(15);
  });
});
