import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { join } from 'node:path';
import { memberRequest } from '../fleet/http.js';
import type { MemberInfo } from '../fleet/fleet.js';
import { kubectl } from '../support/kubectl.js';
import { startFlotillaProcess, writeProxyKubeconfig, type FlotillaProcess } from '../support/flotilla-process.js';

/**
 * Who am I, can I, and a get several members answer, through flotilla with real kubectl (1.28,
 * 1.32, 1.33): `auth whoami` is the identity flotilla authenticated; `auth can-i` is yes when some
 * member allows it (the members named), per member under /clusters/<name>/, and agrees with the
 * member's own answer there; `auth can-i --list` holds what the members list; `get ns default`
 * (every member has it) is the first member's, with a Warning naming the others.
 */
const fleet = inject('fleet');
const [east, west] = fleet.members as [MemberInfo, MemberInfo, ...MemberInfo[]];
const NS = 'who-can';
const VERSIONS = ['1.28', '1.32', undefined];
const RBAC = '/apis/rbac.authorization.k8s.io/v1';
let flotilla: FlotillaProcess;
let aliceKubeconfig: string;

async function make(m: MemberInfo, path: string, body: unknown): Promise<void> {
  const res = await memberRequest(m, 'POST', path, body);
  if (res.status !== 201 && res.status !== 409) throw new Error(`${m.name} POST ${path}: ${res.status} ${res.body.slice(0, 300)}`);
}

beforeAll(async () => {
  for (const m of fleet.members) await make(m, '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
  // alice may create pods in the namespace on west only.
  await make(west, `${RBAC}/namespaces/${NS}/roles`, { metadata: { name: 'pod-maker' }, rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['create', 'get'] }] });
  await make(west, `${RBAC}/namespaces/${NS}/rolebindings`, {
    metadata: { name: 'alice-pod-maker' },
    subjects: [{ kind: 'User', name: 'alice', apiGroup: 'rbac.authorization.k8s.io' }],
    roleRef: { kind: 'Role', name: 'pod-maker', apiGroup: 'rbac.authorization.k8s.io' },
  });
  flotilla = await startFlotillaProcess({ fleet, dir: join(fleet.dir, 'flotilla-who-can'), resources: [{ version: 'v1', resource: 'namespaces' }, { version: 'v1', resource: 'pods' }] });
  aliceKubeconfig = join(flotilla.dataDir, '..', 'alice.kubeconfig');
  writeProxyKubeconfig(aliceKubeconfig, flotilla.url, fleet.caFile, fleet.users.find((u) => u.name === 'alice')!.token, 'flotilla-alice');
}, 120_000);

afterAll(async () => {
  await flotilla?.stop();
});

