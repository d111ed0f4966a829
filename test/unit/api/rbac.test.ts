import { describe, expect, it } from 'vitest';
import { accessSet, authorize, effectiveGroups, indexPolicy, policyOf, ruleAllows } from '../../../src/api/rbac.js';

const pods = { verb: 'list', group: '', resource: 'pods' };

describe('RBAC rules', () => {
  it('match verbs, groups and resources with *, subresources exactly or as */sub, and names only when named', () => {
    expect(ruleAllows({ verbs: ['*'], apiGroups: ['*'], resources: ['*'] }, pods)).toBe(true);
    expect(ruleAllows({ verbs: ['get'], apiGroups: [''], resources: ['pods'] }, pods)).toBe(false);
    expect(ruleAllows({ verbs: ['list'], apiGroups: ['apps'], resources: ['pods'] }, pods)).toBe(false);
    expect(ruleAllows({ verbs: ['get'], apiGroups: [''], resources: ['pods'] }, { verb: 'get', group: '', resource: 'pods', subresource: 'log' })).toBe(false);
    expect(ruleAllows({ verbs: ['get'], apiGroups: [''], resources: ['pods/log'] }, { verb: 'get', group: '', resource: 'pods', subresource: 'log' })).toBe(true);
    expect(ruleAllows({ verbs: ['get'], apiGroups: [''], resources: ['*/log'] }, { verb: 'get', group: '', resource: 'pods', subresource: 'log' })).toBe(true);
    expect(ruleAllows({ verbs: ['get'], apiGroups: [''], resources: ['*/log'] }, { verb: 'get', group: '', resource: 'pods' })).toBe(false);
    const named = { verbs: ['get', 'list'], apiGroups: [''], resources: ['pods'], resourceNames: ['a'] };
    expect(ruleAllows(named, { verb: 'get', group: '', resource: 'pods', name: 'a' })).toBe(true);
    expect(ruleAllows(named, { verb: 'get', group: '', resource: 'pods', name: 'b' })).toBe(false);
    expect(ruleAllows(named, pods)).toBe(false);
  });

  it('give everyone authenticated its group, and service accounts theirs', () => {
    expect([...effectiveGroups({ user: 'alice', groups: [] })]).toEqual(['system:authenticated']);
    expect([...effectiveGroups({ user: 'system:serviceaccount:shop:robot', groups: [] })].sort()).toEqual(['system:authenticated', 'system:serviceaccounts', 'system:serviceaccounts:shop']);
    // Impersonated with groups, a service account has those (found by the differential test).
    expect([...effectiveGroups({ user: 'system:serviceaccount:shop:robot', groups: ['g1'] })].sort()).toEqual(['g1', 'system:authenticated']);
    expect([...effectiveGroups({ user: 'system:anonymous', groups: ['system:unauthenticated'] })]).toEqual(['system:unauthenticated']);
  });
});

describe('RBAC bindings', () => {
  const policy = indexPolicy(policyOf({
    roles: [{ metadata: { namespace: 'shop', name: 'reader' }, rules: [{ verbs: ['get', 'list', 'watch'], apiGroups: [''], resources: ['pods'] }] }],
    clusterRoles: [
      { metadata: { name: 'view' }, rules: [{ verbs: ['get', 'list', 'watch'], apiGroups: ['', 'apps'], resources: ['pods', 'deployments'] }] },
      { metadata: { name: 'no-rules' }, rules: null },
    ],
    roleBindings: [
      { metadata: { namespace: 'shop' }, subjects: [{ kind: 'User', name: 'alice' }], roleRef: { kind: 'Role', name: 'reader' } },
      { metadata: { namespace: 'shop' }, subjects: [{ kind: 'ServiceAccount', name: 'robot' }], roleRef: { kind: 'ClusterRole', name: 'view' } },
      { metadata: { namespace: 'bank' }, subjects: [{ kind: 'User', name: 'alice' }], roleRef: { kind: 'Role', name: 'missing' } },
    ],
    clusterRoleBindings: [{ subjects: [{ kind: 'Group', name: 'auditors' }], roleRef: { kind: 'ClusterRole', name: 'view' } }],
  }));

  it('grant in the binding’s namespace only, cluster-wide for ClusterRoleBindings, nothing for a missing role', () => {
    const alice = { user: 'alice', groups: [] };
    expect(authorize(policy, alice, { ...pods, namespace: 'shop' })).toBe(true);
    expect(authorize(policy, alice, { ...pods, namespace: 'bank' })).toBe(false);
    expect(authorize(policy, alice, pods)).toBe(false);
    expect(accessSet(policy, alice, pods)).toEqual({ everywhere: false, namespaces: new Set(['shop']) });
    const auditor = { user: 'carol', groups: ['auditors'] };
    expect(authorize(policy, auditor, { verb: 'watch', group: 'apps', resource: 'deployments' })).toBe(true);
    expect(accessSet(policy, auditor, pods).everywhere).toBe(true);
  });

  it('match a RoleBinding’s ServiceAccount subject without a namespace to the binding’s, and let system:masters do anything', () => {
    expect(authorize(policy, { user: 'system:serviceaccount:shop:robot', groups: [] }, { ...pods, namespace: 'shop' })).toBe(true);
    expect(authorize(policy, { user: 'system:serviceaccount:bank:robot', groups: [] }, { ...pods, namespace: 'shop' })).toBe(false);
    expect(authorize(policy, { user: 'root', groups: ['system:masters'] }, { verb: 'delete', group: 'x', resource: 'y' })).toBe(true);
  });
});
