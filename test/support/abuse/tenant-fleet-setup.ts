import { randomBytes } from 'node:crypto';
import type { MemberInfo } from '../../fleet/fleet.js';
import { memberRequest } from '../../fleet/http.js';
import { until } from '../poll.js';
import type { ObjectSnapshot } from './invariants.js';
import { FLEET_CLUSTER_OBJECT, FLEET_CRD_GROUP, FLEET_NAMESPACES, GLOBEX_CLUSTER_OBJECT, GLOBEX_CRD_GROUP, GLOBEX_NAMESPACES, OWN_NAMESPACES, TENANT } from './tenant-generators.js';
import { ownsName, type TenantView } from './tenant-invariants.js';
import { createCanaries, snapshot, type SnapshotScope } from './fleet-setup.js';

/**
 * The tenant abuse suite's fleet side: the tenants of the fleet file, cluster-admin on every member
 * for their admins (so flotilla is the only confinement), canaries of globex and of the fleet that
 * each carry a marker, acme's own namespaces, and what the suite compares before and after.
 */
export const TENANTS = [
  { id: TENANT, groups: ['acme-admins', 'acme-devs'] },
  { id: 'globex', groups: ['globex-admins'] },
];
export const ACME: TenantView = { id: TENANT, users: ['admin@acme', 'dev@acme'], groups: ['acme-admins', 'acme-devs'] };

const RBAC = '/apis/rbac.authorization.k8s.io/v1';
const adminBinding = (id: string) => `abuse-tenant-admins-${id}`;

/** Markers written into every foreign canary: one for globex's, one for the fleet's; new each run. */
export function newMarkers(): { globex: string; fleet: string } {
  const hex = randomBytes(6).toString('hex');
  return { globex: `gxmark${hex}`, fleet: `flmark${hex}` };
}

async function ensure(m: MemberInfo, path: string, body: object): Promise<void> {
  const res = await memberRequest(m, 'POST', path, body);
  if (res.status !== 201 && res.status !== 409) throw new Error(`${m.name} POST ${path}: ${res.status} ${res.body.slice(0, 300)}`);
}

/** cluster-admin on every member for each tenant's admins; `revoke` takes it back. */
export async function tenantAdminsAreClusterAdmins(members: MemberInfo[], revoke = false): Promise<void> {
  for (const m of members) {
    for (const t of TENANTS) {
      if (revoke) {
        await memberRequest(m, 'DELETE', `${RBAC}/clusterrolebindings/${adminBinding(t.id)}`);
        continue;
      }
      await ensure(m, `${RBAC}/clusterrolebindings`, {
        apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name: adminBinding(t.id) },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: `${t.id}-admins` }],
      });
    }
  }
}

const crd = (group: string, plural: string, kind: string, scope: 'Namespaced' | 'Cluster', marker: string) => ({
  apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition',
  metadata: { name: `${plural}.${group}`, labels: { 'abuse.flotilla.io/marker': marker } },
  spec: { group, scope, names: { plural, singular: plural.slice(0, -1), kind }, versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } }] },
});

/** Objects in a namespace, each holding the marker (label, annotation and data where it has data). */
async function markedNamespace(m: MemberInfo, ns: string, marker: string): Promise<void> {
  const labels = { 'abuse.flotilla.io/marker': marker };
  const annotations = { 'abuse.flotilla.io/marker': marker };
  await ensure(m, '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns, labels, annotations } });
  const api = `/api/v1/namespaces/${ns}`;
  await ensure(m, `${api}/configmaps`, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'canary', labels, annotations }, data: { marker } });
  await ensure(m, `${api}/configmaps`, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'marker', labels, annotations }, data: { marker } });
  await ensure(m, `${api}/secrets`, { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'canary', labels, annotations }, stringData: { marker } });
  await ensure(m, `${api}/serviceaccounts`, { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'canary', labels, annotations } });
  await ensure(m, `/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/roles`, {
    apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: { name: 'canary', labels, annotations }, rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get'] }],
  });
  await ensure(m, `/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/rolebindings`, {
    apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name: 'canary', labels, annotations },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'canary' }, subjects: [{ kind: 'Group', name: 'globex-admins', apiGroup: 'rbac.authorization.k8s.io' }],
  });
}

async function clusterCanaries(m: MemberInfo, name: string, marker: string): Promise<void> {
  const labels = { 'abuse.flotilla.io/marker': marker };
  await ensure(m, `${RBAC}/clusterroles`, { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name, labels }, rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get'] }] });
  await ensure(m, `${RBAC}/clusterrolebindings`, {
    apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name, labels },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name }, subjects: [{ kind: 'Group', name: 'abuse-nobody', apiGroup: 'rbac.authorization.k8s.io' }],
  });
}

