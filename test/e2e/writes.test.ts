import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { join } from 'node:path';
import { writeFileSync } from 'node:fs';
import type { V1ConfigMap, V1Deployment, V1Pod } from '@kubernetes/client-node';
import { memberJson, memberRequest } from '../fleet/http.js';
import { waitFor, type MemberInfo } from '../fleet/fleet.js';
import { startFlotillaProcess, writeProxyKubeconfig, type FlotillaProcess, type ResourceRuleSpec } from '../support/flotilla-process.js';
import { kubectl, kubectlOk } from '../support/kubectl.js';
import { decodeGlobalRV, encodeGlobalRV } from '../../src/api/global-rv.js';
import { openWatch } from '../support/watch-client.js';
import { connect } from 'node:tls';
import { readFileSync } from 'node:fs';

/**
 * Writes through flotilla against the real fleet: each lands on the member that owns the object,
 * as the caller (member RBAC decides), with RVs translated so optimistic concurrency holds, and
 * the caller's next read sees its write.
 */
const fleet = inject('fleet');
const NS = 'writes';
const CLUSTER = 'search.flotilla.io/cluster';
const [east, west, north] = [fleet.members[0]!, fleet.members[1]!, fleet.members[2]!];
let flotilla: FlotillaProcess;

const RESOURCES: ResourceRuleSpec[] = [
  { version: 'v1', resource: 'pods' },
  { version: 'v1', resource: 'namespaces' },
  { version: 'v1', resource: 'configmaps' },
  { group: 'apps', version: 'v1', resource: 'deployments' },
];

async function make(m: MemberInfo, path: string, body: unknown): Promise<void> {
  const res = await memberRequest(m, 'POST', path, body);
  if (res.status !== 201 && res.status !== 409) throw new Error(`${m.name} POST ${path}: ${res.status} ${res.body.slice(0, 300)}`);
}

const configMap = (name: string, data: Record<string, string> = { a: '1' }): V1ConfigMap => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data });

beforeAll(async () => {
  for (const m of fleet.members) {
    await make(m, '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
    await make(m, `/api/v1/namespaces/${NS}/configmaps`, configMap(`cm-${m.name}`));
    // The same name in two members: writes to it must say which one.
    if (m !== north) await make(m, `/api/v1/namespaces/${NS}/configmaps`, configMap('twin'));
  }
  await make(west, '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'only-west' } });
  await make(east, `/apis/apps/v1/namespaces/${NS}/deployments`, {
    apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'web' },
    spec: { replicas: 1, selector: { matchLabels: { app: 'web' } }, template: { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'web', image: 'example.com/web:1' }] } } },
  });
  flotilla = await startFlotillaProcess({ fleet, dir: join(fleet.dir, 'flotilla-writes'), resources: RESOURCES });
});

afterAll(async () => {
  await flotilla?.stop();
});

async function viaFlotilla<T>(path: string): Promise<T> {
  return memberJson<T>(flotilla.endpoint, 'GET', path);
}

