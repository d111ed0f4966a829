import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { MemberInfo } from '../fleet/fleet.js';
import { memberRequest, type MemberResponse } from '../fleet/http.js';
import { installMemberPolicy, removeMemberPolicy, applyManifests } from '../support/member-policy.js';
import { until } from '../support/poll.js';
import { generateMemberPolicy, makeNamespaceGrant, type Manifest } from '../../src/tenancy/member-policy.js';
import type { TenantSpec } from '../../src/tenancy/tenant.js';

/**
 * The member-side tenant boundary (src/tenancy/member-policy.ts) on a real member, without
 * flotilla: acme's admin sends hostile requests straight to east with its own token, and east
 * refuses each, by its RBAC or by the tenant's ValidatingAdmissionPolicy, as the case says. The
 * admin can still do what a tenant does in its own names.
 */
const fleet = inject('fleet');
const east = fleet.members[0] as MemberInfo;
const ACME: TenantSpec = { id: 'acme', users: ['admin@acme', 'dev@acme'], groups: ['acme-admins', 'acme-devs'], clusterScoped: {}, admins: { users: [], groups: ['acme-admins'] } };
const GLOBEX: TenantSpec = { id: 'globex', users: ['admin@globex'], groups: ['globex-admins'], clusterScoped: {}, admins: { users: [], groups: ['globex-admins'] } };
const OTHER_NS = 'globex-mp';
const OWN_NS = 'acme-mp';
const RBAC = '/apis/rbac.authorization.k8s.io/v1';
const CRDS = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions';
const token = (name: string) => fleet.users.find((u) => u.name === name)!.token;
const asAcme = (method: string, path: string, body?: unknown, opts: { headers?: Record<string, string>; contentType?: string } = {}) =>
  memberRequest(east, method, path, body, { token: token('admin@acme'), ...opts });
// Everything installed, by name: removed in afterAll even when the install stopped half way.
const INSTALLED: Manifest[] = [ACME, GLOBEX].flatMap((t) => generateMemberPolicy(t, { namespaces: [OTHER_NS, OWN_NS] }));

const clusterRole = (name: string, extra: Record<string, unknown> = {}) => ({
  apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name, ...extra }, rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['get', 'list'] }],
});
const crd = (group: string, extra: Record<string, unknown> = {}) => ({
  apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition',
  metadata: { name: `widgets.${group}` },
  spec: {
    group, scope: 'Namespaced', names: { plural: 'widgets', singular: 'widget', kind: 'Widget' },
    versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } }],
    ...extra,
  },
});
const binding = (kind: 'RoleBinding' | 'ClusterRoleBinding', name: string, roleRef: string, subjects: Record<string, string>[]) => ({
  apiVersion: 'rbac.authorization.k8s.io/v1', kind, metadata: { name },
  roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: roleRef }, subjects,
});
const user = (name: string) => ({ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name });

/** Who refused: the member's RBAC (authorization, escalation, impersonation) or the tenant's admission policy. */
function refusedBy(res: MemberResponse): 'rbac' | 'policy' | undefined {
  if (res.status !== 403) return undefined;
  if (res.body.includes("ValidatingAdmissionPolicy 'flotilla-tenant-acme'")) return 'policy';
  if (/cannot |attempting to grant RBAC permissions not currently held|cannot impersonate/.test(res.body)) return 'rbac';
  return undefined;
}

/** The policy's own words in a refusal: what the tenant may do, never the other tenant's names. */
function policyWords(res: MemberResponse): string {
  const message = (JSON.parse(res.body) as { message: string }).message;
  return message.slice(message.indexOf('denied request:'));
}

beforeAll(async () => {
  // globex's namespace and a ConfigMap in it, made by the platform (the member's admin).
  await memberRequest(east, 'POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: OTHER_NS } });
  await memberRequest(east, 'POST', `/api/v1/namespaces/${OTHER_NS}/configmaps`, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'secret-plans' } });
  await installMemberPolicy(east, [ACME, GLOBEX], [OTHER_NS]);
}, 120_000);

