import { matchesLabels, parseLabelSelector } from '../api/label-selector.js';
import { CLUSTER_TERM, combineSearchTerms, splitSearchTerms, type SearchTerms, type TimeBound } from '../api/search-terms.js';
import { CRDS, resourceName } from '../tenancy/tenant.js';
import { isGet } from './step-label-selector.js';
import { NAME_GENERATED_KEY, NAME_PAIR_KEY, NAME_TOKEN_KEY, PAIR_JOIN, TOKEN_END, isIndexed, isWord, type PairMatch, type TokenMatch } from '../store/name-index.js';
import { CREATED_FIELD, fieldIndexKey } from '../store/meta-record.js';
import type { IndexLookup, ObjectPredicate, RangeLookup, ViewedMeta, ViewedObject } from './read-view.js';
import type { ViewRequest, ViewStep } from './view-step.js';

/**
 * Fleet search (api/search-terms.ts): members by name and fleet-file labels, objects by name and
 * creation time, and by owner. It runs after the steps deciding what the caller may read, so a
 * search only ever narrows that: it never returns, counts or hints at anything else (an owner is
 * one the caller may read, in the members left: ViewRequest.ownersFound). Names are matched as the caller is shown them (a
 * tenant's without its prefix). A get applies the terms given as query parameters (404 for an
 * object they leave out); the label selector, terms and all, it ignores, as the apiserver does.
 */
export const searchSelection: ViewStep = {
  name: 'search',
  apply(view, req) {
    const terms = searchTermsOf(req);
    if (!terms) return;
    if (terms.clusterLabels.length > 0) view.keepLabelledClusters((c) => clusterSought(terms, req, c));
    else if (terms.clusterNames.length > 0) view.keepClusters((c) => clusterSought(terms, req, c));
    if (terms.nameContains.length > 0 || terms.namePrefixes.length > 0) view.require(namePredicate(terms, req));
    if (terms.createdAfter !== undefined || terms.createdBefore !== undefined) view.require(createdPredicate(terms.createdAfter, terms.createdBefore));
    if (terms.owner !== undefined) {
      // Only owners the caller may read, in the members left: another would be named by the answer.
      const found = (req.ownersFound ?? []).filter((f) => view.clustersLeft.includes(f.cluster));
      view.require(req.owners && found.length > 0 ? req.owners.ownedBy(found, terms.ownerDepth) : NOTHING_OWNED);
    }
  },
};

const NO_LABELS: Readonly<Record<string, string>> = Object.freeze({});

/** No owner found: nothing is owned. */
const NOTHING_OWNED: ObjectPredicate = { name: 'search:owner-not-found', needsMeta: false, test: () => false };

/** The request's search terms: its label selector's (not a get's) and its query parameters'. */
export function searchTermsOf(req: ViewRequest): SearchTerms | undefined {
  const inSelector = req.labelSelector && !isGet(req) ? splitSearchTerms(parseLabelSelector(req.labelSelector)).terms : undefined;
  return combineSearchTerms(inSelector, req.search);
}

function selectsClusters(terms: SearchTerms): boolean {
  return terms.clusterNames.length > 0 || terms.clusterLabels.length > 0;
}

/**
 * Whether the request's cluster terms keep a member (every member, without cluster terms), by its
 * labels as the fleet file has them now: what the search looks at, whatever the caller may read.
 */
export function clusterSought(terms: SearchTerms | undefined, req: Pick<ViewRequest, 'clusterLabels'>, cluster: string): boolean {
  return !terms || !selectsClusters(terms) || clusterSelected(terms, cluster, req.clusterLabels?.(cluster) ?? NO_LABELS);
}

/** Whether a member meets the cluster terms: by its name, and by its fleet-file labels. */
export function clusterSelected(terms: SearchTerms, cluster: string, labels: Readonly<Record<string, string>>): boolean {
  return matchesLabels(terms.clusterNames, { [CLUSTER_TERM]: cluster }) && matchesLabels(terms.clusterLabels, labels as Record<string, string>);
}

/**
 * Where the name the caller is shown starts in the stored one, or the shown name itself when it is
 * not a suffix of the stored one (a tenant's CRDs, `widgets.acme.example.com` shown as
 * `widgets.example.com`).
 */
interface ShownName {
  readonly id: string;
  from(name: string): number;
  renamed?(name: string): string;
}

const AS_STORED: ShownName = { id: '', from: () => 0 };

function shownNameOf(req: ViewRequest): ShownName {
  const naming = req.tenant;
  const info = req.resource.info;
  if (!naming || info.namespaced) return AS_STORED;
  const { tenant } = naming;
  if (tenant.policy(info.group, info.resource, false) !== 'owned') return AS_STORED;
  if (resourceName(info.group, info.resource) === CRDS) {
    return { id: `tenant-crds:${tenant.id}`, from: () => 0, renamed: (name) => tenant.tenantName(info.group, info.resource, name, 'owned') ?? name };
  }
  // Owned names are the tenant's prefix and the name it gives (tenant.tenantName, without a copy).
  const prefix = tenant.prefix;
  return { id: `tenant:${tenant.id}`, from: (name) => (name.length > prefix.length && name.startsWith(prefix) ? prefix.length : 0) };
}

