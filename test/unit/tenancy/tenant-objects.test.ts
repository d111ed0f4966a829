import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { objectToMember, objectToTenant } from '../../../src/tenancy/document-names.js';
import type { KindLookup, ObjectNaming } from '../../../src/tenancy/naming-direction.js';
import { patchToMember, type PatchTarget } from '../../../src/tenancy/patch-names.js';
import { sharedName, Tenants, type ClusterScopedPolicy, type Tenant } from '../../../src/tenancy/tenant.js';
import { clashingTenantIds } from '../../../src/registry/config-tenants.js';

type Json = Record<string, unknown>;

const RBAC = 'rbac.authorization.k8s.io';
const TREE = '.tree.hnc.x-k8s.io/depth';
const METADATA_NAME = 'kubernetes.io/metadata.name';
const SUBNAMESPACE_OF = 'hnc.x-k8s.io/subnamespace-of';

/** The member's kinds, as discovery would tell them (member groups). */
const KINDS: Readonly<Record<string, { resource: string; namespaced: boolean }>> = {
  '/Pod': { resource: 'pods', namespaced: true },
  '/ConfigMap': { resource: 'configmaps', namespaced: true },
  '/Event': { resource: 'events', namespaced: true },
  '/Endpoints': { resource: 'endpoints', namespaced: true },
  '/PersistentVolumeClaim': { resource: 'persistentvolumeclaims', namespaced: true },
  '/Namespace': { resource: 'namespaces', namespaced: false },
  '/Node': { resource: 'nodes', namespaced: false },
  '/PersistentVolume': { resource: 'persistentvolumes', namespaced: false },
  'apps/ReplicaSet': { resource: 'replicasets', namespaced: true },
  [`${RBAC}/Role`]: { resource: 'roles', namespaced: true },
  [`${RBAC}/RoleBinding`]: { resource: 'rolebindings', namespaced: true },
  [`${RBAC}/ClusterRole`]: { resource: 'clusterroles', namespaced: false },
  [`${RBAC}/ClusterRoleBinding`]: { resource: 'clusterrolebindings', namespaced: false },
  'events.k8s.io/Event': { resource: 'events', namespaced: true },
  'discovery.k8s.io/EndpointSlice': { resource: 'endpointslices', namespaced: true },
  'networking.k8s.io/NetworkPolicy': { resource: 'networkpolicies', namespaced: true },
  'apiextensions.k8s.io/CustomResourceDefinition': { resource: 'customresourcedefinitions', namespaced: false },
  'hnc.x-k8s.io/HierarchyConfiguration': { resource: 'hierarchyconfigurations', namespaced: true },
};
const BUILT_IN_GROUPS = ['', 'apps', RBAC, 'events.k8s.io', 'discovery.k8s.io', 'networking.k8s.io', 'apiextensions.k8s.io', 'hnc.x-k8s.io'];
/** The groups tenants write; every tenant has its own of each on the member (`<id>.example.com`). */
const TENANT_GROUPS = ['example.com', 'stable.io'];

/** A world of tenants: their naming, with every tenant's CRD groups served by the member. */
function world(ids: readonly string[], clusterScoped: Readonly<Record<string, ClusterScopedPolicy>> = {}): { tenants: Tenants; naming: (t: Tenant) => ObjectNaming } {
  const tenants = new Tenants(ids.map((id) => ({ id, users: [], groups: [], clusterScoped })));
  const served = new Set([...BUILT_IN_GROUPS, ...ids.flatMap((id) => TENANT_GROUPS.map((g) => `${id}.${g}`))]);
  const kinds: KindLookup = (group, kind) => {
    const known = KINDS[`${group}/${kind}`];
    if (known) return known;
    if (!served.has(group) || BUILT_IN_GROUPS.includes(group)) return undefined;
    if (kind === 'Widget') return { resource: 'widgets', namespaced: true };
    if (kind === 'Gadget') return { resource: 'gadgets', namespaced: false };
    return undefined;
  };
  return { tenants, naming: (tenant) => ({ tenant, kinds, memberGroups: (g) => served.has(g) }) };
}

const acmeWorld = world(['acme', 'ab', 'abc']);
const acme = acmeWorld.naming(acmeWorld.tenants.all[0]!);
const ab = acmeWorld.naming(acmeWorld.tenants.all[1]!);

const toMember = (obj: unknown, n: ObjectNaming = acme) => objectToMember(structuredClone(obj), n);
const toTenant = (obj: unknown, n: ObjectNaming = acme) => objectToTenant(obj, n);

/** The tenant's object and the member's: each direction gives the other. */
function both(tenantSide: unknown, memberSide: unknown, n: ObjectNaming = acme): void {
  expect(toMember(tenantSide, n)).toEqual(memberSide);
  expect(toTenant(memberSide, n)).toEqual(tenantSide);
}

