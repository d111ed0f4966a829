import type { CachedResource } from '../cacher/cache-manager.js';
import type { MetaRecord } from '../store/meta-record.js';
import { CLUSTER_COLUMN, clusterColumnAt, withCluster, type TableColumn } from '../api/table.js';
import { gvrKey, groupVersion } from '../api/resource-info.js';
import { encodeContinue, encodeGlobalRV, type ContinueToken } from '../api/global-rv.js';
import { INDEXED_FIELDS, fieldIndexKey } from '../store/meta-record.js';
import { KEY_SEP, type Snapshot, type Store, type StoredEntry } from '../store/store.js';
import type { SnapshotRegistry } from './snapshots.js';
import { ageCell } from '../table/human-duration.js';
import { reprintRelativeCells } from '../table/relative-cells.js';
import { StatusError, heldBySeveral, notFound } from '../api/status.js';
import type { ResponseForm } from '../api/negotiate.js';
import { storedTypeMeta, withoutTypeMeta, type ItemBytes } from './item-type-meta.js';
import { joined, type CutBytes, type Presentation, type PresentedObject, type ReadView, type Shown as ShownObject } from '../view/read-view.js';

/**
 * Answers reads from the store. A list is concatenation: the stored bytes of each object between
 * a header and a footer, never re-encoded. Table and PartialObjectMetadata views are assembled from
 * the meta records, which carry the member's cells and the object's metadata as JSON.
 */
export interface ReadScope {
  resource: CachedResource;
  /** What this caller's request may see (src/view). */
  view: ReadView;
}

export interface ListOptions extends ReadScope {
  form: ResponseForm;
  includeObject?: 'Metadata' | 'Object' | 'None';
  /** Page size; 0 or absent lists everything. */
  limit?: number;
  continueToken?: ContinueToken;
  snapshots: SnapshotRegistry;
  /** Whose list this is: snapshots are budgeted per caller. */
  caller: string;
}

// What the apiserver's default table convertor prints for kinds without printer columns.
const DEFAULT_COLUMNS: TableColumn[] = [
  { name: 'Name', type: 'string', format: 'name', description: 'Name must be unique within a namespace.', priority: 0 },
  { name: 'Age', type: 'string', format: '', description: 'Time since the object was created.', priority: 0 },
];

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

export function columnsOf(store: Store, resource: CachedResource, snapshot?: Snapshot): TableColumn[] {
  for (const s of store.syncStates(gvrKey(resource.info), snapshot)) {
    if (s.sync.columns?.length) return s.sync.columns;
  }
  return DEFAULT_COLUMNS;
}

/**
 * A rendered list. A page (limit) is one buffer. An unpaged list is produced in chunks of about
 * CHUNK_BYTES from one read snapshot as the client takes them, so a list of a million objects
 * neither builds one giant buffer nor holds the event loop: `done` releases the snapshot.
 */
export type ListBody = Buffer | { chunks: Iterable<Buffer>; done(): void };

const CHUNK_BYTES = 256 * 1024;

