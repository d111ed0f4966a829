import { describe, expect, it } from 'vitest';
import { ImpersonationChecker, asksImpersonation, impersonationAttributes, requestedIdentity } from '../../../src/auth/impersonation.js';
import type { MemberClient } from '../../../src/members/member-client.js';
import { Tenants } from '../../../src/tenancy/tenant.js';

describe('a caller’s Impersonate-* headers', () => {
  it('are read from the raw lines: each repeated line is one value, extra keys percent-decoded', () => {
    const raw = ['Impersonate-User', 'alice', 'Impersonate-Group', 'team-a', 'impersonate-group', 'a, b', 'Impersonate-Uid', 'u1', 'Impersonate-Extra-Acme.com%2Fscopes', 'view', 'Impersonate-Extra-acme.com%2fscopes', 'edit'];
    expect(requestedIdentity(raw)).toEqual({ user: 'alice', uid: 'u1', groups: ['team-a', 'a, b'], extra: { 'acme.com/scopes': ['view', 'edit'] } });
  });

  it('groups, a uid or extras without a user, two users, or an unknown header are a 400', () => {
    for (const raw of [['Impersonate-Group', 'system:masters'], ['Impersonate-Uid', 'x'], ['Impersonate-User', 'a', 'Impersonate-User', 'b'], ['Impersonate-User', 'a', 'Impersonate-Whatever', 'x'], ['Impersonate-User', '']]) {
      expect(() => requestedIdentity(raw), raw.join(' ')).toThrow(expect.objectContaining({ code: 400 }));
    }
  });

  it('asks the member about the user (or service account), every group, the uid and every extra value', () => {
    expect(impersonationAttributes({ user: 'system:serviceaccount:ns1:robot', groups: ['g'], uid: 'u', extra: { k: ['v1', 'v2'] } })).toEqual([
      { group: '', resource: 'serviceaccounts', namespace: 'ns1', name: 'robot' },
      { group: '', resource: 'groups', name: 'g' },
      { group: 'authentication.k8s.io', resource: 'uids', name: 'u' },
      { group: 'authentication.k8s.io', resource: 'userextras', subresource: 'k', name: 'v1' },
      { group: 'authentication.k8s.io', resource: 'userextras', subresource: 'k', name: 'v2' },
    ]);
    expect(impersonationAttributes({ user: 'alice', groups: [], extra: {} })).toEqual([{ group: '', resource: 'users', name: 'alice' }]);
  });

  it('asksImpersonation sees any Impersonate-* header', () => {
    expect(asksImpersonation({ 'impersonate-group': 'x' })).toBe(true);
    expect(asksImpersonation({ authorization: 'Bearer x' })).toBe(false);
  });
});

describe('impersonation checks', () => {
  /** A member whose reviews allow every group but `denied`, counting reviews and the most in flight at once. */
  function reviewingMember(denied: string) {
    const seen = { reviews: 0, inFlight: 0, most: 0 };
    const client = {
      fetch: async (req: { body: string }) => {
        seen.reviews++;
        seen.most = Math.max(seen.most, ++seen.inFlight);
        await new Promise((r) => setTimeout(r, 2));
        seen.inFlight--;
        const attrs = (JSON.parse(req.body) as { spec: { resourceAttributes: { name: string } } }).spec.resourceAttributes;
        return { status: 201, headers: {}, body: Buffer.from(JSON.stringify({ status: { allowed: attrs.name !== denied } })) };
      },
    } as unknown as MemberClient;
    return { seen, member: () => client };
  }

  it('stop at the first refusal and keep few reviews in flight, however many groups are named', async () => {
    const { seen, member } = reviewingMember('g3');
    const checker = new ImpersonationChecker(member);
    const groups = Array.from({ length: 300 }, (_, i) => `g${i}`);
    await expect(checker.check({ user: 'admin', groups: [], extra: {} }, { user: 'u', groups, extra: {} }, ['east'])).rejects.toMatchObject({ code: 403 });
    expect(seen.reviews).toBeLessThanOrEqual(8);
    expect(seen.most).toBeLessThanOrEqual(4);
  });

  it('a tenant’s caller may become only its own users, groups and service accounts, in the member’s names', () => {
    const [acme] = new Tenants([
      { id: 'acme', users: ['admin@acme', 'dev@acme'], groups: ['acme-admins'], clusterScoped: {} },
      { id: 'globex', users: ['g'], groups: ['globex-admins'], clusterScoped: {} },
    ]).all;
    const t = acme!;
    expect(t.ownIdentity('dev@acme', ['acme-admins', 'system:authenticated'])).toEqual({ user: 'dev@acme', groups: ['acme-admins', 'system:authenticated'] });
    expect(t.ownIdentity('system:serviceaccount:web:builder', ['system:serviceaccounts', 'system:serviceaccounts:web'])).toEqual({
      user: 'system:serviceaccount:acme-web:builder',
      groups: ['system:serviceaccounts', 'system:serviceaccounts:acme-web'],
    });
    for (const [user, groups] of [
      ['nobody', []],
      ['dev@acme', ['system:masters']],
      ['dev@acme', ['globex-admins']],
      ['g', []],
      ['bob', ['acme-admins']],
      ['dev@acme', ['system:serviceaccounts']],
      ['system:serviceaccount:kube-system', []],
    ] as [string, string[]][]) {
      expect(t.ownIdentity(user, groups), `${user} ${groups.join(',')}`).toBeUndefined();
    }
  });
});
