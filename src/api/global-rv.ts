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
  // No prototype: every key is its own member, `__proto__` too (as oneClusterRV writes it).
  const sorted: Record<string, string> = Object.create(null) as Record<string, string>;
  for (const k of Object.keys(rvs).sort()) sorted[k] = rvs[k]!;
  return encodeBase64urlJson(sorted);
}

const BASE64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
const ONE_CLUSTER_ENCODERS_KEPT = 4096;
const oneClusterEncoders = new Map<string, (rv: string) => string>();

/**
 * encodeGlobalRV({ [cluster]: rv }), for one cluster's objects one after another (a list's items,
 * ingested objects): the JSON before the RV is the same every time, so its whole base64 groups are
 * encoded once and only the RV's digits per call, without a buffer each.
 */
export function oneClusterRV(cluster: string): (rv: string) => string {
  let encode = oneClusterEncoders.get(cluster);
  if (encode) return encode;
  const prefix = Buffer.from(`{${JSON.stringify(cluster)}:"`);
  const whole = prefix.length - (prefix.length % 3);
  const head = prefix.subarray(0, whole).toString('base64url');
  const rest = [...prefix.subarray(whole)];
  encode = (rv) => (MEMBER_RV.test(rv) ? head + base64urlOf(rest, rv) : encodeGlobalRV({ [cluster]: rv }));
  if (oneClusterEncoders.size >= ONE_CLUSTER_ENCODERS_KEPT) oneClusterEncoders.clear();
  oneClusterEncoders.set(cluster, encode);
  return encode;
}

/** Unpadded base64url of the bytes `rest`, then the ASCII `digits`, then `"}`. */
function base64urlOf(rest: readonly number[], digits: string): string {
  const total = rest.length + digits.length + 2;
  let out = '';
  for (let i = 0; i < total; i += 3) {
    const b0 = byteAt(rest, digits, total, i);
    out += BASE64URL[b0 >> 2];
    if (i + 1 >= total) return out + BASE64URL[(b0 & 3) << 4];
    const b1 = byteAt(rest, digits, total, i + 1);
    out += BASE64URL[((b0 & 3) << 4) | (b1 >> 4)];
    if (i + 2 >= total) return out + BASE64URL[(b1 & 15) << 2];
    const b2 = byteAt(rest, digits, total, i + 2);
    out += BASE64URL[((b1 & 15) << 2) | (b2 >> 6)]! + BASE64URL[b2 & 63]!;
  }
  return out;
}

/** The byte at `i` of base64urlOf's input. */
function byteAt(rest: readonly number[], digits: string, total: number, i: number): number {
  const r = rest.length;
  return i < r ? rest[i]! : i < total - 2 ? digits.charCodeAt(i - r) : i === total - 2 ? 0x22 : 0x7d;
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