describe('object names, by example (tenant acme, beside ab and abc)', () => {
  it('renames a namespaced object’s namespace and its CRD group’s apiVersion', () => {
    both(
      { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { namespace: 'web', name: 'acme-w', annotations: { 'kubectl.kubernetes.io/last-applied-configuration': '{"metadata":{"namespace":"web"}}' } } },
      { apiVersion: 'acme.example.com/v1', kind: 'Widget', metadata: { namespace: 'acme-web', name: 'acme-w', annotations: { 'kubectl.kubernetes.io/last-applied-configuration': '{"metadata":{"namespace":"web"}}' } } },
    );
    // A group the member does not serve as the tenant's stays as it is.
    both({ apiVersion: 'other.io/v1', kind: 'Thing', metadata: { namespace: 'web', name: 'x' } }, { apiVersion: 'other.io/v1', kind: 'Thing', metadata: { namespace: 'acme-web', name: 'x' } });
  });

  it('renames cluster-scoped names by policy: owned prefixed, shared and the tenant’s group as they are, generateName too', () => {
    both({ apiVersion: `${RBAC}/v1`, kind: 'ClusterRole', metadata: { name: 'reader' } }, { apiVersion: `${RBAC}/v1`, kind: 'ClusterRole', metadata: { name: 'acme-reader' } });
    both({ apiVersion: 'v1', kind: 'Namespace', metadata: { generateName: 'tmp-' } }, { apiVersion: 'v1', kind: 'Namespace', metadata: { generateName: 'acme-tmp-' } });
    both({ apiVersion: 'v1', kind: 'Node', metadata: { name: 'node-1' } }, { apiVersion: 'v1', kind: 'Node', metadata: { name: 'node-1' } });
    both({ apiVersion: 'example.com/v1', kind: 'Gadget', metadata: { name: 'g' } }, { apiVersion: 'acme.example.com/v1', kind: 'Gadget', metadata: { name: 'g' } });
    // A name that starts with the tenant's id is a name like any other: prefixed once, de-prefixed once.
    both({ apiVersion: `${RBAC}/v1`, kind: 'ClusterRole', metadata: { name: 'acme-x' } }, { apiVersion: `${RBAC}/v1`, kind: 'ClusterRole', metadata: { name: 'acme-acme-x' } });
  });

  it('hides what is not the tenant’s: another tenant’s namespace (id plus separator), a hidden kind, an unknown cluster-scoped kind', () => {
    expect(toTenant({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { namespace: 'abc-web', name: 'c' } }, ab)).toBeUndefined();
    expect(toTenant({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { namespace: 'ab-web', name: 'c' } }, ab)).toEqual({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { namespace: 'web', name: 'c' } });
    expect(toTenant({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'abc-web' } }, ab)).toBeUndefined();
    expect(toTenant({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'ab-' } }, ab)).toBeUndefined();
    expect(toTenant({ apiVersion: 'v1', kind: 'PersistentVolume', metadata: { name: 'pvc-1' } })).toBeUndefined();
    expect(toTenant({ apiVersion: 'other.io/v1', kind: 'Thing', metadata: { name: 'x' } })).toBeUndefined();
    expect(toTenant({ apiVersion: 'ab.example.com/v1', kind: 'Widget', metadata: { namespace: 'acme-web', name: 'x' } })).toBeUndefined();
    // Tenant → member leaves a hidden kind's name: callers refuse such writes before.
    expect(toMember({ apiVersion: 'v1', kind: 'PersistentVolume', metadata: { name: 'pvc-1' } })).toEqual({ apiVersion: 'v1', kind: 'PersistentVolume', metadata: { name: 'pvc-1' } });
  });

  it('shows an object of its own whatever it refers to: fleet-level names as they are, another tenant’s hide it', () => {
    const binding = (namespace: string) => ({ apiVersion: `${RBAC}/v1`, kind: 'RoleBinding', metadata: { namespace: 'acme-web', name: 'b' }, subjects: [{ kind: 'ServiceAccount', name: 'sa', namespace }], roleRef: { apiGroup: RBAC, kind: 'Role', name: 'r' } });
    // An object in the tenant's namespace is the tenant's: a reference it cannot write stays as the member has it.
    expect(toTenant(binding('kube-system'))).toMatchObject({ metadata: { namespace: 'web' }, subjects: [{ namespace: 'kube-system' }] });
    // One naming another tenant's would tell of it: not shown.
    expect(toTenant(binding('ab-web'))).toBeUndefined();
    expect(toTenant(binding('acme-db'))).toMatchObject({ subjects: [{ namespace: 'db' }] });
    // The shared ClusterRoles keep their names both ways (a binding to `edit` binds the member's edit).
    both(
      { apiVersion: `${RBAC}/v1`, kind: 'RoleBinding', metadata: { namespace: 'web', name: 'e' }, roleRef: { apiGroup: RBAC, kind: 'ClusterRole', name: 'edit' } },
      { apiVersion: `${RBAC}/v1`, kind: 'RoleBinding', metadata: { namespace: 'acme-web', name: 'e' }, roleRef: { apiGroup: RBAC, kind: 'ClusterRole', name: 'edit' } },
    );
    const owned = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { namespace: 'acme-web', name: 'c', ownerReferences: [{ apiVersion: `${RBAC}/v1`, kind: 'ClusterRole', name: 'edit', uid: 'u' }] } };
    expect(toTenant(owned)).toMatchObject({ metadata: { namespace: 'web', ownerReferences: [{ name: 'edit' }] } });
    const allowDns = { apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', metadata: { namespace: 'acme-web', name: 'dns' }, spec: { egress: [{ to: [{ namespaceSelector: { matchLabels: { [METADATA_NAME]: 'kube-system' } } }] }] } };
    expect(toTenant(allowDns)).toMatchObject({ metadata: { namespace: 'web' } });
  });

  it('renames Lists’ items (typed by the List where they omit it) and drops the ones not the tenant’s', () => {
    const memberList = { apiVersion: 'v1', kind: 'ConfigMapList', metadata: { resourceVersion: '7' }, items: [{ metadata: { namespace: 'acme-web', name: 'a' } }, { metadata: { namespace: 'acme2-web', name: 'b' } }, { metadata: { namespace: 'acme-db', name: 'c' } }] };
    expect(toTenant(memberList)).toEqual({ apiVersion: 'v1', kind: 'ConfigMapList', metadata: { resourceVersion: '7' }, items: [{ metadata: { namespace: 'web', name: 'a' } }, { metadata: { namespace: 'db', name: 'c' } }] });
    both({ apiVersion: 'v1', kind: 'NamespaceList', items: [{ metadata: { name: 'web' } }] }, { apiVersion: 'v1', kind: 'NamespaceList', items: [{ metadata: { name: 'acme-web' } }] });
    both(
      { apiVersion: 'example.com/v1', kind: 'WidgetList', items: [{ apiVersion: 'example.com/v1', kind: 'Widget', metadata: { namespace: 'web', name: 'w' } }] },
      { apiVersion: 'acme.example.com/v1', kind: 'WidgetList', items: [{ apiVersion: 'acme.example.com/v1', kind: 'Widget', metadata: { namespace: 'acme-web', name: 'w' } }] },
    );
    // The member's input is never changed: it may be cached.
    expect(memberList.items[0]!.metadata.namespace).toBe('acme-web');
  });

  it('renames watch events, and hides one whose object is not the tenant’s', () => {
    both({ type: 'ADDED', object: { apiVersion: 'v1', kind: 'Pod', metadata: { namespace: 'web', name: 'p' } } }, { type: 'ADDED', object: { apiVersion: 'v1', kind: 'Pod', metadata: { namespace: 'acme-web', name: 'p' } } });
    expect(toTenant({ type: 'DELETED', object: { apiVersion: 'v1', kind: 'Pod', metadata: { namespace: 'ab-web', name: 'p' } } })).toBeUndefined();
  });

  it('tells a Status in the tenant’s names: message, details.name by its resource, details.group, causes', () => {
    const status = {
      apiVersion: 'v1',
      kind: 'Status',
      status: 'Failure',
      message: 'namespaces "acme-web" not found; xacme-web stays; group "acme.example.com"',
      reason: 'NotFound',
      details: { name: 'acme-web', kind: 'namespaces', causes: [{ message: 'in acme-web', field: 'metadata.name' }] },
      code: 404,
    };
    expect(toTenant(status)).toEqual({ ...status, message: 'namespaces "web" not found; xacme-web stays; group "example.com"', details: { name: 'web', kind: 'namespaces', causes: [{ message: 'in web', field: 'metadata.name' }] } });
    expect(toTenant({ kind: 'Status', details: { name: 'widgets.acme.example.com', group: 'apiextensions.k8s.io', kind: 'customresourcedefinitions' } })).toEqual({ kind: 'Status', details: { name: 'widgets.example.com', group: 'apiextensions.k8s.io', kind: 'customresourcedefinitions' } });
    // A namespaced object's name is a name, even one that starts with the tenant's id.
    expect(toTenant({ kind: 'Status', details: { name: 'acme-w', group: 'acme.example.com', kind: 'widgets' } })).toEqual({ kind: 'Status', details: { name: 'acme-w', group: 'example.com', kind: 'widgets' } });
    expect(toTenant({ type: 'ERROR', object: { kind: 'Status', message: 'too old' } })).toEqual({ type: 'ERROR', object: { kind: 'Status', message: 'too old' } });
  });

  it('renames ownerReferences: the group, and the name of a cluster-scoped owned owner', () => {
    both(
      {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: {
          namespace: 'web',
          name: 'c',
          ownerReferences: [
            { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'rs', uid: '1' },
            { apiVersion: 'v1', kind: 'Namespace', name: 'web', uid: '2' },
            { apiVersion: `${RBAC}/v1`, kind: 'ClusterRole', name: 'reader', uid: '3' },
            { apiVersion: 'example.com/v1', kind: 'Gadget', name: 'g', uid: '4' },
            { apiVersion: 'example.com/v1', kind: 'Widget', name: 'w', uid: '5' },
            { apiVersion: 'v1', kind: 'Node', name: 'n1', uid: '6' },
          ],
        },
      },
      {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: {
          namespace: 'acme-web',
          name: 'c',
          ownerReferences: [
            { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'rs', uid: '1' },
            { apiVersion: 'v1', kind: 'Namespace', name: 'acme-web', uid: '2' },
            { apiVersion: `${RBAC}/v1`, kind: 'ClusterRole', name: 'acme-reader', uid: '3' },
            { apiVersion: 'acme.example.com/v1', kind: 'Gadget', name: 'g', uid: '4' },
            { apiVersion: 'acme.example.com/v1', kind: 'Widget', name: 'w', uid: '5' },
            { apiVersion: 'v1', kind: 'Node', name: 'n1', uid: '6' },
          ],
        },
      },
    );
  });

  it('renames RoleBindings and ClusterRoleBindings: subjects and roleRef', () => {
    const subjects = (ns: (s: string) => string) => [
      { kind: 'ServiceAccount', name: 'default', namespace: ns('web') },
      { kind: 'User', apiGroup: RBAC, name: `system:serviceaccount:${ns('db')}:builder` },
      { kind: 'User', apiGroup: RBAC, name: 'alice' },
      { kind: 'Group', apiGroup: RBAC, name: `system:serviceaccounts:${ns('web')}` },
      { kind: 'Group', apiGroup: RBAC, name: 'system:authenticated' },
    ];
    const prefixed = (s: string) => `acme-${s}`;
    const same = (s: string) => s;
    both(
      { apiVersion: `${RBAC}/v1`, kind: 'ClusterRoleBinding', metadata: { name: 'readers' }, subjects: subjects(same), roleRef: { apiGroup: RBAC, kind: 'ClusterRole', name: 'reader' } },
      { apiVersion: `${RBAC}/v1`, kind: 'ClusterRoleBinding', metadata: { name: 'acme-readers' }, subjects: subjects(prefixed), roleRef: { apiGroup: RBAC, kind: 'ClusterRole', name: 'acme-reader' } },
    );
    both(
      { apiVersion: `${RBAC}/v1`, kind: 'RoleBinding', metadata: { namespace: 'web', name: 'b' }, subjects: subjects(same), roleRef: { apiGroup: RBAC, kind: 'Role', name: 'acme-r' } },
      { apiVersion: `${RBAC}/v1`, kind: 'RoleBinding', metadata: { namespace: 'acme-web', name: 'b' }, subjects: subjects(prefixed), roleRef: { apiGroup: RBAC, kind: 'Role', name: 'acme-r' } },
    );
  });

  it('renames Role and ClusterRole rules: the tenant’s CRD groups, owned resources’ names; aggregationRule stays', () => {
    const aggregationRule = { clusterRoleSelectors: [{ matchLabels: { 'rbac.example.com/aggregate-to-acme': 'true' } }] };
    both(
      {
        apiVersion: `${RBAC}/v1`,
        kind: 'ClusterRole',
        metadata: { name: 'ns-admin' },
        aggregationRule,
        rules: [
          { apiGroups: [''], resources: ['namespaces', 'namespaces/status'], resourceNames: ['web', 'db'], verbs: ['get'] },
          { apiGroups: [RBAC], resources: ['clusterroles'], resourceNames: ['reader'], verbs: ['bind'] },
          { apiGroups: ['', 'apps'], resources: ['pods', 'replicasets'], resourceNames: ['acme-p'], verbs: ['get'] },
          { apiGroups: ['example.com', '*', 'stable.io', 'other.io'], resources: ['widgets'], verbs: ['*'] },
          { apiGroups: ['apiextensions.k8s.io'], resources: ['customresourcedefinitions'], resourceNames: ['widgets.example.com'], verbs: ['get'] },
          { apiGroups: ['*'], resources: ['*'], resourceNames: ['x'], verbs: ['get'] },
          { nonResourceURLs: ['/healthz'], verbs: ['get'] },
        ],
      },
      {
        apiVersion: `${RBAC}/v1`,
        kind: 'ClusterRole',
        metadata: { name: 'acme-ns-admin' },
        aggregationRule,
        rules: [
          { apiGroups: [''], resources: ['namespaces', 'namespaces/status'], resourceNames: ['acme-web', 'acme-db'], verbs: ['get'] },
          { apiGroups: [RBAC], resources: ['clusterroles'], resourceNames: ['acme-reader'], verbs: ['bind'] },
          { apiGroups: ['', 'apps'], resources: ['pods', 'replicasets'], resourceNames: ['acme-p'], verbs: ['get'] },
          { apiGroups: ['acme.example.com', '*', 'acme.stable.io', 'other.io'], resources: ['widgets'], verbs: ['*'] },
          { apiGroups: ['apiextensions.k8s.io'], resources: ['customresourcedefinitions'], resourceNames: ['widgets.acme.example.com'], verbs: ['get'] },
          // A wildcard may name an owned object: its names are the tenant's.
          { apiGroups: ['*'], resources: ['*'], resourceNames: ['acme-x'], verbs: ['get'] },
          { nonResourceURLs: ['/healthz'], verbs: ['get'] },
        ],
      },
    );
    // A rule granting another tenant's group tells of it: not shown.
    expect(toTenant({ apiVersion: `${RBAC}/v1`, kind: 'Role', metadata: { namespace: 'acme-web', name: 'r' }, rules: [{ apiGroups: ['ab.example.com'], resources: ['widgets'], verbs: ['get'] }] })).toBeUndefined();
  });

  it('renames core Events’ involvedObject and related, events.k8s.io Events’ regarding and related', () => {
    both(
      { apiVersion: 'v1', kind: 'Event', metadata: { namespace: 'web', name: 'e1' }, involvedObject: { apiVersion: 'example.com/v1', kind: 'Widget', namespace: 'web', name: 'w' }, related: { kind: 'Pod', namespace: 'web', name: 'p' } },
      { apiVersion: 'v1', kind: 'Event', metadata: { namespace: 'acme-web', name: 'e1' }, involvedObject: { apiVersion: 'acme.example.com/v1', kind: 'Widget', namespace: 'acme-web', name: 'w' }, related: { kind: 'Pod', namespace: 'acme-web', name: 'p' } },
    );
    both(
      { apiVersion: 'v1', kind: 'Event', metadata: { namespace: 'web', name: 'e2' }, involvedObject: { apiVersion: 'v1', kind: 'Namespace', name: 'web' } },
      { apiVersion: 'v1', kind: 'Event', metadata: { namespace: 'acme-web', name: 'e2' }, involvedObject: { apiVersion: 'v1', kind: 'Namespace', name: 'acme-web' } },
    );
    both(
      { apiVersion: 'events.k8s.io/v1', kind: 'Event', metadata: { namespace: 'web', name: 'e3' }, regarding: { apiVersion: 'v1', kind: 'Pod', namespace: 'web', name: 'p' }, related: { apiVersion: `${RBAC}/v1`, kind: 'ClusterRole', name: 'reader' } },
      { apiVersion: 'events.k8s.io/v1', kind: 'Event', metadata: { namespace: 'acme-web', name: 'e3' }, regarding: { apiVersion: 'v1', kind: 'Pod', namespace: 'acme-web', name: 'p' }, related: { apiVersion: `${RBAC}/v1`, kind: 'ClusterRole', name: 'acme-reader' } },
    );
  });

  it('renames Endpoints’ and EndpointSlices’ targetRefs', () => {
    const target = (ns: string) => ({ kind: 'Pod', namespace: ns, name: 'p', uid: 'u' });
    both(
      { apiVersion: 'v1', kind: 'Endpoints', metadata: { namespace: 'web', name: 's' }, subsets: [{ addresses: [{ ip: '10.0.0.1', targetRef: target('web') }], notReadyAddresses: [{ ip: '10.0.0.2', targetRef: target('web') }], ports: [{ port: 80 }] }] },
      { apiVersion: 'v1', kind: 'Endpoints', metadata: { namespace: 'acme-web', name: 's' }, subsets: [{ addresses: [{ ip: '10.0.0.1', targetRef: target('acme-web') }], notReadyAddresses: [{ ip: '10.0.0.2', targetRef: target('acme-web') }], ports: [{ port: 80 }] }] },
    );
    both(
      { apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice', metadata: { namespace: 'web', name: 's-1' }, endpoints: [{ addresses: ['10.0.0.1'], targetRef: target('web') }, { addresses: ['10.0.0.3'] }] },
      { apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice', metadata: { namespace: 'acme-web', name: 's-1' }, endpoints: [{ addresses: ['10.0.0.1'], targetRef: target('acme-web') }, { addresses: ['10.0.0.3'] }] },
    );
  });

  it('renames a claim’s volume by the PersistentVolumes’ policy, and a volume’s claimRef', () => {
    // Hidden (the default): the volume's name is nobody's, on both sides.
    both({ apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { namespace: 'web', name: 'c' }, spec: { volumeName: 'pvc-1' } }, { apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { namespace: 'acme-web', name: 'c' }, spec: { volumeName: 'pvc-1' } });
    const owning = world(['acme'], { persistentvolumes: 'owned' });
    const n = owning.naming(owning.tenants.all[0]!);
    both({ apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { namespace: 'web', name: 'c' }, spec: { volumeName: 'pv-1' } }, { apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { namespace: 'acme-web', name: 'c' }, spec: { volumeName: 'acme-pv-1' } }, n);
    both(
      { apiVersion: 'v1', kind: 'PersistentVolume', metadata: { name: 'pv-1' }, spec: { claimRef: { apiVersion: 'v1', kind: 'PersistentVolumeClaim', namespace: 'web', name: 'c' } } },
      { apiVersion: 'v1', kind: 'PersistentVolume', metadata: { name: 'acme-pv-1' }, spec: { claimRef: { apiVersion: 'v1', kind: 'PersistentVolumeClaim', namespace: 'acme-web', name: 'c' } } },
      n,
    );
  });

  it('renames a CRD: its name and group; acceptedNames stay', () => {
    const names = { plural: 'widgets', singular: 'widget', kind: 'Widget', listKind: 'WidgetList' };
    both(
      { apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name: 'widgets.example.com' }, spec: { group: 'example.com', names, scope: 'Namespaced' }, status: { acceptedNames: names } },
      { apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name: 'widgets.acme.example.com' }, spec: { group: 'acme.example.com', names, scope: 'Namespaced' }, status: { acceptedNames: names } },
    );
    expect(toTenant({ apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name: 'widgets.abc.example.com' }, spec: { group: 'abc.example.com' } }, ab)).toBeUndefined();
  });

  it('renames a Namespace’s name label, HNC parent annotation and tree labels; drops tree labels of ancestors not the tenant’s', () => {
    both(
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'web', labels: { [METADATA_NAME]: 'web', [`web${TREE}`]: '0', [`team${TREE}`]: '1', app: 'web' }, annotations: { [SUBNAMESPACE_OF]: 'team', note: 'web' } } },
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'acme-web', labels: { [METADATA_NAME]: 'acme-web', [`acme-web${TREE}`]: '0', [`acme-team${TREE}`]: '1', app: 'web' }, annotations: { [SUBNAMESPACE_OF]: 'acme-team', note: 'web' } } },
    );
    expect(toTenant({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'ab-web', labels: { [`ab-web${TREE}`]: '0', [`abc-root${TREE}`]: '1', [`root${TREE}`]: '2' } } }, ab)).toEqual({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'web', labels: { [`web${TREE}`]: '0' } } });
  });

  it('renames NetworkPolicies’ namespace selectors by kubernetes.io/metadata.name', () => {
    const policy = (ns: (s: string) => string) => ({
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: { namespace: ns('web'), name: 'np' },
      spec: {
        podSelector: { matchLabels: { [METADATA_NAME]: 'pod-label-not-a-namespace' } },
        ingress: [{ from: [{ namespaceSelector: { matchLabels: { [METADATA_NAME]: ns('db'), team: 'x' } } }, { podSelector: {} }] }],
        egress: [{ to: [{ namespaceSelector: { matchExpressions: [{ key: METADATA_NAME, operator: 'In', values: [ns('db'), ns('web')] }, { key: 'team', operator: 'In', values: ['db'] }] } }] }],
      },
    });
    both(
      policy((s) => s),
      policy((s) => `acme-${s}`),
    );
  });

  it('renames an HNC HierarchyConfiguration’s parent and children', () => {
    both(
      { apiVersion: 'hnc.x-k8s.io/v1alpha2', kind: 'HierarchyConfiguration', metadata: { namespace: 'web', name: 'hierarchy' }, spec: { parent: 'team' }, status: { children: ['web-a', 'web-b'] } },
      { apiVersion: 'hnc.x-k8s.io/v1alpha2', kind: 'HierarchyConfiguration', metadata: { namespace: 'acme-web', name: 'hierarchy' }, spec: { parent: 'acme-team' }, status: { children: ['acme-web-a', 'acme-web-b'] } },
    );
  });
});

