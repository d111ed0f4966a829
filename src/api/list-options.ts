import { badRequest, invalid } from './status.js';
import { isSearchKey, searchTermsOfQuery, type SearchTerms } from './search-terms.js';

/**
 * List and watch options read from a request's query as the apiserver reads them: one reader
 * for every read path (a whole read request by parseReadRequest, for cached reads in
 * router/reads/cached.ts; single options for live reads in forward/live/ and the
 * request-timeout check), so that a request is answered alike whichever path serves it. Each
 * takes a parameter's first value; undefined or null is a parameter not given.
 */
export type QueryValue = string | null | undefined;

const INT64_MAX = 2n ** 63n - 1n;

/** A non-negative integer query parameter as the apiserver reads it (an int64); 400 otherwise. */
export function int64Param(name: string, text: QueryValue): number | undefined {
  if (text === undefined || text === null) return undefined;
  if (!/^[0-9]{1,19}$/.test(text) || BigInt(text) > INT64_MAX) throw badRequest(`invalid ${name}: ${JSON.stringify(text)}`);
  return Number(text);
}

/** Whether the `watch` parameter asks for a watch. */
export function watchRequested(text: QueryValue): boolean {
  return text === 'true' || text === '1';
}

/**
 * A list that continues from a token and names a resourceVersion (other than "0") is 422, as the
 * apiserver answers it: the token already names the snapshot the list reads.
 */
export function refuseVersionWithContinue(resourceVersion: QueryValue): void {
  if (!resourceVersion || resourceVersion === '0') return;
  const message = 'specifying resource version is not allowed when using continue';
  throw invalid(`ListOptions.meta.k8s.io "" is invalid: resourceVersion: ${message}`, [{ reason: 'FieldValueInvalid', field: 'resourceVersion', message }]);
}

/** A query as a router hands it over: each parameter's values, the first one read. */
export type ReadQuery = Readonly<Record<string, string | readonly string[] | undefined>>;

/** A query parameter's first value, from fastify's parsed query or the URL's own parameters. */
export function one(query: ReadQuery | URLSearchParams, name: string): string | undefined {
  if (query instanceof URLSearchParams) return query.get(name) ?? undefined;
  const v = query[name];
  return typeof v === 'string' ? v : v?.[0];
}

export type ReadVerb = 'get' | 'list' | 'watch';
export type IncludeObject = 'Metadata' | 'Object' | 'None';
const INCLUDE_OBJECT: readonly string[] = ['Metadata', 'Object', 'None'] satisfies IncludeObject[];

/**
 * A get, list or watch as its query asks it, read and checked once: the watch options
 * (timeoutSeconds, allowWatchBookmarks, sendInitialEvents), the list options (limit, continue,
 * resourceVersion and resourceVersionMatch) and what every read may say (includeObject, the
 * selectors, which each reader parses in its own terms).
 */
export interface ReadRequest {
  verb: ReadVerb;
  /** '' when not given. */
  resourceVersion: string;
  resourceVersionMatch?: 'Exact' | 'NotOlderThan';
  /** A watch's; undefined for 0 and for other verbs. */
  timeoutSeconds?: number;
  allowWatchBookmarks: boolean;
  sendInitialEvents: boolean;
  /** A list's page size; undefined for 0 (no limit) and for other verbs. */
  limit?: number;
  /** A list's continue token as given (its reader decodes it); undefined when empty. */
  continue?: string;
  includeObject?: IncludeObject;
  labelSelector?: string;
  fieldSelector?: string;
  /**
   * Search terms given as query parameters (`?search.flotilla.io/name-contains=abc`,
   * api/search-terms.ts); those inside the label selector are read with it (view/step-search.ts).
   */
  search?: SearchTerms;
}

/**
 * Reads a get (the path names an object), list or watch from its query, refusing what the
 * apiserver refuses: an unknown includeObject (400), resourceVersionMatch and sendInitialEvents
 * where they may not stand (422, every cause at once), a limit or timeoutSeconds that is not an
 * int64 (400), a resourceVersion beside a continue token (422). In that order.
 */
