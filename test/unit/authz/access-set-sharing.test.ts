import { describe, expect, it } from 'vitest';
import { indexPolicy, policyOf, type PolicyObjects } from '../../../src/api/rbac.js';
import { ReadAuthorizer, type ReadQuestion } from '../../../src/authz/authorizer.js';
import type { MemberPolicies } from '../../../src/authz/member-policies.js';
import type { AccessReviews } from '../../../src/members/access-reviews.js';

// Two teams with view in namespaces of their own; callers are members of one or both.
const POLICY: PolicyObjects = {
  roles: [],
  clusterRoles: [{ metadata: { name: 'view' }, rules: [{ verbs: ['get', 'list', 'watch'], apiGroups: [''], resources: ['pods'] }] }],
  roleBindings: [
    { metadata: { namespace: 'shop' }, subjects: [{ kind: 'Group', name: 'team-a' }], roleRef: { kind: 'ClusterRole', name: 'view' } },
    { metadata: { namespace: 'cart' }, subjects: [{ kind: 'Group', name: 'team-a' }], roleRef: { kind: 'ClusterRole', name: 'view' } },
    { metadata: { namespace: 'bank' }, subjects: [{ kind: 'Group', name: 'team-b' }], roleRef: { kind: 'ClusterRole', name: 'view' } },
  ],
  clusterRoleBindings: [],
};
const LIST: ReadQuestion = { verb: 'list', group: '', resource: 'pods', namespaced: true };

function authorizer() {
  const indexed = indexPolicy(policyOf(POLICY));
  const policies = { epoch: 0, policy: () => indexed } as unknown as MemberPolicies & { epoch: number };
  return { authz: new ReadAuthorizer(policies, {} as AccessReviews, () => 'rbac'), policies };
}

describe('the read authorizer’s kept answers', () => {
  it('share one set among callers and members granted the same namespaces', async () => {
    const { authz } = authorizer();
    const ann = await authz.access({ user: 'ann', groups: ['team-a'] }, ['east', 'west'], LIST);
    const ben = await authz.access({ user: 'ben', groups: ['team-a'] }, ['east', 'west'], LIST);
    const cy = await authz.access({ user: 'cy', groups: ['team-a', 'team-b'] }, ['east'], LIST);
    expect([...ann.get('east')!.namespaces].sort()).toEqual(['cart', 'shop']);
    expect(ann.get('west')).toBe(ann.get('east'));
    expect(ben.get('east')).toBe(ann.get('east'));
    expect([...cy.get('east')!.namespaces].sort()).toEqual(['bank', 'cart', 'shop']);
    expect(authz.keptSize()).toEqual({ questions: 3, answers: 5 });
  });

  it('share nothing across a change of the policies', async () => {
    const { authz, policies } = authorizer();
    const before = await authz.access({ user: 'ann', groups: ['team-a'] }, ['east'], LIST);
    policies.epoch++;
    const after = await authz.access({ user: 'ben', groups: ['team-a'] }, ['east'], LIST);
    expect(after.get('east')).toEqual(before.get('east'));
    expect(after.get('east')).not.toBe(before.get('east'));
  });
});
