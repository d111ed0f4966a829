import type { FastifyReply, FastifyRequest } from 'fastify';
import type { CachedResource, ResourceCatalog } from '../../cacher/cache-roles.js';
import { groupVersion, gvrKey, namesResource } from '../../api/resource-info.js';
import { decodeContinue } from '../../api/continue-token.js';
import { int64Param, one, parseReadRequest, type ReadQuery as Query } from '../../api/list-options.js';
import { NAME_CONTAINS_TERM } from '../../api/search-terms.js';
import { StatusError, badRequest } from '../../api/status.js';
import { listResponse } from '../../mux/reads.js';
import type { SnapshotRegistry } from '../../mux/snapshots.js';
import type { Store } from '../../store/store.js';
import { decodeBase64urlJson, encodeBase64urlJson } from '../../util/base64url-json.js';
import { FIND_DEFAULT_LIMIT, FIND_MAX_LIMIT } from '../../registry/defaults.js';
import { callerView, type CallerViewDeps } from './caller-view.js';

/**
 * One search across every cached kind the caller may read:
 * `GET /apis/search.flotilla.io/v1alpha1/find?q=checkout&kinds=pods,deployments.apps`. Each kind is
 * read as a list of it would be (caller-view.ts: the caller's view, the search terms of
 * api/search-terms.ts in `labelSelector` or as parameters, `q` being name-contains), in metadata
 * form, kind after kind in a fixed order, until the page is full. A kind the caller may not list
 * anywhere is left out without a word: the answer never names or counts what it hides. Not in
 * discovery (kubectl would take the group for resources to list); `kubectl flotilla find` reads it.
 */
export const FIND_PATH = '/apis/search.flotilla.io/v1alpha1/find';

export interface FindDeps extends CallerViewDeps {
  catalog: ResourceCatalog;
  store: Store;
  snapshots: SnapshotRegistry;
}

/** Where the next page starts: a kind (gvrKey), and the continue token of its list when it was cut within it. */
interface FindToken {
  kind: string;
  list?: string;
}

/** An object found: its kind and its metadata as a list of its kind would show it (cluster annotation included). */
interface Found {
  apiVersion: string;
  kind: string;
  metadata: Record<string, unknown>;
}

/** The parameters find reads itself; the rest are a list's (labelSelector, fieldSelector, search terms). */
const OWN_PARAMETERS = new Set(['q', 'kinds', 'namespace', 'limit', 'continue']);

export function findHandler(deps: FindDeps): (req: FastifyRequest, reply: FastifyReply) => Promise<FastifyReply> {
  return async (req, reply) => {
    const query = req.query as Query;
    const q = one(query, 'q');
    const limit = pageSize(one(query, 'limit'));
    const token = one(query, 'continue');
    const start = token ? decodeFindToken(token) : undefined;
    // Tenants never get here: their boundary serves only the groups their policy names (404).
    const namespace = one(query, 'namespace') || undefined;
    const kinds = kindsAsked(deps.catalog.cachedResources(), one(query, 'kinds'));
    // A list's own options, with `q` as a name-contains term (parsed, and refused, as one).
    const listQuery: Record<string, string | readonly string[] | undefined> = Object.fromEntries(Object.entries(query).filter(([k]) => !OWN_PARAMETERS.has(k)));
    if (q) listQuery[NAME_CONTAINS_TERM] = q.toLowerCase();
    const base = parseReadRequest(listQuery, false);
    if (base.verb !== 'list') throw badRequest('find answers lists only: watch is not served');
    const items: Found[] = [];
    let next: FindToken | undefined;
    const from = start ? kinds.findIndex((r) => gvrKey(r.info) === start.kind) : 0;
    if (from < 0) throw badRequest('the continue token names a kind this find does not read; start again without it');
    for (let i = from; i < kinds.length && next === undefined; i++) {
      const resource = kinds[i]!;
      const listToken = i === from ? start?.list : undefined;
      const page = await findIn(deps, req, resource, namespace, { ...base, limit: limit - items.length, ...(listToken ? { continue: listToken } : {}) });
      if (page === undefined) continue;
      items.push(...page.items);
      if (page.continue) next = { kind: gvrKey(resource.info), list: page.continue };
      else if (items.length >= limit && i + 1 < kinds.length) next = { kind: gvrKey(kinds[i + 1]!.info) };
    }
    return reply.type('application/json').send({
      kind: 'FindResultList',
      apiVersion: 'search.flotilla.io/v1alpha1',
      metadata: next ? { continue: encodeBase64urlJson(next) } : {},
      items,
    });
  };
}

