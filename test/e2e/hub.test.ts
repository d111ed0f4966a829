import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { request } from 'node:https';
import { join } from 'node:path';
import { appendPodLog, findProjectRoot, type MemberInfo } from '../fleet/fleet.js';
import { memberJson, memberRequest } from '../fleet/http.js';
import { apiServiceAvailable, installChart, startHub, type Hub } from '../fleet/hub.js';
import { freePort, startFlotillaProcess, writeProxyKubeconfig, type FlotillaProcess } from '../support/flotilla-process.js';
import { helmBinary } from '../support/helm.js';
import { kubectl, kubectlSession } from '../support/kubectl.js';
import { clientsDir, startInformer, type InformerMode } from '../support/informer.js';
import { until } from '../support/poll.js';
import { FLEET_GROUP, FLEET_PATH, FLEET_VERSION } from '../../src/api/fleet-path.js';

/**
 * Aggregated mode on the real fleet: a hub kube-apiserver with the aggregation layer's front
 * proxy, flotilla's Helm chart applied to it (APIService v1alpha1.search.flotilla.io, an
 * ExternalName Service to loopback, the caBundle of the pair the chart made), and kubectl pointed at the hub with a server
 * ending in FLEET_PATH. The hub authenticates users and names them to flotilla in request headers
 * over its front-proxy client certificate; flotilla then authorizes each member's share as the
 * member would. Nobody else may name a user in those headers.
 */
const fleet = inject('fleet');
const [east, west, north] = fleet.members as [MemberInfo, MemberInfo, MemberInfo];
const NS = 'hub-e2e';
const RBAC = '/apis/rbac.authorization.k8s.io/v1';
const tokenOf = (name: string) => fleet.users.find((u) => u.name === name)!.token;
const dir = join(fleet.dir, 'hub-e2e');
let hub: Hub;
let flotilla: FlotillaProcess;
/** kubectl through the hub, as the hub's admin / as alice; and alice straight to flotilla. */
let viaHub: string;
let aliceViaHub: string;
let bobViaHub: string;
let aliceDirect: string;
let acmeViaHub: string;
let acmeDirect: string;

async function ok(m: { server: string; token: string; caFile: string }, method: string, path: string, body?: unknown): Promise<void> {
  const res = await memberRequest(m, method, path, body);
  if (res.status >= 300 && res.status !== 409) throw new Error(`${method} ${path}: ${res.status} ${res.body.slice(0, 300)}`);
}

/** A request straight to flotilla with a client certificate and whatever headers a test sends. */
function direct(path: string, opts: { cert?: { cert: string; key: string }; headers?: Record<string, string | string[]> }): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(new URL(path, flotilla.url), {
      ca: readFileSync(flotilla.endpoint.caFile),
      ...(opts.cert ? { cert: readFileSync(opts.cert.cert), key: readFileSync(opts.cert.key) } : {}),
      headers: { accept: 'application/json', ...opts.headers },
    }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('error', reject);
    req.end();
  });
}

const podNames = (body: string) => (JSON.parse(body) as { items: { metadata: { name: string } }[] }).items.map((p) => p.metadata.name).sort();

