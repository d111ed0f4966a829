import type { CachedResource } from '../cacher/cache-roles.js';
import { gvrKey } from '../api/resource-info.js';
import { decodeGlobalRV, encodeGlobalRV } from '../api/global-rv.js';
import { encodeContinue, type ContinueToken } from '../api/continue-token.js';
import { INDEXED_FIELDS, fieldIndexKey, type MetaRecord } from '../store/meta-record.js';
import { KEY_SEP, type Snapshot, type Store, type StoredEntry } from '../store/store.js';
import { StatusError } from '../api/status.js';
import type { SnapshotRegistry } from './snapshots.js';
import { StateAtRV } from './state-at-rv.js';
import type { IndexLookup, RangeLookup, ReadView } from '../view/read-view.js';
import { INDEX_RANGE_SORT_MAX, NAME_SEARCH_MAX_WORDS } from '../registry/defaults.js';

/**
 * Which stored objects a read serves, before any byte of them is framed: the key ranges a view
 * reads, the label index's candidates instead of a scan, the members' own ranges of a namespace,
 * and a page's bounds (its snapshot, its continue token, the count of what follows).
 */
export interface ReadScope {
  resource: CachedResource;
  /** What this caller's request may see (src/view). */
  view: ReadView;
}

/** A list's scope and where it continues from. */
export interface ListScope extends ReadScope {
  continueToken?: ContinueToken;
}

/** The global RV of what the store holds for a resource: of the clusters the view shows, and only those. */
export function storeRV(store: Store, resource: CachedResource, view: ReadView, snapshot?: Snapshot): string {
  return encodeGlobalRV(viewRVs(store, resource, view, snapshot));
}

export function viewRVs(store: Store, resource: CachedResource, view: ReadView, snapshot?: Snapshot): Record<string, string> {
  const rvs: Record<string, string> = {};
  for (const [c, rv] of Object.entries(store.latestRVs(gvrKey(resource.info), snapshot))) {
    if (view.showsCluster(c)) rvs[c] = rv;
  }
  return rvs;
}

/** A key range of the store a view reads: one cluster's index or all clusters, one namespace or all. */
export interface ViewRange {
  cluster?: string;
  namespace?: string;
  /** What the next key part starts with: the namespace's, or within `namespace` the name's. */
  prefix?: string;
}

/**
 * The ranges that hold everything a view can show, in store key order: one member is read
 * through its own index, a set of namespaces as one range each (sorted, so in key order too).
 */
export function viewRanges(view: ReadView): ViewRange[] {
  if (view.clusters.length === 0) return [];
  const cluster = view.clusters.length === 1 ? view.clusters[0] : undefined;
  const prefix = view.prefix;
  if (view.namespaces === undefined) {
    if (prefix === undefined) return [{ cluster }];
    return [prefix.namespaced ? { cluster, prefix: prefix.value } : { cluster, namespace: '', prefix: prefix.value }];
  }
  return view.namespaces.map((namespace) => (prefix && !prefix.namespaced ? { cluster, namespace, prefix: prefix.value } : { cluster, namespace }));
}

/** One page of a list: its objects, what its metadata says, and the snapshot it was read from. */
export interface PagePlan {
  entries: StoredEntry[];
  /** The fields of the list's metadata: resourceVersion, and continue and remainingItemCount when more follow. */
  listMeta: string;
  snapshot: Snapshot | undefined;
  /** The registry's id of that snapshot, kept for the next page; undefined when no snapshot is held. */
  snapshotId: string | undefined;
  /** No page follows: the snapshot may go once this one is rendered. */
  last: boolean;
  /**
   * A page read at the list's RV from the event log (StateAtRV): its entries' meta records as they
   * were then, and the page's own snapshot, to let go once the page is rendered.
   */
  atRV?: { metaOf(e: StoredEntry): MetaRecord | undefined; done(): void };
}

export interface PageRequest extends ListScope {
  /** Page size; 0 or absent lists everything from the continue point. */
  limit?: number;
  snapshots: SnapshotRegistry;
  /** Whose list this is: snapshots are budgeted per caller. */
  caller: string;
}

/**
 * A page: the pages of one list read one state, the list's RV. The first page takes a snapshot,
 * kept here between requests behind the continue token; a later page whose snapshot is not here
 * (another replica issued the token, or it was let go) reads the current store as it was at the
 * token's RV through the event log (StateAtRV; the caller has waited for the store to reach it).
 * Where the log no longer reaches back to it, 410 carrying a fresh token from the same object on.
 */
