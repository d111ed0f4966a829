import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments, stringify as toYaml } from 'yaml';
import { findProjectRoot, kubeconfigYaml, type MemberInfo } from '../fleet/fleet.js';
import { memberJson, memberRequest } from '../fleet/http.js';
import { startFlotillaProcess, writeProxyKubeconfig, type FlotillaProcess } from '../support/flotilla-process.js';
import { kubectlOk } from '../support/kubectl.js';
import { until } from '../support/poll.js';

/**
 * Flotilla given only deploy/member-clusterrole.yaml on its members (a ServiceAccount's token of
 * each): it syncs and serves reads, a user's write and logs. Given less on one member (no list of
 * clusterroles there), callers refused there get a 503 naming flotilla's credentials, not a 403
 * naming theirs; /status and the log say what is missing; an operator reads /status regardless.
 */
const fleet = inject('fleet');
const east = fleet.members.find((m) => m.name === 'east')!;
const west = fleet.members.find((m) => m.name === 'west')!;
const alice = fleet.users.find((u) => u.name === 'alice')!;
const bob = fleet.users.find((u) => u.name === 'bob')!;
const NS = 'member-rights';
const SA_NS = 'flotilla-rights';
const RBAC = '/apis/rbac.authorization.k8s.io/v1';
const dir = join(fleet.dir, 'flotilla-member-rights');
const RESOURCES = [{ version: 'v1', resource: 'pods' }, { group: 'apps', version: 'v1', resource: 'deployments' }];
let full: FlotillaProcess;
let short: FlotillaProcess;

type Doc = { kind: string; metadata: { name: string }; rules?: { resources?: string[] }[]; roleRef?: { name: string }; subjects?: unknown[] };

/** The shipped role, bound to ServiceAccount `sa` of SA_NS (less: without clusterroles in its RBAC rule). */
function shippedRole(sa: string, less: boolean): string {
  const docs = parseAllDocuments(readFileSync(join(findProjectRoot(), 'deploy', 'member-clusterrole.yaml'), 'utf8')).map((d) => d.toJS() as Doc);
  const role = docs.find((d) => d.kind === 'ClusterRole' && d.metadata.name === 'flotilla-member')!;
  const binding = docs.find((d) => d.kind === 'ClusterRoleBinding')!;
  const name = `flotilla-member-${sa}`;
  role.metadata.name = name;
  if (less) for (const r of role.rules!) if (r.resources?.includes('clusterroles')) r.resources = r.resources.filter((x: string) => x !== 'clusterroles');
  binding.metadata.name = name;
  binding.roleRef!.name = name;
  binding.subjects = [{ kind: 'ServiceAccount', name: sa, namespace: SA_NS }];
  return [role, binding].map((d) => toYaml(d)).join('---\n');
}

/** A kubeconfig of `sa`'s token on member `m`: flotilla's identity there. */
async function identity(m: MemberInfo, sa: string, less: boolean): Promise<MemberInfo> {
  await kubectlOk(m.kubeconfig, ['create', 'serviceaccount', sa, '-n', SA_NS]);
  await kubectlOk(m.kubeconfig, ['apply', '-f', '-'], { input: shippedRole(sa, less) });
  const token = (await kubectlOk(m.kubeconfig, ['create', 'token', sa, '-n', SA_NS, '--duration=2h'])).trim();
  const kubeconfig = join(dir, `${m.name}-${sa}.kubeconfig`);
  writeFileSync(kubeconfig, kubeconfigYaml(m.name, m.server, m.caFile, token));
  return { ...m, kubeconfig };
}

async function ok(m: MemberInfo, path: string, body: unknown): Promise<void> {
  const res = await memberRequest(m, 'POST', path, body);
  if (res.status >= 300 && res.status !== 409) throw new Error(`POST ${path}: ${res.status} ${res.body.slice(0, 300)}`);
}

beforeAll(async () => {
  mkdirSync(dir, { recursive: true });
  for (const m of [east, west]) {
    for (const ns of [NS, SA_NS]) await ok(m, '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
    await until(`${m.name}: default ServiceAccount`, async () => (await memberRequest(m, 'GET', `/api/v1/namespaces/${NS}/serviceaccounts/default`)).status === 200);
    await ok(m, `/api/v1/namespaces/${NS}/pods`, { apiVersion: 'v1', kind: 'Pod', metadata: { name: `web-${m.name}` }, spec: { containers: [{ name: 'web', image: 'example.com/web:1' }] } });
    // alice edits in NS on both members.
    await ok(m, `${RBAC}/namespaces/${NS}/rolebindings`, {
      apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name: 'alice-edit' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'edit' }, subjects: [{ kind: 'User', name: 'alice', apiGroup: 'rbac.authorization.k8s.io' }],
    });
  }
  const [eastFull, westFull, westLess] = await Promise.all([identity(east, 'flotilla', false), identity(west, 'flotilla', false), identity(west, 'flotilla-less', true)]);
  const operators = { operators: { users: [bob.name] } };
  [full, short] = await Promise.all([
    startFlotillaProcess({ fleet, dir: join(dir, 'full'), members: [eastFull!, westFull!], resources: RESOURCES, options: operators }),
    startFlotillaProcess({ fleet, dir: join(dir, 'short'), members: [eastFull!, westLess!], resources: RESOURCES, options: operators, waitReady: false }),
  ]);
}, 180_000);