beforeAll(async () => {
  await Promise.all(fleet.members.map(async (m) => {
    await ok(m, 'POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
    await until(`${m.name}: default ServiceAccount in ${NS}`, async () => (await memberRequest(m, 'GET', `/api/v1/namespaces/${NS}/serviceaccounts/default`)).status === 200, 30_000);
    await ok(m, 'POST', `/api/v1/namespaces/${NS}/pods`, { apiVersion: 'v1', kind: 'Pod', metadata: { name: `web-${m.name}` }, spec: { containers: [{ name: 'web', image: 'example.com/web:1' }] } });
  }));
  // acme's namespace hub-e2e on east (acme-hub-e2e there), which acme's admin may view on east.
  await ok(east, 'POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: `acme-${NS}` } });
  await ok(east, 'POST', `${RBAC}/clusterrolebindings`, {
    apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name: 'hub-e2e-acme-view' },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'view' }, subjects: [{ kind: 'Group', name: 'acme-admins', apiGroup: 'rbac.authorization.k8s.io' }],
  });
  // alice reads pods (and their logs) in hub-e2e on east only.
  await ok(east, 'POST', `${RBAC}/namespaces/${NS}/roles`, { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: { name: 'reader' }, rules: [{ apiGroups: [''], resources: ['pods', 'pods/log'], verbs: ['get', 'list', 'watch'] }] });
  await ok(east, 'POST', `${RBAC}/namespaces/${NS}/rolebindings`, {
    apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name: 'alice-reader' },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'reader' }, subjects: [{ kind: 'User', name: 'alice', apiGroup: 'rbac.authorization.k8s.io' }],
  });

  hub = await startHub({ fleet, dir: join(dir, 'hub') });
  // The chart, rendered and applied to the hub; its Service points at the flotilla started next.
  const port = await freePort();
  const chart = await installChart(hub, { helm: helmBinary(), chart: join(findProjectRoot(), 'deploy', 'helm', 'flotilla'), port, dir: join(dir, 'chart') });
  // No authentication in the fleet file: the hub reviews tokens, its front proxy names callers.
  // Flotilla reaches the hub as the chart's ServiceAccount: the chart's RBAC must be enough.
  flotilla = await startFlotillaProcess({
    fleet, dir: join(dir, 'flotilla'), port, tls: chart, authentication: null, args: [`--hub-kubeconfig=${chart.kubeconfig}`],
    tenants: [{ id: 'acme', groups: ['acme-admins'] }],
  });
  await apiServiceAvailable(hub, FLEET_GROUP, FLEET_VERSION);
  // The hub lets alice reach the fleet API (its own RBAC, before any member's) through the chart's
  // ClusterRole; bob is not let through.
  await ok(hub.apiserver, 'POST', `${RBAC}/clusterrolebindings`, {
    apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name: 'alice-fleet-user' },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'flotilla-fleet-user' },
    subjects: [{ kind: 'User', name: 'alice', apiGroup: 'rbac.authorization.k8s.io' }, { kind: 'Group', name: 'acme-admins', apiGroup: 'rbac.authorization.k8s.io' }],
  });
  const server = `${hub.apiserver.server}${FLEET_PATH}`;
  viaHub = join(dir, 'kubeconfig-hub');
  writeProxyKubeconfig(viaHub, server, fleet.caFile, hub.apiserver.token, 'hub');
  aliceViaHub = join(dir, 'kubeconfig-hub-alice');
  writeProxyKubeconfig(aliceViaHub, server, fleet.caFile, tokenOf('alice'), 'hub');
  bobViaHub = join(dir, 'kubeconfig-hub-bob');
  writeProxyKubeconfig(bobViaHub, server, fleet.caFile, tokenOf('bob'), 'hub');
  acmeViaHub = join(dir, 'kubeconfig-hub-acme');
  writeProxyKubeconfig(acmeViaHub, server, fleet.caFile, tokenOf('admin@acme'), 'hub');
  acmeDirect = join(dir, 'kubeconfig-acme');
  writeProxyKubeconfig(acmeDirect, flotilla.url, flotilla.endpoint.caFile, tokenOf('admin@acme'));
  aliceDirect = join(dir, 'kubeconfig-alice');
  writeProxyKubeconfig(aliceDirect, flotilla.url, flotilla.endpoint.caFile, tokenOf('alice'));
  await until('the pods running, as flotilla sees them', async () => {
    const list = await memberJson<{ items: { status?: { phase?: string } }[] }>(flotilla.endpoint, 'GET', `/api/v1/namespaces/${NS}/pods`);
    return list.items.filter((p) => p.status?.phase === 'Running').length === 3;
  }, 60_000);
}, 240_000);

afterAll(async () => {
  await flotilla?.stop();
  await hub?.stop();
  await Promise.all(fleet.members.map((m) => memberRequest(m, 'DELETE', `/api/v1/namespaces/${NS}`)));
  await memberRequest(east, 'DELETE', `/api/v1/namespaces/acme-${NS}`);
  await memberRequest(east, 'DELETE', `${RBAC}/clusterrolebindings/hub-e2e-acme-view`);
});

