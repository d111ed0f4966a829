import { describe, expect, it } from 'vitest';
import { editsInPlace, namespaceCut, rewrittenForTenant } from '../../../src/tenancy/object-bytes.js';
import { namesOtherObjects } from '../../../src/tenancy/kind-references.js';
import type { KindLookup, ObjectNaming } from '../../../src/tenancy/naming-direction.js';
import { Tenant } from '../../../src/tenancy/tenant.js';

/**
 * Which kinds a tenant's read may edit in place (object-bytes.ts: the prefix cut from
 * `metadata.namespace`) is decided by the kinds the whole rewrite renames beyond the metadata
 * (document-names.ts): an object of every kind, in the member's names, shown both ways.
 */
const RBAC = 'rbac.authorization.k8s.io';
const tenant = new Tenant({ id: 'acme', users: [], groups: [], clusterScoped: { persistentvolumes: 'owned' } });
const NAMESPACED = new Set(['/ConfigMap', '/Pod', 'apps/ReplicaSet', `${RBAC}/Role`, `${RBAC}/RoleBinding`, '/Event', 'events.k8s.io/Event', '/Endpoints', 'discovery.k8s.io/EndpointSlice', '/PersistentVolumeClaim', 'networking.k8s.io/NetworkPolicy', 'hnc.x-k8s.io/HierarchyConfiguration']);
const kinds: KindLookup = (group, kind) => {
  if (group === '' && kind === 'PersistentVolume') return { resource: 'persistentvolumes', namespaced: false };
  return NAMESPACED.has(`${group}/${kind}`) ? { resource: `${kind.toLowerCase()}s`, namespaced: true } : undefined;
};
const naming: ObjectNaming = { tenant, kinds, memberGroups: (g) => g === '' || g.endsWith('.k8s.io') || g === 'apps' };

const pod = { kind: 'Pod', namespace: 'acme-web', name: 'p' };
/** One object of each namespaced kind, naming the tenant's names wherever its kind can. */
const OBJECTS: Record<string, unknown>[] = [
  { kind: 'ConfigMap', apiVersion: 'v1', data: { namespace: 'acme-web' } },
  { kind: 'Pod', apiVersion: 'v1', spec: { nodeName: 'node-1' } },
  { kind: 'ReplicaSet', apiVersion: 'apps/v1', spec: { replicas: 1 } },
  { kind: 'Role', apiVersion: `${RBAC}/v1`, rules: [{ apiGroups: [''], resources: ['persistentvolumes'], resourceNames: ['acme-pv'], verbs: ['get'] }] },
  { kind: 'RoleBinding', apiVersion: `${RBAC}/v1`, subjects: [{ kind: 'ServiceAccount', name: 'default', namespace: 'acme-web' }], roleRef: { apiGroup: RBAC, kind: 'Role', name: 'r' } },
  { kind: 'Event', apiVersion: 'v1', involvedObject: pod, message: 'Successfully assigned acme-web/p to node-1' },
  { kind: 'Event', apiVersion: 'events.k8s.io/v1', regarding: pod, note: 'acme-web/p' },
  { kind: 'Endpoints', apiVersion: 'v1', subsets: [{ addresses: [{ ip: '10.0.0.1', targetRef: pod }] }] },
  { kind: 'EndpointSlice', apiVersion: 'discovery.k8s.io/v1', endpoints: [{ addresses: ['10.0.0.1'], targetRef: pod }] },
  { kind: 'PersistentVolumeClaim', apiVersion: 'v1', spec: { volumeName: 'acme-pv' } },
  { kind: 'NetworkPolicy', apiVersion: 'networking.k8s.io/v1', spec: { ingress: [{ from: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'acme-db' } } }] }] } },
  { kind: 'HierarchyConfiguration', apiVersion: 'hnc.x-k8s.io/v1alpha2', spec: { parent: 'acme-root' } },
];

describe('the kinds a tenant’s read edits in place', () => {
  it('are those the whole rewrite renames in the metadata alone', () => {
    for (const o of OBJECTS) {
      const apiVersion = String(o['apiVersion']);
      const group = apiVersion.includes('/') ? apiVersion.split('/')[0]! : '';
      const kind = String(o['kind']);
      const bytes = Buffer.from(JSON.stringify({ kind, apiVersion, metadata: { name: 'x', namespace: 'acme-web' }, ...o }));
      const cut = namespaceCut(bytes, tenant)!;
      const byCut = JSON.parse(Buffer.concat([cut.src.subarray(0, cut.from), cut.src.subarray(cut.to)]).toString('utf8')) as unknown;
      const byRewrite = JSON.parse(rewrittenForTenant(bytes, naming)!.bytes.toString('utf8')) as unknown;
      const inPlace = editsInPlace(tenant, { group, kind, namespaced: true });
      expect(inPlace, `${group}/${kind}`).toBe(!namesOtherObjects(group, kind));
      if (inPlace) expect(byCut, `${group}/${kind}`).toEqual(byRewrite);
      else expect(byCut, `${group}/${kind}`).not.toEqual(byRewrite);
    }
  });

  it('leave out cluster-scoped kinds and the tenant’s own API groups', () => {
    expect(editsInPlace(tenant, { group: '', kind: 'ConfigMap', namespaced: true })).toBe(true);
    expect(editsInPlace(tenant, { group: '', kind: 'Namespace', namespaced: false })).toBe(false);
    expect(editsInPlace(tenant, { group: 'acme.example.com', kind: 'Widget', namespaced: true })).toBe(false);
  });
});