export function planPage(store: Store, opts: PageRequest): PagePlan {
  let snapshotId = opts.continueToken?.snap;
  let snapshot: Snapshot | undefined;
  let atRV: StateAtRV | undefined;
  const resource = gvrKey(opts.resource.info);
  if (snapshotId) snapshot = opts.snapshots.get(snapshotId);
  if (opts.continueToken && !snapshot) {
    snapshot = store.snapshot();
    atRV = StateAtRV.read(store, resource, decodeGlobalRV(opts.continueToken.rv), opts.continueToken.start, snapshot);
    if (!atRV) {
      snapshot.done();
      const start = opts.continueToken.start;
      const fresh = encodeContinue({ rv: storeRV(store, opts.resource, opts.view), start: opts.view.presentation?.shownKey?.(start) ?? start });
      throw new StatusError(410, 'Expired', INCONSISTENT_CONTINUE, undefined, undefined, { continue: fresh });
    }
  } else if (!opts.continueToken) {
    ({ id: snapshotId, snapshot } = opts.snapshots.create(opts.caller));
  }
  try {
    return pageOf(store, opts, snapshot, snapshotId, atRV);
  } catch (e) {
    if (atRV) snapshot!.done();
    throw e;
  }
}

function pageOf(store: Store, opts: PageRequest, snapshot: Snapshot | undefined, snapshotId: string | undefined, atRV: StateAtRV | undefined): PagePlan {
  const resource = gvrKey(opts.resource.info);
  const rv = opts.continueToken?.rv ?? storeRV(store, opts.resource, opts.view, snapshot);
  const entries: StoredEntry[] = [];
  let next: StoredEntry | undefined;
  let remaining = 0;
  // A count of key ranges counts what the view hides when it narrows inside them.
  const counting = !opts.view.narrows;
  for (const e of matchingEntries(store, opts, snapshot, atRV)) {
    if (opts.limit && entries.length >= opts.limit) {
      next = e;
      break;
    }
    entries.push(e);
  }
  // remainingItemCount is only given for unfiltered lists, as the apiserver does; LMDB counts
  // the keys from the next object on without reading a single object.
  if (next && counting) {
    for (const range of viewRanges(opts.view)) remaining += store.countFrom(resource, { ...range, startKey: next.key, snapshot });
    // Without selectors or predicates the view decides on an object's key alone.
    if (atRV) remaining += atRV.countCorrection(store, resource, next.key, (e) => opts.view.admits(e, () => undefined), snapshot!);
  }
  let listMeta = `"resourceVersion":${JSON.stringify(rv)}`;
  if (next) {
    const start = opts.view.presentation?.shownKey?.(next.key) ?? next.key;
    listMeta += `,"continue":${JSON.stringify(encodeContinue({ rv, start, ...(snapshotId ? { snap: snapshotId } : {}) }))}`;
    if (counting) listMeta += `,"remainingItemCount":${remaining}`;
  }
  const page: PagePlan = { entries, listMeta, snapshot, snapshotId, last: !next };
  if (atRV) {
    const own = snapshot!;
    page.atRV = { metaOf: (e) => atRV.metaOf(store, resource, e, own), done: () => own.done() };
  }
  return page;
}

// The apiserver's own words for a continue token whose snapshot is gone.
const INCONSISTENT_CONTINUE =
  'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.';

/** The objects the view shows, in key order, from the continue point on. */
export function* matchingEntries(store: Store, opts: ListScope, snapshot: Snapshot | undefined, atRV?: StateAtRV): Generator<StoredEntry> {
  const key = gvrKey(opts.resource.info);
  const { view } = opts;
  const stored = indexedEntries(store, key, opts, snapshot) ?? rangeEntries(store, key, view, opts.continueToken?.start, snapshot);
  const source = atRV ? atRV.entries(stored) : stored;
  // One meta getter for the whole loop, not a closure per object.
  let current: StoredEntry | undefined;
  const metaOfCurrent = atRV
    ? () => (view.needsMeta && current ? atRV.metaOf(store, key, current, snapshot!) : undefined)
    : () => (view.needsMeta && current ? store.metaOf(key, current, snapshot) : undefined);
  for (const e of source) {
    current = e;
    if (!view.admits(e, metaOfCurrent)) continue;
    yield e;
  }
}

function* rangeEntries(store: Store, key: string, view: ReadView, startKey: string | undefined, snapshot: Snapshot | undefined): Generator<StoredEntry> {
  for (const range of viewRanges(view)) {
    if (range.namespace !== undefined && range.cluster === undefined) {
      // A namespace the caller may read in a few of the members only: their own index ranges.
      const clusters = view.clustersIn(range.namespace);
      if (clusters.length * OWN_RANGES_BELOW <= view.clusters.length) {
        yield* clustersOfNamespace(store, key, range.namespace, clusters, startKey, snapshot);
        continue;
      }
    }
    yield* store.entries(key, { ...range, startKey, snapshot });
  }
}

