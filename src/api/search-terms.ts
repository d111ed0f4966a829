import { validateLabelKey, type LabelRequirement, type LabelSelector } from './label-selector.js';
import { badRequest } from './status.js';

/**
 * Fleet search terms: label-selector requirements (and query parameters of the same names) under
 * flotilla's own prefixes, so kubectl, client-go and every client pass them unchanged. They select
 * members and objects as flotilla knows them (view/step-search.ts); the rest of the selector is an
 * ordinary label selector. A key under these prefixes that flotilla does not know is a 400.
 */
export const SEARCH_PREFIX = 'search.flotilla.io/';
/** `cluster.search.flotilla.io/<label>`: members by their fleet-file labels. */
export const CLUSTER_LABEL_PREFIX = 'cluster.search.flotilla.io/';

export const CLUSTER_TERM = `${SEARCH_PREFIX}cluster`;
export const NAME_CONTAINS_TERM = `${SEARCH_PREFIX}name-contains`;
export const NAME_PREFIX_TERM = `${SEARCH_PREFIX}name-prefix`;
export const OWNER_UID_TERM = `${SEARCH_PREFIX}owner-uid`;
export const OWNER_KIND_TERM = `${SEARCH_PREFIX}owner-kind`;
export const OWNER_NAME_TERM = `${SEARCH_PREFIX}owner-name`;
export const OWNER_DEPTH_TERM = `${SEARCH_PREFIX}owner-depth`;
export const CREATED_AFTER_TERM = `${SEARCH_PREFIX}created-after`;
export const CREATED_BEFORE_TERM = `${SEARCH_PREFIX}created-before`;

const KNOWN_TERMS: readonly string[] = [CLUSTER_TERM, NAME_CONTAINS_TERM, NAME_PREFIX_TERM, OWNER_UID_TERM, OWNER_KIND_TERM, OWNER_NAME_TERM, OWNER_DEPTH_TERM, CREATED_AFTER_TERM, CREATED_BEFORE_TERM];

/** Whether a label-selector key (or query parameter) is a search term: flotilla's, never a member's. */
export function isSearchKey(key: string): boolean {
  return key.startsWith(SEARCH_PREFIX) || key.startsWith(CLUSTER_LABEL_PREFIX);
}

/** A creation-time bound: epoch milliseconds, and the same instant as a creationTimestamp is written, rounded up to the second. */
export interface TimeBound {
  ms: number;
  /** `2026-11-28T00:00:00Z`: compared with a stored creationTimestamp as text, without parsing it. */
  text: string;
}

export interface SearchTerms {
  /** Requirements on a member's name (key CLUSTER_TERM). */
  clusterNames: LabelSelector;
  /** Requirements on a member's fleet-file labels (keys without CLUSTER_LABEL_PREFIX). */
  clusterLabels: LabelSelector;
  /** Lower-cased: each must be in the name. */
  nameContains: readonly string[];
  /** Lower-cased: the name must start with each. */
  namePrefixes: readonly string[];
  /** Created at or after (the latest such bound given). */
  createdAfter?: TimeBound;
  /** Created before (the earliest such bound given). */
  createdBefore?: TimeBound;
  owner?: { uid: string } | { kind: string; name: string };
  /** Levels of ownership followed (1: direct children); undefined: every level. */
  ownerDepth?: number;
}

/** A label selector's requirements apart: the ordinary ones (the members' and the label index's) and the search terms. */
export function splitSearchTerms(selector: LabelSelector): { rest: LabelSelector; terms: SearchTerms | undefined } {
  const search = selector.filter((r) => isSearchKey(r.key));
  if (search.length === 0) return { rest: selector, terms: undefined };
  return { rest: selector.filter((r) => !isSearchKey(r.key)), terms: termsOf(search) };
}

/**
 * Search terms given as query parameters (`?search.flotilla.io/name-contains=abc`), each value
 * one `=` requirement; several values of a cluster term are `in` (any of them). Values may hold
 * what a label value cannot (`:`, so RFC 3339 times). `params`: every parameter with its values.
 */
