import { afterAll, beforeAll, describe, expect, inject, it, onTestFinished } from 'vitest';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { MemberInfo } from '../fleet/fleet.js';
import { memberRequest, type MemberEndpoint } from '../fleet/http.js';
import { startFlotillaProcess, writeFleetConfig, writeProxyKubeconfig, type FlotillaProcess } from '../support/flotilla-process.js';
import { kubectl, kubectlOk, kubectlSession } from '../support/kubectl.js';
import { until } from '../support/poll.js';
import { ACCEPT, normalise } from '../support/differential.js';
import { clientsDir, startInformer } from '../support/informer.js';
import { decodeGlobalRV } from '../../src/api/global-rv.js';
import { applyManifests, deleteManifests, installMemberPolicy, removeMemberPolicy } from '../support/member-policy.js';
import type { Manifest } from '../../src/tenancy/member-policy.js';
import type { TenantSpec } from '../../src/tenancy/tenant.js';

/**
 * Tenant views on the real fleet. Two tenants, acme and globex, apply the same manifests through
 * flotilla with kubectl: a namespace on east and west, a deployment, a service, a service account,
 * a role and its binding, a CRD and one of its objects. Each must see only its own, in its own
 * names, with every kubectl verb; the members must hold the prefixed objects; one tenant's read of
 * the other's object is a 404 that names nothing of it. The members hold the tenants' member-side
 * policy (src/tenancy/member-policy.ts): the admins are admins of their own namespaces only, bound
 * there by flotilla as it makes them; dev@acme is bound to `edit` in acme's tn-web on east only,
 * so the member's RBAC still decides within the tenant.
 */
const fleet = inject('fleet');
const [east, west] = fleet.members as [MemberInfo, MemberInfo, MemberInfo];
const TENANTS: TenantSpec[] = [
  { id: 'acme', users: [], groups: ['acme-admins', 'acme-devs'], clusterScoped: {}, admins: { users: [], groups: ['acme-admins'] } },
  { id: 'globex', users: [], groups: ['globex-admins'], clusterScoped: {}, admins: { users: [], groups: ['globex-admins'] } },
];
const NS = 'tn-web';
const RESOURCES = [
  { version: 'v1', resource: 'pods' },
  { version: 'v1', resource: 'namespaces' },
  { version: 'v1', resource: 'nodes' },
  { version: 'v1', resource: 'configmaps' },
  { version: 'v1', resource: 'services' },
  { group: 'apps', version: 'v1', resource: 'deployments' },
  // Cached, and its objects name others (subjects): rewritten whole when read from the cache.
  { group: 'rbac.authorization.k8s.io', version: 'v1', resource: 'rolebindings' },
];
const CLUSTER = 'search.flotilla.io/cluster';
let flotilla: FlotillaProcess;
const kubeconfigs: Record<string, string> = {};
let work: string;

const manifests = (tenant: string) => `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: ${NS}, labels: {app: web}}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web, tenant: ${tenant}}}
    spec: {containers: [{name: web, image: example.com/web:1}]}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: ${NS}}
spec: {selector: {app: web}, ports: [{port: 80}]}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: builder, namespace: ${NS}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: reader, namespace: ${NS}}
rules: [{apiGroups: [""], resources: [pods], verbs: [get, list]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: builder-reads, namespace: ${NS}}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: reader}
subjects: [{kind: ServiceAccount, name: builder, namespace: ${NS}}, {kind: User, name: "system:serviceaccount:${NS}:builder"}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: only-${tenant}, namespace: ${NS}}
data: {owner: ${tenant}}
`;

const CRD = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.tenants.example.com}
spec:
  group: tenants.example.com
  scope: Namespaced
  names: {plural: gadgets, singular: gadget, kind: Gadget}
  versions:
  - {name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}