afterAll(async () => {
  await Promise.all([full?.stop(), short?.stop()]);
});

function kubeconfigOf(f: FlotillaProcess, user: { name: string; token: string }): string {
  const path = join(dir, `${user.name}-${f === full ? 'full' : 'short'}.kubeconfig`);
  writeProxyKubeconfig(path, f.url, f.endpoint.caFile, user.token);
  return path;
}

describe('given only the shipped member ClusterRole', () => {
  it('syncs, and serves a user’s reads, writes and logs', async () => {
    const as = kubeconfigOf(full, alice);
    expect((await kubectlOk(as, ['get', 'pods', '-n', NS, '-o', 'name'])).trim().split('\n').sort()).toEqual(['pod/web-east', 'pod/web-west']);
    await kubectlOk(as, ['annotate', '-n', NS, 'pod/web-west', 'checked=yes']);
    expect((await memberJson<{ metadata: { annotations: Record<string, string> } }>(west, 'GET', `/api/v1/namespaces/${NS}/pods/web-west`)).metadata.annotations['checked']).toBe('yes');
    expect(await kubectlOk(as, ['logs', '-n', NS, 'web-east'])).toContain('hello from a kwok pod in east');
  });
});

describe('given less on one member (no list of clusterroles on west)', () => {
  const statusOf = async (token: string) => memberRequest({ ...short.endpoint, token }, 'GET', '/status');
  const RIGHT = 'list clusterroles.rbac.authorization.k8s.io';

  it('says what is missing in /status (to an operator) and in the log, at warn', async () => {
    let cacher: { lastError?: string; missingRight?: string } | undefined;
    await until('west’s clusterroles cacher refused', async () => {
      const res = await statusOf(bob.token);
      if (res.status !== 200) return false;
      cacher = (JSON.parse(res.body) as { cachers: { cluster: string; resource: string; lastError?: string; missingRight?: string }[] }).cachers.find((c) => c.cluster === 'west' && c.resource.endsWith('/clusterroles'));
      return cacher?.missingRight !== undefined;
    });
    expect(cacher!.missingRight).toBe(RIGHT);
    expect(cacher!.lastError).toMatch(/^flotilla's own credentials for member west cannot list clusterroles\.rbac\.authorization\.k8s\.io: .*User "system:serviceaccount:flotilla-rights:flotilla-less" cannot list/);
    const warned = readFileSync(short.proc.logPath, 'utf8').split('\n').filter((l) => l.includes('"missingRight"'));
    expect(warned.length).toBeGreaterThan(0);
    expect(JSON.parse(warned[0]!)).toMatchObject({ level: 40, cluster: 'west', missingRight: RIGHT });
  });

  it('answers callers 503 naming flotilla’s credentials where it cannot decide, never a 403, and serves the rest', async () => {
    const as = { ...short.endpoint, token: alice.token };
    await until('east synced', async () => (await memberRequest(as, 'GET', `/clusters/east/api/v1/namespaces/${NS}/pods`)).status === 200);
    const there = await memberRequest(as, 'GET', `/clusters/west/api/v1/namespaces/${NS}/pods`);
    expect(there.status).toBe(503);
    expect(JSON.parse(there.body).message).toContain(`flotilla's own credentials for member west cannot ${RIGHT}`);
    const fleetWide = await memberRequest(as, 'GET', `/api/v1/namespaces/${NS}/pods`);
    expect(fleetWide.status).toBe(200);
    expect((JSON.parse(fleetWide.body) as { items: { metadata: { name: string } }[] }).items.map((p) => p.metadata.name)).toEqual(['web-east']);
    expect(String(fleetWide.headers['warning'])).toContain('nothing of cluster west is shown: flotilla');
    const status = await statusOf(alice.token);
    expect(status.status).toBe(503);
    expect(JSON.parse(status.body).message).toContain(`flotilla's own credentials for member west cannot ${RIGHT}`);
  });
});
