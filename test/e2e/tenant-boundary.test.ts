import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { join } from 'node:path';
import type { MemberInfo } from '../fleet/fleet.js';
import { memberRequest, type MemberResponse } from '../fleet/http.js';
import { startFlotillaProcess, type FlotillaProcess } from '../support/flotilla-process.js';
import { rawHttps, requestText } from '../support/raw-https.js';
import { FLEET_PATH } from '../../src/api/fleet-path.js';

/**
 * The tenant boundary held by flotilla alone: the tenants' admins are cluster-admin on every member
 * here (the strictest setting: nothing behind flotilla confines them), and each hostile request a
 * review of the tenant views made as acme's admin is sent again. Each must leave every object
 * outside acme's names as it was and show nothing of them. (The members' own enforcement, the
 * second line, is tested by tenant-member-policy.test.ts.)
 */
const fleet = inject('fleet');
const [east] = fleet.members as [MemberInfo, MemberInfo, MemberInfo];
const TENANTS = [
  { id: 'acme', users: ['dev@acme'], groups: ['acme-admins', 'acme-devs'] },
  { id: 'globex', groups: ['globex-admins'] },
];
const RBAC = '/apis/rbac.authorization.k8s.io/v1';
const CANARY = 'tb=canary';
const CANARY_ROLES = ['tb-fleet-role', 'globex-tb-role', 'acme-tb-role'];
let flotilla: FlotillaProcess;

const token = (user: string) => fleet.users.find((u) => u.name === user)!.token;
const acme = token('admin@acme');

/** A request to flotilla with exactly this path (no client normalises its escapes), as `who`. */
async function send(method: string, path: string, who: string, body?: unknown, headers: Record<string, string> = {}): Promise<{ status: number; body: string; headers: Record<string, string> }> {
  const text = body === undefined ? undefined : JSON.stringify(body);
  const all = { Authorization: `Bearer ${who}`, Accept: 'application/json', ...(text !== undefined ? { 'Content-Type': 'application/json' } : {}), ...headers };
  const a = await rawHttps(flotilla.url, flotilla.endpoint.caFile, requestText(method, path, all, text), 20_000);
  return { status: a.status, body: a.body, headers: a.headers };
}

async function onEast(method: string, path: string, body?: unknown): Promise<MemberResponse> {
  return memberRequest(east, method, path, body);
}

async function made(path: string, body: unknown): Promise<void> {
  const res = await onEast('POST', path, body);
  if (res.status !== 201 && res.status !== 409) throw new Error(`POST ${path}: ${res.status} ${res.body}`);
}

const role = (name: string, labels: Record<string, string> = { tb: 'canary' }) => ({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name, labels }, rules: [] });

beforeAll(async () => {
  for (const m of fleet.members) {
    for (const t of TENANTS) {
      const res = await memberRequest(m, 'POST', `${RBAC}/clusterrolebindings`, {
        apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name: `tb-${t.id}-admins` },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: `${t.id}-admins` }],
      });
      if (res.status !== 201 && res.status !== 409) throw new Error(`${m.name}: ${res.status} ${res.body}`);
    }
  }
  for (const ns of ['globex-tb', 'acme-tb', 'tb-fleet']) await made('/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
  await made('/api/v1/namespaces/globex-tb/configmaps', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'plans', labels: { tb: 'canary' } }, data: { marker: 'globex-plans-marker' } });
  await made('/api/v1/namespaces/tb-fleet/configmaps', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'fleet-settings', labels: { tb: 'canary' } }, data: { marker: 'fleet-marker' } });
  for (let i = 0; i < 4; i++) await made('/api/v1/namespaces/acme-tb/configmaps', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `own-${i}` } });
  await made('/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'acme-tbx' } });
  await made('/api/v1/namespaces/acme-tbx/pods', { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'web' }, spec: { containers: [{ name: 'web', image: 'web' }] } });
  for (const name of CANARY_ROLES) await made(`${RBAC}/clusterroles`, role(name));
  flotilla = await startFlotillaProcess({
    fleet,
    dir: join(fleet.dir, 'flotilla-tenant-boundary'),
    // ConfigMaps, secrets and RBAC objects are not cached: read live, as acme, from every member.
    resources: [{ version: 'v1', resource: 'namespaces' }, { version: 'v1', resource: 'nodes' }],
    tenants: TENANTS,
  });
}, 300_000);