describe('flotilla as an APIService of a hub', () => {
  it('is available on the hub, and its group is in the hub’s discovery without the fleet’s', async () => {
    const svc = await memberJson<{ status: { conditions: { type: string; status: string }[] } }>(hub.apiserver, 'GET', `/apis/apiregistration.k8s.io/v1/apiservices/${FLEET_VERSION}.${FLEET_GROUP}`);
    expect(svc.status.conditions.find((c) => c.type === 'Available')?.status).toBe('True');
    const versions = await kubectl(hub.kubeconfig, ['api-versions']);
    expect(versions.stdout.split('\n')).toContain(`${FLEET_GROUP}/${FLEET_VERSION}`);
    const own = await memberJson<{ groupVersion: string; resources: unknown[] }>(hub.apiserver, 'GET', `/apis/${FLEET_GROUP}/${FLEET_VERSION}`);
    expect(own).toMatchObject({ groupVersion: `${FLEET_GROUP}/${FLEET_VERSION}`, resources: [] });
    // What the aggregator asks flotilla at its root is flotilla's group alone, never the fleet's.
    const asked = await direct('/apis', { cert: { cert: hub.frontProxy.clientCert, key: hub.frontProxy.clientKey }, headers: { 'x-remote-user': 'system:kube-aggregator', 'x-remote-group': 'system:masters' } });
    expect((JSON.parse(asked.body) as { groups: { name: string }[] }).groups.map((g) => g.name)).toEqual([FLEET_GROUP]);
    // The same path under FLEET_PATH is the fleet's discovery.
    const fleetGroups = await memberJson<{ groups: { name: string }[] }>(hub.apiserver, 'GET', `${FLEET_PATH}/apis`);
    expect(fleetGroups.groups.map((g) => g.name)).toContain('apps');
  });

  it('kubectl through the hub lists and gets every member’s pods, as flotilla answers directly', async () => {
    const listed = await kubectl(viaHub, ['get', 'pods', '-n', NS, '-o', 'name']);
    expect(listed.stderr).toBe('');
    expect(listed.stdout.trim().split('\n').sort()).toEqual(['pod/web-east', 'pod/web-north', 'pod/web-west']);
    const directly = await kubectl(flotilla.kubeconfig, ['get', 'pods', '-n', NS, '-o', 'name']);
    expect(listed.stdout.trim().split('\n').sort()).toEqual(directly.stdout.trim().split('\n').sort());
    const got = await kubectl(viaHub, ['get', 'pod', '-n', NS, 'web-west', '-o', 'jsonpath={.metadata.name} {.status.phase}']);
    expect(got.stdout).toBe('web-west Running');
    // One member under …/fleet/clusters/<name>.
    const one = await kubectl(viaHub, ['--server', `${hub.apiserver.server}${FLEET_PATH}/clusters/north`, 'get', 'pods', '-n', NS, '-o', 'name']);
    expect(one.stdout.trim()).toBe('pod/web-north');
  });

  it('kubectl explain and apply through the hub read the fleet’s schema', async () => {
    const explained = await kubectl(viaHub, ['explain', 'pods.spec.nodeName']);
    expect(explained.stderr).toBe('');
    expect(explained.stdout).toContain('nodeName');
    const applied = await kubectl(viaHub, ['--server', `${hub.apiserver.server}${FLEET_PATH}/clusters/east`, 'apply', '-f', '-'], {
      input: `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: applied-through-hub, namespace: ${NS}}\ndata: {a: b}\n`,
    });
    expect([applied.stderr, applied.stdout]).toEqual(['', 'configmap/applied-through-hub created\n']);
    expect((await memberRequest(east, 'GET', `/api/v1/namespaces/${NS}/configmaps/applied-through-hub`)).status).toBe(200);
  });

  it('kubectl through the hub watches and follows logs', async () => {
    const watch = kubectlSession(viaHub, ['get', 'pods', '-n', NS, '--watch', '-o', 'name']);
    try {
      await watch.waitForOutput(/pod\/web-east/);
      await ok(north, 'POST', `/api/v1/namespaces/${NS}/pods`, { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'late' }, spec: { containers: [{ name: 'web', image: 'example.com/web:1' }] } });
      await watch.waitForOutput(/pod\/late/, 20_000);
    } finally {
      await watch.stop();
    }
    const logs = await kubectl(viaHub, ['logs', '-n', NS, 'web-west']);
    expect(logs.stdout).toContain('hello from a kwok pod in west');
    const follow = kubectlSession(viaHub, ['logs', '-f', '-n', NS, 'web-west']);
    try {
      await follow.waitForOutput(/hello from a kwok pod in west/);
      appendPodLog(west, 'a line followed through the hub');
      await follow.waitForOutput(/a line followed through the hub/, 20_000);
    } finally {
      await follow.stop();
    }
  });

  it('kubectl exec through the hub, over websocket and SPDY, answers as the member does', async () => {
    // kubectl 1.28 speaks SPDY; today's speaks websocket: the aggregator passes both upgrades on.
    for (const version of [undefined, '1.28']) {
      const echoed = await kubectl(viaHub, ['exec', '-i', '-n', NS, 'web-north', '--', 'head', '-n', '1'], { version, input: 'piped through the hub\n' });
      expect([echoed.code, echoed.stdout]).toEqual([0, 'piped through the hub\n']);
      // A failed command fails kubectl as it does on the member (kwok reports an error status: exit 1).
      const r = await kubectl(viaHub, ['exec', '-n', NS, 'web-north', '--', 'sh', '-c', 'echo to-stderr >&2; exit 3'], { version });
      const onMember = await kubectl(north.kubeconfig, ['exec', '-n', NS, 'web-north', '--', 'sh', '-c', 'echo to-stderr >&2; exit 3'], { version });
      expect([r.code, r.stdout, r.stderr]).toEqual([onMember.code, onMember.stdout, onMember.stderr]);
      expect(r.stderr).toContain('exit status 3');
    }
  });

  it('a hub user sees what each member allows, exactly as directly; one the hub refuses gets nothing', async () => {
    const hubView = await kubectl(aliceViaHub, ['get', 'pods', '-n', NS, '-o', 'name']);
    const directView = await kubectl(aliceDirect, ['get', 'pods', '-n', NS, '-o', 'name']);
    expect(hubView.stdout.trim()).toBe('pod/web-east');
    // The same answer, warning included (the members alice may not read are named, as directly).
    expect([hubView.stdout, hubView.stderr]).toEqual([directView.stdout, directView.stderr]);
    const logs = await kubectl(aliceViaHub, ['logs', '-n', NS, 'web-east']);
    expect(logs.stdout).toContain('hello from a kwok pod in east');
    // Fleet-wide, alice may list nothing anywhere: refused through the hub as directly.
    const all = await kubectl(aliceViaHub, ['get', 'pods', '-A', '-o', 'name']);
    const allDirect = await kubectl(aliceDirect, ['get', 'pods', '-A', '-o', 'name']);
    expect([all.code, all.stdout]).toEqual([allDirect.code, allDirect.stdout]);
    expect(all.stdout).not.toContain('web-west');
    // The hub's own RBAC comes first: bob may not reach the fleet API there at all.
    const bob = await kubectl(bobViaHub, ['get', 'pods', '-n', NS, '-o', 'name']);
    expect(bob.code).not.toBe(0);
    expect(bob.stderr).toMatch(/Forbidden/);
    expect(bob.stdout).toBe('');
  });

  it('a tenant through the hub sees its own fleet, in its names, as directly', async () => {
    const viaHub = await kubectl(acmeViaHub, ['get', 'ns', '-o', 'name']);
    const directly = await kubectl(acmeDirect, ['get', 'ns', '-o', 'name']);
    // Other files' acme namespaces may share the fleet (search-clients' acme-scl, still terminating).
    const names = viaHub.stdout.trim().split('\n');
    expect(names).toContain(`namespace/${NS}`);
    expect(names.filter((n) => n.startsWith('namespace/acme-'))).toEqual([]);
    expect([viaHub.stdout, viaHub.stderr]).toEqual([directly.stdout, directly.stderr]);
  });

  it('bearer tokens sent straight to flotilla are reviewed by the hub', async () => {
    const alice = await memberRequest({ ...flotilla.endpoint, token: tokenOf('alice') }, 'GET', `/api/v1/namespaces/${NS}/pods`);
    expect(alice.status).toBe(200);
    expect(podNames(alice.body)).toEqual(['web-east']);
    const forged = await memberRequest({ ...flotilla.endpoint, token: 'not-a-token-anyone-issued' }, 'GET', `/api/v1/namespaces/${NS}/pods`);
    expect(forged.status).toBe(401);
  });
});