export function searchTermsOfQuery(params: Iterable<readonly [string, readonly string[]]>): SearchTerms | undefined {
  const reqs: LabelRequirement[] = [];
  for (const [key, values] of params) {
    if (!isSearchKey(key) || values.length === 0) continue;
    if (key.startsWith(CLUSTER_LABEL_PREFIX)) {
      const problem = validateLabelKey(key.slice(CLUSTER_LABEL_PREFIX.length));
      if (problem) throw badRequest(`search term ${JSON.stringify(key)}: ${problem}`);
    }
    if (values.length > 1 && (key === CLUSTER_TERM || key.startsWith(CLUSTER_LABEL_PREFIX))) reqs.push({ key, operator: 'In', values: [...values] });
    else for (const v of values) reqs.push({ key, operator: 'Equals', values: [v] });
  }
  return reqs.length > 0 ? termsOf(reqs) : undefined;
}

/**
 * Terms from the label selector and from the query, as one: every requirement holds (the time
 * bounds the narrowest), one owner at most. An owner's terms must be whole (kind with name, a depth
 * only with an owner): 400 naming what is missing.
 */
export function combineSearchTerms(a: SearchTerms | undefined, b: SearchTerms | undefined): SearchTerms | undefined {
  const both = a && b ? joined(a, b) : a ?? b;
  if (!both) return undefined;
  if (both.ownerDepth !== undefined && both.owner === undefined) throw badRequest(`search term ${JSON.stringify(OWNER_DEPTH_TERM)} needs ${OWNER_UID_TERM}, or ${OWNER_KIND_TERM} with ${OWNER_NAME_TERM}`);
  return both;
}

function joined(a: SearchTerms, b: SearchTerms): SearchTerms {
  return withOptional({
    clusterNames: [...a.clusterNames, ...b.clusterNames],
    clusterLabels: [...a.clusterLabels, ...b.clusterLabels],
    nameContains: [...a.nameContains, ...b.nameContains],
    namePrefixes: [...a.namePrefixes, ...b.namePrefixes],
  }, {
    createdAfter: later(a.createdAfter, b.createdAfter),
    createdBefore: earlier(a.createdBefore, b.createdBefore),
    owner: sameOwner(a.owner, b.owner),
    ownerDepth: same(OWNER_DEPTH_TERM, a.ownerDepth, b.ownerDepth),
  });
}

function withOptional(base: SearchTerms, optional: Partial<SearchTerms>): SearchTerms {
  const out: SearchTerms = { ...base };
  for (const [k, v] of Object.entries(optional)) if (v !== undefined) (out as unknown as Record<string, unknown>)[k] = v;
  return out;
}

function later(a: TimeBound | undefined, b: TimeBound | undefined): TimeBound | undefined {
  return a && b ? (a.ms >= b.ms ? a : b) : a ?? b;
}

function earlier(a: TimeBound | undefined, b: TimeBound | undefined): TimeBound | undefined {
  return a && b ? (a.ms <= b.ms ? a : b) : a ?? b;
}

function same<T>(term: string, a: T | undefined, b: T | undefined): T | undefined {
  if (a !== undefined && b !== undefined && a !== b) throw badRequest(`search term ${JSON.stringify(term)} is given twice, with different values`);
  return a ?? b;
}

function sameOwner(a: SearchTerms['owner'], b: SearchTerms['owner']): SearchTerms['owner'] {
  if (a && b && JSON.stringify(a) !== JSON.stringify(b)) throw badRequest(`search terms name two owners (${OWNER_UID_TERM}, ${OWNER_KIND_TERM}, ${OWNER_NAME_TERM}): give one`);
  return a ?? b;
}