/**
 * Reading a namespace's objects member by member (each member's own index, then an LMDB read per
 * object) costs three to four times the namespace's range per object read (bench authz); it pays
 * when the range would read four times the objects shown or more, as when one member of ten
 * grants the namespace.
 */
const OWN_RANGES_BELOW = 4;

/** A namespace's objects of some clusters, from their own index ranges, merged into store key order (name, then cluster). */
function* clustersOfNamespace(store: Store, key: string, namespace: string, clusters: readonly string[], startKey: string | undefined, snapshot: Snapshot | undefined): Generator<StoredEntry> {
  const sources = clusters.map((cluster) => store.entries(key, { namespace, cluster, startKey, snapshot }));
  try {
    const heads = sources.map((s) => s.next());
    for (;;) {
      let min = -1;
      for (let i = 0; i < heads.length; i++) {
        const h = heads[i]!;
        if (!h.done && (min < 0 || h.value.key < (heads[min]!.value as StoredEntry).key)) min = i;
      }
      if (min < 0) return;
      const e = heads[min]!.value as StoredEntry;
      heads[min] = sources[min]!.next();
      // A cluster's own range starts at the continue key's name: its copy in an earlier cluster was served.
      if (startKey === undefined || e.key >= startKey) yield e;
    }
  } finally {
    for (const s of sources) s.return(undefined);
  }
}

/**
 * With label requirements `k=v` or `k in (…)`, indexed field requirements (`spec.nodeName=n1`),
 * or predicates that name an index lookup (an owner's descendants, a name's words, a creation-time
 * range), the candidates come from the label index instead of a scan of the whole resource. The smallest
 * of those index ranges drives, whatever order the selector names them in; each candidate must
 * be in the other ranges too (a key lookup each) before its object is read. The rest of the
 * selector is checked on each object as usual.
 */
function indexedEntries(store: Store, key: string, opts: ListScope, snapshot?: Snapshot): Iterable<StoredEntry> | undefined {
  const { view } = opts;
  const lookups = indexLookups(store, view, key, snapshot);
  if (lookups.length === 0) return undefined;
  const start = opts.continueToken?.start;
  let driver = lookups.length === 1 ? lookups[0]! : smallestLookup(store, key, lookups, snapshot);
  let rangeKeys: readonly string[] | undefined;
  if ('keys' in driver) rangeKeys = driver.keys;
  else if (isRange(driver)) {
    rangeKeys = sortedRangeKeys(store, key, driver, start, snapshot);
    if (!rangeKeys) {
      // Too many to sort: the next smallest drives, or the kind is scanned.
      const rest = lookups.filter((l) => l !== driver);
      if (rest.length === 0) return undefined;
      driver = rest.length === 1 ? rest[0]! : smallestLookup(store, key, rest, snapshot);
      if (isRange(driver)) return undefined;
      if ('keys' in driver) rangeKeys = driver.keys;
    }
  }
  // The other lookups are checked per candidate, one index probe per value, before its object is
  // read; one of many values (a short needle's words) is left to the object's own test, as is a
  // range (its predicate reads the object's meta record).
  const others = lookups.filter((l): l is IndexLookup => l !== driver && isValues(l) && l.values.length <= CHECKED_VALUES_MAX);
  // Index hits come sorted per value; several values need merging into store key order, and an
  // object under two of them (a name holding two matching words) is one candidate.
  const keys = rangeKeys ?? valueKeys(store, key, driver as IndexLookup, snapshot);
  const nsFrom = key.length + KEY_SEP.length;
  return (function* () {
    for (const k of keys) {
      if (start !== undefined && k < start) continue;
      // Namespace and cluster from the key itself, before a byte of the object is read.
      if (view.narrowsNamespaces && !view.showsNamespace(k.slice(nsFrom, k.indexOf(KEY_SEP, nsFrom)))) continue;
      // (A view of every cached cluster leaves the rare object of a dropped one to admits().)
      if (!view.allClusters && !view.showsCluster(k.slice(k.lastIndexOf(KEY_SEP) + KEY_SEP.length))) continue;
      if (!others.every((l) => l.values.some((v) => store.isLabelled(key, l.key, v, k, snapshot)))) continue;
      const e = store.entryAt(k, snapshot);
      if (e) yield e;
    }
  })();
}

/** Candidates the store has found already, in key order (the name index's places). */
interface KeysLookup {
  keys: readonly string[];
}

type AnyLookup = IndexLookup | RangeLookup | KeysLookup;

function isRange(l: AnyLookup): l is RangeLookup {
  return !('values' in l) && !('keys' in l);
}