describe('client-go 0.35 through the hub, with its defaults (watch-list on)', () => {
  /** The members' pods in NS: `<ns>/<name> <uid> <member>:<member RV>`, as the informer dumps its cache. */
  async function membersView(): Promise<string[]> {
    const lines: string[] = [];
    for (const m of fleet.members) {
      for (const p of (await memberJson<{ items: { metadata: { name: string; uid: string; resourceVersion: string } }[] }>(m, 'GET', `/api/v1/namespaces/${NS}/pods`)).items) {
        lines.push(`${NS}/${p.metadata.name} ${p.metadata.uid} ${m.name}:${p.metadata.resourceVersion}`);
      }
    }
    return lines.sort();
  }

  // Typed and dynamic informers as client-go 0.35 ships them; the metadata informer with watch-list
  // asked for (its factory does not turn it on by default).
  it.each([['typed', 'informer', 'default'], ['dynamic', 'dynamic', 'default'], ['metadata', 'metadata', true]] as const)('a %s informer (-mode %s, watch-list %s) syncs without listing, follows a change on a member, and never falls back', async (_kind, mode: InformerMode, watchList) => {
    const run = startInformer({ bin: join(clientsDir(), 'informer'), kubeconfig: viaHub, mode, watchList, namespace: NS });
    try {
      await run.synced;
      const name = `hub-${mode}`;
      await ok(west, 'POST', `/api/v1/namespaces/${NS}/pods`, { apiVersion: 'v1', kind: 'Pod', metadata: { name }, spec: { containers: [{ name: 'web', image: 'example.com/web:1' }] } });
      await until(`${name} in flotilla's cache`, async () => (await memberRequest(flotilla.endpoint, 'GET', `/api/v1/namespaces/${NS}/pods/${name}`)).status === 200, 20_000);
      // Flotilla has it; the informer hears of it through the hub within milliseconds.
      await new Promise((r) => setTimeout(r, 1500));
      const direct = await membersView();
      const { lines, lists, watches, log } = await run.dump();
      expect(lines).toEqual(direct);
      expect(log).not.toMatch(/falling back|unable to decode|Failed to watch|failed to list|Unhandled Error/i);
      expect({ lists, watchesAtLeast: watches >= 1 }).toEqual({ lists: 0, watchesAtLeast: true });
    } finally {
      run.stop();
    }
  });
});

