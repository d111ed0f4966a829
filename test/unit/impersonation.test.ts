import { describe, expect, it } from 'vitest';
import { asksImpersonation, impersonationAttributes, requestedIdentity } from '../../src/auth/impersonation.js';

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