/** One kind's page of what the caller may read and the terms select; undefined when the caller may not list it anywhere. */
async function findIn(deps: FindDeps, req: FastifyRequest, resource: CachedResource, namespace: string | undefined, options: ReturnType<typeof parseReadRequest>): Promise<{ items: Found[]; continue?: string } | undefined> {
  let view;
  try {
    ({ view } = await callerView(deps, req.raw, resource, { cluster: undefined, namespace: resource.info.namespaced ? namespace : undefined, name: undefined }, options));
  } catch (e) {
    // Refused (403), or flotilla's own rights short there (503): this kind is not searched.
    if (e instanceof StatusError && (e.code === 403 || e.code === 503)) return undefined;
    throw e;
  }
  if (view.clusters.length === 0) return undefined;
  const body = listResponse(deps.store, {
    resource,
    view,
    form: 'metadata',
    limit: options.limit,
    continueToken: options.continue ? decodeContinue(options.continue) : undefined,
    snapshots: deps.snapshots,
    caller: deps.callers.key(req.raw),
  });
  const bytes = Buffer.isBuffer(body) ? body : collect(body);
  const list = JSON.parse(bytes.toString('utf8')) as { metadata?: { continue?: string }; items: { metadata: Record<string, unknown> }[] };
  const apiVersion = groupVersion(resource.info);
  return {
    items: list.items.map((o) => ({ apiVersion, kind: resource.info.kind, metadata: o.metadata })),
    ...(list.metadata?.continue ? { continue: list.metadata.continue } : {}),
  };
}

function collect(body: { chunks: Iterable<Buffer>; done(): void }): Buffer {
  try {
    return Buffer.concat([...body.chunks]);
  } finally {
    body.done();
  }
}

function pageSize(text: string | undefined): number {
  if (text === undefined || text === '') return FIND_DEFAULT_LIMIT;
  const n = int64Param('limit', text)!;
  if (n < 1 || n > FIND_MAX_LIMIT) throw badRequest(`limit must be an integer from 1 to ${FIND_MAX_LIMIT}`);
  return n;
}

function decodeFindToken(token: string): FindToken {
  const t = decodeBase64urlJson(token);
  if (!t || typeof t['kind'] !== 'string' || (t['list'] !== undefined && typeof t['list'] !== 'string')) throw badRequest('the continue token is not one find gave');
  return { kind: t['kind'], ...(typeof t['list'] === 'string' ? { list: t['list'] } : {}) };
}

/**
 * The cached kinds a find reads, in a fixed order (group, then resource), one version of each:
 * all of them, or those `kinds` names (a resource or a Kind, case aside, `.<group>` to choose the
 * group). A name no cached kind has is a 400.
 */
export function kindsAsked(cached: readonly CachedResource[], kinds: string | undefined): CachedResource[] {
  const seen = new Set<string>();
  const all = [...cached]
    .sort((a, b) => `${a.info.group}/${a.info.resource}`.localeCompare(`${b.info.group}/${b.info.resource}`))
    .filter((r) => {
      const key = `${r.info.group}/${r.info.resource}`;
      if (seen.has(key)) return false;
      seen.add(key);
      return true;
    });
  if (!kinds) return all;
  const wanted = kinds.split(',').map((k) => k.trim()).filter((k) => k !== '');
  const picked = new Set<CachedResource>();
  for (const name of wanted) {
    const matches = all.filter((r) => namesResource(name, r.info));
    if (matches.length === 0) throw badRequest(`kinds: flotilla caches no kind named ${JSON.stringify(name)}`);
    for (const m of matches) picked.add(m);
  }
  return all.filter((r) => picked.has(r));
}
