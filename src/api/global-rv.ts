import { badRequest, conflict } from './status.js';
import { decodeBase64urlJson, encodeBase64urlJson } from '../util/base64url-json.js';

/**
 * The global resourceVersion: base64url (unpadded) of compact JSON mapping each cluster to its
 * member RV, keys sorted, so equal states give equal tokens. Opaque to clients.
 */
export type ClusterRVs = Readonly<Record<string, string>>;

// Member RVs are etcd revisions: decimal digits. Anything else did not come from us.
export const MEMBER_RV = /^[0-9]+$/;
export const CLUSTER_NAME = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

export function encodeGlobalRV(rvs: ClusterRVs): string {
  const sorted: Record<string, string> = {};
  for (const k of Object.keys(rvs).sort()) sorted[k] = rvs[k]!;
  return encodeBase64urlJson(sorted);
}

export function decodeGlobalRV(token: string): Record<string, string> {
  const fail = () => badRequest(`invalid resource version "${token}": not a flotilla resource version`);
  const parsed = decodeBase64urlJson(token);
  if (!parsed) throw fail();
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(parsed)) {
    if (!CLUSTER_NAME.test(k) || typeof v !== 'string' || !MEMBER_RV.test(v)) throw fail();
    out[k] = v;
  }
  return out;
}

export function isZeroRV(rv: string | undefined): boolean {
  return rv === '0';
}

/** Whether a member's resourceVersion is an etcd revision, which can be ordered (an aggregated API's may not be). */
export function isRevision(rv: string): boolean {
  return /^[0-9]{1,30}$/.test(rv);
}

export function compareMemberRV(a: string, b: string): -1 | 0 | 1 {
  const x = BigInt(a);
  const y = BigInt(b);
  return x < y ? -1 : x > y ? 1 : 0;
}

export function mergeRVs(a: ClusterRVs, b: ClusterRVs): Record<string, string> {
  const out: Record<string, string> = { ...a };
  for (const [k, v] of Object.entries(b)) {
    const prior = out[k];
    if (prior === undefined || compareMemberRV(v, prior) > 0) out[k] = v;
  }
  return out;
}

/** A global RV as the member's own RV for `cluster`; a token that is not global passes as it is. */
export function memberRV(rv: string, cluster: string): string {
  if (rv === '' || rv === '0') return rv;
  let rvs: Record<string, string>;
  try {
    rvs = decodeGlobalRV(rv);
  } catch {
    // Not one of ours (a member RV a client got elsewhere): the member judges it.
    return rv;
  }
  const own = rvs[cluster];
  if (own === undefined) {
    throw conflict(`the resourceVersion ${JSON.stringify(rv)} was read from ${Object.keys(rvs).join(', ') || 'no cluster'}, not from cluster ${cluster} that this request goes to; read the object again`);
  }
  return own;
}