`;
const GADGET = `
apiVersion: tenants.example.com/v1
kind: Gadget
metadata: {name: g1, namespace: ${NS}}
spec: {size: 3}
`;

interface Obj {
  apiVersion?: string;
  kind?: string;
  metadata: { name: string; namespace?: string; uid: string; resourceVersion?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  [k: string]: unknown;
}
interface List {
  metadata: { continue?: string; remainingItemCount?: number; resourceVersion?: string };
  items: Obj[];
}

const as = (tenant: string, args: string[], input?: string) => kubectl(kubeconfigs[tenant]!, args, input !== undefined ? { input } : {});
const ok = async (tenant: string, args: string[], input?: string) => {
  const r = await as(tenant, args, input);
  if (r.code !== 0) throw new Error(`${tenant}: kubectl ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
};
const onMember = (tenant: string, m: MemberInfo) => ['--server', `${flotilla.url}/clusters/${m.name}`];
const json = <T>(text: string) => JSON.parse(text) as T;
const keyOf = (o: Obj) => `${o.metadata.annotations?.[CLUSTER] ?? ''}/${o.metadata.namespace ?? ''}/${o.metadata.name}/${o.metadata.uid}`;

/** What members hold in a tenant's namespaces, as the tenant must see it: prefix cut, cluster named. */
async function membersAsTenant(tenant: string, path: (ns: string) => string): Promise<string[]> {
  const out: string[] = [];
  for (const m of fleet.members) {
    const res = await memberRequest(m, 'GET', path(`${tenant}-`));
    if (res.status !== 200) continue;
    for (const o of json<List>(res.body).items) {
      if (!o.metadata.namespace?.startsWith(`${tenant}-`)) continue;
      out.push(`${m.name}/${o.metadata.namespace.slice(tenant.length + 1)}/${o.metadata.name}/${o.metadata.uid}`);
    }
  }
  return out.sort();
}

async function tenantEndpoint(tenant: string): Promise<MemberEndpoint> {
  const user = fleet.users.find((u) => u.name === `admin@${tenant}`)!;
  return { server: flotilla.url, token: user.token, caFile: flotilla.endpoint.caFile };
}

const policies = new Map<string, Manifest[]>();

/**
 * What flotilla still needs beyond the member-side policy, whose admins are admins of their
 * namespaces only: a cached page counts the rest (remainingItemCount) only for a caller who may
 * read the whole range (configmaps here). Read-only; to go when flotilla counts within a tenant's
 * namespaces. (A list of an uncached resource in all the tenant's namespaces needs nothing: it is
 * asked namespace by namespace.)
 */
const fleetReads = (t: TenantSpec): Manifest[] => [
  {
    apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: `tn-${t.id}-fleet-reads` },
    rules: [
      { apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'watch'] },
    ],
  },
  {
    apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name: `tn-${t.id}-fleet-reads` },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: `tn-${t.id}-fleet-reads` },
    subjects: t.admins!.groups.map((name) => ({ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name })),
  },
];

