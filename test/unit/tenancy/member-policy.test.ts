import { describe, expect, it } from 'vitest';
import { NAMESPACE_ADMINS_BINDING, generateMemberPolicy, makeAdmissionPolicy, makeClusterRole } from '../../../src/tenancy/member-policy.js';
import { Tenant, type TenantSpec } from '../../../src/tenancy/tenant.js';

const ACME: TenantSpec = { id: 'acme', users: ['admin@acme'], groups: ['acme-admins', 'acme-devs'], clusterScoped: {}, admins: { users: [], groups: ['acme-admins'] } };

interface Rule { apiGroups: string[]; resources: string[]; verbs: string[]; resourceNames?: string[] }

describe('member policy', () => {
  it('gives the admins the owned kinds, reads of the shared ones, and impersonation of the tenant\'s own names only', () => {
    const rules = makeClusterRole(new Tenant(ACME)).rules as Rule[];
    const rule = (group: string, resource: string) => rules.find((r) => r.apiGroups[0] === group && r.resources[0] === resource);
    expect(rule('', 'namespaces')?.verbs).toEqual(['get', 'list', 'watch', 'create', 'update', 'patch', 'delete']);
    expect(rule('rbac.authorization.k8s.io', 'clusterroles')?.verbs).toContain('escalate');
    expect(rule('rbac.authorization.k8s.io', 'clusterrolebindings')?.verbs).not.toContain('escalate');
    expect(rule('apiextensions.k8s.io', 'customresourcedefinitions')?.verbs).toContain('create');
    expect(rule('', 'nodes')?.verbs).toEqual(['get', 'list', 'watch']);
    expect(rule('storage.k8s.io', 'storageclasses')?.verbs).toEqual(['get', 'list', 'watch']);
    expect(rule('', 'persistentvolumes')).toBeUndefined();
    for (const r of rules) {
      expect(r.verbs).not.toContain('deletecollection');
      expect(r.verbs).not.toContain('bind');
      expect(r.verbs).not.toContain('*');
      expect(r.resources).not.toContain('*');
    }
    expect(rule('', 'users')).toEqual({ apiGroups: [''], resources: ['users'], verbs: ['impersonate'], resourceNames: ['admin@acme'] });
    expect(rule('', 'groups')?.resourceNames).toEqual(['acme-admins', 'acme-devs']);
  });

  it('follows the tenant\'s policy table, and leaves out impersonation rather than grant it on every name', () => {
    const rules = makeClusterRole(new Tenant({ ...ACME, users: [], clusterScoped: { nodes: 'hidden', persistentvolumes: 'owned' } })).rules as Rule[];
    expect(rules.some((r) => r.resources.includes('nodes'))).toBe(false);
    expect(rules.find((r) => r.resources.includes('persistentvolumes'))?.verbs).toContain('create');
    expect(rules.some((r) => r.resources.includes('users'))).toBe(false);
    for (const r of rules) if (r.resourceNames) expect(r.resourceNames.length).toBeGreaterThan(0);
  });

  it('binds the admins in the tenant\'s own namespaces only, and binds nobody without admins', () => {
    const all = generateMemberPolicy(ACME, { namespaces: ['acme-web', 'globex-web', 'acme-', 'acmex-web'] });
    const grants = all.filter((m) => m.kind === 'RoleBinding');
    expect(grants.map((m) => m.metadata)).toEqual([expect.objectContaining({ name: NAMESPACE_ADMINS_BINDING, namespace: 'acme-web' })]);
    expect(grants[0]!.roleRef).toEqual({ apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' });
    expect(grants[0]!.subjects).toEqual([{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: 'acme-admins' }]);
    expect(all.map((m) => m.kind)).toEqual(['ClusterRole', 'ClusterRoleBinding', 'RoleBinding', 'ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding']);
    const { admins: _, ...noAdmins } = ACME;
    expect(generateMemberPolicy(noAdmins, { namespaces: ['acme-web'] }).map((m) => m.kind)).toEqual(['ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding']);
  });

  it('matches the tenant\'s identities, its service accounts included, and fails closed', () => {
    const vap = makeAdmissionPolicy(ACME) as unknown as { spec: { failurePolicy: string; matchConditions: { expression: string }[]; validations: { expression: string }[] } };
    expect(vap.spec.failurePolicy).toBe('Fail');
    const match = vap.spec.matchConditions[0]!.expression;
    expect(match).toContain('"admin@acme"');
    expect(match).toContain('"acme-devs"');
    expect(match).toContain('"system:serviceaccount:acme-"');
    expect(match).toContain('"system:serviceaccounts:acme-"');
    // The id with its separator, never bare: `acmex-web` is not acme's.
    for (const v of vap.spec.validations) expect(v.expression).not.toMatch(/"acme"/);
  });

  it('quotes names as CEL string literals', () => {
    const vap = makeAdmissionPolicy({ ...ACME, users: ['o"brien\\x'] }) as unknown as { spec: { matchConditions: { expression: string }[] } };
    expect(vap.spec.matchConditions[0]!.expression).toContain('"o\\"brien\\\\x"');
  });
});
