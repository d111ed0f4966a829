import { describe, expect, it } from 'vitest';
import { FULL_ACCESS, NO_ACCESS, authorizeNonResource, indexPolicy, policyOf, type AccessSet, type PolicyObjects } from '../../../src/api/rbac.js';
import { ReadAuthorizer, reviewAttributes, type ReadQuestion } from '../../../src/authz/authorizer.js';
import type { MemberPolicies } from '../../../src/authz/member-policies.js';
import type { AccessReviews } from '../../../src/members/access-reviews.js';
import { buildReadView } from '../../../src/view/steps.js';

const resource = { info: { group: '', resource: 'pods', kind: 'Pod', namespaced: true }, clusters: ['east', 'west', 'north'] };
const o = (cluster: string, namespace: string) => ({ cluster, namespace, name: 'x' });
const some = (...namespaces: string[]): AccessSet => ({ everywhere: false, namespaces: new Set(namespaces) });
const access = (entries: Record<string, AccessSet>) => new Map(Object.entries(entries));

describe('the authorization view step', () => {
  it('takes away members where the caller may read nothing, and names them', () => {
    const v = buildReadView({ resource, watching: false, access: access({ east: FULL_ACCESS, west: NO_ACCESS }) });
    expect(v.clusters).toEqual(['east']);
    expect(v.denied).toEqual(['west', 'north']);
    expect(v.admits(o('east', 'a'), () => undefined)).toBe(true);
    expect(v.admits(o('west', 'a'), () => undefined)).toBe(false);
  });

  it('keeps the granted namespaces as key ranges when every member grants the same, with no per-object test', () => {
    const v = buildReadView({ resource, watching: false, access: access({ east: some('shop', 'bank'), west: some('bank', 'shop'), north: NO_ACCESS }) });
    expect(v.clusters).toEqual(['east', 'west']);
    expect(v.namespaces).toEqual(['bank', 'shop']);
    expect(v.predicates).toEqual([]);
    expect(v.admits(o('west', 'shop'), () => undefined)).toBe(true);
    expect(v.admits(o('west', 'other'), () => undefined)).toBe(false);
  });

  it('tests (cluster, namespace) per object when members grant differently, and then counts nothing', () => {
    const v = buildReadView({ resource, watching: false, access: access({ east: some('shop'), west: some('bank'), north: FULL_ACCESS }) });
    expect(v.clusters).toEqual(['east', 'west', 'north']);
    expect(v.namespaces).toBeUndefined();
    expect(v.narrows).toBe(true);
    expect(v.admits(o('east', 'shop'), () => undefined)).toBe(true);
    expect(v.admits(o('east', 'bank'), () => undefined)).toBe(false);
    expect(v.admits(o('west', 'bank'), () => undefined)).toBe(true);
    expect(v.admits(o('north', 'anything'), () => undefined)).toBe(true);
    const ranged = buildReadView({ resource, watching: false, access: access({ east: some('shop'), west: some('bank'), north: NO_ACCESS }) });
    expect(ranged.namespaces).toEqual(['bank', 'shop']);
    expect(ranged.admits(o('east', 'bank'), () => undefined)).toBe(false);
  });

  it('gives a /clusters/<name>/ read the member’s own verdict: an all-namespaces read needs the right everywhere', () => {
    const v = buildReadView({ resource, cluster: 'east', watching: false, access: access({ east: some('shop') }) });
    expect(v.clusters).toEqual([]);
    expect(v.denied).toEqual(['east']);
  });

  it('makes views of different access different to the watch fan-out, and equal access equal', () => {
    const a = buildReadView({ resource, watching: true, access: access({ east: some('shop'), west: FULL_ACCESS, north: NO_ACCESS }) });
    const b = buildReadView({ resource, watching: true, access: access({ east: some('shop'), west: FULL_ACCESS, north: NO_ACCESS }) });
    const c = buildReadView({ resource, watching: true, access: access({ east: some('bank'), west: FULL_ACCESS, north: NO_ACCESS }) });
    expect(a.key).toBe(b.key);
    expect(a.key).not.toBe(c.key);
  });
});

const POLICY: PolicyObjects = {
  roles: [{ metadata: { namespace: 'shop', name: 'reader' }, rules: [{ verbs: ['get', 'list', 'watch'], apiGroups: [''], resources: ['pods'] }] }],
  clusterRoles: [
    { metadata: { name: 'one-pod' }, rules: [{ verbs: ['get', 'list'], apiGroups: [''], resources: ['pods'], resourceNames: ['special'] }] },
    { metadata: { name: 'monitoring' }, rules: [{ verbs: ['get'], nonResourceURLs: ['/metrics', '/debug/*'] }] },
  ],
  roleBindings: [
    { metadata: { namespace: 'shop' }, subjects: [{ kind: 'User', name: 'alice' }], roleRef: { kind: 'Role', name: 'reader' } },
    { metadata: { namespace: 'bank' }, subjects: [{ kind: 'Group', name: 'team-a' }], roleRef: { kind: 'ClusterRole', name: 'one-pod' } },
    // A RoleBinding never grants a non-resource URL, whatever its role says.
    { metadata: { namespace: 'shop' }, subjects: [{ kind: 'User', name: 'alice' }], roleRef: { kind: 'ClusterRole', name: 'monitoring' } },
  ],
  clusterRoleBindings: [{ subjects: [{ kind: 'User', name: 'prometheus' }], roleRef: { kind: 'ClusterRole', name: 'monitoring' } }],
};

