import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify as toYaml } from 'yaml';
import type { V1ConfigMap, V1ReplicaSet } from '@kubernetes/client-node';
import { memberJson, memberRequest, type MemberResponse } from '../fleet/http.js';
import type { MemberInfo } from '../fleet/fleet.js';
import { freePort, startFlotillaProcess, writeProxyKubeconfig, type FlotillaProcess, type ResourceRuleSpec } from '../support/flotilla-process.js';
import { kubectl, kubectlOk } from '../support/kubectl.js';
import { rawHttps, requestText } from '../support/raw-https.js';
import { until } from '../support/poll.js';
import { encodeGlobalRV } from '../../src/api/global-rv.js';

/**
 * The forwarding holes a hostile user found (issue 24), each reproduced against the real fleet:
 * DeleteOptions that never reached the member, a request smuggled in a DELETE body, dot segments
 * that reached members with flotilla's own identity, a caller's impersonation silently dropped,
 * and the smaller ways an answer was a hang, a 500 or not a Status.
 *
 * Flotilla reaches the members here with a client certificate (O=system:masters), as many real
 * deployments do: on such a connection a request with no credentials of its own is still
 * flotilla's, which is what made a smuggled request run as flotilla.
 */
const fleet = inject('fleet');
const NS = 'fwd-security';
const [east, west] = [fleet.members[0]!, fleet.members[1]!];
const bob = fleet.users.find((u) => u.name === 'bob')!;
const alice = fleet.users.find((u) => u.name === 'alice')!;
let flotilla: FlotillaProcess;

const RESOURCES: ResourceRuleSpec[] = [
  { version: 'v1', resource: 'namespaces' },
  { version: 'v1', resource: 'configmaps' },
  { group: 'apps', version: 'v1', resource: 'deployments' },
];

const cm = (name: string): V1ConfigMap => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data: { a: '1' } });

async function make(m: MemberInfo, path: string, body: unknown): Promise<void> {
  const res = await memberRequest(m, 'POST', path, body);
  if (res.status !== 201 && res.status !== 409) throw new Error(`${m.name} POST ${path}: ${res.status} ${res.body.slice(0, 300)}`);
}

async function exists(m: MemberInfo, path: string): Promise<boolean> {
  const res = await memberRequest(m, 'GET', path);
  if (res.status !== 200 && res.status !== 404) throw new Error(`${m.name} GET ${path}: ${res.status}`);
  return res.status === 200;
}

/** A member kubeconfig that authenticates with the fleet's system:masters client certificate. */
function certKubeconfig(m: MemberInfo): string {
  const path = join(fleet.dir, `${m.name}-cert.kubeconfig`);
  writeFileSync(
    path,
    toYaml({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: m.name, cluster: { server: m.server, 'certificate-authority': fleet.caFile } }],
      users: [{ name: 'cert', user: { 'client-certificate': join(fleet.dir, 'kubelet-client.crt'), 'client-key': join(fleet.dir, 'kubelet-client.key') } }],
      contexts: [{ name: m.name, context: { cluster: m.name, user: 'cert' } }],
      'current-context': m.name,
    }),
  );
  return path;
}

/** Until flotilla's cache holds an object made on a member (it follows members by watch). */
async function cached(path: string): Promise<void> {
  await until(`flotilla serving ${path}`, async () => (await memberRequest(flotilla.endpoint, 'GET', path)).status === 200);
}

function isStatus(res: { status: number; body: string }, code: number): boolean {
  try {
    const s = JSON.parse(res.body) as { kind?: string; code?: number };
    return res.status === code && s.kind === 'Status' && s.code === code;
  } catch {
    return false;
  }
}

const deleteOptions = (extra: object) => JSON.stringify({ kind: 'DeleteOptions', apiVersion: 'v1', ...extra });