afterAll(async () => {
  await flotilla?.stop();
  for (const m of fleet.members) {
    for (const t of TENANTS) await memberRequest(m, 'DELETE', `${RBAC}/clusterrolebindings/tb-${t.id}-admins`);
    for (const ns of ['globex-tb', 'acme-tb', 'acme-tbx', 'tb-fleet', 'acme-globex-tb']) await memberRequest(m, 'DELETE', `/api/v1/namespaces/${ns}`);
    const roles = JSON.parse((await memberRequest(m, 'GET', `${RBAC}/clusterroles`)).body) as { items: { metadata: { name: string } }[] };
    for (const r of roles.items) if (/^(acme-)?(tb-|system:pt-|acme-system:pt-|globex-tb)/.test(r.metadata.name) || r.metadata.name.startsWith('acme-tb')) await memberRequest(m, 'DELETE', `${RBAC}/clusterroles/${encodeURIComponent(r.metadata.name)}`);
    for (const name of ['acme-tb-bob', 'tb-bob']) await memberRequest(m, 'DELETE', `${RBAC}/clusterrolebindings/${name}`);
    await memberRequest(m, 'DELETE', '/api/v1/persistentvolumes/tb-root');
  }
});

/** What east holds outside acme's names that acme must never change. */
async function foreignState(): Promise<string[]> {
  const out: string[] = [];
  for (const ns of ['globex-tb', 'tb-fleet']) {
    const list = JSON.parse((await onEast('GET', `/api/v1/namespaces/${ns}/configmaps?labelSelector=${CANARY}`)).body) as { items: { metadata: { name: string; resourceVersion: string } }[] };
    out.push(...list.items.map((o) => `${ns}/${o.metadata.name}@${o.metadata.resourceVersion}`));
  }
  const roles = JSON.parse((await onEast('GET', `${RBAC}/clusterroles?labelSelector=${CANARY}`)).body) as { items: { metadata: { name: string; resourceVersion: string } }[] };
  out.push(...roles.items.filter((r) => !r.metadata.name.startsWith('acme-')).map((r) => `clusterrole/${r.metadata.name}@${r.metadata.resourceVersion}`));
  return out.sort();
}