describe('writes land on the owning member', () => {
  it('kubectl annotate and label: the member has it, and flotilla shows it at once to the writer', async () => {
    for (const version of [undefined, '1.28']) {
      const tag = version ?? 'default';
      await kubectlOk(flotilla.kubeconfig, ['annotate', '-n', NS, 'configmap', 'cm-west', `seen-by=${tag}`, '--overwrite'], { version });
      await kubectlOk(flotilla.kubeconfig, ['label', '-n', NS, 'configmap', 'cm-west', `tier=${tag}`, '--overwrite'], { version });
      const direct = await memberJson<V1ConfigMap>(west, 'GET', `/api/v1/namespaces/${NS}/configmaps/cm-west`);
      expect(direct.metadata!.annotations!['seen-by']).toBe(tag);
      expect(direct.metadata!.labels!['tier']).toBe(tag);
      // Our annotation is shown to clients, never written to members.
      expect(direct.metadata!.annotations![CLUSTER]).toBeUndefined();
      // Read-your-writes: the writer's very next read, from the cache, has it.
      const cached = await viaFlotilla<V1ConfigMap>(`/api/v1/namespaces/${NS}/configmaps/cm-west`);
      expect(cached.metadata!.annotations!['seen-by']).toBe(tag);
      expect(cached.metadata!.resourceVersion).toBe(encodeGlobalRV({ west: direct.metadata!.resourceVersion! }));
    }
    for (const m of [east, north]) {
      expect((await memberJson<V1ConfigMap>(m, 'GET', `/api/v1/namespaces/${NS}/configmaps/cm-${m.name}`)).metadata!.annotations?.['seen-by']).toBeUndefined();
    }
  });

  it('kubectl patch of every type and apply --server-side', async () => {
    await kubectlOk(flotilla.kubeconfig, ['patch', '-n', NS, 'configmap', 'cm-north', '--type=merge', '-p', '{"data":{"merge":"yes"}}']);
    await kubectlOk(flotilla.kubeconfig, ['patch', '-n', NS, 'configmap', 'cm-north', '--type=json', '-p', '[{"op":"add","path":"/data/json","value":"yes"}]']);
    await kubectlOk(flotilla.kubeconfig, ['patch', '-n', NS, 'deployment', 'web', '--type=strategic', '-p', '{"spec":{"template":{"metadata":{"labels":{"patched":"yes"}}}}}']);
    const manifest = join(flotilla.dataDir, '..', 'apply.yaml');
    writeFileSync(manifest, `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-north\n  namespace: ${NS}\ndata:\n  applied: "yes"\n`);
    await kubectlOk(flotilla.kubeconfig, ['apply', '--server-side', '--force-conflicts', '--field-manager=flotilla-test', '-f', manifest]);
    const cm = await memberJson<V1ConfigMap>(north, 'GET', `/api/v1/namespaces/${NS}/configmaps/cm-north`);
    expect(cm.data).toMatchObject({ merge: 'yes', json: 'yes', applied: 'yes' });
    const dep = await memberJson<V1Deployment>(east, 'GET', `/apis/apps/v1/namespaces/${NS}/deployments/web`);
    expect(dep.spec!.template.metadata!.labels).toMatchObject({ patched: 'yes', app: 'web' });
  });

  it('an update with a stale resourceVersion gets the member’s 409; a fresh one succeeds', async () => {
    const read = await viaFlotilla<V1ConfigMap>(`/api/v1/namespaces/${NS}/configmaps/cm-east`);
    expect(read.metadata!.annotations![CLUSTER]).toBe('east');
    const first = await memberRequest(flotilla.endpoint, 'PUT', `/api/v1/namespaces/${NS}/configmaps/cm-east`, { ...read, data: { a: 'first' } });
    expect(first.status).toBe(200);
    const written = JSON.parse(first.body) as V1ConfigMap;
    expect(Object.keys(decodeGlobalRV(written.metadata!.resourceVersion!))).toEqual(['east']);
    const stale = await memberRequest(flotilla.endpoint, 'PUT', `/api/v1/namespaces/${NS}/configmaps/cm-east`, { ...read, data: { a: 'stale' } });
    expect(stale.status).toBe(409);
    expect(JSON.parse(stale.body)).toMatchObject({ kind: 'Status', reason: 'Conflict', code: 409 });
    expect((await memberJson<V1ConfigMap>(east, 'GET', `/api/v1/namespaces/${NS}/configmaps/cm-east`)).data).toEqual({ a: 'first' });
    // An RV read from another member cannot guard a write to this one.
    const foreign = await memberRequest(flotilla.endpoint, 'PUT', `/api/v1/namespaces/${NS}/configmaps/cm-east`, {
      ...written, metadata: { ...written.metadata, resourceVersion: encodeGlobalRV({ west: '1' }) },
    });
    expect(foreign.status).toBe(409);
  });

  it('kubectl scale and rollout restart reach the deployment’s member', async () => {
    await kubectlOk(flotilla.kubeconfig, ['scale', '-n', NS, 'deployment/web', '--replicas=3']);
    await kubectlOk(flotilla.kubeconfig, ['rollout', 'restart', '-n', NS, 'deployment/web']);
    const dep = await memberJson<V1Deployment>(east, 'GET', `/apis/apps/v1/namespaces/${NS}/deployments/web`);
    expect(dep.spec!.replicas).toBe(3);
    expect(dep.spec!.template.metadata!.annotations!['kubectl.kubernetes.io/restartedAt']).toBeTruthy();
    const scale = await viaFlotilla<{ kind: string; spec: { replicas: number } }>(`/apis/apps/v1/namespaces/${NS}/deployments/web/scale`);
    expect(scale).toMatchObject({ kind: 'Scale', spec: { replicas: 3 } });
  });

  it('an object in two members is a 400 naming them unless a cluster is addressed', async () => {
    const r = await kubectl(flotilla.kubeconfig, ['annotate', '-n', NS, 'configmap', 'twin', 'x=1']);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/exists in clusters east, west/);
    const res = await memberRequest(flotilla.endpoint, 'PATCH', `/clusters/west/api/v1/namespaces/${NS}/configmaps/twin`, { metadata: { annotations: { x: '1' } } }, { contentType: 'application/merge-patch+json' });
    expect(res.status).toBe(200);
    expect((await memberJson<V1ConfigMap>(west, 'GET', `/api/v1/namespaces/${NS}/configmaps/twin`)).metadata!.annotations!['x']).toBe('1');
    // kubectl itself, pointed at one member's prefix.
    await kubectlOk(flotilla.kubeconfig, ['--server', `${flotilla.url}/clusters/west`, 'annotate', '-n', NS, 'configmap', 'twin', 'y=2']);
    expect((await memberJson<V1ConfigMap>(west, 'GET', `/api/v1/namespaces/${NS}/configmaps/twin`)).metadata!.annotations!['y']).toBe('2');
    expect((await memberJson<V1ConfigMap>(east, 'GET', `/api/v1/namespaces/${NS}/configmaps/twin`)).metadata!.annotations?.['x']).toBeUndefined();
  });

  it('create goes to the addressed cluster, the annotated one, or the only member with the namespace', async () => {
    const a = await memberRequest(flotilla.endpoint, 'POST', `/clusters/north/api/v1/namespaces/${NS}/configmaps`, configMap('made-north'));
    expect(a.status).toBe(201);
    expect((await memberRequest(north, 'GET', `/api/v1/namespaces/${NS}/configmaps/made-north`)).status).toBe(200);
    const b = await memberRequest(flotilla.endpoint, 'POST', `/api/v1/namespaces/${NS}/configmaps`, { ...configMap('made-annotated'), metadata: { name: 'made-annotated', annotations: { [CLUSTER]: 'east' } } });
    expect(b.status).toBe(201);
    const created = await memberJson<V1ConfigMap>(east, 'GET', `/api/v1/namespaces/${NS}/configmaps/made-annotated`);
    expect(created.metadata!.annotations?.[CLUSTER]).toBeUndefined();
    const c = await memberRequest(flotilla.endpoint, 'POST', '/api/v1/namespaces/only-west/configmaps', configMap('made-west'));
    expect(c.status).toBe(201);
    expect((await memberRequest(west, 'GET', '/api/v1/namespaces/only-west/configmaps/made-west')).status).toBe(200);
    const ambiguous = await memberRequest(flotilla.endpoint, 'POST', `/api/v1/namespaces/${NS}/configmaps`, configMap('nowhere'));
    expect(ambiguous.status).toBe(400);
    expect(JSON.parse(ambiguous.body)).toMatchObject({ kind: 'Status', reason: 'BadRequest' });
    const message = JSON.parse(ambiguous.body).message as string;
    expect(message).toMatch(/namespace "writes" exists in clusters .*\/clusters\/<name>\//);
    for (const m of fleet.members) expect(message).toContain(m.name);
    const exists = await memberRequest(flotilla.endpoint, 'POST', `/clusters/north/api/v1/namespaces/${NS}/configmaps`, configMap('made-north'));
    expect(exists.status).toBe(409);
    expect(JSON.parse(exists.body)).toMatchObject({ reason: 'AlreadyExists' });
  });

  it('delete and a fanned-out deletecollection', async () => {
    await kubectlOk(flotilla.kubeconfig, ['delete', '-n', NS, 'configmap', 'made-west', '--ignore-not-found']);
    await kubectlOk(flotilla.kubeconfig, ['delete', '-n', 'only-west', 'configmap', 'made-west']);
    expect((await memberRequest(west, 'GET', '/api/v1/namespaces/only-west/configmaps/made-west')).status).toBe(404);
    for (const m of fleet.members) await make(m, `/api/v1/namespaces/${NS}/configmaps`, { ...configMap(`doomed-${m.name}`), metadata: { name: `doomed-${m.name}`, labels: { doomed: 'yes' } } });
    const res = await memberRequest(flotilla.endpoint, 'DELETE', `/api/v1/namespaces/${NS}/configmaps?labelSelector=doomed%3Dyes`);
    expect(res.status).toBe(200);
    const list = JSON.parse(res.body) as { kind: string; items: V1ConfigMap[] };
    expect(list.kind).toBe('ConfigMapList');
    expect(list.items.map((i) => `${i.metadata!.annotations![CLUSTER]}/${i.metadata!.name}`).sort()).toEqual(['east/doomed-east', 'north/doomed-north', 'west/doomed-west']);
    for (const m of fleet.members) expect((await memberRequest(m, 'GET', `/api/v1/namespaces/${NS}/configmaps/doomed-${m.name}`)).status).toBe(404);
  });

  it('a deletecollection with search terms or a namespace-tree selector is refused (members would read them as absent labels); kubectl delete -l deletes the search\'s objects by name', async () => {
    for (const m of fleet.members) await make(m, `/api/v1/namespaces/${NS}/configmaps`, { ...configMap(`kept-${m.name}`), metadata: { name: `kept-${m.name}` } });
    const selectors = [
      // Each member has no such label on any object: `!=` and `!` would match every one of them.
      'labelSelector=search.flotilla.io%2Fcluster%21%3Dwest',
      'labelSelector=%21team.tree.hnc.x-k8s.io%2Fdepth',
      'labelSelector=cluster.search.flotilla.io%2Fregion+notin+%28mars%29',
      'search.flotilla.io%2Fname-contains=kept',
    ];
    for (const q of selectors) {
      const res = await memberRequest(flotilla.endpoint, 'DELETE', `/api/v1/namespaces/${NS}/configmaps?${q}`);
      expect(res.status, q).toBe(400);
      expect(JSON.parse(res.body)).toMatchObject({ kind: 'Status', reason: 'BadRequest' });
      expect(JSON.parse(res.body).message).toMatch(/list the objects with them first/);
    }
    for (const m of fleet.members) expect((await memberRequest(m, 'GET', `/api/v1/namespaces/${NS}/configmaps/kept-${m.name}`)).status).toBe(200);
    // kubectl deletes by name what its list (flotilla's, search applied) returned: exactly the search's objects.
    const search = `/api/v1/namespaces/${NS}/configmaps?labelSelector=${encodeURIComponent('search.flotilla.io/cluster!=west,search.flotilla.io/name-prefix=kept')}`;
    await waitFor('the kept configmaps cached', async () => (await memberJson<{ items: unknown[] }>(flotilla.endpoint, 'GET', search)).items.length === 2, 30_000);
    await kubectlOk(flotilla.kubeconfig, ['delete', 'configmaps', '-n', NS, '-l', 'search.flotilla.io/cluster!=west,search.flotilla.io/name-prefix=kept']);
    for (const m of fleet.members) expect((await memberRequest(m, 'GET', `/api/v1/namespaces/${NS}/configmaps/kept-${m.name}`)).status, m.name).toBe(m.name === 'west' ? 200 : 404);
  });
});