beforeAll(async () => {
  for (const m of [east, west]) {
    await make(m, '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
    await make(m, `/api/v1/namespaces/${NS}/secrets`, { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'crown-jewels' }, stringData: { password: 'hunter2' } });
    // alice and bob may read (not write) the namespace: flotilla authorizes cached reads by each member's RBAC.
    await make(m, `/apis/rbac.authorization.k8s.io/v1/namespaces/${NS}/rolebindings`, {
      apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name: 'readers' },
      subjects: [{ kind: 'User', name: 'alice', apiGroup: 'rbac.authorization.k8s.io' }, { kind: 'User', name: 'bob', apiGroup: 'rbac.authorization.k8s.io' }],
      roleRef: { kind: 'ClusterRole', name: 'view', apiGroup: 'rbac.authorization.k8s.io' },
    });
  }
  flotilla = await startFlotillaProcess({
    fleet,
    dir: join(fleet.dir, 'flotilla-fwd-security'),
    resources: RESOURCES,
    members: [east, west].map((m) => ({ ...m, kubeconfig: certKubeconfig(m) })),
  });
});

afterAll(async () => {
  await flotilla?.stop();
});

describe('DeleteOptions reach the member', () => {
  it('a dry-run delete deletes nothing, through flotilla as on the member', async () => {
    await make(east, `/api/v1/namespaces/${NS}/configmaps`, cm('dry'));
    const path = `/api/v1/namespaces/${NS}/configmaps/dry`;
    await cached(path);
    const direct = await memberRequest(east, 'DELETE', path, deleteOptions({ dryRun: ['All'] }));
    const through = await memberRequest(flotilla.endpoint, 'DELETE', path, deleteOptions({ dryRun: ['All'] }));
    expect([direct.status, through.status]).toEqual([200, 200]);
    const r = await kubectl(flotilla.kubeconfig, ['delete', '-n', NS, 'configmap', 'dry', '--dry-run=server']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/deleted \(server dry run\)/);
    expect(await exists(east, path)).toBe(true);
  });

  it('a stale uid or resourceVersion precondition is refused with the member’s 409', async () => {
    await make(east, `/api/v1/namespaces/${NS}/configmaps`, cm('guarded'));
    const path = `/api/v1/namespaces/${NS}/configmaps/guarded`;
    await cached(path);
    const wrongUid = deleteOptions({ preconditions: { uid: '00000000-0000-0000-0000-000000000000' } });
    const direct = await memberRequest(east, 'DELETE', path, wrongUid);
    const through = await memberRequest(flotilla.endpoint, 'DELETE', path, wrongUid);
    expect(direct.status).toBe(409);
    expect(through.status).toBe(409);
    expect(JSON.parse(through.body)).toMatchObject({ kind: 'Status', reason: 'Conflict' });
    // A resourceVersion read from flotilla is a global one: translated for the member, and stale is stale.
    const live = await memberJson<V1ConfigMap>(east, 'GET', path);
    const staleRV = encodeGlobalRV({ east: String(Number(live.metadata!.resourceVersion) - 1) });
    const stale = await memberRequest(flotilla.endpoint, 'DELETE', path, deleteOptions({ preconditions: { resourceVersion: staleRV } }));
    expect(stale.status, stale.body).toBe(409);
    expect(await exists(east, path)).toBe(true);
    const fresh = await memberRequest(flotilla.endpoint, 'DELETE', path, deleteOptions({ preconditions: { resourceVersion: encodeGlobalRV({ east: live.metadata!.resourceVersion! }) } }));
    expect(fresh.status, fresh.body).toBe(200);
    expect(await exists(east, path)).toBe(false);
  });

  it('kubectl delete --cascade=orphan leaves the dependents, as on the member', async () => {
    await make(east, `/apis/apps/v1/namespaces/${NS}/deployments`, {
      apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'orphaner' },
      spec: { replicas: 0, selector: { matchLabels: { app: 'orphaner' } }, template: { metadata: { labels: { app: 'orphaner' } }, spec: { containers: [{ name: 'c', image: 'example.com/c:1' }] } } },
    });
    const replicaSets = async () => (await memberJson<{ items: V1ReplicaSet[] }>(east, 'GET', `/apis/apps/v1/namespaces/${NS}/replicasets?labelSelector=app%3Dorphaner`)).items;
    await until('the deployment’s ReplicaSet', async () => (await replicaSets()).length === 1, 30_000);
    await until('flotilla caching the deployment', async () => (await kubectl(flotilla.kubeconfig, ['get', '-n', NS, 'deployment', 'orphaner'])).code === 0, 15_000);
    await kubectlOk(flotilla.kubeconfig, ['delete', '-n', NS, 'deployment', 'orphaner', '--cascade=orphan']);
    await until('the ReplicaSet orphaned', async () => (await replicaSets()).every((rs) => !rs.metadata!.ownerReferences?.length), 30_000);
    // Given the garbage collector time to act on a background deletion, the ReplicaSet is still there.
    await new Promise((r) => setTimeout(r, 3000));
    expect(await replicaSets()).toHaveLength(1);
  });

  it('a dry-run deletecollection deletes nothing in any member', async () => {
    for (const m of [east, west]) await make(m, `/api/v1/namespaces/${NS}/configmaps`, cm('keep-me'));
    const res = await memberRequest(flotilla.endpoint, 'DELETE', `/api/v1/namespaces/${NS}/configmaps`, deleteOptions({ dryRun: ['All'] }));
    expect(res.status, res.body).toBe(200);
    for (const m of [east, west]) expect(await exists(m, `/api/v1/namespaces/${NS}/configmaps/keep-me`)).toBe(true);
  });
});