/** The terms of search requirements, each checked: a known term, an operator it takes, a value it reads. */
function termsOf(reqs: readonly LabelRequirement[]): SearchTerms {
  const clusterNames: LabelRequirement[] = [];
  const clusterLabels: LabelRequirement[] = [];
  const nameContains: string[] = [];
  const namePrefixes: string[] = [];
  let createdAfter: TimeBound | undefined;
  let createdBefore: TimeBound | undefined;
  let uid: string | undefined;
  let kind: string | undefined;
  let name: string | undefined;
  let ownerDepth: number | undefined;
  for (const r of reqs) {
    if (r.key.startsWith(CLUSTER_LABEL_PREFIX)) {
      const label = r.key.slice(CLUSTER_LABEL_PREFIX.length);
      if (label === '') throw badRequest(`search term ${JSON.stringify(r.key)} names no label: ${CLUSTER_LABEL_PREFIX}<label>`);
      clusterLabels.push({ ...r, key: label });
      continue;
    }
    if (r.key === CLUSTER_TERM) {
      clusterNames.push(r);
      continue;
    }
    if (!KNOWN_TERMS.includes(r.key)) {
      throw badRequest(`unknown search term ${JSON.stringify(r.key)}: flotilla knows ${KNOWN_TERMS.join(', ')} and ${CLUSTER_LABEL_PREFIX}<label>`);
    }
    if (r.operator !== 'Equals') throw badRequest(`search term ${JSON.stringify(r.key)} takes "=" only`);
    const value = r.values[0] ?? '';
    switch (r.key) {
      case NAME_CONTAINS_TERM:
        nameContains.push(value.toLowerCase());
        break;
      case NAME_PREFIX_TERM:
        namePrefixes.push(value.toLowerCase());
        break;
      case CREATED_AFTER_TERM:
        createdAfter = later(createdAfter, timeBound(r.key, value));
        break;
      case CREATED_BEFORE_TERM:
        createdBefore = earlier(createdBefore, timeBound(r.key, value));
        break;
      case OWNER_UID_TERM:
        uid = same(r.key, uid, nonEmpty(r.key, value));
        break;
      case OWNER_KIND_TERM:
        kind = same(r.key, kind, nonEmpty(r.key, value));
        break;
      case OWNER_NAME_TERM:
        name = same(r.key, name, nonEmpty(r.key, value));
        break;
      case OWNER_DEPTH_TERM:
        ownerDepth = same(r.key, ownerDepth, depthOf(value));
        break;
    }
  }
  if (uid !== undefined && (kind !== undefined || name !== undefined)) throw badRequest(`search terms ${OWNER_UID_TERM} and ${OWNER_KIND_TERM}/${OWNER_NAME_TERM} name an owner two ways: give one`);
  if ((kind === undefined) !== (name === undefined)) throw badRequest(`search term ${JSON.stringify(kind === undefined ? OWNER_NAME_TERM : OWNER_KIND_TERM)} needs ${kind === undefined ? OWNER_KIND_TERM : OWNER_NAME_TERM} too`);
  const owner = uid !== undefined ? { uid } : kind !== undefined && name !== undefined ? { kind, name } : undefined;
  return withOptional({ clusterNames, clusterLabels, nameContains, namePrefixes }, { createdAfter, createdBefore, owner, ownerDepth });
}

function nonEmpty(term: string, value: string): string {
  if (value === '') throw badRequest(`search term ${JSON.stringify(term)} needs a value`);
  return value;
}

function depthOf(value: string): number {
  if (!/^[1-9][0-9]{0,5}$/.test(value)) throw badRequest(`search term ${JSON.stringify(OWNER_DEPTH_TERM)}: ${JSON.stringify(value)} is not a positive integer`);
  return Number(value);
}

// Unix seconds up to the end of year 9999 (a creationTimestamp's four-digit year).
const MAX_SECONDS = 253402300799;
const RFC3339 = /^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?([Zz]|[+-][0-9]{2}:[0-9]{2})$/;

/**
 * A time term's value: Unix seconds, a date (`2026-11-28`, midnight UTC), or RFC 3339 (which only
 * a query parameter can carry: a label value cannot hold `:`). 400 naming the term otherwise.
 */
export function timeBound(term: string, value: string): TimeBound {
  let ms = NaN;
  if (/^[0-9]{1,12}$/.test(value) && Number(value) <= MAX_SECONDS) ms = Number(value) * 1000;
  else if (/^[0-9]{4}-[0-9]{2}-[0-9]{2}$/.test(value)) {
    ms = Date.parse(`${value}T00:00:00Z`);
    // Date.parse rolls 2026-02-30 over to March: a date that is not one is refused.
    if (!Number.isNaN(ms) && new Date(ms).toISOString().slice(0, 10) !== value) ms = NaN;
  } else if (RFC3339.test(value)) ms = Date.parse(value.toUpperCase());
  if (Number.isNaN(ms) || ms < 0 || ms > MAX_SECONDS * 1000) {
    throw badRequest(`search term ${JSON.stringify(term)}: ${JSON.stringify(value)} is not Unix seconds or a date (2026-11-28); as a query parameter, RFC 3339 (2026-11-28T10:00:00Z) too`);
  }
  // Stored creationTimestamps are whole seconds: at or after, and before, a bound inside a second
  // are at or after, and before, the next whole second.
  const whole = Math.ceil(ms / 1000) * 1000;
  return { ms, text: `${new Date(whole).toISOString().slice(0, 19)}Z` };
}