const MERGE = 'application/merge-patch+json';
const JSON_PATCH = 'application/json-patch+json';

describe('patches, by example', () => {
  const binding: PatchTarget = { group: RBAC, kind: 'RoleBinding', namespaced: true };
  const namespace: PatchTarget = { group: '', kind: 'Namespace', namespaced: false };

  it('renames merge, strategic merge and apply patches as partial objects of the target', () => {
    expect(patchToMember({ subjects: [{ kind: 'ServiceAccount', name: 'sa', namespace: 'web' }], roleRef: { apiGroup: RBAC, kind: 'ClusterRole', name: 'reader' } }, MERGE, binding, acme)).toEqual({
      subjects: [{ kind: 'ServiceAccount', name: 'sa', namespace: 'acme-web' }],
      roleRef: { apiGroup: RBAC, kind: 'ClusterRole', name: 'acme-reader' },
    });
    expect(patchToMember({ metadata: { labels: { [`team${TREE}`]: null, [METADATA_NAME]: 'web' } } }, 'application/strategic-merge-patch+json; charset=utf-8', namespace, acme)).toEqual({ metadata: { labels: { [`acme-team${TREE}`]: null, [METADATA_NAME]: 'acme-web' } } });
    expect(patchToMember({ apiVersion: 'example.com/v1', kind: 'Widget', metadata: { namespace: 'web', name: 'w' } }, 'application/apply-patch+yaml', { group: 'acme.example.com', kind: 'Widget', namespaced: true }, acme)).toEqual({ apiVersion: 'acme.example.com/v1', kind: 'Widget', metadata: { namespace: 'acme-web', name: 'w' } });
    expect(patchToMember({ metadata: { name: 'reader' } }, MERGE, { group: RBAC, kind: 'ClusterRole', namespaced: false }, acme)).toEqual({ metadata: { name: 'acme-reader' } });
  });

  it('renames JSON patch ops whose path is a reference, their paths too; keeps the others', () => {
    const ops = [
      { op: 'replace', path: '/metadata/namespace', value: 'web' },
      { op: 'replace', path: '/subjects/0/namespace', value: 'web' },
      { op: 'add', path: '/subjects/-', value: { kind: 'Group', name: 'system:serviceaccounts:web' } },
      { op: 'test', path: '/roleRef', value: { apiGroup: RBAC, kind: 'ClusterRole', name: 'reader' } },
      { op: 'add', path: '/metadata/ownerReferences/0', value: { apiVersion: 'v1', kind: 'Namespace', name: 'web', uid: 'u' } },
      { op: 'replace', path: '/metadata/labels/app', value: 'web' },
      { op: 'remove', path: '/subjects/1' },
      { op: 'copy', from: '/subjects/0/name', path: '/subjects/2/name' },
    ];
    expect(patchToMember(ops, JSON_PATCH, binding, acme)).toEqual([
      { op: 'replace', path: '/metadata/namespace', value: 'acme-web' },
      { op: 'replace', path: '/subjects/0/namespace', value: 'acme-web' },
      { op: 'add', path: '/subjects/-', value: { kind: 'Group', name: 'system:serviceaccounts:acme-web' } },
      { op: 'test', path: '/roleRef', value: { apiGroup: RBAC, kind: 'ClusterRole', name: 'acme-reader' } },
      { op: 'add', path: '/metadata/ownerReferences/0', value: { apiVersion: 'v1', kind: 'Namespace', name: 'acme-web', uid: 'u' } },
      { op: 'replace', path: '/metadata/labels/app', value: 'web' },
      { op: 'remove', path: '/subjects/1' },
      { op: 'copy', from: '/subjects/0/name', path: '/subjects/2/name' },
    ]);
    expect(
      patchToMember(
        [
          { op: 'add', path: `/metadata/labels/team${TREE.replace('/', '~1')}`, value: '1' },
          { op: 'move', from: `/metadata/labels/a${TREE.replace('/', '~1')}`, path: `/metadata/labels/b${TREE.replace('/', '~1')}` },
          { op: 'replace', path: '/metadata/annotations/hnc.x-k8s.io~1subnamespace-of', value: 'team' },
          { op: 'replace', path: '', value: { metadata: { name: 'web' } } },
        ],
        JSON_PATCH,
        namespace,
        acme,
      ),
    ).toEqual([
      { op: 'add', path: `/metadata/labels/acme-team${TREE.replace('/', '~1')}`, value: '1' },
      { op: 'move', from: `/metadata/labels/acme-a${TREE.replace('/', '~1')}`, path: `/metadata/labels/acme-b${TREE.replace('/', '~1')}` },
      { op: 'replace', path: '/metadata/annotations/hnc.x-k8s.io~1subnamespace-of', value: 'acme-team' },
      { op: 'replace', path: '', value: { metadata: { name: 'acme-web' } } },
    ]);
  });
});