afterAll(async () => {
  const gone = [
    `/api/v1/namespaces/${OWN_NS}`, `/api/v1/namespaces/${OTHER_NS}`, `/api/v1/namespaces/globex-evil`, `/api/v1/persistentvolumes/acme-pv`,
    `${RBAC}/clusterroles/acme-reader`, `${RBAC}/clusterroles/acme-agg`, `${RBAC}/clusterroles/acme-empty`, `${RBAC}/clusterrolebindings/acme-x`,
    `${RBAC}/clusterrolebindings/acme-admin`, `${RBAC}/clusterrolebindings/acme-wide`, `${CRDS}/widgets.acme.example.com`, `${CRDS}/widgets.example.com`,
    `${CRDS}/widgets.globex.example.com`, `${CRDS}/widgets.acme.hooked.com`,
  ];
  for (const path of gone) await memberRequest(east, 'DELETE', path);
  // Anything a refused generateName slipped through would be named system:pt-…: none may stay.
  const roles = JSON.parse((await memberRequest(east, 'GET', `${RBAC}/clusterroles`)).body) as { items: { metadata: { name: string } }[] };
  for (const r of roles.items.filter((r) => r.metadata.name.startsWith('system:pt-'))) await memberRequest(east, 'DELETE', `${RBAC}/clusterroles/${r.metadata.name}`);
  await removeMemberPolicy(east, [ACME, GLOBEX], INSTALLED);
  // No rights left: acme's admin is nobody on east again.
  const left = await asAcme('GET', '/api/v1/namespaces');
  expect(left.status).toBe(403);
}, 120_000);