export function parseReadRequest(query: ReadQuery | URLSearchParams, named: boolean): ReadRequest {
  const watching = watchRequested(one(query, 'watch'));
  const verb: ReadVerb = watching ? 'watch' : named ? 'get' : 'list';
  const includeObject = one(query, 'includeObject');
  if (includeObject !== undefined && !INCLUDE_OBJECT.includes(includeObject)) throw badRequest(`unrecognized includeObject value: "${includeObject}"`);
  const resourceVersion = one(query, 'resourceVersion') ?? '';
  const resourceVersionMatch = one(query, 'resourceVersionMatch');
  const sendInitialEvents = one(query, 'sendInitialEvents');
  const allowWatchBookmarks = one(query, 'allowWatchBookmarks') === 'true';
  validateListOptions({ watching, rv: resourceVersion, rvMatch: resourceVersionMatch, sendInitialEvents, bookmarks: allowWatchBookmarks });
  const timeoutSeconds = watching ? int64Param('timeoutSeconds', one(query, 'timeoutSeconds')) : undefined;
  const limit = verb === 'list' ? int64Param('limit', one(query, 'limit')) : undefined;
  const continueText = verb === 'list' ? one(query, 'continue') : undefined;
  if (continueText) refuseVersionWithContinue(resourceVersion);
  const labelSelector = one(query, 'labelSelector');
  const fieldSelector = one(query, 'fieldSelector');
  const search = searchTermsOfQuery(searchParams(query));
  return {
    verb,
    resourceVersion,
    ...(resourceVersionMatch !== undefined ? { resourceVersionMatch: resourceVersionMatch as 'Exact' | 'NotOlderThan' } : {}),
    ...(timeoutSeconds ? { timeoutSeconds } : {}),
    allowWatchBookmarks,
    sendInitialEvents: sendInitialEvents === 'true',
    ...(limit ? { limit } : {}),
    ...(continueText ? { continue: continueText } : {}),
    ...(includeObject !== undefined ? { includeObject: includeObject as IncludeObject } : {}),
    ...(labelSelector !== undefined ? { labelSelector } : {}),
    ...(fieldSelector !== undefined ? { fieldSelector } : {}),
    ...(search ? { search } : {}),
  };
}

/** The query's search-term parameters, each with all its values. */
function searchParams(query: ReadQuery | URLSearchParams): [string, readonly string[]][] {
  if (query instanceof URLSearchParams) {
    const keys = [...new Set([...query.keys()].filter(isSearchKey))];
    return keys.map((k) => [k, query.getAll(k)]);
  }
  const out: [string, readonly string[]][] = [];
  for (const k in query) {
    if (!isSearchKey(k)) continue;
    const v = query[k];
    out.push([k, typeof v === 'string' ? [v] : v ?? []]);
  }
  return out;
}

/** The apiserver's rules for combining resourceVersion, resourceVersionMatch and watch-list. */
function validateListOptions(o: { watching: boolean; rv: string; rvMatch?: string; sendInitialEvents?: string; bookmarks: boolean }): void {
  const causes: { field: string; message: string }[] = [];
  if (o.rvMatch !== undefined && o.rvMatch !== 'NotOlderThan' && o.rvMatch !== 'Exact') {
    causes.push({ field: 'resourceVersionMatch', message: `unsupported value "${o.rvMatch}": supported values: "Exact", "NotOlderThan"` });
  }
  if (o.sendInitialEvents !== undefined) {
    if (!o.watching) causes.push({ field: 'sendInitialEvents', message: 'sendInitialEvents is forbidden for list' });
    if (o.rvMatch !== 'NotOlderThan') causes.push({ field: 'resourceVersionMatch', message: 'sendInitialEvents requires setting resourceVersionMatch to NotOlderThan' });
    if (o.watching && !o.bookmarks) causes.push({ field: 'allowWatchBookmarks', message: 'sendInitialEvents requires setting allowWatchBookmarks to true' });
  } else if (o.rvMatch !== undefined) {
    if (o.watching) causes.push({ field: 'resourceVersionMatch', message: 'resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided' });
    else if (!o.rv) causes.push({ field: 'resourceVersionMatch', message: 'resourceVersionMatch is forbidden unless resourceVersion is provided' });
    else if (o.rvMatch === 'Exact' && o.rv === '0') causes.push({ field: 'resourceVersionMatch', message: 'resourceVersionMatch "exact" is forbidden for resourceVersion "0"' });
  }
  if (causes.length) throw invalid(`ListOptions.meta.k8s.io "" is invalid: ${causes.map((c) => `${c.field}: ${c.message}`).join(', ')}`, causes.map((c) => ({ reason: 'FieldValueInvalid', ...c })));
}