describe('no request reaches a member except the caller’s own, as the caller', () => {
  it('a request smuggled in a DELETE body is never run by the member', async () => {
    const smuggled = JSON.stringify(cm('smuggled'));
    const inner = requestText('POST', `/api/v1/namespaces/${NS}/configmaps`, { 'Content-Type': 'application/json' }, smuggled).replace('Connection: close\r\n', '');
    // Several tries, so that the pooled connection the DELETE went on is reused by later requests.
    for (let i = 0; i < 5; i++) {
      // Addressed to a member, so the DELETE is forwarded (bob may not delete there: the member's 403).
      const res = await rawHttps(flotilla.url, fleet.caFile, requestText('DELETE', `/clusters/east/api/v1/namespaces/${NS}/configmaps/nothing-${i}`, { Authorization: `Bearer ${bob.token}`, 'Content-Type': 'application/json' }, inner));
      expect(res.status, res.body).toBe(403);
      await memberRequest(flotilla.endpoint, 'GET', `/api/v1/namespaces/${NS}/configmaps`);
    }
    await new Promise((r) => setTimeout(r, 500));
    expect(await exists(east, `/api/v1/namespaces/${NS}/configmaps/smuggled`)).toBe(false);
    expect(await exists(west, `/api/v1/namespaces/${NS}/configmaps/smuggled`)).toBe(false);
  });

  it('dot segments and encoded slashes are refused before routing, for reads and writes alike', async () => {
    const auth = { Authorization: `Bearer ${bob.token}`, Accept: 'application/json' };
    const paths = [
      `/openapi/v3/%2e%2e/%2e%2e/api/v1/namespaces/${NS}/secrets/crown-jewels`,
      `/openapi/v3/%2E%2e/%2e%2E/api/v1/namespaces/${NS}/secrets/crown-jewels`,
      `/openapi/v2/../../api/v1/namespaces/${NS}/secrets/crown-jewels`,
      `/clusters/east/openapi/v3/%2e%2e/%2e%2e/api/v1/namespaces/${NS}/secrets/crown-jewels`,
      `/api/v1/namespaces/${NS}/configmaps/x/%2e%2e/%2e%2e/secrets/crown-jewels`,
      `/api/v1/namespaces/${NS}/pods/x%2f..%2f..%2fsecrets%2fcrown-jewels/log`,
      `/openapi/v3/apis%2f..%2f..%2fapi%2fv1%2fnamespaces%2f${NS}%2fsecrets`,
    ];
    for (const path of paths) {
      const res = await rawHttps(flotilla.url, fleet.caFile, requestText('GET', path, auth));
      expect(res.status, path).toBeGreaterThanOrEqual(400);
      expect(res.status, path).toBeLessThan(500);
      expect(res.body, path).not.toContain('hunter2');
      expect(res.body, path).not.toContain(Buffer.from('hunter2').toString('base64'));
      expect(isStatus(res, res.status), `${path}: ${res.body}`).toBe(true);
    }
    const patch = await rawHttps(flotilla.url, fleet.caFile, requestText('PATCH', `/api/v1/namespaces/${NS}/configmaps/x/%2e%2e/%2e%2e/secrets/crown-jewels`, { ...auth, 'Content-Type': 'application/merge-patch+json' }, '{"stringData":{"password":"pwned"}}'));
    expect(isStatus(patch, 400), patch.body).toBe(true);
    const secret = await memberJson<{ data: Record<string, string> }>(east, 'GET', `/api/v1/namespaces/${NS}/secrets/crown-jewels`);
    expect(Buffer.from(secret.data['password']!, 'base64').toString()).toBe('hunter2');
  });

  it('the schema of one member comes from that member alone, and only the schema paths do', async () => {
    const ok = await memberRequest(flotilla.endpoint, 'GET', '/clusters/west/openapi/v2', undefined, { timeoutMs: 30_000 });
    expect(ok.status).toBe(200);
    const version = await memberRequest(flotilla.endpoint, 'GET', '/clusters/west/version');
    expect(version.status).toBe(200);
    expect(isStatus(await memberRequest(flotilla.endpoint, 'GET', '/openapi/v3/whatever'), 404)).toBe(true);
  });

  it('/clusters/<name>/version and /openapi answer for that member, never for another', async () => {
    // A fleet whose second member is unreachable: asking it must not be answered by the first.
    const deadPort = await freePort();
    const dead = { ...west, name: 'gone', server: `https://127.0.0.1:${deadPort}`, kubeconfig: join(fleet.dir, 'gone.kubeconfig') };
    writeFileSync(dead.kubeconfig, toYaml({
      apiVersion: 'v1', kind: 'Config',
      clusters: [{ name: 'gone', cluster: { server: dead.server, 'certificate-authority': fleet.caFile } }],
      users: [{ name: 'u', user: { token: west.token } }],
      contexts: [{ name: 'gone', context: { cluster: 'gone', user: 'u' } }],
      'current-context': 'gone',
    }));
    const partial = await startFlotillaProcess({ fleet, dir: join(fleet.dir, 'flotilla-fwd-gone'), resources: [{ version: 'v1', resource: 'namespaces' }], members: [east, dead], waitReady: false });
    try {
      for (const path of ['/clusters/gone/version', '/clusters/gone/openapi/v2']) {
        const res = await memberRequest(partial.endpoint, 'GET', path, undefined, { timeoutMs: 30_000 });
        expect(isStatus(res, 503), `${path}: ${res.status} ${res.body.slice(0, 200)}`).toBe(true);
      }
      expect((await memberRequest(partial.endpoint, 'GET', '/clusters/east/version')).status).toBe(200);
    } finally {
      await partial.stop();
    }
  });
});