describe('a watched object equals the write answer that made it', () => {
  // Cached resources show objects as the cache holds them (managedFields dropped by default);
  // resources read live show them as the member has them, and so do their write answers.
  const cases = [
    { what: 'cached (configmaps): managedFields dropped from both by default', resource: 'configmaps', body: (name: string) => configMap(name), managed: false },
    { what: 'read live (secrets): managedFields kept in both, as the member has them', resource: 'secrets', body: (name: string) => ({ apiVersion: 'v1', kind: 'Secret', metadata: { name }, stringData: { a: '1' } }), managed: true },
  ];
  for (const c of cases) {
    it(c.what, async () => {
      const path = `/api/v1/namespaces/${NS}/${c.resource}`;
      const name = `watched-equal-${c.resource}`;
      const listed = JSON.parse((await memberRequest(flotilla.endpoint, 'GET', path)).body) as { metadata: { resourceVersion: string } };
      const w = await openWatch(flotilla.endpoint, `${path}?watch=1&resourceVersion=${listed.metadata.resourceVersion}&timeoutSeconds=30`);
      try {
        const made = await memberRequest(flotilla.endpoint, 'POST', `/clusters/${east.name}${path}`, c.body(name));
        expect(made.status).toBe(201);
        const patched = await memberRequest(flotilla.endpoint, 'PATCH', `${path}/${name}`, { metadata: { labels: { b: '2' } } }, { contentType: 'application/merge-patch+json' });
        expect(patched.status).toBe(200);
        const events = await w.until((es) => es.filter((e) => e.object.metadata?.name === name).length >= 2);
        const [added, modified] = events.filter((e) => e.object.metadata?.name === name);
        // Equal but for the RV: an event carries every cluster's RV at that moment, its own cluster's
        // the object's (documented), where the write answer names its cluster's alone.
        const same = (answer: string, watched: unknown) => {
          const a = JSON.parse(answer) as { metadata: { resourceVersion: string } };
          const b = structuredClone(watched) as { metadata: { resourceVersion: string } };
          expect(decodeGlobalRV(b.metadata.resourceVersion)[east.name]).toBe(decodeGlobalRV(a.metadata.resourceVersion)[east.name]);
          b.metadata.resourceVersion = a.metadata.resourceVersion;
          expect(a).toEqual(b);
        };
        same(made.body, added!.object);
        same(patched.body, modified!.object);
        expect(JSON.parse(patched.body).metadata.managedFields !== undefined).toBe(c.managed);
      } finally {
        w.close();
      }
    });
  }
});