describe('the tenant boundary, held by flotilla alone', () => {
  it('percent-encoded segments name what plain ones do: nothing of globex’s is created, read or deleted', async () => {
    const before = await foreignState();
    const cm = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'planted' }, data: { x: 'y' } };
    const paths = [
      '/clusters/east/%61pi/v1/namespaces/globex-tb/configmaps',
      '/cl%75sters/east/api/v1/namespaces/globex-tb/configmaps',
      '/clusters/east/api/v1/namespaces/gl%6fbex-tb/configmaps',
      `${FLEET_PATH}/clusters/east/%61pi/v1/namespaces/globex-tb/configmaps`,
      `/%61pis/search.flotilla.io/v1alpha1/fleet/clusters/east/api/v1/namespaces/globex-tb/configmaps`,
    ];
    for (const path of paths) {
      const created = await send('POST', path, acme, cm);
      expect(created.status, `${path}: ${created.body}`).not.toBe(201);
      expect((await onEast('GET', '/api/v1/namespaces/globex-tb/configmaps/planted')).status, path).toBe(404);
      const read = await send('GET', `${path}/plans`, acme);
      expect(read.status, path).toBe(404);
      expect(read.body).not.toContain('globex-plans-marker');
      expect((await send('DELETE', `${path}/plans`, acme)).status, path).not.toBe(200);
    }
    const logs = await send('GET', '/clusters/east/%61pi/v1/namespaces/globex-tb/pods/any/log', acme);
    expect(logs.status).toBe(404);
    // A hidden kind, however its path is written: no PersistentVolume of the host's root.
    const pv = { apiVersion: 'v1', kind: 'PersistentVolume', metadata: { name: 'tb-root' }, spec: { capacity: { storage: '1Gi' }, accessModes: ['ReadWriteOnce'], hostPath: { path: '/' } } };
    for (const path of ['/clusters/east/%61pi/v1/persistentvolumes', '/clusters/east/api/v1/persistentvolumes']) expect((await send('POST', path, acme, pv)).status, path).toBe(404);
    expect((await onEast('GET', '/api/v1/persistentvolumes/tb-root')).status).toBe(404);
    expect(await foreignState()).toEqual(before);
  });

  it('a collection delete of an owned cluster-scoped kind deletes nothing of anyone’s', async () => {
    const before = await foreignState();
    for (const path of [`/clusters/east${RBAC}/clusterroles?labelSelector=${CANARY}`, `${RBAC}/clusterroles?labelSelector=${CANARY}`, `/clusters/east/apis/apiextensions.k8s.io/v1/customresourcedefinitions?labelSelector=${CANARY}`, '/clusters/east/api/v1/namespaces?labelSelector=tb%3Dcanary']) {
      const res = await send('DELETE', path, acme);
      expect(res.status, `${path}: ${res.body}`).toBe(403);
    }
    for (const name of CANARY_ROLES) expect((await onEast('GET', `${RBAC}/clusterroles/${name}`)).status, name).toBe(200);
    expect(await foreignState()).toEqual(before);
    // One by one, its own: still the tenant's to delete.
    await made(`${RBAC}/clusterroles`, role('acme-tb-gone'));
    expect((await send('DELETE', `/clusters/east${RBAC}/clusterroles/tb-gone`, acme)).status).toBe(200);
  });

  it('impersonation keeps a tenant in its tenant: no fleet group, no identity of another', async () => {
    const attempts: Record<string, string>[] = [
      { 'Impersonate-User': 'nobody', 'Impersonate-Group': 'system:masters' },
      { 'Impersonate-User': 'admin@globex', 'Impersonate-Group': 'globex-admins' },
      { 'Impersonate-User': 'dev@acme', 'Impersonate-Group': 'system:masters' },
      { 'Impersonate-User': 'system:serviceaccount:kube-system:default' },
    ];
    for (const headers of attempts) {
      for (const path of ['/api/v1/secrets', '/api/v1/namespaces/globex-tb/configmaps', '/status', '/metrics']) {
        const res = await send('GET', path, acme, undefined, headers);
        expect(res.status, `${JSON.stringify(headers)} ${path}: ${res.body.slice(0, 200)}`).toBe(403);
        expect(res.body).not.toContain('globex-plans-marker');
        expect(res.body).not.toContain('tb-fleet');
      }
    }
    // Its own user (listed in the tenant), in its own group: the member decides as for that user.
    const own = await send('GET', '/api/v1/namespaces/tb/configmaps', acme, undefined, { 'Impersonate-User': 'dev@acme', 'Impersonate-Group': 'acme-devs' });
    expect(own.body).not.toContain('may impersonate only');
    expect(own.status, own.body).toBe(403);
    expect(own.body).toContain('dev@acme');
    // A fleet caller that impersonates acme's admin sees acme's fleet, and no other.
    const asAcme = await send('GET', '/api/v1/namespaces', east.token, undefined, { 'Impersonate-User': 'admin@acme', 'Impersonate-Group': 'acme-admins' });
    expect(asAcme.status, asAcme.body).toBe(200);
    const names = new Set((JSON.parse(asAcme.body) as { items: { metadata: { name: string } }[] }).items.map((n) => n.metadata.name));
    // Exactly acme's namespaces of every member, in its names (compared with the members).
    const acmes = new Set<string>();
    for (const m of fleet.members) {
      const all = JSON.parse((await memberRequest(m, 'GET', '/api/v1/namespaces')).body) as { items: { metadata: { name: string } }[] };
      for (const n of all.items) if (n.metadata.name.startsWith('acme-')) acmes.add(n.metadata.name.slice('acme-'.length));
    }
    expect([...names].sort()).toEqual([...acmes].sort());
    expect(names.has('tb')).toBe(true);
  });

  it('a tenant’s RBAC objects bind only its own subjects, never aggregate, and generate only its names', async () => {
    const before = await foreignState();
    const binding = (subjects: unknown[]) => ({
      apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name: 'tb-bob' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' }, subjects,
    });
    for (const subjects of [[{ kind: 'User', name: 'bob', apiGroup: 'rbac.authorization.k8s.io' }], [{ kind: 'Group', name: 'system:masters', apiGroup: 'rbac.authorization.k8s.io' }], [{ kind: 'Group', name: 'globex-admins', apiGroup: 'rbac.authorization.k8s.io' }]]) {
      const res = await send('POST', `/clusters/east${RBAC}/clusterrolebindings`, acme, binding(subjects));
      expect(res.status, res.body).toBe(403);
    }
    expect((await onEast('GET', `${RBAC}/clusterrolebindings/acme-tb-bob`)).status).toBe(404);
    const patched = await send('PATCH', `/clusters/east${RBAC}/clusterroles/tb-role`, acme, [{ op: 'add', path: '/metadata/labels/rbac.authorization.k8s.io~1aggregate-to-view', value: 'true' }], { 'Content-Type': 'application/json-patch+json' });
    expect(patched.status, patched.body).toBe(403);
    const aggregating = await send('POST', `/clusters/east${RBAC}/clusterroles`, acme, { ...role('tb-agg', { 'rbac.authorization.k8s.io/aggregate-to-view': 'true' }), rules: [{ apiGroups: [''], resources: ['secrets'], verbs: ['get', 'list'] }] });
    expect(aggregating.status, aggregating.body).toBe(403);
    await new Promise((r) => setTimeout(r, 1000));
    const view = JSON.parse((await onEast('GET', `${RBAC}/clusterroles/view`)).body) as { rules: { resources?: string[] }[] };
    expect(view.rules.some((r) => r.resources?.includes('secrets'))).toBe(false);
    const generated = await send('POST', `/clusters/east${RBAC}/clusterroles`, acme, { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { generateName: 'system:pt-' }, rules: [] });
    expect(generated.status, generated.body).toBe(403);
    const roles = JSON.parse((await onEast('GET', `${RBAC}/clusterroles`)).body) as { items: { metadata: { name: string } }[] };
    expect(roles.items.filter((r) => r.metadata.name.startsWith('system:pt-'))).toEqual([]);
    // Its own role or a shared one, bound to its own subjects in its own namespace: the tenant's to make.
    const ownBinding = await send('POST', `/clusters/east${RBAC}/namespaces/tb/rolebindings`, acme, {
      ...binding([{ kind: 'Group', name: 'acme-devs', apiGroup: 'rbac.authorization.k8s.io' }]), kind: 'RoleBinding', metadata: { name: 'tb-devs' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'edit' },
    });
    expect(ownBinding.status, ownBinding.body).toBe(201);
    expect((await onEast('GET', `${RBAC}/namespaces/acme-tb/rolebindings/tb-devs`)).status).toBe(200);
    // Not in every namespace: a ClusterRoleBinding of even its own role is refused.
    const clusterWide = await send('POST', `/clusters/east${RBAC}/clusterrolebindings`, acme, { ...binding([{ kind: 'Group', name: 'acme-devs', apiGroup: 'rbac.authorization.k8s.io' }]), roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'tb-role' } });
    expect(clusterWide.status, clusterWide.body).toBe(403);
    expect(await foreignState()).toEqual(before);
  });

  it('a create that names a resourceVersion is the caller’s mistake: 400, not the member’s 500', async () => {
    for (const who of [acme, east.token]) {
      const res = await send('POST', '/clusters/east/api/v1/namespaces/tb/configmaps', who, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'with-rv', resourceVersion: 'eyJlYXN0IjoiMSJ9' } });
      expect(res.status, res.body).toBe(400);
    }
  });

  it('a member’s refusal of a tenant’s exec upgrade is told in the tenant’s names, as every other answer is', async () => {
    // dev@acme has no rights in acme-tbx (tbx to acme): east refuses its exec there.
    const upgrade = ['GET /clusters/east/api/v1/namespaces/tbx/pods/web/exec?command=ls&stdout=true HTTP/1.1', 'Host: 127.0.0.1', `Authorization: Bearer ${token('dev@acme')}`,
      'Connection: Upgrade', 'Upgrade: websocket', 'Sec-WebSocket-Version: 13', 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==', 'Sec-WebSocket-Protocol: v5.channel.k8s.io'];
    const res = await rawHttps(flotilla.url, flotilla.endpoint.caFile, `${upgrade.join('\r\n')}\r\n\r\n`, 20_000);
    expect(res.status, res.body).toBe(403);
    expect(JSON.parse(res.body)).toMatchObject({ kind: 'Status', code: 403, reason: 'Forbidden' });
    expect(res.body).toContain('\\"tbx\\"');
    expect(res.body).not.toContain('acme-tbx');
  });

  it('a shared node is read, never reached past: its proxy is its kubelet, every tenant’s pods', async () => {
    const nodes = JSON.parse((await onEast('GET', '/api/v1/nodes')).body) as { items: { metadata: { name: string } }[] };
    const node = nodes.items[0]!.metadata.name;
    expect((await send('GET', `/clusters/east/api/v1/nodes/${node}`, acme)).status).toBe(200);
    for (const path of [`/clusters/east/api/v1/nodes/${node}/proxy/pods`, `/clusters/east/api/v1/nodes/${node}/proxy/containerLogs/globex-tb/x/y`, `/clusters/east/api/v1/nodes/${node}:10250/proxy/pods`, `/clusters/east/api/v1/n%6fdes/${node}/proxy/pods`]) {
      const res = await send('GET', path, acme);
      expect(res.status, `${path}: ${res.body.slice(0, 200)}`).toBe(403);
    }
  });

  it('a tenant’s live list counts and names nothing it cannot see', async () => {
    let path = '/clusters/east/api/v1/configmaps?limit=1';
    const seen: string[] = [];
    for (let page = 0; page < 10 && path; page++) {
      const res = await send('GET', path, acme);
      expect(res.status, res.body).toBe(200);
      const list = JSON.parse(res.body) as { metadata: { continue?: string; remainingItemCount?: number }; items: { metadata: { namespace: string; name: string } }[] };
      expect(list.metadata.remainingItemCount).toBeUndefined();
      seen.push(...list.items.map((i) => `${i.metadata.namespace}/${i.metadata.name}`));
      const next = list.metadata.continue;
      if (next) {
        const opened = Buffer.from(next, 'base64url').toString('latin1');
        expect(opened).not.toMatch(/globex|tb-fleet|kube-|"live"/);
      }
      path = next ? `/clusters/east/api/v1/configmaps?limit=1&continue=${next}` : '';
    }
    expect(seen.every((s) => s.startsWith('tb/') || s.startsWith('default/') || !s.includes('globex'))).toBe(true);
    expect(seen.filter((s) => s.startsWith('tb/own-')).length).toBeGreaterThan(0);
    // A token not of this flotilla's making is not opened: the list starts again.
    const forged = Buffer.from(JSON.stringify({ live: { east: 'x' }, rv: { east: '1' } })).toString('base64url');
    expect((await send('GET', `/clusters/east/api/v1/configmaps?limit=1&continue=${forged}`, acme)).status).toBe(410);
  });

  it('hundreds of impersonated groups are refused at the first denial, and other callers go on', async () => {
    const groups = Array.from({ length: 300 }, (_, i) => `Impersonate-Group: g${i}`).join('\r\n');
    const raw = `GET /api/v1/namespaces HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nAuthorization: Bearer ${token('alice')}\r\nImpersonate-User: someone\r\n${groups}\r\n\r\n`;
    const started = Date.now();
    const [refused, other] = await Promise.all([rawHttps(flotilla.url, flotilla.endpoint.caFile, raw, 20_000), send('GET', '/api/v1/namespaces', token('bob'))]);
    expect(refused.status).toBe(403);
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(other.status).not.toBe(503);
  });
});