describe('a caller’s own impersonation', () => {
  it('is honoured when the member allows it: kubectl --as acts as that user there', async () => {
    await make(east, `/api/v1/namespaces/${NS}/configmaps`, cm('as-target'));
    await cached(`/api/v1/namespaces/${NS}/configmaps/as-target`);
    // The fleet admin may impersonate anyone: the write is alice's, and alice may not patch here.
    const asAlice = await kubectl(flotilla.kubeconfig, ['annotate', '-n', NS, 'configmap', 'as-target', 'by=admin-as-alice', '--as', 'alice', '--as-group', 'team-a']);
    expect(asAlice.code).not.toBe(0);
    expect(asAlice.stderr).toMatch(/User "alice" cannot (patch|get) resource "configmaps"/);
    const cmNow = await memberJson<V1ConfigMap>(east, 'GET', `/api/v1/namespaces/${NS}/configmaps/as-target`);
    expect(cmNow.metadata!.annotations?.['by']).toBeUndefined();
    // Without --as, the admin's own write goes through.
    await kubectlOk(flotilla.kubeconfig, ['annotate', '-n', NS, 'configmap', 'as-target', 'by=admin']);
  });

  it('is refused with 403 when the member does not allow it, and never dropped', async () => {
    const kc = join(flotilla.dataDir, '..', 'bob.kubeconfig');
    writeProxyKubeconfig(kc, flotilla.url, fleet.caFile, bob.token, 'flotilla-bob');
    const r = await kubectl(kc, ['get', '-n', NS, 'configmaps', '--as', 'flotilla-admin', '--as-group', 'system:masters']);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/cannot impersonate resource "users"/);
    const raw = await memberRequest(flotilla.endpoint, 'GET', `/api/v1/namespaces/${NS}/configmaps`, undefined, { token: bob.token });
    expect(raw.status).toBe(200);
    const groupsOnly = await rawHttps(flotilla.url, fleet.caFile, requestText('GET', `/api/v1/namespaces/${NS}/configmaps`, { Authorization: `Bearer ${alice.token}`, 'Impersonate-Group': 'system:masters' }));
    expect(isStatus(groupsOnly, 400), groupsOnly.body).toBe(true);
  });
});