describe('what the cache does not hold (yet)', () => {
  const MERGE = { contentType: 'application/merge-patch+json' };
  it('a patch and a delete right after a create find it, 20 of 20; the next list does not show what was deleted', async () => {
    const path = '/api/v1/namespaces/only-west/configmaps';
    const failures: string[] = [];
    for (let i = 0; i < 20; i++) {
      const name = `rapid-${i}`;
      const made = await memberRequest(flotilla.endpoint, 'POST', path, configMap(name));
      expect(made.status, made.body).toBe(201);
      const patched = await memberRequest(flotilla.endpoint, 'PATCH', `${path}/${name}`, { data: { b: '2' } }, MERGE);
      if (patched.status !== 200) failures.push(`patch ${name}: ${patched.status} ${patched.body.slice(0, 200)}`);
      const gone = await memberRequest(flotilla.endpoint, 'DELETE', `${path}/${name}`);
      if (gone.status !== 200) failures.push(`delete ${name}: ${gone.status} ${gone.body.slice(0, 200)}`);
      const listed = JSON.parse((await memberRequest(flotilla.endpoint, 'GET', path)).body) as { items: V1ConfigMap[] };
      if (listed.items.some((c) => c.metadata!.name === name)) failures.push(`list after deleting ${name} still shows it`);
      if (gone.status === 200 && (await memberRequest(flotilla.endpoint, 'GET', `${path}/${name}`)).status !== 404) failures.push(`get after deleting ${name} still finds it`);
    }
    expect(failures).toEqual([]);
  });

  it('the next list after a deletecollection shows none of what it deleted', async () => {
    const path = '/api/v1/namespaces/only-west/configmaps';
    for (let round = 0; round < 5; round++) {
      for (let i = 0; i < 3; i++) {
        const made = await memberRequest(flotilla.endpoint, 'POST', path, { ...configMap(`batch-${round}-${i}`), metadata: { name: `batch-${round}-${i}`, labels: { batch: String(round) } } });
        expect(made.status, made.body).toBe(201);
      }
      expect((await memberRequest(flotilla.endpoint, 'DELETE', `${path}?labelSelector=batch%3D${round}`)).status).toBe(200);
      const listed = JSON.parse((await memberRequest(flotilla.endpoint, 'GET', `${path}?labelSelector=batch%3D${round}`)).body) as { items: V1ConfigMap[] };
      expect(listed.items.map((c) => c.metadata!.name), `round ${round}`).toEqual([]);
    }
  });

  it('a write by name to an uncached resource goes to the one member that has it for the caller; 400 for several, 404 for none', async () => {
    const secrets = `/api/v1/namespaces/${NS}/secrets`;
    const secret = (name: string) => ({ apiVersion: 'v1', kind: 'Secret', metadata: { name }, stringData: { a: 'b' } });
    await make(north, secrets, secret('only-north'));
    await make(east, secrets, secret('two-of-them'));
    await make(west, secrets, secret('two-of-them'));
    const patched = await memberRequest(flotilla.endpoint, 'PATCH', `${secrets}/only-north`, { metadata: { labels: { found: 'yes' } } }, MERGE);
    expect(patched.status, patched.body).toBe(200);
    expect(JSON.parse(patched.body).metadata.annotations[CLUSTER]).toBe(north.name);
    expect((await memberJson<{ metadata: { labels?: Record<string, string> } }>(north, 'GET', `${secrets}/only-north`)).metadata.labels?.['found']).toBe('yes');
    const twice = await memberRequest(flotilla.endpoint, 'PATCH', `${secrets}/two-of-them`, { metadata: { labels: { found: 'yes' } } }, MERGE);
    expect(twice.status).toBe(400);
    expect(JSON.parse(twice.body).message).toContain(`exists in clusters ${east.name}, ${west.name}`);
    const none = await memberRequest(flotilla.endpoint, 'DELETE', `${secrets}/nowhere`);
    expect(none.status).toBe(404);
    expect(JSON.parse(none.body)).toMatchObject({ kind: 'Status', reason: 'NotFound', message: 'secrets "nowhere" not found' });
    // A caller who may not get it anywhere learns nothing of it: the same 404 as for none.
    const alice = fleet.users.find((u) => u.name === 'alice')!;
    const hers = await memberRequest({ ...flotilla.endpoint, token: alice.token }, 'DELETE', `${secrets}/only-north`);
    expect(hers.status).toBe(404);
    expect(JSON.parse(hers.body).message).toBe('secrets "only-north" not found');
    expect((await memberRequest(north, 'GET', `${secrets}/only-north`)).status).toBe(200);
  });
});