/** Until a CRD serves, its objects cannot be created: retried. */
async function ensureEventually(m: MemberInfo, path: string, body: object): Promise<void> {
  await until(`${m.name}: POST ${path}`, async () => {
    const res = await memberRequest(m, 'POST', path, body);
    return res.status === 201 || res.status === 409;
  }, 60_000);
}

/**
 * globex's canaries (its namespaces with objects, a ClusterRole and ClusterRoleBinding, a CRD of
 * its group and an object of it), the fleet's (the common suite's, plus marked ones in
 * abuse-canary and kube-system, cluster RBAC, a cluster-scoped CRD and object), and acme's own
 * namespaces, on every member; then waits until the controllers have filled the namespaces.
 */
export async function createTenantCanaries(members: MemberInfo[], markers: { globex: string; fleet: string }): Promise<void> {
  await createCanaries(members);
  await Promise.all(
    members.map(async (m) => {
      for (const ns of GLOBEX_NAMESPACES) await markedNamespace(m, ns, markers.globex);
      for (const ns of ['abuse-canary', 'kube-system']) {
        await ensure(m, `/api/v1/namespaces/${ns}/configmaps`, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'marker', labels: { 'abuse.flotilla.io/marker': markers.fleet } }, data: { marker: markers.fleet } });
      }
      await clusterCanaries(m, GLOBEX_CLUSTER_OBJECT, markers.globex);
      await clusterCanaries(m, FLEET_CLUSTER_OBJECT, markers.fleet);
      await ensure(m, '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', crd(GLOBEX_CRD_GROUP, 'widgets', 'Widget', 'Namespaced', markers.globex));
      await ensure(m, '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', crd(FLEET_CRD_GROUP, 'gizmos', 'Gizmo', 'Cluster', markers.fleet));
      for (const ns of OWN_NAMESPACES) {
        await ensure(m, '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: `${TENANT}-${ns}` } });
        await ensure(m, `/api/v1/namespaces/${TENANT}-${ns}/configmaps`, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'canary' }, data: { owner: TENANT } });
      }
      await ensureEventually(m, `/apis/${GLOBEX_CRD_GROUP}/v1/namespaces/globex-web/widgets`, { apiVersion: `${GLOBEX_CRD_GROUP}/v1`, kind: 'Widget', metadata: { name: 'canary' }, spec: { marker: markers.globex } });
      await ensureEventually(m, `/apis/${FLEET_CRD_GROUP}/v1/gizmos`, { apiVersion: `${FLEET_CRD_GROUP}/v1`, kind: 'Gizmo', metadata: { name: 'fleet-gizmo' }, spec: { marker: markers.fleet } });
      for (const ns of [...GLOBEX_NAMESPACES, ...OWN_NAMESPACES.map((n) => `${TENANT}-${n}`)]) {
        await until(`${m.name}: ${ns} filled by the controllers`, async () => {
          const sa = await memberRequest(m, 'GET', `/api/v1/namespaces/${ns}/serviceaccounts/default`);
          const ca = await memberRequest(m, 'GET', `/api/v1/namespaces/${ns}/configmaps/kube-root-ca.crt`);
          return sa.status === 200 && ca.status === 200;
        }, 60_000);
      }
      await ensure(m, `/api/v1/namespaces/globex-web/pods`, {
        apiVersion: 'v1', kind: 'Pod', metadata: { name: 'canary', labels: { 'abuse.flotilla.io/marker': markers.globex } },
        spec: { nodeSelector: { type: 'kwok' }, containers: [{ name: 'c', image: 'example.com/canary:1' }] },
      });
    }),
  );
}

const EXTRA_SCOPE = {
  namespaced: [[GLOBEX_CRD_GROUP, 'v1', 'widgets']] as const,
  clusterScoped: [[FLEET_CRD_GROUP, 'v1', 'gizmos']] as const,
};

export const FOREIGN_SCOPE: SnapshotScope = { namespaces: [...GLOBEX_NAMESPACES, ...FLEET_NAMESPACES], ...EXTRA_SCOPE };

/** What acme must not change: the foreign scope's objects, every name on the members that is not acme's. */
export async function foreignSnapshot(members: MemberInfo[]): Promise<ObjectSnapshot> {
  const all = await snapshot(members, FOREIGN_SCOPE);
  const out: ObjectSnapshot = {};
  for (const [key, v] of Object.entries(all)) {
    const [, resource, ns, name] = key.split('/') as [string, string, string, string];
    const acmes = ns === '' && (resource === 'customresourcedefinitions' ? name.split('.')[1] === TENANT : ownsName(ACME, name));
    if (!acmes) out[key] = v;
  }
  return out;
}

interface Listed {
  items?: { metadata: { name: string; namespace?: string; uid: string } }[];
}

async function listed(m: MemberInfo, path: string): Promise<NonNullable<Listed['items']>> {
  const res = await memberRequest(m, 'GET', path);
  return res.status === 200 ? ((JSON.parse(res.body) as Listed).items ?? []) : [];
}

