import { badRequest } from './status.js';
import { CLUSTER_NAME, MEMBER_RV, decodeGlobalRV } from './global-rv.js';
import { decodeBase64urlJson, encodeBase64urlJson } from '../util/base64url-json.js';
import { isJsonObject } from '../util/json-object.js';

/**
 * A list's continue token, of either path that pages a list: a cached list's (the list's global
 * RV, the next store key, its snapshot) and a live list's (each source's own continue). Both are
 * base64url JSON read by one reader; each path answers the other's token with 400, as an invalid
 * one.
 */

function invalidContinue(token: string): Error {
  return badRequest(`invalid continue token "${token}"`);
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
  return encodeBase64urlJson(c.snap ? { rv: c.rv, start: c.start, snap: c.snap } : { rv: c.rv, start: c.start });
}

export function decodeContinue(token: string): ContinueToken {
  const fail = () => invalidContinue(token);
  const c = decodeBase64urlJson(token);
  if (!c || typeof c['rv'] !== 'string' || typeof c['start'] !== 'string') throw fail();
  if (c['snap'] !== undefined && typeof c['snap'] !== 'string') throw fail();
  // The token's RV is echoed as the page's resourceVersion: only one of ours may be.
  try {
    decodeGlobalRV(c['rv']);
  } catch {
    throw fail();
  }
  return { rv: c['rv'], start: c['start'], ...(typeof c['snap'] === 'string' ? { snap: c['snap'] } : {}) };
}

/**
 * A live list's continue token: base64url JSON `{"live": {source: member continue, or null for a
 * source not asked yet}, "rv": {cluster: member RV of its first page}}`, a source a member or one
 * namespace of it (`east/acme-web`, sourcesOf). Sources that are done (or were left out) are not
 * in it. A cached list's token (`{rv, start, snap}`) is not one of these, nor the other way round:
 * each path answers the other's token with 400.
 */
export interface LiveContinue {
  live: Record<string, string | null>;
  rv: Record<string, string>;
  /** The list's kind and apiVersion, for a later page none of whose members answer (an empty page). */
  kind?: string;
  apiVersion?: string;
}

export function encodeLiveContinue(c: LiveContinue): string {
  return encodeBase64urlJson({ live: c.live, rv: c.rv, ...(c.kind !== undefined ? { kind: c.kind, apiVersion: c.apiVersion ?? '' } : {}) });
}

/** A member, or one namespace of it (sourcesOf). */
const SOURCE = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(\/[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)?$/;

export function decodeLiveContinue(token: string): LiveContinue {
  const fail = () => invalidContinue(token);
  const doc = decodeBase64urlJson(token);
  if (!doc || !isJsonObject(doc['live']) || !isJsonObject(doc['rv'])) throw fail();
  const live: Record<string, string | null> = {};
  for (const [c, v] of Object.entries(doc['live'])) {
    if (!SOURCE.test(c) || (v !== null && typeof v !== 'string')) throw fail();
    live[c] = v;
  }
  const rv: Record<string, string> = {};
  for (const [c, v] of Object.entries(doc['rv'])) {
    if (!CLUSTER_NAME.test(c) || typeof v !== 'string' || !MEMBER_RV.test(v)) throw fail();
    rv[c] = v;
  }
  if (doc['kind'] !== undefined && (typeof doc['kind'] !== 'string' || typeof doc['apiVersion'] !== 'string')) throw fail();
  return { live, rv, ...(typeof doc['kind'] === 'string' ? { kind: doc['kind'], apiVersion: doc['apiVersion'] as string } : {}) };
}