/** name-contains and name-prefix, case-insensitive, on the name as shown; needles lower-cased once, names never copied. */
function namePredicate(terms: SearchTerms, req: ViewRequest): ObjectPredicate {
  const contains = terms.nameContains;
  const prefixes = terms.namePrefixes;
  const shown = shownNameOf(req);
  const renamed = shown.renamed;
  // A renamed name is not the stored one the index holds; a tenant's prefix ends a token, so the name shown starts one.
  const lookups = renamed ? [] : nameLookups(contains, prefixes);
  return {
    name: `search:name:${JSON.stringify([contains, prefixes, shown.id])}`,
    needsMeta: false,
    ...(lookups.length > 0 ? { indexLookups: () => lookups } : {}),
    test(o: ViewedObject): boolean {
      const name = renamed ? renamed(o.name) : o.name;
      const from = shown.from(name);
      for (const p of prefixes) if (!foldedAt(name, from, p)) return false;
      for (const c of contains) if (!containsFolded(name, from, c)) return false;
      return true;
    },
  };
}

/**
 * The name index's lookups, each holding every object whose shown name meets the terms, narrowest
 * first (at most NAME_LOOKUPS_MAX: the list reads the smallest and probes the others per object).
 * A term's pieces between token ends are whole tokens (a prefix's first piece too: the name starts
 * there), its last piece starts a token, and a contains term's first piece ends one, as does the
 * whole of a term without a token end. Only words and long generated tokens are indexed
 * (store/name-index.ts, isIndexed): another piece gives no lookup of its own. Two adjacent pieces
 * whose first is a word are also a pair lookup: the narrowest, as both must meet.
 */
export function nameLookups(contains: readonly string[], prefixes: readonly string[]): IndexLookup[] {
  const found: { rank: number; id: string; length: number; lookup: IndexLookup }[] = [];
  const add = (rank: number, piece: string, id: string, lookup: IndexLookup) => {
    if (!found.some((f) => f.id === id)) found.push({ rank, id, length: piece.length, lookup });
  };
  const consider = (rank: number, piece: string, match?: TokenMatch) => {
    if (isWord(piece)) add(rank, piece, `${piece}/${match ?? ''}`, { key: NAME_TOKEN_KEY, values: [piece], ...(match ? { match } : {}) });
    else if (isIndexed(piece, match === 'containing')) add(rank, piece, `${piece}/${match ?? ''}`, { key: NAME_GENERATED_KEY, values: [piece], place: { kind: 'generated', needle: piece, ...(match ? { match } : {}) } });
  };
  const considerPair = (first: string, second: string, match: PairMatch) => {
    // Pairs start with a word: a pair entry, or a long generated token's place with the word before it (NameIndex.keysOf).
    if (!isWord(first)) return;
    const pair = first + PAIR_JOIN + second;
    add(0, pair, `${pair}/${match.first}/${match.second}`, { key: NAME_PAIR_KEY, values: [first, second], place: { kind: 'pair', first, second, match } });
  };
  const pieces = (term: string, whole: boolean) => {
    const parts = term.split(TOKEN_END);
    const last = parts.length - 1;
    if (last === 0) {
      consider(whole ? 2 : 3, parts[0]!, whole ? 'prefixed' : 'containing');
      return;
    }
    for (let i = 1; i < last; i++) consider(1, parts[i]!);
    consider(2, parts[last]!, 'prefixed');
    if (whole) consider(1, parts[0]!);
    else consider(3, parts[0]!, 'containing');
    for (let i = 0; i < last; i++) considerPair(parts[i]!, parts[i + 1]!, { first: i === 0 && !whole ? 'ending' : 'whole', second: i + 1 === last ? 'prefixed' : 'whole' });
  };
  for (const p of prefixes) pieces(p, true);
  for (const c of contains) pieces(c, false);
  // Pairs first, then whole tokens, then starts, then insides; the longer piece first within each.
  found.sort((a, b) => a.rank - b.rank || b.length - a.length);
  return found.slice(0, NAME_LOOKUPS_MAX).map((f) => f.lookup);
}

/** Name lookups a list is given: finding the smallest steps through each in turn. */
const NAME_LOOKUPS_MAX = 3;

/**
 * Whether `needle` (lower-case) is in `text` from `from` on, ignoring case. V8 lower-cases a name
 * without upper-case characters (most Kubernetes names: DNS names) by returning it as it is, so
 * only a name that has some is copied. `from` is past an ASCII prefix (a tenant's), which
 * lower-casing leaves where it is.
 */
export function containsFolded(text: string, from: number, needle: string): boolean {
  return text.toLowerCase().indexOf(needle, from) !== -1;
}

/** Whether `text` continues at `from` with `needle` (lower-case), ignoring case. */
export function foldedAt(text: string, from: number, needle: string): boolean {
  return text.toLowerCase().startsWith(needle, from);
}

/** created-after (at or after) and created-before (before), on the meta record's creationTimestamp. */
function createdPredicate(after: TimeBound | undefined, before: TimeBound | undefined): ObjectPredicate {
  // The creation-time index's range of the same bounds: its entries are whole-second texts, as the bounds are.
  const range: RangeLookup = { key: fieldIndexKey(CREATED_FIELD), ...(after ? { from: after.text } : {}), ...(before ? { to: before.text } : {}) };
  return {
    name: `search:created:${after?.ms ?? ''}..${before?.ms ?? ''}`,
    needsMeta: true,
    indexRange: () => range,
    test(_o: ViewedObject, meta: () => ViewedMeta): boolean {
      const created = meta()?.created;
      if (created === undefined) return false;
      // A creationTimestamp as the apiserver writes it (`2026-11-28T10:00:00Z`) orders as text.
      if (created.length === 20 && created.charCodeAt(19) === 90 && created.charCodeAt(10) === 84) {
        return (after === undefined || created >= after.text) && (before === undefined || created < before.text);
      }
      const ms = Date.parse(created);
      return !Number.isNaN(ms) && (after === undefined || ms >= after.ms) && (before === undefined || ms < before.ms);
    },
  };
}