// ---------------------------------------------------------------------------------------------
// Properties. Tenant ids share prefixes (ab, abc, ab1; x and x-y cannot be tenants together);
// names include other tenants' ids and the tenant's own with their separators.

const IDS = ['ab', 'abc', 'ab1', 'b', 'x', 'x-y', 'acme'];
const name = fc.oneof(
  fc.constantFrom('web', 'db', 'a', ...IDS, ...IDS.map((id) => `${id}-web`), 'web-ab', 'abweb', 'ab-abc-x'),
  fc.stringMatching(/^[a-z][a-z0-9]{0,4}(-[a-z0-9]{1,3}){0,2}$/),
);
const ns = name;
const uid = fc.constantFrom('u1', 'u2');
const tenantGroup = fc.constantFrom(...TENANT_GROUPS);

const ownerReference = fc.oneof(
  fc.record({ apiVersion: fc.constant('apps/v1'), kind: fc.constant('ReplicaSet'), name, uid }),
  fc.record({ apiVersion: fc.constant('v1'), kind: fc.constant('Namespace'), name, uid }),
  fc.record({ apiVersion: fc.constant(`${RBAC}/v1`), kind: fc.constant('ClusterRole'), name, uid }),
  fc.record({ apiVersion: tenantGroup.map((g) => `${g}/v1`), kind: fc.constantFrom('Gadget', 'Widget'), name, uid }),
  fc.record({ apiVersion: fc.constant('v1'), kind: fc.constant('Node'), name, uid }),
  fc.record({ apiVersion: fc.constant('unknown.io/v1'), kind: fc.constant('Thing'), name, uid }),
);
const metadata = fc.record(
  { namespace: ns, name, ownerReferences: fc.array(ownerReference, { maxLength: 3 }), labels: fc.dictionary(fc.constantFrom('app', METADATA_NAME), name, { maxKeys: 2 }) },
  { requiredKeys: ['namespace', 'name'] },
);
/** References objects make: a namespaced one, a namespace, an owned cluster-scoped one, the tenant's CRD kind. */
const objectReference = fc.oneof(
  fc.record({ apiVersion: fc.constant('v1'), kind: fc.constant('Pod'), namespace: ns, name }),
  fc.record({ apiVersion: fc.constant('v1'), kind: fc.constant('Namespace'), name }),
  fc.record({ apiVersion: fc.constant(`${RBAC}/v1`), kind: fc.constant('ClusterRole'), name }),
  fc.record({ apiVersion: tenantGroup.map((g) => `${g}/v1`), kind: fc.constant('Widget'), namespace: ns, name }),
  fc.record({ kind: fc.constant('Pod'), namespace: ns, name }),
);
const subject = fc.oneof(
  fc.record({ kind: fc.constant('ServiceAccount'), name, namespace: ns }),
  fc.record({ kind: fc.constant('User'), apiGroup: fc.constant(RBAC), name: fc.oneof(fc.constantFrom('alice', 'system:serviceaccount:'), fc.tuple(ns, name).map(([n, s]) => `system:serviceaccount:${n}:${s}`)) }),
  fc.record({ kind: fc.constant('Group'), apiGroup: fc.constant(RBAC), name: fc.oneof(fc.constantFrom('devs', 'system:serviceaccounts', 'system:authenticated'), ns.map((n) => `system:serviceaccounts:${n}`)) }),
);
const rule = fc.record(
  {
    apiGroups: fc.subarray(['', '*', 'apps', RBAC, ...TENANT_GROUPS]),
    resources: fc.subarray(['pods', 'namespaces', 'namespaces/status', 'clusterroles', 'clusterrolebindings', 'persistentvolumes', 'widgets', '*']),
    resourceNames: fc.array(fc.oneof(name, fc.constant('system:reader')), { maxLength: 3 }),
    verbs: fc.constant(['get']),
  },
  { requiredKeys: ['apiGroups', 'resources', 'verbs'] },
);
const withNamespace = (meta: Json, namespaced: boolean) => {
  if (namespaced) return meta;
  const { namespace: _, ...rest } = meta;
  return rest;
};
const selector = fc.record(
  {
    matchLabels: fc.record({ [METADATA_NAME]: ns, team: name }, { requiredKeys: [] }),
    matchExpressions: fc.array(fc.record({ key: fc.constantFrom(METADATA_NAME, 'team'), operator: fc.constantFrom('In', 'NotIn'), values: fc.array(ns, { maxLength: 3 }) }), { maxLength: 2 }),
  },
  { requiredKeys: [] },
);

