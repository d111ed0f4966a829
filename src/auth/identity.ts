/**
 * Who is calling: what flotilla's authenticator learned, and how members hear it. Flotilla calls
 * members with its own credentials and the caller's identity in `Impersonate-*` headers, so each
 * member's RBAC decides what the caller may do there.
 */
export interface Identity {
  user: string;
  uid?: string;
  groups: string[];
  extra: Record<string, string[]>;
}

export const ANONYMOUS_USER = 'system:anonymous';

/**
 * A caller without credentials where the fleet file lets them in (`authentication.anonymous`),
 * named as kube-apiserver names it: members' RBAC then decides for it as for anyone, and its
 * writes reach them impersonating system:anonymous rather than with flotilla's own identity.
 */
export function anonymousIdentity(): Identity {
  return { user: ANONYMOUS_USER, groups: ['system:unauthenticated'], extra: {} };
}

export function impersonationHeaders(id: Identity): Record<string, string | string[]> {
  const headers: Record<string, string | string[]> = { 'impersonate-user': id.user };
  if (id.uid) headers['impersonate-uid'] = id.uid;
  // Groups every authenticated caller has; the member adds them itself and rejects impersonating
  // system:authenticated explicitly only in some versions, so they are left out.
  const groups = id.groups.filter((g) => g !== 'system:authenticated');
  if (groups.length) headers['impersonate-group'] = groups;
  for (const [key, values] of Object.entries(id.extra)) {
    // Header names are case-insensitive and limited to tokens: the key is percent-encoded.
    headers[`impersonate-extra-${encodeURIComponent(key).toLowerCase()}`] = values;
  }
  return headers;
}