function isValues(l: AnyLookup): l is IndexLookup {
  return 'values' in l;
}

/** A values lookup's keys in store key order. */
function valueKeys(store: Store, resource: string, lookup: IndexLookup, snapshot?: Snapshot): Iterable<string> {
  return lookup.values.length > 1 ? [...new Set(indexedKeys(store, resource, lookup, snapshot))].sort() : indexedKeys(store, resource, lookup, snapshot);
}

/**
 * A range lookup's keys from the continue point on, in store key order: the index holds them in
 * value (time) order, so they are gathered and sorted; undefined when more than
 * INDEX_RANGE_SORT_MAX lie past the continue point (the memory a list may hold for it).
 */
function sortedRangeKeys(store: Store, resource: string, lookup: RangeLookup, start: string | undefined, snapshot?: Snapshot): string[] | undefined {
  const keys: string[] = [];
  for (const k of store.keysInRange(resource, lookup.key, lookup.from, lookup.to, snapshot)) {
    if (start !== undefined && k < start) continue;
    if (keys.length >= INDEX_RANGE_SORT_MAX) return undefined;
    keys.push(k);
  }
  return keys.sort();
}

function indexLookups(store: Store, view: ReadView, resource: string, snapshot: Snapshot | undefined): AnyLookup[] {
  const lookups: AnyLookup[] = [];
  for (const p of view.predicates) {
    const range = p.indexRange?.(resource);
    if (range && store.indexes(range.key)) lookups.push(range);
    const one = p.indexLookup?.(resource);
    for (const lookup of one ? [one] : (p.indexLookups?.(resource) ?? [])) {
      if (!store.indexes(lookup.key)) continue;
      // The name index's words or places matching the needle; too many of them, and this lookup is not used.
      if (lookup.place) {
        const keys = store.nameKeys(resource, lookup.place, NAME_SEARCH_MAX_WORDS, snapshot);
        if (keys) lookups.push({ keys });
      } else if (lookup.match) {
        const words = store.nameTokens(resource, lookup.values[0]!, lookup.match, NAME_SEARCH_MAX_WORDS, snapshot);
        if (words) lookups.push({ key: lookup.key, values: words });
      } else lookups.push(lookup);
    }
  }
  for (const r of view.labelSelector) if (r.operator === 'Equals' || r.operator === 'In') lookups.push({ key: r.key, values: r.values });
  for (const f of view.fieldSelector) {
    if (f.operator === 'Equals' && f.value !== '' && INDEXED_FIELDS.has(f.field)) lookups.push({ key: fieldIndexKey(f.field), values: [f.value] });
  }
  return lookups;
}

/** The object keys a lookup's index range holds, value after value (a range's in value order). */
function* indexedKeys(store: Store, resource: string, lookup: AnyLookup, snapshot?: Snapshot): Generator<string> {
  if ('keys' in lookup) {
    yield* lookup.keys;
    return;
  }
  if (isRange(lookup)) {
    yield* store.keysInRange(resource, lookup.key, lookup.from, lookup.to, snapshot);
    return;
  }
  for (const v of lookup.values) yield* store.keysLabelled(resource, lookup.key, v, snapshot);
}

/**
 * The lookup with the fewest index entries. The ranges are stepped through in lockstep until the
 * first one ends, so finding it costs the smallest range's size once per lookup and never a walk
 * of a large one.
 */
function smallestLookup(store: Store, resource: string, lookups: AnyLookup[], snapshot?: Snapshot): AnyLookup {
  const ranges = lookups.map((lookup) => ({ lookup, keys: indexedKeys(store, resource, lookup, snapshot) }));
  try {
    for (;;) for (const r of ranges) if (r.keys.next().done) return r.lookup;
  } finally {
    // Closes the ranges' cursors.
    for (const r of ranges) r.keys.return(undefined);
  }
}

/** Values of a lookup besides the driving one that are probed per candidate (name-index.ts words, `in` lists). */
const CHECKED_VALUES_MAX = 16;

/** Every member copy of namespace/name the view shows, in the view's cluster order (the fleet's preference). */
export function copiesOf(store: Store, scope: ReadScope, namespace: string, name: string): StoredEntry[] {
  const { view } = scope;
  const key = gvrKey(scope.resource.info);
  if (view.clusters.length === 0) return [];
  const rank = (c: string) => view.clusters.indexOf(c);
  return store
    .lookup(key, namespace, name, view.clusters.length === 1 ? view.clusters[0] : undefined)
    .filter((e) => view.admits(e, () => store.metaOf(key, e)))
    .sort((a, b) => rank(a.cluster) - rank(b.cluster));
}