describe('every refusal is a prompt Status', () => {
  const auth = () => ({ Authorization: `Bearer ${east.token}` });

  it('a watch with an Accept flotilla cannot serve is 406 at once, not a hang', async () => {
    // (Protobuf alone is served: read live from the members.)
    for (const accept of ['application/yaml', 'text/html', '*/*;as=Table', 'application/json;q=0', 'application/vnd.kubernetes.protobuf;q=0']) {
      const res = await rawHttps(flotilla.url, fleet.caFile, requestText('GET', `/api/v1/namespaces/${NS}/configmaps?watch=1&timeoutSeconds=30`, { ...auth(), Accept: accept }), 10_000);
      expect(res.timedOut, accept).toBe(false);
      expect(isStatus(res, 406), `${accept}: ${res.status} ${res.body}`).toBe(true);
    }
  });

  it('a deeply nested body is a 400, as on the member', async () => {
    await make(east, `/api/v1/namespaces/${NS}/configmaps`, cm('deep'));
    // With a global RV flotilla must translate the body, so it parses and writes it back.
    const deep = `{"metadata":{"name":"deep","resourceVersion":"${encodeGlobalRV({ east: '1' })}"},"data":${'['.repeat(10_000)}${']'.repeat(10_000)}}`;
    for (const method of ['PUT', 'POST']) {
      // Addressed to east: the object was made a moment ago, flotilla's cache may not have it yet.
      const path = method === 'PUT' ? `/clusters/east/api/v1/namespaces/${NS}/configmaps/deep` : `/clusters/east/api/v1/namespaces/${NS}/configmaps`;
      const res = await memberRequest(flotilla.endpoint, method, path, deep);
      expect(isStatus(res, 400), `${method}: ${res.status} ${res.body.slice(0, 200)}`).toBe(true);
    }
  });

  it('one caller’s paged lists cannot expire another caller’s continue token', async () => {
    for (let i = 0; i < 3; i++) await make(east, `/api/v1/namespaces/${NS}/configmaps`, cm(`page-${i}`));
    const first = JSON.parse((await memberRequest(flotilla.endpoint, 'GET', `/api/v1/namespaces/${NS}/configmaps?limit=1`, undefined, { token: alice.token })).body) as { metadata: { continue?: string } };
    expect(first.metadata.continue).toBeTruthy();
    for (let i = 0; i < 70; i++) {
      expect((await memberRequest(flotilla.endpoint, 'GET', `/api/v1/namespaces/${NS}/configmaps?limit=1`, undefined, { token: bob.token })).status).toBe(200);
    }
    const next = await memberRequest(flotilla.endpoint, 'GET', `/api/v1/namespaces/${NS}/configmaps?limit=1&continue=${first.metadata.continue}`, undefined, { token: alice.token });
    expect(next.status, next.body).toBe(200);
  });

  it('timeoutSeconds: huge values do not end the watch at once, 0 is the default, past int64 is 400', async () => {
    for (const t of ['2147484', '99999999999', '0']) {
      const res = await rawHttps(flotilla.url, fleet.caFile, requestText('GET', `/api/v1/namespaces/${NS}/configmaps?watch=1&timeoutSeconds=${t}`, auth()), 2_000);
      expect(res.ms, `timeoutSeconds=${t} ended after ${res.ms} ms: ${res.body.slice(0, 200)}`).toBeGreaterThanOrEqual(1_900);
    }
    const tooBig = await memberRequest(flotilla.endpoint, 'GET', `/api/v1/namespaces/${NS}/configmaps?watch=1&timeoutSeconds=99999999999999999999`);
    expect(isStatus(tooBig, 400)).toBe(true);
  });

  it('a continue token with a forged resourceVersion is a 400', async () => {
    const forged = Buffer.from(JSON.stringify({ rv: 'not-a-resource-version', start: '' })).toString('base64url');
    const res = await memberRequest(flotilla.endpoint, 'GET', `/api/v1/namespaces/${NS}/configmaps?limit=1&continue=${forged}`);
    expect(isStatus(res, 400), res.body).toBe(true);
  });

  it('a list and a watch from the same RV get the same answer: 504 for a future RV, 410 for a cluster not cached', async () => {
    const future = encodeGlobalRV({ east: '999999999' });
    const foreign = encodeGlobalRV({ nowhere: '1' });
    const outcomes: Record<string, number[]> = {};
    for (const [name, rv] of [['future', future], ['foreign', foreign]] as const) {
      const list: MemberResponse = await memberRequest(flotilla.endpoint, 'GET', `/api/v1/namespaces/${NS}/configmaps?resourceVersion=${rv}`);
      const watch = await rawHttps(flotilla.url, fleet.caFile, requestText('GET', `/api/v1/namespaces/${NS}/configmaps?watch=1&resourceVersion=${rv}&timeoutSeconds=30`, auth()), 10_000);
      outcomes[name] = [list.status, watch.status];
      expect(isStatus(watch, watch.status), watch.body).toBe(true);
    }
    expect(outcomes).toEqual({ future: [504, 504], foreign: [410, 410] });
  });

  it('errors found by the HTTP layer are Status bodies', async () => {
    const huge = await rawHttps(flotilla.url, fleet.caFile, `GET /api/v1/namespaces HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(64 * 1024)}\r\nConnection: close\r\n\r\n`);
    expect(isStatus(huge, 431), huge.body).toBe(true);
    const badEscape = await rawHttps(flotilla.url, fleet.caFile, requestText('GET', '/api/v1/namespaces/%E0%A4%A/configmaps', auth()));
    expect(isStatus(badEscape, 400), badEscape.body).toBe(true);
    const noHost = await rawHttps(flotilla.url, fleet.caFile, `GET /api/v1/namespaces HTTP/1.1\r\nAuthorization: Bearer ${east.token}\r\nConnection: close\r\n\r\n`);
    expect(isStatus(noHost, 400), noHost.body).toBe(true);
    const badMethod = await rawHttps(flotilla.url, fleet.caFile, `FROB /api/v1/namespaces HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
    expect(isStatus(badMethod, 400), badMethod.body).toBe(true);
    const limit = await memberRequest(flotilla.endpoint, 'GET', `/api/v1/namespaces/${NS}/configmaps?limit=99999999999999999999`);
    expect(isStatus(limit, 400), limit.body).toBe(true);
    const q0 = await memberRequest(flotilla.endpoint, 'GET', `/api/v1/namespaces/${NS}/configmaps`, undefined, { accept: 'application/json;q=0' });
    expect(isStatus(q0, 406), q0.body).toBe(true);
  });
});

describe('a GET that carries a body', () => {
  it('gets its whole answer from every route, the body read and dropped (an answer cut off was found by the abuse suite)', async () => {
    const body = JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'ballast' }, data: { a: 'x'.repeat(1024 * 1024) } });
    const auth = { Authorization: `Bearer ${bob.token}`, Accept: 'application/json', 'Content-Type': 'application/json' };
    for (const [path, status] of [['/openapi/v3/api/v1', 200], ['/version', 200], ['/api', 200], ['/healthz', 200], [`/api/v1/namespaces/${NS}/configmaps`, 200], ['/no/such/path', 404]] as const) {
      const res = await rawHttps(flotilla.url, fleet.caFile, requestText('GET', path, auth, body));
      expect(res.status, `${path}: ${res.body.slice(0, 200)}`).toBe(status);
      if (res.headers['content-length'] !== undefined) expect(Buffer.byteLength(res.body), path).toBe(Number(res.headers['content-length']));
      if (path !== '/healthz') expect(() => JSON.parse(res.body) as unknown, path).not.toThrow();
    }
  });
});
