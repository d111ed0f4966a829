import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ReadAuthorizer } from '../../../src/authz/authorizer.js';
import { MemberPolicies, rbacKey } from '../../../src/authz/member-policies.js';
import { isOperator } from '../../../src/authz/operators.js';
import type { AccessReviews } from '../../../src/members/access-reviews.js';
import { OwnRightsError, memberRefusal } from '../../../src/cacher/own-rights.js';
import { Store } from '../../../src/store/store.js';

/**
 * When flotilla's own credentials may not read a member's RBAC objects, its policy as cached is
 * not the member's: the authorizer names that member as undecidable (callers get flotilla's 503,
 * not their 403), and the cacher's error says which right flotilla lacks.
 */
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const CLUSTERROLES_403 = JSON.stringify({
  kind: 'Status', code: 403, reason: 'Forbidden',
  message: 'clusterroles.rbac.authorization.k8s.io is forbidden: User "flotilla" cannot list resource "clusterroles" in API group "rbac.authorization.k8s.io" at the cluster scope',
});
const clusterroles = { group: 'rbac.authorization.k8s.io', version: 'v1', resource: 'clusterroles', kind: 'ClusterRole', namespaced: false, singularName: 'clusterrole', shortNames: [], categories: [], memberVerbs: [] };

describe('a member refusing flotilla’s credentials', () => {
  it('is an OwnRightsError naming the member, the right and the member’s words; other failures are not', () => {
    const e = memberRefusal('west', clusterroles, undefined, 'list', 403, CLUSTERROLES_403);
    expect(e).toBeInstanceOf(OwnRightsError);
    expect((e as OwnRightsError).right).toBe('list clusterroles.rbac.authorization.k8s.io');
    expect(e.message).toBe(`flotilla's own credentials for member west cannot list clusterroles.rbac.authorization.k8s.io: ${JSON.parse(CLUSTERROLES_403).message}`);
    expect(memberRefusal('west', clusterroles, undefined, 'watch', 500, 'boom')).not.toBeInstanceOf(OwnRightsError);
  });

  it('makes the member undecidable for RBAC reads, and only it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'own-rights-'));
    dirs.push(dir);
    const store = Store.open(dir);
    const short = memberRefusal('west', clusterroles, undefined, 'list', 403, CLUSTERROLES_403).message;
    const policies = new MemberPolicies(store, (cluster, resource) => (cluster === 'west' && resource === rbacKey('clusterroles') ? short : undefined));
    const modes: Record<string, 'rbac' | 'subjectAccessReview'> = { east: 'rbac', west: 'rbac', north: 'subjectAccessReview' };
    const authz = new ReadAuthorizer(policies, {} as AccessReviews, (c) => modes[c]!);
    expect(authz.undecidable(['east', 'west', 'north'])).toEqual([{ cluster: 'west', reason: short }]);
    policies.close();
    void store.close();
  });
});

describe('operators', () => {
  it('are the users and groups named, no one else', () => {
    const operators = { users: ['ops'], groups: ['sre'] };
    expect(isOperator(operators, { user: 'ops', groups: [] })).toBe(true);
    expect(isOperator(operators, { user: 'x', groups: ['system:authenticated', 'sre'] })).toBe(true);
    expect(isOperator(operators, { user: 'x', groups: ['ops'] })).toBe(false);
    expect(isOperator({ users: [], groups: [] }, { user: 'ops', groups: ['sre'] })).toBe(false);
  });
});