function authorizer(modes: Record<string, 'rbac' | 'subjectAccessReview'> = {}, namespaces?: string[]) {
  const policies = { epoch: 0, policy: () => indexPolicy(policyOf(POLICY)) } as unknown as MemberPolicies & { epoch: number };
  const asked: string[] = [];
  const reviews = {
    cached: () => undefined,
    verdict: async (cluster: string, _caller: unknown, attrs: { namespace?: string }) => {
      asked.push(`${cluster}:${attrs.namespace ?? ''}`);
      return { allowed: attrs.namespace === 'shop', reason: '' };
    },
  } as unknown as AccessReviews;
  return { authz: new ReadAuthorizer(policies, reviews, (c) => modes[c] ?? 'rbac', () => namespaces), policies, asked };
}

const pods = (q: Partial<ReadQuestion>): ReadQuestion => ({ verb: 'list', group: '', resource: 'pods', namespaced: true, ...q });
const alice = { user: 'alice', groups: ['team-a'] };

describe('the read authorizer', () => {
  it('grants a caller the namespaces its RoleBindings name, and honours resourceNames only for a named request', async () => {
    const { authz } = authorizer();
    expect((await authz.access(alice, ['east'], pods({}))).get('east')).toEqual(some('shop'));
    expect((await authz.access(alice, ['east'], pods({ name: 'special' }))).get('east')).toEqual(some('shop', 'bank'));
    expect((await authz.access(alice, ['east'], pods({ verb: 'get', namespace: 'bank', name: 'special' }))).get('east')).toBe(FULL_ACCESS);
    expect((await authz.access(alice, ['east'], pods({ verb: 'get', namespace: 'bank', name: 'other' }))).get('east')).toBe(NO_ACCESS);
    expect((await authz.access(alice, ['east'], pods({ verb: 'watch', namespace: 'bank' }))).get('east')).toBe(NO_ACCESS);
    expect((await authz.access({ user: 'root', groups: ['system:masters'] }, ['east'], pods({}))).get('east')).toBe(FULL_ACCESS);
  });

  it('keeps answers until the policies change', async () => {
    const { authz, policies } = authorizer();
    const first = await authz.access(alice, ['east', 'west'], pods({}));
    expect(authz.keptSize()).toEqual({ questions: 1, answers: 2 });
    expect((await authz.access(alice, ['east', 'west'], pods({}))).get('east')).toBe(first.get('east'));
    policies.epoch++;
    expect((await authz.access(alice, ['east'], pods({}))).get('east')).not.toBe(first.get('east'));
  });

  it('asks a member configured for SubjectAccessReview, for an all-namespaces read per namespace it has', async () => {
    const { authz, asked } = authorizer({ west: 'subjectAccessReview' }, ['bank', 'shop']);
    const a = await authz.access(alice, ['east', 'west'], pods({ namespace: 'shop' }));
    expect(a.get('west')).toBe(FULL_ACCESS);
    expect((await authz.access(alice, ['west'], pods({}))).get('west')).toEqual(some('shop'));
    expect(asked).toEqual(['west:shop', 'west:', 'west:bank', 'west:shop']);
    // Without the member's namespaces cached, cluster-wide is the only question.
    const unknown = authorizer({ west: 'subjectAccessReview' });
    expect((await unknown.authz.access(alice, ['west'], pods({}))).get('west')).toBe(NO_ACCESS);
    // Without waiting, a running watch keeps what it had for a member it cannot ask now.
    expect(authz.accessNow(alice, ['west'], pods({}), new Map([['west', FULL_ACCESS]])).get('west')).toBe(FULL_ACCESS);
  });

  it('reads a namespace get in that namespace, as the apiserver does', () => {
    expect(reviewAttributes({ verb: 'get', group: '', resource: 'namespaces', namespaced: false, name: 'shop' })).toEqual({ verb: 'get', group: '', resource: 'namespaces', namespace: 'shop', name: 'shop' });
    expect(reviewAttributes({ verb: 'list', group: '', resource: 'namespaces', namespaced: false })).toEqual({ verb: 'list', group: '', resource: 'namespaces' });
  });

  it('decides non-resource URLs by cluster-wide grants, exactly or by a trailing *', () => {
    const policy = indexPolicy(policyOf(POLICY));
    const prometheus = { user: 'prometheus', groups: [] };
    expect(authorizeNonResource(policy, prometheus, 'get', '/metrics')).toBe(true);
    expect(authorizeNonResource(policy, prometheus, 'get', '/debug/pprof')).toBe(true);
    expect(authorizeNonResource(policy, prometheus, 'get', '/status')).toBe(false);
    expect(authorizeNonResource(policy, prometheus, 'post', '/metrics')).toBe(false);
    expect(authorizeNonResource(policy, alice, 'get', '/metrics')).toBe(false);
  });
});