const SHARED_ROLES = new Set(['admin', 'edit', 'view', 'cluster-admin']);

/**
 * The uids of every object acme must not see, of the kinds the suite aims at: in foreign
 * namespaces, foreign namespaces themselves, cluster RBAC and CRDs not acme's (shared
 * ClusterRoles, which acme reads, aside), the fleet's cluster-scoped custom objects.
 */
export async function foreignUids(members: MemberInfo[]): Promise<Set<string>> {
  const uids = new Set<string>();
  const namespaced = ['/api/v1/configmaps', '/api/v1/secrets', '/api/v1/serviceaccounts', '/api/v1/pods', '/api/v1/services', '/apis/apps/v1/deployments', `${RBAC}/roles`, `${RBAC}/rolebindings`, `/apis/${GLOBEX_CRD_GROUP}/v1/widgets`];
  for (const m of members) {
    for (const path of namespaced) for (const it of await listed(m, path)) if (!ownsName(ACME, it.metadata.namespace ?? '')) uids.add(it.metadata.uid);
    for (const it of await listed(m, '/api/v1/namespaces')) if (!ownsName(ACME, it.metadata.name)) uids.add(it.metadata.uid);
    for (const it of await listed(m, `${RBAC}/clusterroles`)) {
      const shared = SHARED_ROLES.has(it.metadata.name) || it.metadata.name.startsWith('system:');
      if (!shared && !ownsName(ACME, it.metadata.name)) uids.add(it.metadata.uid);
    }
    for (const it of await listed(m, `${RBAC}/clusterrolebindings`)) if (!ownsName(ACME, it.metadata.name)) uids.add(it.metadata.uid);
    for (const it of await listed(m, '/apis/apiextensions.k8s.io/v1/customresourcedefinitions')) if (it.metadata.name.split('.')[1] !== TENANT) uids.add(it.metadata.uid);
    for (const it of await listed(m, `/apis/${FLEET_CRD_GROUP}/v1/gizmos`)) uids.add(it.metadata.uid);
  }
  return uids;
}

const TENANT_PREFIXES = ['acme-', 'globex-'];
const TENANT_GROUPS = ['acme.', 'globex.'];
const TENANT_KINDS = ['/api/v1/namespaces', '/apis/rbac.authorization.k8s.io/v1/clusterroles', '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions'];

/** Each member's tenants' cluster-scoped objects (namespaces, RBAC, CRDs), by path, as they are now. */
export async function tenantObjects(members: MemberInfo[]): Promise<Set<string>> {
  const out = new Set<string>();
  for (const m of members) {
    for (const kind of TENANT_KINDS) {
      const res = await memberRequest(m, 'GET', kind);
      if (res.status !== 200) continue;
      for (const o of (JSON.parse(res.body) as { items: { metadata: { name: string } }[] }).items) {
        const name = o.metadata.name;
        const crdGroup = name.slice(name.indexOf('.') + 1);
        if (TENANT_PREFIXES.some((p) => name.startsWith(p)) || TENANT_GROUPS.some((g) => crdGroup.startsWith(g))) out.add(`${m.name}\u0000${kind}/${encodeURIComponent(name)}`);
      }
    }
  }
  return out;
}

/**
 * Deletes the tenants' cluster-scoped objects the run made (everything of theirs not in `before`,
 * canaries included), so later test files meet the fleet as they would without this one.
 */
export async function removeTenantObjects(members: MemberInfo[], before: Set<string>): Promise<void> {
  for (const key of await tenantObjects(members)) {
    if (before.has(key)) continue;
    const [member, path] = key.split('\u0000') as [string, string];
    await memberRequest(members.find((m) => m.name === member)!, 'DELETE', path);
  }
}

/**
 * Waits (up to a minute) until no member has a namespace still being deleted: an earlier test
 * file's namespace that vanishes during the run would read as one acme deleted. Returns the
 * snapshot keys (`<member>/namespaces//<name>`) of those still being deleted after that.
 */
export async function settleNamespaces(members: MemberInfo[]): Promise<Set<string>> {
  const terminating = async () => {
    const out = new Set<string>();
    for (const m of members) {
      const res = await memberRequest(m, 'GET', '/api/v1/namespaces');
      if (res.status !== 200) continue;
      for (const n of (JSON.parse(res.body) as { items: { metadata: { name: string; deletionTimestamp?: string } }[] }).items) {
        if (n.metadata.deletionTimestamp !== undefined) out.add(`${m.name}/namespaces//${n.metadata.name}`);
      }
    }
    return out;
  };
  for (let waited = 0; waited < 60_000; waited += 1000) {
    if ((await terminating()).size === 0) return new Set();
    await new Promise((r) => setTimeout(r, 1000));
  }
  return terminating();
}