export function listResponse(store: Store, opts: ListOptions): ListBody {
  if (!opts.limit && !opts.continueToken) return unpagedList(store, opts);
  // The pages of one list read one snapshot, kept between requests behind the continue token.
  let snapshotId = opts.continueToken?.snap;
  let snapshot: Snapshot | undefined;
  if (snapshotId) {
    snapshot = opts.snapshots.get(snapshotId);
    if (!snapshot) {
      const start = opts.continueToken!.start;
      const fresh = encodeContinue({ rv: storeRV(store, opts.resource, opts.view), start: opts.view.presentation?.shownKey?.(start) ?? start });
      throw new StatusError(410, 'Expired', INCONSISTENT_CONTINUE, undefined, undefined, { continue: fresh });
    }
  } else if (!opts.continueToken) {
    ({ id: snapshotId, snapshot } = opts.snapshots.create(opts.caller));
  }
  const rv = opts.continueToken?.rv ?? storeRV(store, opts.resource, opts.view, snapshot);
  const entries: StoredEntry[] = [];
  let next: StoredEntry | undefined;
  let remaining = 0;
  // A count of key ranges counts what the view hides when it narrows inside them.
  const counting = !opts.view.narrows;
  for (const e of matchingEntries(store, opts, snapshot)) {
    if (opts.limit && entries.length >= opts.limit) {
      next = e;
      break;
    }
    entries.push(e);
  }
  // remainingItemCount is only given for unfiltered lists, as the apiserver does; LMDB counts
  // the keys from the next object on without reading a single object.
  if (next && counting) {
    for (const range of viewRanges(opts.view)) remaining += store.countFrom(gvrKey(opts.resource.info), { ...range, startKey: next.key, snapshot });
  }
  let listMeta = `"resourceVersion":${JSON.stringify(rv)}`;
  if (next) {
    const start = opts.view.presentation?.shownKey?.(next.key) ?? next.key;
    listMeta += `,"continue":${JSON.stringify(encodeContinue({ rv, start, ...(snapshotId ? { snap: snapshotId } : {}) }))}`;
    if (counting) listMeta += `,"remainingItemCount":${remaining}`;
  }
  try {
    const frame = listFrame(store, opts, listMeta, snapshot);
    const parts = new ListBytes();
    parts.push(frame.head);
    let first = true;
    for (const e of entries) {
      const item = frame.item(e);
      if (item === NOTHING) continue;
      if (!first) parts.push(COMMA);
      first = false;
      parts.push(item);
    }
    parts.push(frame.tail);
    return parts.concat();
  } finally {
    // The last page's snapshot goes once the page is rendered (Table rows read meta from it).
    if (!next && snapshotId) opts.snapshots.release(snapshotId);
  }
}