describe('request headers naming a user are believed only from the front proxy', () => {
  const asAdmin = { 'x-remote-user': 'system:admin', 'x-remote-group': 'system:masters' };
  const path = `/api/v1/namespaces/${NS}/pods`;

  it('the front proxy’s certificate with an allowed name: the named user, as the members allow (positive control)', async () => {
    const proxy = { cert: hub.frontProxy.clientCert, key: hub.frontProxy.clientKey };
    const admin = await direct(path, { cert: proxy, headers: asAdmin });
    expect(admin.status).toBe(200);
    expect(podNames(admin.body)).toEqual(expect.arrayContaining(['web-east', 'web-north', 'web-west']));
    const alice = await direct(path, { cert: proxy, headers: { 'x-remote-user': 'alice', 'x-remote-group': 'system:authenticated' } });
    expect(podNames(alice.body)).toEqual(['web-east']);
  });

  it('forged on a connection without a client certificate: 401, no data', async () => {
    const r = await direct(path, { headers: asAdmin });
    expect(r.status).toBe(401);
    expect(r.body).not.toContain('web-');
  });

  it('forged beside a valid bearer token: 401, not the token’s user nor the named one', async () => {
    const r = await direct(path, { headers: { ...asAdmin, authorization: `Bearer ${tokenOf('alice')}` } });
    expect(r.status).toBe(401);
    expect(r.body).not.toContain('web-');
  });

  it('a certificate of the front proxy’s CA whose name is not allowed: 401', async () => {
    const r = await direct(path, { cert: hub.intruder, headers: asAdmin });
    expect(r.status).toBe(401);
    expect(r.body).not.toContain('web-');
  });

  it('a user certificate of another CA the hub trusts: 401 with the headers, its own user without them', async () => {
    // The fleet's CA is the hub's client CA: its certificates name users, never the front proxy.
    const user = { cert: join(fleet.dir, 'kubelet-client.crt'), key: join(fleet.dir, 'kubelet-client.key') };
    expect((await direct(path, { cert: user, headers: asAdmin })).status).toBe(401);
    const own = await direct(path, { cert: user });
    expect(own.status).toBe(200);
  });
});