beforeAll(async () => {
  for (const m of fleet.members) {
    policies.set(m.name, await installMemberPolicy(m, TENANTS));
    await applyManifests(m, TENANTS.flatMap(fleetReads));
  }
  flotilla = await startFlotillaProcess({
    fleet,
    dir: join(fleet.dir, 'flotilla-tenants'),
    resources: RESOURCES,
    tenants: TENANTS,
  });
  work = mkdtempSync(join(tmpdir(), 'flotilla-tenants-'));
  for (const t of TENANTS) {
    kubeconfigs[t.id] = join(work, `kubeconfig-${t.id}`);
    writeProxyKubeconfig(kubeconfigs[t.id]!, flotilla.url, flotilla.endpoint.caFile, fleet.users.find((u) => u.name === `admin@${t.id}`)!.token, `flotilla-${t.id}`);
  }
  kubeconfigs['dev'] = join(work, 'kubeconfig-dev');
  writeProxyKubeconfig(kubeconfigs['dev'], flotilla.url, flotilla.endpoint.caFile, fleet.users.find((u) => u.name === 'dev@acme')!.token, 'flotilla-dev');
  // Both tenants, the same manifests, through flotilla.
  for (const t of TENANTS) {
    for (const m of [east, west]) await ok(t.id, [...onMember(t.id, m), 'create', 'namespace', NS]);
    for (const m of [east, west]) {
      await until(`${m.name}: ${t.id}-${NS}'s default service account`, async () => (await memberRequest(m, 'GET', `/api/v1/namespaces/${t.id}-${NS}/serviceaccounts/default`)).status === 200);
    }
    writeFileSync(join(work, `${t.id}.yaml`), manifests(t.id));
    await ok(t.id, [...onMember(t.id, east), 'apply', '-f', join(work, `${t.id}.yaml`)]);
    writeFileSync(join(work, 'crd.yaml'), CRD);
    await ok(t.id, [...onMember(t.id, east), 'apply', '-f', join(work, 'crd.yaml')]);
  }
  const devBinding = await memberRequest(east, 'POST', `/apis/rbac.authorization.k8s.io/v1/namespaces/acme-${NS}/rolebindings`, {
    apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name: 'dev-edit' },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'edit' },
    subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'dev@acme' }],
  });
  if (devBinding.status !== 201) throw new Error(`dev binding: ${devBinding.status} ${devBinding.body}`);
  writeFileSync(join(work, 'gadget.yaml'), GADGET);
  for (const t of TENANTS) {
    // The CRD reaches flotilla's discovery within its refresh (10 s); kubectl asks again on a miss.
    await until(`${t.id} sees gadgets`, async () => (await as(t.id, ['get', 'gadgets', '-A'])).code === 0, 60_000);
    await ok(t.id, [...onMember(t.id, east), 'apply', '-f', join(work, 'gadget.yaml')]);
  }
  for (const t of TENANTS) {
    await until(`${t.id}'s pod running`, async () => {
      const r = await as(t.id, ['get', 'pods', '-n', NS, '-o', 'json']);
      return r.code === 0 && json<{ items: { status: { phase: string } }[] }>(r.stdout).items.some((p) => p.status.phase === 'Running');
    }, 120_000);
  }
}, 600_000);

afterAll(async () => {
  await flotilla?.stop();
  for (const m of fleet.members) {
    await deleteManifests(m, TENANTS.flatMap(fleetReads));
    await removeMemberPolicy(m, TENANTS, policies.get(m.name) ?? []);
    for (const t of TENANTS) {
      await memberRequest(m, 'DELETE', `/api/v1/namespaces/${t.id}-${NS}`);
      await memberRequest(m, 'DELETE', `/api/v1/namespaces/${t.id}-tn-sub`);
      await memberRequest(m, 'DELETE', `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gadgets.${t.id}.tenants.example.com`);
    }
  }
});