/** The objects the view shows, in key order, from the continue point on. */
function* matchingEntries(store: Store, opts: ListOptions, snapshot: Snapshot | undefined): Generator<StoredEntry> {
  const key = gvrKey(opts.resource.info);
  const { view } = opts;
  const source = indexedEntries(store, key, opts, snapshot) ?? rangeEntries(store, key, view, opts.continueToken?.start, snapshot);
  // One meta getter for the whole loop, not a closure per object.
  let current: StoredEntry | undefined;
  const metaOfCurrent = () => (view.needsMeta && current ? store.metaOf(key, current, snapshot) : undefined);
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

function unpagedList(store: Store, opts: ListOptions): ListBody {
  const snapshot = store.snapshot();
  let released = false;
  const done = () => {
    if (!released) snapshot.done();
    released = true;
  };
  try {
    const frame = listFrame(store, opts, `"resourceVersion":${JSON.stringify(storeRV(store, opts.resource, opts.view, snapshot))}`, snapshot);
    const entries = matchingEntries(store, opts, snapshot);
    let first = true;
    const nextChunk = (): { chunk: Buffer; last: boolean } => {
      const parts = new ListBytes();
      for (let r = entries.next(); !r.done; r = entries.next()) {
        const item = frame.item(r.value);
        if (item === NOTHING) continue;
        if (!first) parts.push(COMMA);
        first = false;
        parts.push(item);
        if (parts.length >= CHUNK_BYTES) return { chunk: parts.concat(), last: false };
      }
      parts.push(frame.tail);
      return { chunk: parts.concat(), last: true };
    };
    const opening = nextChunk();
    if (opening.last) {
      // Small enough for one pass: one buffer, no stream.
      done();
      return Buffer.concat([frame.head, opening.chunk]);
    }
    return {
      done,
      chunks: (function* () {
        try {
          yield Buffer.concat([frame.head, opening.chunk]);
          for (;;) {
            const c = nextChunk();
            yield c.chunk;
            if (c.last) return;
          }
        } finally {
          done();
        }
      })(),
    };
  } catch (e) {
    done();
    throw e;
  }
}

const COMMA = Buffer.from(',');

interface ListFrame {
  head: Buffer;
  tail: Buffer;
  /** An item's bytes, maybe in pieces; NOTHING when the view's presentation does not show it. */
  item(e: StoredEntry): ItemBytes;
}

/** A list's bytes as they are gathered, copied once into one buffer at the end. */
class ListBytes {
  private readonly parts: (Buffer | CutBytes)[] = [];
  length = 0;
  /** The longest range left out: a cut item is copied whole, then its tail moved over the range. */
  private slack = 0;

  push(item: ItemBytes): void {
    if (Buffer.isBuffer(item)) {
      this.parts.push(item);
      this.length += item.length;
    } else if (Array.isArray(item)) {
      for (const b of item as readonly Buffer[]) this.push(b);
    } else {
      const cut = item as CutBytes;
      this.parts.push(cut);
      this.length += cut.src.length - (cut.to - cut.from);
      if (cut.to - cut.from > this.slack) this.slack = cut.to - cut.from;
    }
  }

  /**
   * One buffer. A cut item is copied whole and its tail moved over the range it leaves out
   * (`copyWithin`): copying two parts of a buffer would make a view of each first.
   */
  concat(): Buffer {
    const out = Buffer.allocUnsafe(this.length + this.slack);
    let at = 0;
    for (const p of this.parts) {
      if (Buffer.isBuffer(p)) at += p.copy(out, at);
      else {
        p.src.copy(out, at);
        out.copyWithin(at + p.from, at + p.to, at + p.src.length);
        at += p.src.length - (p.to - p.from);
      }
    }
    return this.slack === 0 ? out : out.subarray(0, at);
  }
}

function itemBuffer(item: ItemBytes): Buffer {
  if (Buffer.isBuffer(item) || Array.isArray(item)) return joined(item as Buffer | readonly Buffer[]);
  const cut = item as CutBytes;
  return Buffer.concat([cut.src.subarray(0, cut.from), cut.src.subarray(cut.to)]);
}

const NOTHING = Buffer.alloc(0);

/** What goes around and between a list's items, per response form. */
function listFrame(store: Store, opts: Pick<ListOptions, 'resource' | 'form' | 'includeObject' | 'view'>, listMeta: string, snapshot: Snapshot | undefined, many = true): ListFrame {
  const info = opts.resource.info;
  const key = gvrKey(info);
  const { shown, bytes: shownBytes } = presented(store, key, opts.view.presentation, snapshot, many);
  if (opts.form === 'table') {
    const columns = columnsOf(store, opts.resource, snapshot);
    const row = tableRow(shown, columns, opts.includeObject);
    return {
      head: Buffer.from(`{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{${listMeta}},"columnDefinitions":${JSON.stringify(withCluster<TableColumn>(columns, CLUSTER_COLUMN, clusterColumnAt(columns)))},"rows":[`),
      tail: Buffer.from(']}'),
      item: (e) => {
        const text = row(e);
        return text === undefined ? NOTHING : Buffer.from(text);
      },
    };
  }
  if (opts.form === 'metadata') {
    return {
      head: Buffer.from(`{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1","metadata":{${listMeta}},"items":[`),
      tail: Buffer.from(']}'),
      item: (e) => {
        const seen = shown(e);
        return seen ? Buffer.from(partialMetadata(metadataJsonOf(joined(seen.bytes), seen.meta()))) : NOTHING;
      },
    };
  }
  // Items as the member lists them: a kind compiled into it without kind and apiVersion (a get,
  // one object not `many`, keeps them, as the member's does).
  const typeMeta = many && info.listItemKinds === false ? storedTypeMeta(info.kind, groupVersion(info)) : undefined;
  return {
    head: Buffer.from(`{"kind":${JSON.stringify(info.kind + 'List')},"apiVersion":${JSON.stringify(groupVersion(info))},"metadata":{${listMeta}},"items":[`),
    tail: Buffer.from(']}'),
    item: typeMeta ? (e) => withoutTypeMeta(shownBytes(e), typeMeta) : shownBytes,
  };
}

/** An entry as the view shows it: its bytes, and its meta record when asked for; undefined: not shown. */
type Shown = (e: StoredEntry) => ShownObject | undefined;

/**
 * Entries as stored, or as the view's presentation shows them. The objects its mark names are
 * looked up once, in the label index, for the whole list (few objects carry one).
 */
function presented(store: Store, key: string, presentation: Presentation | undefined, snapshot: Snapshot | undefined, many: boolean): { shown: Shown; bytes: (e: StoredEntry) => ItemBytes } {
  if (!presentation) return { shown: (e) => ({ bytes: e.bytes, meta: () => store.metaOf(key, e, snapshot) }), bytes: (e) => e.bytes };
  // One object (a get): its own meta record tells.
  const marks = many ? presentation.marks : undefined;
  const marked = marks ? new Set(store.keysLabelled(key, marks.key, marks.value, snapshot)) : undefined;
  const objectOf = (e: StoredEntry): PresentedObject => (marked ? { cluster: e.cluster, name: e.name, marked: marked.has(e.key) } : e);
  const shown: Shown = (e) => presentation.present(objectOf(e), e.bytes, () => store.metaOf(key, e, snapshot));
  const fast = presentation.presentBytes;
  return {
    shown,
    bytes: fast ? (e) => fast.call(presentation, e, e.bytes, marked?.has(e.key)) ?? shown(e)?.bytes ?? NOTHING : (e) => shown(e)?.bytes ?? NOTHING,
  };
}

/** Renders Table rows: the member's cells (relative times reprinted) with a Cluster cell after the name. */
function tableRow(shown: Shown, columns: TableColumn[], includeObject: ListOptions['includeObject']): (e: StoredEntry) => string | undefined {
  const ageIndex = ageColumnIndex(columns);
  const clusterAt = clusterColumnAt(columns);
  const now = Date.now();
  return (e) => {
    const seen = shown(e);
    if (!seen) return undefined;
    const bytes = joined(seen.bytes);
    const metaOf = seen.meta;
    const meta = metaOf();
    const cells = rowCells(meta, columns, ageIndex, e.name, now);
    // includeObject=None is an explicit null, as the apiserver writes an empty row object.
    let object = ',"object":null';
    if (includeObject === 'Object') object = `,"object":${bytes.toString('utf8')}`;
    else if (includeObject !== 'None') object = `,"object":${partialMetadata(metadataJsonOf(bytes, meta))}`;
    return `{"cells":${JSON.stringify(withCluster<unknown>(cells, e.cluster, clusterAt))}${object}}`;
  };
}

/** A requirement the label index answers: label `key` (or an indexed field's key) is one of `values`. */
interface IndexLookup {
  key: string;
  values: string[];
}

/**
 * With label requirements `k=v` or `k in (…)`, or indexed field requirements (`spec.nodeName=n1`),
 * the candidates come from the label index instead of a scan of the whole resource. The smallest
 * of those index ranges drives, whatever order the selector names them in; each candidate must
 * be in the other ranges too (a key lookup each) before its object is read. The rest of the
 * selector is checked on each object as usual.
 */
function indexedEntries(store: Store, key: string, opts: ListOptions, snapshot?: Snapshot): Iterable<StoredEntry> | undefined {
  const { view } = opts;
  const lookups = indexLookups(view);
  if (lookups.length === 0) return undefined;
  const driver = lookups.length === 1 ? lookups[0]! : smallestLookup(store, key, lookups, snapshot);
  const others = lookups.filter((l) => l !== driver);
  // Index hits come sorted per value; several values need merging into store key order.
  const keys = driver.values.length > 1 ? [...indexedKeys(store, key, driver, snapshot)].sort() : indexedKeys(store, key, driver, snapshot);
  const start = opts.continueToken?.start;
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

function indexLookups(view: ReadView): IndexLookup[] {
  const lookups: IndexLookup[] = [];
  for (const r of view.labelSelector) if (r.operator === 'Equals' || r.operator === 'In') lookups.push({ key: r.key, values: r.values });
  for (const f of view.fieldSelector) {
    if (f.operator === 'Equals' && f.value !== '' && INDEXED_FIELDS.has(f.field)) lookups.push({ key: fieldIndexKey(f.field), values: [f.value] });
  }
  return lookups;
}

/** The object keys a lookup's index range holds, value after value. */
function* indexedKeys(store: Store, resource: string, lookup: IndexLookup, snapshot?: Snapshot): Generator<string> {
  for (const v of lookup.values) yield* store.keysLabelled(resource, lookup.key, v, snapshot);
}

/**
 * The lookup with the fewest index entries. The ranges are stepped through in lockstep until the
 * first one ends, so finding it costs the smallest range's size once per lookup and never a walk
 * of a large one.
 */
function smallestLookup(store: Store, resource: string, lookups: IndexLookup[], snapshot?: Snapshot): IndexLookup {
  const ranges = lookups.map((lookup) => ({ lookup, keys: indexedKeys(store, resource, lookup, snapshot) }));
  try {
    for (;;) for (const r of ranges) if (r.keys.next().done) return r.lookup;
  } finally {
    // Closes the ranges' cursors.
    for (const r of ranges) r.keys.return(undefined);
  }
}

// The apiserver's own words for a continue token whose snapshot is gone.
const INCONSISTENT_CONTINUE =
  'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.';

/** Every member copy of namespace/name the view shows, in the view's cluster order (the fleet's preference). */
function copiesOf(store: Store, scope: ReadScope, namespace: string, name: string): StoredEntry[] {
  const { view } = scope;
  const key = gvrKey(scope.resource.info);
  if (view.clusters.length === 0) return [];
  const rank = (c: string) => view.clusters.indexOf(c);
  return store
    .lookup(key, namespace, name, view.clusters.length === 1 ? view.clusters[0] : undefined)
    .filter((e) => view.admits(e, () => store.metaOf(key, e)))
    .sort((a, b) => rank(a.cluster) - rank(b.cluster));
}

/**
 * The one member copy of namespace/name the view shows, or 404, or 409 when several members
 * hold one (naming only the members the view shows): what a write may go to.
 */
export function findOne(store: Store, scope: ReadScope, namespace: string, name: string): StoredEntry {
  const info = scope.resource.info;
  const hits = copiesOf(store, scope, namespace, name);
  if (hits.length === 0) throw notFound({ group: info.group, resource: info.resource }, name);
  if (hits.length > 1) throw heldBySeveral(info, namespace, name, hits.map((h) => h.cluster));
  return hits[0]!;
}

/**
 * A get: the first copy the view shows, in the fleet's preference (clusters' priority, then
 * configuration order), and the other members that hold one; 404 when none does.
 */
export function getResponse(store: Store, scope: ReadScope, namespace: string, name: string, form: ResponseForm, includeObject?: ListOptions['includeObject']): { body: Buffer; cluster: string; alsoIn: string[] } {
  const info = scope.resource.info;
  const [hit, ...others] = copiesOf(store, scope, namespace, name);
  if (!hit) throw notFound({ group: info.group, resource: info.resource }, name);
  const alsoIn = others.map((o) => o.cluster);
  // A Table of one row whose metadata holds the object's resourceVersion (as the apiserver's and
  // as a watch event's Table: a watch-list client compares the two); a PartialObjectMetadata; the object.
  const rv = form === 'table' ? store.metaOf(gvrKey(info), hit)?.rv : undefined;
  const tableMeta = rv ? `"resourceVersion":${JSON.stringify(encodeGlobalRV({ [hit.cluster]: rv }))}` : '';
  const frame = listFrame(store, { resource: scope.resource, form, includeObject, view: scope.view }, tableMeta, undefined, false);
  const item = itemBuffer(frame.item(hit));
  if (item.length === 0) throw notFound({ group: info.group, resource: info.resource }, name);
  if (form === 'table') return { body: Buffer.concat([frame.head, item, frame.tail]), cluster: hit.cluster, alsoIn };
  return { body: item, cluster: hit.cluster, alsoIn };
}

/** The served object's `metadata` JSON, sliced from its stored bytes where its meta record says. */
export function metadataJsonOf(bytes: Buffer, meta: MetaRecord | undefined): string {
  const span = meta?.metadataSpan;
  return span ? bytes.toString('utf8', span[0], span[0] + span[1]) : '{}';
}

export function partialMetadata(metadataJson: string): string {
  return `{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":${metadataJson}}`;
}

/** The member's cells for an object with Age and other relative times reprinted, or Name and Age when it sent none. */
export function rowCells(meta: MetaRecord | undefined, columns: TableColumn[], ageIndex: number, name: string, now: number): unknown[] {
  if (meta?.cells && meta.cells.length === columns.length) {
    const cells = meta.cells.slice();
    if (ageIndex >= 0) cells[ageIndex] = ageCell(meta.created, now);
    if (meta.relative) reprintRelativeCells(cells, columns, meta.relative, now);
    return cells;
  }
  return [name, ageCell(meta?.created, now)];
}

export function ageColumnIndex(columns: TableColumn[]): number {
  return columns.findIndex((c) => c.name === 'Age' && c.type === 'string');
}