describe('who am I, can I', () => {
  it('auth whoami is the identity flotilla authenticated', async () => {
    for (const version of VERSIONS) {
      const r = await kubectl(aliceKubeconfig, ['auth', 'whoami', '-o', 'json'], { version });
      expect(r.code, `${version}: ${r.stderr}`).toBe(0);
      const info = (JSON.parse(r.stdout) as { status: { userInfo: { username: string; groups: string[] } } }).status.userInfo;
      expect(info.username).toBe('alice');
      expect(info.groups).toEqual(expect.arrayContaining(['team-a', 'system:authenticated']));
    }
    // Impersonated by the admin: the impersonated identity, as the apiserver says it.
    const as = await kubectl(flotilla.kubeconfig, ['auth', 'whoami', '--as', 'bob', '--as-group', 'team-b', '-o', 'json']);
    expect(as.code, as.stderr).toBe(0);
    expect((JSON.parse(as.stdout) as { status: { userInfo: { username: string; groups: string[] } } }).status.userInfo).toMatchObject({ username: 'bob', groups: ['team-b', 'system:authenticated'] });
  });

  it('auth can-i: yes where some member allows it, as each member answers it', async () => {
    for (const version of VERSIONS) {
      const fleetWide = await kubectl(aliceKubeconfig, ['auth', 'can-i', 'create', 'pods', '-n', NS], { version });
      expect(fleetWide.stdout.trim(), `${version}: ${fleetWide.stderr}`).toBe('yes');
      const elsewhere = await kubectl(aliceKubeconfig, ['auth', 'can-i', 'delete', 'pods', '-n', NS], { version });
      expect(elsewhere.stdout.trim()).toBe('no');
      expect(elsewhere.code).toBe(1);
    }
    // Per member: the member's own verdict, asked of the member as alice (the admin impersonating her).
    for (const m of [east, west]) {
      const via = await kubectl(aliceKubeconfig, ['--server', `${flotilla.url}/clusters/${m.name}`, 'auth', 'can-i', 'create', 'pods', '-n', NS]);
      const own = await kubectl(m.kubeconfig, ['auth', 'can-i', 'create', 'pods', '-n', NS, '--as', 'alice', '--as-group', 'team-a']);
      expect(via.stdout.trim(), m.name).toBe(own.stdout.trim());
    }
    // Non-resource URLs too.
    const healthz = await kubectl(aliceKubeconfig, ['auth', 'can-i', 'get', '/healthz']);
    expect(healthz.stdout.trim()).toBe('yes');
  });

  it('a review asked for only as a Table is the member’s 406; with a plain type too, the review', async () => {
    const review = { apiVersion: 'authorization.k8s.io/v1', kind: 'SelfSubjectAccessReview', spec: { nonResourceAttributes: { path: '/', verb: 'get' } } };
    const path = '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews';
    for (const accept of ['application/json;as=Table;v=v1;g=meta.k8s.io', 'application/json;as=Table;v=v1;g=meta.k8s.io, application/json']) {
      const own = await memberRequest(east, 'POST', path, review, { accept });
      const via = await memberRequest(flotilla.endpoint, 'POST', path, review, { accept });
      expect(own.status, accept).toBe(accept.endsWith('application/json') ? 201 : 406);
      expect(via.status, `${accept}: ${via.body}`).toBe(own.status);
      expect(JSON.parse(via.body).kind).toBe(JSON.parse(own.body).kind);
    }
  });

  it('auth can-i --list holds what the members list for the caller', async () => {
    for (const version of VERSIONS) {
      const r = await kubectl(aliceKubeconfig, ['auth', 'can-i', '--list', '-n', NS], { version });
      expect(r.code, `${version}: ${r.stderr}`).toBe(0);
      // west's Role, and what every member lets everyone (self reviews).
      expect(r.stdout).toMatch(/^pods\s+\[\]\s+\[\]\s+\[create get\]$/m);
      expect(r.stdout).toMatch(/selfsubjectaccessreviews\.authorization\.k8s\.io/);
    }
    const east1 = await kubectl(aliceKubeconfig, ['--server', `${flotilla.url}/clusters/east`, 'auth', 'can-i', '--list', '-n', NS]);
    expect(east1.stdout).not.toMatch(/^pods\s/m);
  });
});

describe('a get several members answer', () => {
  it('is the first member’s, with a Warning naming the others; a write to it is refused (400) until it names one member', async () => {
    for (const version of VERSIONS) {
      const r = await kubectl(flotilla.kubeconfig, ['get', 'namespace', 'default', '-o', 'json'], { version });
      expect(r.code, `${version}: ${r.stderr}`).toBe(0);
      const ns = JSON.parse(r.stdout) as { metadata: { annotations: Record<string, string> } };
      expect(ns.metadata.annotations['search.flotilla.io/cluster']).toBe(fleet.members[0]!.name);
      expect(r.stderr).toContain(`Warning: flotilla: namespaces "default" is in clusters ${fleet.members.map((m) => m.name).join(', ')}; this is ${fleet.members[0]!.name}'s (the first in the fleet's order)`);
    }
    const write = await kubectl(flotilla.kubeconfig, ['annotate', 'namespace', 'default', 'note=hi']);
    expect(write.code).not.toBe(0);
    expect(write.stderr).toMatch(/BadRequest.*exists in clusters/);
  });
});