describe('the caller’s identity decides on the member', () => {
  it('writes as the caller: forbidden is the member’s 403, a grant in one member allows it there only', async () => {
    const alice = fleet.users.find((u) => u.name === 'alice')!;
    const kc = join(flotilla.dataDir, '..', 'alice.kubeconfig');
    writeProxyKubeconfig(kc, flotilla.url, fleet.caFile, alice.token, 'flotilla-alice');
    const denied = await kubectl(kc, ['annotate', '-n', NS, 'configmap', 'cm-north', 'by=alice']);
    expect(denied.code).not.toBe(0);
    // kubectl reads the object first: flotilla refuses that read as the member would (alice may not get it).
    expect(denied.stderr).toMatch(/forbidden: User "alice" cannot (get|patch) resource "configmaps"/);
    await make(north, `/apis/rbac.authorization.k8s.io/v1/namespaces/${NS}/roles`, {
      apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: { name: 'cm-editor' },
      rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'watch', 'patch', 'update'] }],
    });
    await make(north, `/apis/rbac.authorization.k8s.io/v1/namespaces/${NS}/rolebindings`, {
      apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name: 'alice-cm' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'cm-editor' }, subjects: [{ kind: 'Group', name: 'team-a', apiGroup: 'rbac.authorization.k8s.io' }],
    });
    let allowed = await kubectl(kc, ['annotate', '-n', NS, 'configmap', 'cm-north', 'by=alice']);
    for (let i = 0; i < 20 && allowed.code !== 0; i++) {
      // RBAC reaches the authorizer's cache shortly after the binding is written.
      await new Promise((r) => setTimeout(r, 250));
      allowed = await kubectl(kc, ['annotate', '-n', NS, 'configmap', 'cm-north', 'by=alice']);
    }
    expect(allowed.stderr).toBe('');
    expect((await memberJson<V1ConfigMap>(north, 'GET', `/api/v1/namespaces/${NS}/configmaps/cm-north`)).metadata!.annotations!['by']).toBe('alice');
    // Only north lets alice read: east's object is not hers to see, so it is not found (a 403 would
    // tell her it exists).
    const elsewhere = await kubectl(kc, ['annotate', '-n', NS, 'configmap', 'cm-east', 'by=alice']);
    expect(elsewhere.stderr).toMatch(/NotFound/);
    const addressed = await kubectl(kc, ['--server', `${flotilla.url}/clusters/east`, 'annotate', '-n', NS, 'configmap', 'cm-east', 'by=alice']);
    expect(addressed.stderr).toMatch(/forbidden: User "alice" cannot get resource "configmaps"/);
  });

  it('an unknown token is 401 and no token cannot write', async () => {
    const bad = await memberRequest(flotilla.endpoint, 'GET', `/api/v1/namespaces/${NS}/configmaps`, undefined, { token: 'not-a-token' });
    expect(bad.status).toBe(401);
    expect(JSON.parse(bad.body)).toMatchObject({ kind: 'Status', reason: 'Unauthorized', code: 401 });
    const health = await memberRequest(flotilla.endpoint, 'GET', '/healthz', undefined, { token: 'not-a-token' });
    expect(health.status).toBe(200);
  });

  it('bad input gets a Status, never a 500', async () => {
    const notJson = await memberRequest(flotilla.endpoint, 'PATCH', `/api/v1/namespaces/${NS}/configmaps/cm-east`, '{not json', { contentType: 'application/merge-patch+json' });
    expect(notJson.status).toBe(400);
    const missing = await memberRequest(flotilla.endpoint, 'DELETE', `/api/v1/namespaces/${NS}/configmaps/no-such`);
    expect(missing.status).toBe(404);
    expect(JSON.parse(missing.body)).toMatchObject({ reason: 'NotFound' });
    const huge = await memberRequest(flotilla.endpoint, 'POST', `/clusters/east/api/v1/namespaces/${NS}/configmaps`, configMap('huge', { a: 'x'.repeat(4 * 1024 * 1024) }));
    expect(huge.status).toBe(413);
    // A client still sending a body too large when the 413 comes can finish sending and reads it
    // (the body is read and dropped, not cut off: a reset costs the client the answer, kubectl an EPIPE).
    const slow = await slowlySent(flotilla.endpoint, `/clusters/east/api/v1/namespaces/${NS}/configmaps`, 8 * 1024 * 1024);
    expect(slow).toEqual({ writeError: undefined, status: 413 });
    const noCluster = await memberRequest(flotilla.endpoint, 'PUT', `/clusters/nowhere/api/v1/namespaces/${NS}/configmaps/x`, configMap('x'));
    expect(noCluster.status).toBe(404);
  });

  it('a Service no ClusterIP can be allocated for is the caller’s 422 at once, not minutes of the member’s (kubernetes#135333)', async () => {
    // The member tries every address of its range for a Service without a valid name: flotilla
    // answers as the member's validation would, without asking it.
    const service = (metadata: Record<string, string>) => ({ apiVersion: 'v1', kind: 'Service', metadata, spec: { ports: [{ port: 80 }] } });
    for (const [method, path, body] of [
      ['POST', `/clusters/east/api/v1/namespaces/${NS}/services`, service({})],
      ['POST', `/clusters/east/api/v1/namespaces/${NS}/services`, service({ name: 'Not:A:Label' })],
      ['PUT', `/clusters/east/api/v1/namespaces/${NS}/services/not:a:label`, service({ name: 'not:a:label' })],
    ] as const) {
      const res = await memberRequest(flotilla.endpoint, method, path, body, { timeoutMs: 5_000 });
      expect(res.status, `${method} ${path}: ${res.body}`).toBe(422);
      expect(JSON.parse(res.body)).toMatchObject({ kind: 'Status', reason: 'Invalid', details: { kind: 'Service' } });
    }
    const made = await memberRequest(flotilla.endpoint, 'POST', `/clusters/east/api/v1/namespaces/${NS}/services`, service({ generateName: 'svc-' }), { timeoutMs: 30_000 });
    expect(made.status, made.body).toBe(201);
  });
});