describe('the member refuses a tenant admin who bypasses flotilla', () => {
  const cases: [string, 'rbac' | 'policy', () => Promise<MemberResponse>][] = [
    ['a ConfigMap in another tenant\'s namespace', 'rbac', () => asAcme('POST', `/api/v1/namespaces/${OTHER_NS}/configmaps`, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' } })],
    ['deleting another tenant\'s ConfigMap', 'rbac', () => asAcme('DELETE', `/api/v1/namespaces/${OTHER_NS}/configmaps/secret-plans`)],
    ['another tenant\'s pod logs', 'rbac', () => asAcme('GET', `/api/v1/namespaces/${OTHER_NS}/pods/web/log`)],
    ['a PersistentVolume', 'rbac', () => asAcme('POST', '/api/v1/persistentvolumes', { apiVersion: 'v1', kind: 'PersistentVolume', metadata: { name: 'acme-pv' }, spec: { capacity: { storage: '1Gi' }, accessModes: ['ReadWriteOnce'], hostPath: { path: '/tmp/x' } } })],
    ['a collection delete of ClusterRoles by label', 'rbac', () => asAcme('DELETE', `${RBAC}/clusterroles?labelSelector=${encodeURIComponent('kubernetes.io/bootstrapping=rbac-defaults')}`)],
    ['impersonating nobody in system:masters', 'rbac', () => asAcme('GET', '/api/v1/namespaces', undefined, { headers: { 'Impersonate-User': 'nobody', 'Impersonate-Group': 'system:masters' } })],
    ['binding cluster-admin to user bob', 'rbac', () => asAcme('POST', `${RBAC}/clusterrolebindings`, binding('ClusterRoleBinding', 'acme-admin', 'cluster-admin', [user('bob')]))],
    ['a node\'s proxy', 'rbac', () => asAcme('GET', `/api/v1/nodes/${east.nodes[0]}/proxy/pods`)],
    ['a ClusterRoleBinding of its own name to user bob', 'policy', () => asAcme('POST', `${RBAC}/clusterrolebindings`, binding('ClusterRoleBinding', 'acme-x', 'flotilla:tenant:acme', [user('bob')]))],
    ['a ClusterRole aggregated into view', 'policy', () => asAcme('POST', `${RBAC}/clusterroles`, clusterRole('acme-agg', { labels: { 'rbac.authorization.k8s.io/aggregate-to-view': 'true' } }))],
    ['a ClusterRole with an aggregationRule', 'policy', () => asAcme('POST', `${RBAC}/clusterroles`, { ...clusterRole('acme-agg'), rules: [], aggregationRule: { clusterRoleSelectors: [{ matchLabels: { 'rbac.authorization.k8s.io/aggregate-to-admin': 'true' } }] } })],
    ['a ClusterRole generated as system:pt-…', 'policy', () => asAcme('POST', `${RBAC}/clusterroles`, { ...clusterRole(''), metadata: { generateName: 'system:pt-' } })],
    ['changing its own ClusterRole flotilla:tenant:acme', 'policy', () => asAcme('PATCH', `${RBAC}/clusterroles/${encodeURIComponent('flotilla:tenant:acme')}`, JSON.stringify([{ op: 'add', path: '/rules/-', value: { apiGroups: ['*'], resources: ['*'], verbs: ['*'] } }]), { contentType: 'application/json-patch+json' })],
    ['a CRD of another API group', 'policy', () => asAcme('POST', CRDS, crd('example.com'))],
    ['a CRD of another tenant\'s API group', 'policy', () => asAcme('POST', CRDS, crd('globex.example.com'))],
    ['a CRD whose conversion webhook is a URL', 'policy', () => asAcme('POST', CRDS, crd('acme.hooked.com', { conversion: { strategy: 'Webhook', webhook: { conversionReviewVersions: ['v1'], clientConfig: { url: 'https://169.254.169.254/' } } } }))],
    ['another tenant\'s namespace name', 'policy', () => asAcme('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'globex-evil' } })],
    ['deleting another tenant\'s namespace', 'policy', () => asAcme('DELETE', `/api/v1/namespaces/${OTHER_NS}`)],
  ];

  for (const [what, by, send] of cases) {
    it(`${what}: refused by ${by === 'rbac' ? 'RBAC' : 'the admission policy'}`, async () => {
      const res = await send();
      expect(refusedBy(res), `${res.status} ${res.body}`).toBe(by);
      if (by === 'policy') expect(policyWords(res)).not.toMatch(/globex|bob|system:pt|example\.com"/);
    });
  }

  it('the other tenant\'s objects are all still there', async () => {
    expect((await memberRequest(east, 'GET', `/api/v1/namespaces/${OTHER_NS}/configmaps/secret-plans`)).status).toBe(200);
    expect((await memberRequest(east, 'GET', `/api/v1/namespaces/${OTHER_NS}`)).status).toBe(200);
  });
});

describe('within its own names, the tenant admin is an admin', () => {
  it('creates a namespace; once bound there, anything in it; but not the binding itself', async () => {
    const ns = await asAcme('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: OWN_NS } });
    expect(ns.status, ns.body).toBe(201);
    // What flotilla does for a namespace made through it: the admins' RoleBinding, as the platform.
    await applyManifests(east, [makeNamespaceGrant(ACME, OWN_NS)]);
    // The member's authorizer reads bindings from its own informer: a binding is in force a moment after it is stored.
    await until('the admins’ RoleBinding in force on east', async () => {
      const review = await asAcme('POST', '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews', {
        apiVersion: 'authorization.k8s.io/v1', kind: 'SelfSubjectAccessReview', spec: { resourceAttributes: { namespace: OWN_NS, verb: 'create', resource: 'configmaps' } },
      });
      return review.status === 201 && (JSON.parse(review.body) as { status: { allowed: boolean } }).status.allowed;
    }, 10_000);
    const cm = await asAcme('POST', `/api/v1/namespaces/${OWN_NS}/configmaps`, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'plans' } });
    expect(cm.status, cm.body).toBe(201);
    const unbind = await asAcme('DELETE', `${RBAC}/namespaces/${OWN_NS}/rolebindings/flotilla-tenant-admins`);
    expect(refusedBy(unbind), unbind.body).toBe('policy');
  });

  it('writes a ClusterRole of its own and binds it in its namespace to its own users', async () => {
    const role = await asAcme('POST', `${RBAC}/clusterroles`, clusterRole('acme-reader'));
    expect(role.status, role.body).toBe(201);
    const rb = await asAcme('POST', `${RBAC}/namespaces/${OWN_NS}/rolebindings`, binding('RoleBinding', 'readers', 'acme-reader', [user('admin@acme'), { kind: 'ServiceAccount', name: 'default', namespace: OWN_NS }]));
    expect(rb.status, rb.body).toBe(201);
  });

  it('does not bind in its namespace another tenant\'s service account', async () => {
    const rb = await asAcme('POST', `${RBAC}/namespaces/${OWN_NS}/rolebindings`, binding('RoleBinding', 'spy', 'acme-reader', [{ kind: 'ServiceAccount', name: 'default', namespace: OTHER_NS }]));
    expect(refusedBy(rb), rb.body).toBe('policy');
  });

  it('does not bind its own (widenable) ClusterRoles cluster-wide', async () => {
    // Empty, so RBAC's escalation check lets the binding through; escalate would then widen it.
    const empty = await asAcme('POST', `${RBAC}/clusterroles`, { ...clusterRole('acme-empty'), rules: [] });
    expect(empty.status, empty.body).toBe(201);
    const crb = await asAcme('POST', `${RBAC}/clusterrolebindings`, binding('ClusterRoleBinding', 'acme-wide', 'acme-empty', [user('admin@acme')]));
    expect(refusedBy(crb), crb.body).toBe('policy');
  });

  it('defines a CRD in its own API group', async () => {
    const res = await asAcme('POST', CRDS, crd('acme.example.com'));
    expect(res.status, res.body).toBe(201);
  });

  it('can ask the member what it may do (kubectl auth can-i)', async () => {
    const res = await asAcme('POST', '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews', {
      apiVersion: 'authorization.k8s.io/v1', kind: 'SelfSubjectAccessReview', spec: { resourceAttributes: { namespace: OWN_NS, verb: 'create', resource: 'pods' } },
    });
    expect(res.status, res.body).toBe(201);
    expect((JSON.parse(res.body) as { status: { allowed: boolean } }).status.allowed).toBe(true);
  });
});