describe('two tenants, the same manifests', () => {
  it('land prefixed on the members', async () => {
    for (const t of TENANTS) {
      const ns = `${t.id}-${NS}`;
      for (const m of [east, west]) expect((await memberRequest(m, 'GET', `/api/v1/namespaces/${ns}`)).status).toBe(200);
      expect((await memberRequest(east, 'GET', `/apis/apps/v1/namespaces/${ns}/deployments/web`)).status).toBe(200);
      const binding = json<{ subjects: { kind: string; name: string; namespace?: string }[] }>((await memberRequest(east, 'GET', `/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/rolebindings/builder-reads`)).body);
      expect(binding.subjects).toEqual([
        { kind: 'ServiceAccount', name: 'builder', namespace: ns },
        { apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: `system:serviceaccount:${ns}:builder` },
      ]);
      const crd = json<{ spec: { group: string } }>((await memberRequest(east, 'GET', `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gadgets.${t.id}.tenants.example.com`)).body);
      expect(crd.spec.group).toBe(`${t.id}.tenants.example.com`);
      const gadget = json<Obj>((await memberRequest(east, 'GET', `/apis/${t.id}.tenants.example.com/v1/namespaces/${ns}/gadgets/g1`)).body);
      expect(gadget.apiVersion).toBe(`${t.id}.tenants.example.com/v1`);
    }
  });

  it('each sees exactly its own, in its own names (compared with the members)', async () => {
    for (const t of TENANTS) {
      for (const [resource, path] of [
        ['pods', () => '/api/v1/pods'],
        ['deployments', () => '/apis/apps/v1/deployments'],
        ['services', () => '/api/v1/services'],
        ['configmaps', () => '/api/v1/configmaps'],
        ['rolebindings', () => '/apis/rbac.authorization.k8s.io/v1/rolebindings'],
        ['roles', () => '/apis/rbac.authorization.k8s.io/v1/roles'],
        ['serviceaccounts', () => '/api/v1/serviceaccounts'],
      ] as const) {
        const seen = json<List>(await ok(t.id, ['get', resource, '-A', '-o', 'json'])).items.map(keyOf).sort();
        expect(seen, `${t.id} ${resource}`).toEqual(await membersAsTenant(t.id, path));
        expect(seen.length, `${t.id} ${resource}`).toBeGreaterThan(0);
      }
      // Uncached, asked namespace by namespace (the admins may not list a member cluster-wide):
      // paged through one continue token, page by page, it is the same list.
      const accounts = (await ok(t.id, ['get', 'serviceaccounts', '-A', '-o', 'name'])).trim().split('\n').sort();
      expect((await ok(t.id, ['get', 'serviceaccounts', '-A', '-o', 'name', '--chunk-size=1'])).trim().split('\n').sort()).toEqual(accounts);
      const namespaces = json<List>(await ok(t.id, ['get', 'namespaces', '-o', 'json'])).items;
      expect(namespaces.map((n) => `${n.metadata.annotations?.[CLUSTER]}/${n.metadata.name}`).sort()).toEqual([`${east.name}/${NS}`, `${west.name}/${NS}`]);
      expect(namespaces.every((n) => n.metadata.labels?.['kubernetes.io/metadata.name'] === NS)).toBe(true);
      const gadgets = json<List>(await ok(t.id, ['get', 'gadgets', '-A', '-o', 'json'])).items;
      expect(gadgets.map((g) => `${g.apiVersion} ${g.metadata.namespace}/${g.metadata.name}`)).toEqual([`tenants.example.com/v1 ${NS}/g1`]);
      const crds = (await ok(t.id, ['get', 'crd', '-o', 'name'])).trim().split('\n');
      expect(crds).toEqual(['customresourcedefinition.apiextensions.k8s.io/gadgets.tenants.example.com']);
      // The tenant's own configmap is there; the other's is not.
      const other = TENANTS.find((o) => o.id !== t.id)!.id;
      expect((await ok(t.id, ['get', 'configmap', '-n', NS, `only-${t.id}`, '-o', 'jsonpath={.data.owner}']))).toBe(t.id);
      const foreign = await as(t.id, ['get', 'configmap', '-n', NS, `only-${other}`]);
      expect(foreign.code).not.toBe(0);
      expect(foreign.stderr).toContain(`configmaps "only-${other}" not found`);
      expect(foreign.stderr).not.toContain(`${other}-`);
    }
  });

  it('-o yaml and describe show references in the tenant’s names', async () => {
    const yaml = await ok('acme', ['get', 'rolebinding', '-n', NS, 'builder-reads', '-o', 'yaml']);
    expect(yaml).toContain(`namespace: ${NS}`);
    expect(yaml).toContain(`name: system:serviceaccount:${NS}:builder`);
    expect(yaml).not.toContain('acme-');
    const described = await ok('acme', ['describe', 'rolebinding', '-n', NS, 'builder-reads']);
    expect(described).toMatch(new RegExp(`ServiceAccount\\s+builder\\s+${NS}`));
    const pod = await ok('acme', ['describe', 'pods', '-n', NS, '-l', 'app=web']);
    expect(pod).toContain(`Namespace:        ${NS}`);
    expect(pod).not.toContain('acme-');
    expect(pod).not.toContain('globex');
  });

  it('apply (an update), delete: each tenant’s own objects only', async () => {
    writeFileSync(join(work, 'acme-cm.yaml'), `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: only-acme, namespace: ${NS}}\ndata: {owner: acme, color: blue}\n`);
    await ok('acme', [...onMember('acme', east), 'apply', '-f', join(work, 'acme-cm.yaml')]);
    const member = json<{ data: Record<string, string> }>((await memberRequest(east, 'GET', `/api/v1/namespaces/acme-${NS}/configmaps/only-acme`)).body);
    expect(member.data).toEqual({ owner: 'acme', color: 'blue' });
    await ok('globex', ['delete', 'configmap', '-n', NS, 'only-globex']);
    expect((await memberRequest(east, 'GET', `/api/v1/namespaces/globex-${NS}/configmaps/only-globex`)).status).toBe(404);
    expect((await memberRequest(east, 'GET', `/api/v1/namespaces/acme-${NS}/configmaps/only-acme`)).status).toBe(200);
    // Deleting the other's is deleting nothing: 404, and the object stays.
    const cross = await as('globex', ['delete', 'configmap', '-n', NS, 'only-acme']);
    expect(cross.code).not.toBe(0);
    expect(cross.stderr).toContain('not found');
    expect((await memberRequest(east, 'GET', `/api/v1/namespaces/acme-${NS}/configmaps/only-acme`)).status).toBe(200);
  });

  it('get -w: a tenant’s watch hears its own changes only', async () => {
    const watch = kubectlSession(kubeconfigs['acme']!, ['get', 'deployments', '-A', '-w', '--output-watch-events']);
    try {
      await watch.waitForOutput(/ADDED\s+tn-web\s+web\s+\S+/, 20_000);
      await ok('globex', [...onMember('globex', east), 'label', 'deployment', '-n', NS, 'web', 'seen=globex']);
      await ok('acme', [...onMember('acme', east), 'label', 'deployment', '-n', NS, 'web', 'seen=acme']);
      await watch.waitForOutput(/MODIFIED\s+tn-web\s+web\s+east/, 20_000);
      const lines = watch.stdout().trim().split('\n');
      // Two ADDED (east's and west's web), then acme's own modification: globex's is not there.
      expect(lines.filter((l) => l.includes('MODIFIED'))).toHaveLength(1);
      expect(watch.stdout()).not.toContain('acme-');
    } finally {
      process.kill(watch.pid);
    }
  });

  it('--chunk-size and raw paging: limit, continue and remainingItemCount count the tenant’s only', async () => {
    const all = (await ok('acme', ['get', 'configmaps', '-A', '-o', 'name'])).trim().split('\n').sort();
    const chunked = (await ok('acme', ['get', 'configmaps', '-A', '-o', 'name', '--chunk-size=1'])).trim().split('\n').sort();
    expect(chunked).toEqual(all);
    const ep = await tenantEndpoint('acme');
    const pages: Obj[] = [];
    let cont: string | undefined;
    let first = true;
    do {
      const res = await memberRequest(ep, 'GET', `/api/v1/configmaps?limit=1${cont ? `&continue=${encodeURIComponent(cont)}` : ''}`);
      expect(res.status).toBe(200);
      const page = json<List>(res.body);
      pages.push(...page.items);
      if (first && page.metadata.continue) expect(page.metadata.remainingItemCount).toBe(all.length - 1);
      first = false;
      cont = page.metadata.continue;
      if (cont) expect(Buffer.from(cont, 'base64url').toString('utf8')).not.toContain('acme-');
    } while (cont);
    expect(pages.length).toBe(all.length);
    expect(pages.every((p) => p.metadata.namespace === NS)).toBe(true);
  });

  it('logs and exec reach the tenant’s pod on its member', async () => {
    const logs = await ok('acme', ['logs', '-n', NS, 'deploy/web', '--tail=1']);
    expect(logs.length).toBeGreaterThan(0);
    const uname = await ok('acme', ['exec', '-n', NS, 'deploy/web', '--', 'uname']);
    expect(uname.trim()).toBe('Linux');
  });

  it('shared kinds are read-only, hidden ones are not there, other tenants’ groups nowhere', async () => {
    expect((await ok('acme', ['get', 'nodes', '-o', 'name'])).trim().split('\n').length).toBeGreaterThan(0);
    const node = (await ok('acme', ['get', 'nodes', '-o', 'name'])).trim().split('\n')[0]!;
    const label = await as('acme', ['label', node, 'x=y']);
    expect(label.stderr).toContain('Forbidden');
    const crb = await as('acme', ['get', 'clusterrolebindings', '-o', 'name']);
    expect(crb.code).toBe(0);
    expect(crb.stdout.trim()).toBe('');
    const webhooks = await as('acme', ['get', 'validatingwebhookconfigurations']);
    expect(webhooks.stderr).toContain("doesn't have a resource type");
    const apis = await ok('acme', ['get', '--raw', '/apis']);
    expect(apis).toContain('"tenants.example.com"');
    expect(apis).not.toContain('globex');
    expect(apis).not.toContain('acme.tenants');
    const schema = await ok('acme', ['get', '--raw', '/openapi/v3']);
    expect(schema).not.toContain('globex');
    expect((await as('acme', ['get', '--raw', '/openapi/v2'])).code).not.toBe(0);
    expect(await ok('acme', ['explain', 'gadgets'])).toContain('GROUP:      tenants.example.com');
    // The fleet's own state (every tenant's names and counts) is not a tenant's, even an admin's.
    for (const path of ['/status', '/metrics']) expect((await as('acme', ['get', '--raw', path])).stderr).toContain('Forbidden');
  });

  it('hierarchy selectors in the tenant’s names select its own tree only', async () => {
    const SUB = 'hnc.x-k8s.io/subnamespace-of';
    const TREE = `${NS}.tree.hnc.x-k8s.io/depth`;
    for (const t of TENANTS) {
      await ok(t.id, [...onMember(t.id, east), 'apply', '-f', '-'], `apiVersion: v1\nkind: Namespace\nmetadata: {name: tn-sub, annotations: {${SUB}: ${NS}}}\n`);
      const member = json<Obj>((await memberRequest(east, 'GET', `/api/v1/namespaces/${t.id}-tn-sub`)).body);
      expect(member.metadata.annotations?.[SUB]).toBe(`${t.id}-${NS}`);
    }
    await until('acme’s tn-sub under tn-web', async () => (await as('acme', ['get', 'ns', '-l', `${TREE}=1`, '-o', 'name'])).stdout.trim() === 'namespace/tn-sub');
    for (const t of TENANTS) {
      const pods = json<List>(await ok(t.id, ['get', 'pods', '-A', '-l', TREE, '-o', 'json'])).items;
      expect(pods.length).toBeGreaterThan(0);
      expect(pods.every((p) => p.metadata.namespace === NS && p.metadata.labels?.['tenant'] === t.id)).toBe(true);
      const sub = json<Obj>(await ok(t.id, ['get', 'ns', 'tn-sub', '-o', 'json']));
      expect(sub.metadata.labels).toMatchObject({ [TREE]: '1', 'tn-sub.tree.hnc.x-k8s.io/depth': '0' });
      expect(JSON.stringify(sub)).not.toContain(`${t.id}-`);
    }
    // A selector in another tenant's member names selects nothing.
    expect((await ok('acme', ['get', 'pods', '-A', '-l', `globex-${TREE}`, '-o', 'name'])).trim()).toBe('');
  });

  it('field selectors name the tenant’s namespaces', async () => {
    const pods = json<List>(await ok('acme', ['get', 'pods', '-A', '--field-selector', `metadata.namespace=${NS}`, '-o', 'json'])).items;
    expect(pods.length).toBeGreaterThan(0);
    expect(pods.every((p) => p.metadata.namespace === NS && p.metadata.labels?.['tenant'] === 'acme')).toBe(true);
    const ns = json<List>(await ok('acme', ['get', 'namespaces', '--field-selector', `metadata.name=${NS}`, '-o', 'json'])).items;
    expect(ns.map((n) => n.metadata.name)).toEqual([NS, NS]);
  });

  it('find across kinds is not a tenant\'s: its boundary serves only the groups its policy names (404, as for any other)', async () => {
    for (const t of TENANTS) {
      const token = fleet.users.find((u) => u.name === `admin@${t.id}`)!.token;
      const res = await memberRequest(flotilla.endpoint, 'GET', `/apis/search.flotilla.io/v1alpha1/find?q=only-&namespace=${NS}`, undefined, { token });
      expect({ status: res.status, reason: (JSON.parse(res.body) as { reason?: string }).reason }, t.id).toEqual({ status: 404, reason: 'NotFound' });
      expect(res.body).not.toContain('only-');
    }
  });

  it('a changed tenants section takes effect without a restart', async () => {
    const devSees = async () => json<List>((await kubectl(kubeconfigs['dev']!, ['get', 'pods', '-A', '-o', 'json'])).stdout).items.map((p) => p.metadata.namespace);
    expect(new Set(await devSees())).toEqual(new Set([NS]));
    // acme-devs out of acme: dev@acme is nobody's tenant, and sees the member's names.
    writeFleetConfig(flotilla.configPath, fleet.members, RESOURCES, undefined, undefined, [{ id: 'acme', groups: ['acme-admins'] }, TENANTS[1]!]);
    try {
      await until('dev@acme sees acme-tn-web', async () => (await devSees()).includes(`acme-${NS}`));
    } finally {
      writeFleetConfig(flotilla.configPath, fleet.members, RESOURCES, undefined, undefined, TENANTS);
    }
    await until('dev@acme back in acme', async () => new Set(await devSees()).has(NS) && !(await devSees()).includes(`acme-${NS}`));
  });

  it('a client-go informer as a tenant (list/watch and watch-list, JSON and protobuf) converges on its own pods, with no relist', async () => {
    // client-go 0.35's default asks for protobuf first: the tenant's answers transcoded, in its
    // names. And a client that takes JSON alone.
    for (const [watchList, accept] of [[false, undefined], [true, undefined], [false, 'application/json'], [true, 'application/json']] as const) {
      const run = startInformer({ bin: join(clientsDir(), 'informer'), kubeconfig: kubeconfigs['acme']!, mode: 'informer', watchList, ...(accept ? { accept } : {}) });
      onTestFinished(() => run.stop());
      await run.synced;
      // Both tenants' pods change; the informer must hear acme's only.
      for (const t of TENANTS) await ok(t.id, [...onMember(t.id, east), 'scale', 'deployment', '-n', NS, 'web', `--replicas=${watchList ? 1 : 2}`]);
      await until('acme’s pods scaled', async () => json<List>(await ok('acme', ['get', 'pods', '-n', NS, '-o', 'json'])).items.length === (watchList ? 1 : 2), 60_000);
      const ep = await tenantEndpoint('acme');
      const fresh = json<List>((await memberRequest(ep, 'GET', '/api/v1/pods')).body).items
        .map((p) => `${p.metadata.namespace}/${p.metadata.name} ${p.metadata.uid} ${p.metadata.annotations![CLUSTER]}:${decodeGlobalRV(p.metadata.resourceVersion!)[p.metadata.annotations![CLUSTER]!]}`).sort();
      await new Promise((r) => setTimeout(r, 500));
      const { lines, lists, watches, protobufAnswers, log } = await run.dump();
      const what = `watch-list ${watchList}, ${accept ?? 'client-go’s default Accept'}`;
      expect(lines, what).toEqual(fresh);
      expect(lines.every((l) => l.startsWith(`${NS}/`))).toBe(true);
      expect(lists, what).toBe(watchList ? 0 : 1);
      expect(log).not.toMatch(/falling back|unable to decode|Failed to watch|failed to list|Unhandled Error/i);
      expect(protobufAnswers, what).toBe(accept ? 0 : lists + watches);
    }
  }, 300_000);

  it('a tenant’s service account (a pod’s own token) sees the tenant’s fleet', async () => {
    // A token of acme's builder in tn-web, issued by east (which also reviews flotilla's tokens).
    const token = (await ok('acme', [...onMember('acme', east), 'create', 'token', 'builder', '-n', NS])).trim();
    const sa = join(work, 'kubeconfig-builder');
    writeProxyKubeconfig(sa, flotilla.url, flotilla.endpoint.caFile, token, 'flotilla-builder');
    const pods = json<List>(await kubectlOk(sa, ['get', 'pods', '-n', NS, '-o', 'json'])).items;
    expect(pods.length).toBeGreaterThan(0);
    expect(pods.every((p) => p.metadata.namespace === NS && p.metadata.labels?.['tenant'] === 'acme')).toBe(true);
    expect((await kubectlOk(sa, ['auth', 'whoami', '-o', 'jsonpath={.status.userInfo.username}']))).toBe(`system:serviceaccount:acme-${NS}:builder`);
  });

  it('the member’s RBAC still decides within the tenant', async () => {
    const r = await kubectl(kubeconfigs['dev']!, ['get', 'pods', '-A', '-o', 'json']);
    expect(r.code).toBe(0);
    const pods = json<List>(r.stdout).items;
    expect(pods.length).toBeGreaterThan(0);
    expect(pods.every((p) => p.metadata.annotations?.[CLUSTER] === east.name && p.metadata.namespace === NS)).toBe(true);
    expect(r.stderr).toContain('cannot list pods in clusters');
    expect(await kubectlOk(kubeconfigs['dev']!, ['auth', 'can-i', 'create', 'deployments', '-n', NS, '--server', `${flotilla.url}/clusters/${east.name}`])).toContain('yes');
    expect((await kubectl(kubeconfigs['dev']!, ['auth', 'can-i', 'create', 'deployments', '-n', NS, '--server', `${flotilla.url}/clusters/${west.name}`])).stdout).toContain('no');
  });
});

