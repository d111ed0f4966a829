import { badRequest, conflict } from './status.js';

/**
 * The global resourceVersion: base64url (unpadded) of compact JSON mapping each cluster to its
 * member RV, keys sorted, so equal states give equal tokens. Opaque to clients.
 */
export type ClusterRVs = Readonly<Record<string, string>>;

const BASE64URL = /^[A-Za-z0-9_-]*$/;
// Member RVs are etcd revisions: decimal digits. Anything else did not come from us.
const MEMBER_RV = /^[0-9]+$/;
const CLUSTER_NAME = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

export function encodeGlobalRV(rvs: ClusterRVs): string {
  const sorted: Record<string, string> = {};
  for (const k of Object.keys(rvs).sort()) sorted[k] = rvs[k]!;
  return Buffer.from(JSON.stringify(sorted)).toString('base64url');
}

export function decodeGlobalRV(token: string): Record<string, string> {
  const fail = () => badRequest(`invalid resource version "${token}": not a flotilla resource version`);
  if (!BASE64URL.test(token)) throw fail();
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
  } catch {
    throw fail();
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw fail();
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

/**
 * A continue token: the list's global RV, the store key the next page starts at, and the id of
 * the snapshot the pages are read from (absent in an 'inconsistent' token, which reads the
 * current data).
 */
export interface ContinueToken {
  rv: string;
  start: string;
  snap?: string;
}

export function encodeContinue(c: ContinueToken): string {
  return Buffer.from(JSON.stringify(c.snap ? { rv: c.rv, start: c.start, snap: c.snap } : { rv: c.rv, start: c.start })).toString('base64url');
}

export function decodeContinue(token: string): ContinueToken {
  const fail = () => badRequest(`invalid continue token "${token}"`);
  if (!BASE64URL.test(token)) throw fail();
  let c: { rv?: unknown; start?: unknown; snap?: unknown };
  try {
    c = JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as typeof c;
  } catch {
    throw fail();
  }
  if (typeof c !== 'object' || c === null || typeof c.rv !== 'string' || typeof c.start !== 'string') throw fail();
  if (c.snap !== undefined && typeof c.snap !== 'string') throw fail();
  // The token's RV is echoed as the page's resourceVersion: only one of ours may be.
  try {
    decodeGlobalRV(c.rv);
  } catch {
    throw fail();
  }
  return { rv: c.rv, start: c.start, ...(typeof c.snap === 'string' ? { snap: c.snap } : {}) };
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
