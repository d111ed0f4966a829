import { badRequest, expired } from '../../api/status.js';
import { isJsonObject } from '../../util/json-object.js';
import { unseal } from '../../util/sealed-token.js';

/**
 * A live list's pages: its continue token (each source's own continue, sealed for a tenant, whose
 * pages leave out what is not the tenant's), and a page's limit shared among the sources asked.
 */

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
  return Buffer.from(JSON.stringify({ live: c.live, rv: c.rv, ...(c.kind !== undefined ? { kind: c.kind, apiVersion: c.apiVersion ?? '' } : {}) })).toString('base64url');
}

const CLUSTER_NAME = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
/** A member, or one namespace of it (sourcesOf). */
const SOURCE = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(\/[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)?$/;

export function decodeLiveContinue(token: string): LiveContinue {
  const fail = () => badRequest(`invalid continue token "${token}"`);
  if (!/^[A-Za-z0-9_-]*$/.test(token)) throw fail();
  let doc: unknown;
  try {
    doc = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
  } catch {
    throw fail();
  }
  if (!isJsonObject(doc) || !isJsonObject(doc['live']) || !isJsonObject(doc['rv'])) throw fail();
  const live: Record<string, string | null> = {};
  for (const [c, v] of Object.entries(doc['live'])) {
    if (!SOURCE.test(c) || (v !== null && typeof v !== 'string')) throw fail();
    live[c] = v;
  }
  const rv: Record<string, string> = {};
  for (const [c, v] of Object.entries(doc['rv'])) {
    if (!CLUSTER_NAME.test(c) || typeof v !== 'string' || !/^[0-9]+$/.test(v)) throw fail();
    rv[c] = v;
  }
  if (doc['kind'] !== undefined && (typeof doc['kind'] !== 'string' || typeof doc['apiVersion'] !== 'string')) throw fail();
  return { live, rv, ...(typeof doc['kind'] === 'string' ? { kind: doc['kind'], apiVersion: doc['apiVersion'] as string } : {}) };
}

/** A tenant's live continue token, opened: one it was not given by this flotilla has expired for it. */
export function unsealedForTenant(token: string): string {
  const open = unseal(token);
  if (open === undefined) throw expired('the continue token is not one this flotilla gave, or has expired: list again from the start');
  return open;
}

/** A page's limit shared among the members asked for it, in their order: some get one more, none more than the page holds. */
export function shareLimit(limit: number, clusters: readonly string[]): Map<string, number> {
  const out = new Map<string, number>();
  const base = Math.floor(limit / clusters.length);
  const extra = limit % clusters.length;
  clusters.forEach((c, i) => out.set(c, base + (i < extra ? 1 : 0)));
  return out;
}