describe('the differential harness, as a tenant', () => {
  /**
   * The member's answer for the prefixed path and flotilla's for the tenant's, after the
   * harness's normalisation, differ only as documented: namespaces (and a Namespace's name and
   * name label) without the tenant's prefix.
   */
  function documented(doc: unknown, tenant: string): unknown {
    const text = JSON.stringify(doc);
    return JSON.parse(text.split(`"${tenant}-`).join('"'));
  }
  function withoutTreeLabels(doc: unknown): unknown {
    return JSON.parse(JSON.stringify(doc, (k, v: unknown) => {
      if (k !== 'labels' || typeof v !== 'object' || v === null) return v;
      return Object.fromEntries(Object.entries(v).filter(([key]) => !key.endsWith('.tree.hnc.x-k8s.io/depth')));
    }));
  }
  /** Flotilla drops managedFields from what it caches (by default; documented): so from the member's too. */
  function withoutManagedFields(doc: unknown): unknown {
    return JSON.parse(JSON.stringify(doc, (k, v: unknown) => (k === 'managedFields' ? undefined : v)));
  }

  it('gets and lists in JSON, Table and metadata agree with the member up to the prefix', async () => {
    const ep = await tenantEndpoint('acme');
    const pod = json<List>((await memberRequest(east, 'GET', `/api/v1/namespaces/acme-${NS}/pods`)).body).items[0]!.metadata.name;
    const cases: [string, string, string][] = [
      [`/api/v1/namespaces/acme-${NS}/pods`, `/api/v1/namespaces/${NS}/pods`, ACCEPT.json],
      [`/api/v1/namespaces/acme-${NS}/pods`, `/api/v1/namespaces/${NS}/pods`, ACCEPT.table],
      [`/api/v1/namespaces/acme-${NS}/pods/${pod}`, `/api/v1/namespaces/${NS}/pods/${pod}`, ACCEPT.json],
      [`/api/v1/namespaces/acme-${NS}/pods/${pod}`, `/api/v1/namespaces/${NS}/pods/${pod}`, ACCEPT.metadata],
      [`/api/v1/namespaces/acme-${NS}/services`, `/api/v1/namespaces/${NS}/services`, ACCEPT.json],
      [`/api/v1/namespaces/acme-${NS}`, `/api/v1/namespaces/${NS}`, ACCEPT.json],
      [`/api/v1/namespaces/acme-${NS}/configmaps/only-globex`, `/api/v1/namespaces/${NS}/configmaps/only-globex`, ACCEPT.json],
    ];
    for (const [memberPath, tenantPath, accept] of cases) {
      const [direct, through] = await Promise.all([
        memberRequest(east, 'GET', memberPath, undefined, { accept }),
        memberRequest(ep, 'GET', `/clusters/${east.name}${tenantPath}`, undefined, { accept }),
      ]);
      expect(through.status, `${tenantPath} ${accept}`).toBe(direct.status);
      const m = withoutManagedFields(documented(normalise(JSON.parse(direct.body), east.name, false), 'acme'));
      // A namespace in a tree carries flotilla's computed tree labels (hierarchy selectors; documented).
      const f = withoutTreeLabels(normalise(JSON.parse(through.body), east.name, true));
      expect(f, `${tenantPath} ${accept}`).toEqual(m);
    }
  });
});