describe('a controller patching pods fleet-wide', () => {
  it('sees each patch in flotilla’s cache within a second', async () => {
    const pods: V1Pod[] = [];
    for (const m of fleet.members) {
      pods.push(await memberJson<V1Pod>(m, 'POST', `/api/v1/namespaces/${NS}/pods`, { apiVersion: 'v1', kind: 'Pod', metadata: { name: `svc-${m.name}` }, spec: { containers: [{ name: 'c', image: 'example.com/c:1' }] } }));
    }
    // Wait until every pod is cached, as a controller's informer would be.
    for (let i = 0; i < 50; i++) {
      const list = await viaFlotilla<{ items: V1Pod[] }>(`/api/v1/namespaces/${NS}/pods`);
      if (list.items.filter((p) => p.metadata!.name!.startsWith('svc-')).length === 3) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    for (const p of pods) {
      const started = Date.now();
      const res = await memberRequest(flotilla.endpoint, 'PATCH', `/api/v1/namespaces/${NS}/pods/${p.metadata!.name}`, { metadata: { annotations: { 'discovery/endpoint': `${p.metadata!.name}:8080` } } }, { contentType: 'application/merge-patch+json' });
      expect(res.status).toBe(200);
      let seenAfter = -1;
      while (Date.now() - started < 1000) {
        const got = JSON.parse((await memberRequest(flotilla.endpoint, 'GET', `/api/v1/namespaces/${NS}/pods/${p.metadata!.name}`)).body) as V1Pod;
        if (got.metadata!.annotations?.['discovery/endpoint']) {
          seenAfter = Date.now() - started;
          break;
        }
        await new Promise((r) => setTimeout(r, 20));
      }
      expect(seenAfter).toBeGreaterThanOrEqual(0);
    }
  });
});

/** A POST whose body of `bytes` goes in 64 KiB chunks 4 ms apart: what its writes met, and the status that came back. */
async function slowlySent(ep: { server: string; token: string; caFile: string }, path: string, bytes: number): Promise<{ writeError: string | undefined; status: number }> {
  const { hostname, port } = new URL(ep.server);
  const socket = connect({ host: hostname, port: Number(port), ca: readFileSync(ep.caFile), servername: 'localhost' });
  let answer = '';
  let writeError: string | undefined;
  socket.on('data', (d: Buffer) => (answer += d.toString('latin1')));
  socket.on('error', (e: Error & { code?: string }) => (writeError ??= e.code ?? e.message));
  await new Promise<void>((resolve, reject) => socket.once('secureConnect', resolve).once('error', reject));
  socket.write(`POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${ep.token}\r\nContent-Type: application/json\r\nContent-Length: ${bytes}\r\nConnection: close\r\n\r\n`);
  const chunk = Buffer.alloc(64 * 1024, 0x20);
  for (let sent = 0; sent < bytes && writeError === undefined && !socket.destroyed; sent += chunk.length) {
    socket.write(chunk.subarray(0, Math.min(chunk.length, bytes - sent)));
    await new Promise((r) => setTimeout(r, 4));
  }
  await new Promise<void>((resolve) => (socket.destroyed ? resolve() : socket.once('close', () => resolve())));
  return { writeError, status: Number(/^HTTP\/1\.1 (\d+)/.exec(answer)?.[1] ?? 0) };
}