/** The tenant's objects, of every kind with references. */
const tenantObject: fc.Arbitrary<Json> = fc.oneof(
  fc.record({ apiVersion: fc.constant('v1'), kind: fc.constant('ConfigMap'), metadata, data: fc.constant({ ns: 'web' }) }),
  fc.record({ apiVersion: tenantGroup.map((g) => `${g}/v1`), kind: fc.constant('Widget'), metadata }),
  fc.record({ apiVersion: tenantGroup.map((g) => `${g}/v1`), kind: fc.constant('Gadget'), metadata: metadata.map((m) => withNamespace(m, false)) }),
  fc
    .record({ name, generate: fc.boolean(), ancestors: fc.array(ns, { maxLength: 3 }), parent: fc.option(ns, { nil: undefined }), app: name })
    .map(({ name, generate, ancestors, parent, app }) => {
      const labels: Json = { [METADATA_NAME]: name, app };
      ancestors.forEach((a, i) => (labels[a + TREE] = String(i + 1)));
      const meta: Json = generate ? { generateName: `${name}-` } : { name, labels };
      if (parent !== undefined) meta.annotations = { [SUBNAMESPACE_OF]: parent, note: parent };
      return { apiVersion: 'v1', kind: 'Namespace', metadata: meta };
    }),
  fc.record({ apiVersion: fc.constant(`${RBAC}/v1`), kind: fc.constantFrom('Role', 'ClusterRole'), metadata, rules: fc.array(rule, { maxLength: 3 }) }).map((r) => ({ ...r, metadata: withNamespace(r.metadata, r.kind === 'Role') })),
  fc
    .record({ apiVersion: fc.constant(`${RBAC}/v1`), kind: fc.constantFrom('RoleBinding', 'ClusterRoleBinding'), metadata, subjects: fc.array(subject, { maxLength: 4 }), roleRef: fc.record({ apiGroup: fc.constant(RBAC), kind: fc.constantFrom('Role', 'ClusterRole'), name }) })
    .map((b) => ({ ...b, metadata: withNamespace(b.metadata, b.kind === 'RoleBinding') })),
  fc.record({ apiVersion: fc.constant('v1'), kind: fc.constant('Event'), metadata, involvedObject: objectReference, related: objectReference }, { requiredKeys: ['apiVersion', 'kind', 'metadata', 'involvedObject'] }),
  fc.record({ apiVersion: fc.constant('events.k8s.io/v1'), kind: fc.constant('Event'), metadata, regarding: objectReference, related: objectReference }, { requiredKeys: ['apiVersion', 'kind', 'metadata', 'regarding'] }),
  fc.record({
    apiVersion: fc.constant('v1'),
    kind: fc.constant('Endpoints'),
    metadata,
    subsets: fc.array(fc.record({ addresses: fc.array(fc.record({ ip: fc.constant('10.0.0.1'), targetRef: objectReference }), { maxLength: 2 }), notReadyAddresses: fc.array(fc.record({ ip: fc.constant('10.0.0.2'), targetRef: objectReference }), { maxLength: 2 }) }), { maxLength: 2 }),
  }),
  fc.record({ apiVersion: fc.constant('discovery.k8s.io/v1'), kind: fc.constant('EndpointSlice'), metadata, endpoints: fc.array(fc.record({ addresses: fc.constant(['10.0.0.1']), targetRef: objectReference }, { requiredKeys: ['addresses'] }), { maxLength: 3 }) }),
  fc.record({ apiVersion: fc.constant('v1'), kind: fc.constant('PersistentVolumeClaim'), metadata, spec: fc.record({ volumeName: name }) }),
  fc.record({ apiVersion: fc.constant('v1'), kind: fc.constant('PersistentVolume'), metadata: metadata.map((m) => withNamespace(m, false)), spec: fc.record({ claimRef: fc.record({ apiVersion: fc.constant('v1'), kind: fc.constant('PersistentVolumeClaim'), namespace: ns, name }) }) }),
  fc.record({ plural: fc.constantFrom('widgets', 'gadgets'), group: fc.constantFrom(...TENANT_GROUPS, 'x.example.com') }).map(({ plural, group }) => ({
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${plural}.${group}` },
    spec: { group, names: { plural, kind: 'K' } },
    status: { acceptedNames: { plural, kind: 'K' } },
  })),
  fc.record({
    apiVersion: fc.constant('networking.k8s.io/v1'),
    kind: fc.constant('NetworkPolicy'),
    metadata,
    spec: fc.record({
      ingress: fc.array(fc.record({ from: fc.array(fc.record({ namespaceSelector: selector }), { maxLength: 2 }) }), { maxLength: 2 }),
      egress: fc.array(fc.record({ to: fc.array(fc.record({ namespaceSelector: selector }), { maxLength: 2 }) }), { maxLength: 2 }),
    }),
  }),
  fc.record({ apiVersion: fc.constant('hnc.x-k8s.io/v1alpha2'), kind: fc.constant('HierarchyConfiguration'), metadata, spec: fc.record({ parent: ns }), status: fc.record({ children: fc.array(ns, { maxLength: 3 }) }) }),
);

/** An answer's shapes: an object, a List of typed items, a typed List whose items omit their type, a watch event. */
const tenantAnswer: fc.Arbitrary<Json> = fc.oneof(
  { weight: 4, arbitrary: tenantObject },
  { weight: 1, arbitrary: fc.array(tenantObject, { maxLength: 4 }).map((items) => ({ apiVersion: 'v1', kind: 'List', metadata: { resourceVersion: '1' }, items })) },
  { weight: 1, arbitrary: fc.array(metadata, { maxLength: 4 }).map((items) => ({ apiVersion: 'v1', kind: 'ConfigMapList', metadata: {}, items: items.map((m) => ({ metadata: m })) })) },
  { weight: 1, arbitrary: tenantObject.map((object) => ({ type: 'MODIFIED', object })) },
);

interface Setting {
  tenants: Tenants;
  tenant: Tenant;
  other: Tenant | undefined;
  n: ObjectNaming;
  naming: (t: Tenant) => ObjectNaming;
  volumes: ClusterScopedPolicy;
}

/** Tenants with ids that share prefixes, the one under test, another, and how PersistentVolumes are seen. */
const setting: fc.Arbitrary<Setting> = fc
  .record({ ids: fc.shuffledSubarray(IDS, { minLength: 1 }).filter((ids) => clashingTenantIds(ids) === undefined), volumes: fc.constantFrom<ClusterScopedPolicy>('owned', 'shared', 'hidden') })
  .map(({ ids, volumes }) => {
    const w = world(ids, { persistentvolumes: volumes });
    const tenant = w.tenants.all[0]!;
    // Counterexamples print as the ids and policy, not the whole naming.
    return { tenants: w.tenants, tenant, other: w.tenants.all[1], n: w.naming(tenant), naming: w.naming, volumes, [fc.toStringMethod]: () => `tenants ${ids.join(', ')}; persistentvolumes ${volumes}` };
  });

/** Whether the tenant sees objects of this kind at all (PersistentVolumes may be hidden). */
function seenKind(obj: Json, s: Setting): boolean {
  return !(obj.kind === 'PersistentVolume' && s.volumes === 'hidden');
}

/** What the tenant should read back of its own answer: all of it, but Lists without hidden kinds (and nothing for a hidden object). */
function expectedView(answer: Json, s: Setting): Json | undefined {
  if (Array.isArray(answer.items)) return { ...answer, items: (answer.items as Json[]).filter((i) => seenKind(i, s)) };
  if (answer.type !== undefined) return seenKind(answer.object as Json, s) ? answer : undefined;
  return seenKind(answer, s) ? answer : undefined;
}

type FieldKind = 'name' | 'user' | 'userGroup' | 'crd' | 'group';
interface Field {
  kind: FieldKind;
  value: string;
  where: string;
}

/**
 * The oracle: every field the brief lists as a reference, in the generated objects' shapes, read
 * the same way on either side. `name`: a namespace, or an owned cluster-scoped object's name (both
 * carry the tenant's prefix on the member).
 */
function fields(v: unknown, s: Setting, itemKind?: string): Field[] {
  const out: Field[] = [];
  const add = (kind: FieldKind, value: unknown, where: string) => {
    if (typeof value === 'string' && value !== '') out.push({ kind, value, where });
  };
  const group = (apiVersion: unknown, where: string) => {
    if (typeof apiVersion === 'string' && apiVersion.includes('/')) add('group', apiVersion.split('/')[0], where);
  };
  const ownedKinds = new Set(['Namespace', 'ClusterRole', 'ClusterRoleBinding', ...(s.volumes === 'owned' ? ['PersistentVolume'] : [])]);
  const ref = (r: unknown, where: string) => {
    if (!r || typeof r !== 'object') return;
    const o = r as Json;
    group(o.apiVersion, `${where}.apiVersion`);
    add('name', o.namespace, `${where}.namespace`);
    // A shared ClusterRole (`edit`, `system:…`) is every tenant's to refer to, by its own name.
    if (ownedKinds.has(o.kind as string) && !(o.kind === 'ClusterRole' && sharedName(RBAC, 'clusterroles', o.name as string))) add('name', o.name, `${where}.name`);
  };
  const list = (x: unknown) => (Array.isArray(x) ? (x as Json[]) : []);
  if (!v || typeof v !== 'object') return out;
  const o = v as Json;
  if (Array.isArray(o.items)) {
    group(o.apiVersion, 'list.apiVersion');
    const kind = o.kind === 'List' ? undefined : (o.kind as string).slice(0, -4);
    for (const item of o.items) out.push(...fields(item, s, kind));
    return out;
  }
  if (o.type !== undefined && o.object !== undefined) return fields(o.object, s);
  const kind = (o.kind as string | undefined) ?? itemKind;
  group(o.apiVersion, 'apiVersion');
  const meta = (o.metadata ?? {}) as Json;
  add('name', meta.namespace, 'metadata.namespace');
  if (kind === 'CustomResourceDefinition') add('crd', meta.name, 'metadata.name');
  else if (ownedKinds.has(kind!)) {
    add('name', meta.name, 'metadata.name');
    add('name', meta.generateName, 'metadata.generateName');
  }
  list(meta.ownerReferences).forEach((r, i) => ref({ ...r, namespace: undefined }, `ownerReferences.${i}`));
  const spec = (o.spec ?? {}) as Json;
  switch (kind) {
    case 'Namespace': {
      const labels = (meta.labels ?? {}) as Json;
      add('name', labels[METADATA_NAME], 'labels.name');
      for (const key of Object.keys(labels)) if (key.endsWith(TREE)) add('name', key.slice(0, -TREE.length), 'labels.tree');
      add('name', ((meta.annotations ?? {}) as Json)[SUBNAMESPACE_OF], 'annotations.subnamespace-of');
      break;
    }
    case 'RoleBinding':
    case 'ClusterRoleBinding':
      list(o.subjects).forEach((sub, i) => {
        add('name', sub.namespace, `subjects.${i}.namespace`);
        if (sub.kind === 'User' && /^system:serviceaccount:[^:]+:/.test(sub.name as string)) add('user', sub.name, `subjects.${i}.name`);
        if (sub.kind === 'Group' && (sub.name as string).startsWith('system:serviceaccounts:')) add('userGroup', sub.name, `subjects.${i}.name`);
      });
      ref(o.roleRef, 'roleRef');
      break;
    case 'Role':
    case 'ClusterRole':
      list(o.rules).forEach((r, i) => {
        const groups = r.apiGroups as string[];
        const resources = (r.resources as string[]).map((x) => x.split('/')[0]);
        for (const g of groups) if (g !== '*') add('group', g, `rules.${i}.apiGroups`);
        const names = (g: string, res: string) => (groups.includes('*') || groups.includes(g)) && (resources.includes('*') || resources.includes(res));
        if (names('', 'namespaces') || names(RBAC, 'clusterroles') || names(RBAC, 'clusterrolebindings') || (s.volumes === 'owned' && names('', 'persistentvolumes'))) {
          // Names of ClusterRoles (the rule's first owned resource) that are shared keep their names.
          const ofClusterRoles = firstOwned(s, groups, resources.filter((x): x is string => x !== undefined)) === `clusterroles.${RBAC}`;
          list(r.resourceNames).forEach((n, j) => {
            if (!(ofClusterRoles && sharedName(RBAC, 'clusterroles', n as unknown as string))) add('name', n, `rules.${i}.resourceNames.${j}`);
          });
        }
      });
      break;
    case 'Event':
      ref(o.involvedObject, 'involvedObject');
      ref(o.regarding, 'regarding');
      ref(o.related, 'related');
      break;
    case 'Endpoints':
      list(o.subsets).forEach((sub, i) => [...list(sub.addresses), ...list(sub.notReadyAddresses)].forEach((a, j) => ref(a.targetRef, `subsets.${i}.${j}`)));
      break;
    case 'EndpointSlice':
      list(o.endpoints).forEach((e, i) => ref(e.targetRef, `endpoints.${i}`));
      break;
    case 'PersistentVolumeClaim':
      if (s.volumes === 'owned') add('name', spec.volumeName, 'spec.volumeName');
      break;
    case 'PersistentVolume':
      ref(spec.claimRef, 'claimRef');
      break;
    case 'CustomResourceDefinition':
      add('group', spec.group, 'spec.group');
      break;
    case 'NetworkPolicy':
      for (const peer of [...list(spec.ingress).flatMap((r) => list(r.from)), ...list(spec.egress).flatMap((r) => list(r.to))]) {
        const sel = (peer.namespaceSelector ?? {}) as Json;
        add('name', ((sel.matchLabels ?? {}) as Json)[METADATA_NAME], 'matchLabels');
        for (const e of list(sel.matchExpressions)) if (e.key === METADATA_NAME) list(e.values).forEach((x) => add('name', x, 'matchExpressions'));
      }
      break;
    case 'HierarchyConfiguration':
      add('name', spec.parent, 'spec.parent');
      list(((o.status ?? {}) as Json).children).forEach((c) => add('name', c, 'status.children'));
      break;
  }
  return out;
}

/** The owned resource a rule's resourceNames name: the first the rule grants, resources before groups. */
function firstOwned(s: Setting, groups: readonly string[], resources: readonly string[]): string | undefined {
  const owned = s.tenant.ownedResources();
  for (const res of resources) {
    for (const g of groups) {
      const match = owned.find((o) => {
        const dot = o.indexOf('.');
        const [resource, group] = dot < 0 ? [o, ''] : [o.slice(0, dot), o.slice(dot + 1)];
        return (g === '*' || g === group) && (res === '*' || res === resource);
      });
      if (match) return match;
    }
  }
  return undefined;
}

/** Which tenants own a member name (the namespace rule: id plus separator). */
const owners = (s: Setting, memberName: string) => s.tenants.all.filter((t) => t.ownsNamespace(memberName)).map((t) => t.id);
const SA_USER = /^(system:serviceaccounts?:)([^:]+)(.*)$/;

/** Whose a member-side field is: the tenant ids it belongs to ([] for nobody's). */
function fieldOwners(s: Setting, f: Field): string[] {
  switch (f.kind) {
    case 'name':
      return owners(s, f.value);
    case 'user':
    case 'userGroup':
      return owners(s, SA_USER.exec(f.value)![2]!);
    case 'crd':
    case 'group': {
      const group = f.kind === 'crd' ? f.value.slice(f.value.indexOf('.') + 1) : f.value;
      return s.tenants.all.filter((t) => group.startsWith(`${t.id}.`)).map((t) => t.id);
    }
  }
}

/** The tenant's form of a member field, with its prefix removed exactly once. */
function dePrefixedOnce(s: Setting, f: Field): string {
  const t = s.tenant;
  switch (f.kind) {
    case 'name':
      return f.value.slice(t.prefix.length);
    case 'user':
    case 'userGroup': {
      const [, marker, nsName, rest] = SA_USER.exec(f.value)!;
      return `${marker}${nsName!.slice(t.prefix.length)}${rest}`;
    }
    case 'crd': {
      const dot = f.value.indexOf('.');
      return f.value.slice(0, dot + 1) + f.value.slice(dot + 1 + t.id.length + 1);
    }
    case 'group':
      return f.value.startsWith(`${t.id}.`) ? f.value.slice(t.id.length + 1) : f.value;
  }
}

const RUNS = { numRuns: 1000 };

describe('object names, by property', () => {
  it('gives back what the tenant wrote: objectToTenant(objectToMember(x)) is x (hidden kinds: undefined)', () => {
    fc.assert(
      fc.property(setting, tenantAnswer, (s, x) => {
        const member = objectToMember(structuredClone(x), s.n);
        expect(objectToTenant(member, s.n)).toEqual(expectedView(x, s));
      }),
      RUNS,
    );
  }, 30_000);

  it('writes only the tenant’s names: every reference the member gets is the tenant’s, no other tenant’s', () => {
    fc.assert(
      fc.property(setting, tenantAnswer, (s, x) => {
        const member = objectToMember(structuredClone(x), s.n);
        for (const f of fields(member, s)) {
          const whose = fieldOwners(s, f);
          // A group is nobody's (apps) or the tenant's own; every name is the tenant's alone.
          if (f.kind === 'group') expect(whose.filter((id) => id !== s.tenant.id), `${f.where} ${f.value}`).toEqual([]);
          else expect(whose, `${f.where} ${f.value}`).toEqual([s.tenant.id]);
        }
      }),
      RUNS,
    );
  }, 30_000);

  it('shows nothing of another tenant: its objects are undefined, a List keeps exactly the tenant’s items', () => {
    fc.assert(
      fc.property(
        setting.filter((s) => s.other !== undefined),
        fc.array(fc.tuple(fc.boolean(), tenantObject), { maxLength: 5 }),
        (s, entries) => {
          // Shared volumes are nobody's: both tenants see them.
          const entriesNotShared = entries.filter(([, x]) => !(x.kind === 'PersistentVolume' && s.volumes === 'shared'));
          const members = entriesNotShared.map(([own, x]) => objectToMember(structuredClone(x), own ? s.n : s.naming(s.other!)) as Json);
          entriesNotShared.forEach(([own, x], i) => {
            if (!own) expect(objectToTenant(members[i], s.n), JSON.stringify(members[i])).toBeUndefined();
            else expect(objectToTenant(members[i], s.n)).toEqual(seenKind(x, s) ? x : undefined);
          });
          const view = objectToTenant({ apiVersion: 'v1', kind: 'List', items: members }, s.n) as Json;
          expect(view.items).toEqual(entriesNotShared.filter(([own, x]) => own && seenKind(x, s)).map(([, x]) => x));
        },
      ),
      RUNS,
    );
  }, 30_000);

  it('de-prefixes every reference exactly once (a name that itself starts with the prefix keeps it)', () => {
    fc.assert(
      fc.property(setting, tenantAnswer, (s, x) => {
        // Of what the tenant sees: a List's hidden items have no counterpart in its view.
        const seen = expectedView(x, s);
        if (seen === undefined) return;
        const member = objectToMember(structuredClone(seen), s.n);
        const view = objectToTenant(member, s.n);
        const memberFields = fields(member, s);
        const viewFields = fields(view, s);
        expect(viewFields.map((f) => f.where)).toEqual(memberFields.map((f) => f.where));
        memberFields.forEach((f, i) => expect(viewFields[i]!.value, `${f.where} ${f.value}`).toBe(dePrefixedOnce(s, f)));
      }),
      RUNS,
    );
  }, 30_000);

  it('renames merge patches as the object they are part of, and JSON patch ops at reference paths as the object’s own', () => {
    fc.assert(
      fc.property(setting, tenantObject, fc.nat(), (s, x, pick) => {
        const member = objectToMember(structuredClone(x), s.n) as Json;
        const group = typeof member.apiVersion === 'string' && member.apiVersion.includes('/') ? member.apiVersion.split('/')[0]! : '';
        const target: PatchTarget = { group, kind: x.kind as string, namespaced: s.n.kinds(group, x.kind as string)?.namespaced ?? true };
        const { apiVersion: _a, kind: _k, ...partial } = structuredClone(x);
        const { apiVersion: _ma, kind: _mk, ...memberPartial } = member;
        expect(patchToMember(partial, MERGE, target, s.n)).toEqual(memberPartial);
        // A JSON patch op at any pointer whose value carries its own context (an object, a list of
        // objects, metadata's own fields) renames as the whole object did.
        const pointers = contextFreePointers(x);
        const pointer = pointers[pick % pointers.length]!;
        const [op] = patchToMember([{ op: 'add', path: pointer, value: structuredClone(valueAt(x, pointer)) }], JSON_PATCH, target, s.n) as Json[];
        expect(op!.value, `${pointer} → ${String(op!.path)}`).toEqual(valueAt(member, op!.path as string));
      }),
      RUNS,
    );
  }, 30_000);
});

function valueAt(obj: unknown, pointer: string): unknown {
  let v = obj;
  for (const token of pointer.split('/').slice(1)) v = (v as Json)[token.replace(/~1/g, '/').replace(/~0/g, '~')];
  return v;
}

/** Pointers into an object whose value renames without its siblings: objects, lists of objects, metadata's fields. */
function contextFreePointers(obj: Json): string[] {
  const out: string[] = [''];
  const walk = (v: unknown, pointer: string) => {
    if (Array.isArray(v)) {
      if (v.every((e) => e !== null && typeof e === 'object')) out.push(pointer);
      v.forEach((e, i) => walk(e, `${pointer}/${i}`));
    } else if (v !== null && typeof v === 'object') {
      out.push(pointer);
      for (const [k, e] of Object.entries(v)) walk(e, `${pointer}/${k.replace(/~/g, '~0').replace(/\//g, '~1')}`);
    } else if (/^\/(apiVersion|metadata\/(namespace|name|generateName|labels\/[^/]+|annotations\/[^/]+))$/.test(pointer)) out.push(pointer);
  };
  for (const [k, e] of Object.entries(obj)) walk(e, `/${k}`);
  return out.filter((p) => p !== '');
}
