import type { CachedResource } from '../cacher/cache-manager.js';
import type { MetaRecord, TableColumn } from '../ingest/decode.js';
import { gvrKey, groupVersion } from '../resources/resource-info.js';
import { encodeContinue, encodeGlobalRV, type ContinueToken } from '../rv/global-rv.js';
import { matches, needsMeta, type ObjectFilter } from './filter.js';
import { KEY_SEP, type Snapshot, type Store, type StoredEntry } from '../store/store.js';
import type { SnapshotRegistry } from './snapshots.js';
import { ageCell } from '../table/human-duration.js';
import { reprintRelativeCells } from '../table/relative-cells.js';
import { StatusError, conflict, notFound } from '../router/status.js';
import type { ResponseForm } from '../router/negotiate.js';

/**
 * Answers reads from the store. A list is concatenation: the stored bytes of each object between
 * a header and a footer, never re-encoded. Table and PartialObjectMetadata views are assembled from
 * the meta records, which carry the member's cells and the object's metadata as JSON.
 */
export interface ReadScope {
  resource: CachedResource;
  /** Only this member's objects (a `/clusters/<name>/` request). */
  cluster?: string;
  namespace?: string;
}

export interface ListOptions extends ReadScope {
  form: ResponseForm;
  filter: ObjectFilter;
  includeObject?: 'Metadata' | 'Object' | 'None';
  /** Page size; 0 or absent lists everything. */
  limit?: number;
  continueToken?: ContinueToken;
  snapshots: SnapshotRegistry;
}

export const CLUSTER_COLUMN: TableColumn = {
  name: 'Cluster',
  type: 'string',
  format: '',
  description: 'The member cluster that holds the object (flotilla).',
  priority: 0,
};

// What the apiserver's default table convertor prints for kinds without printer columns.
const DEFAULT_COLUMNS: TableColumn[] = [
  { name: 'Name', type: 'string', format: 'name', description: 'Name must be unique within a namespace.', priority: 0 },
  { name: 'Age', type: 'string', format: '', description: 'Time since the object was created.', priority: 0 },
];

/** The global RV of what the store holds for a resource (for the clusters it is cached from). */
export function storeRV(store: Store, resource: CachedResource, cluster?: string, snapshot?: Snapshot): string {
  const rvs: Record<string, string> = {};
  for (const [c, rv] of Object.entries(store.latestRVs(gvrKey(resource.info), snapshot))) {
    if (resource.clusters.includes(c) && (cluster === undefined || c === cluster)) rvs[c] = rv;
  }
  return encodeGlobalRV(rvs);
}

export function columnsOf(store: Store, resource: CachedResource, snapshot?: Snapshot): TableColumn[] {
  for (const s of store.syncStates(gvrKey(resource.info), snapshot)) {
    if (s.sync.columns?.length) return s.sync.columns;
  }
  return DEFAULT_COLUMNS;
}

export function listResponse(store: Store, opts: ListOptions): Buffer {
  const key = gvrKey(opts.resource.info);
  // The pages of one list read one snapshot. Without paging, one synchronous pass is one snapshot.
  let snapshotId = opts.continueToken?.snap;
  let snapshot: Snapshot | undefined;
  if (snapshotId) {
    snapshot = opts.snapshots.get(snapshotId);
    if (!snapshot) {
      const fresh = encodeContinue({ rv: storeRV(store, opts.resource, opts.cluster), start: opts.continueToken!.start });
      throw new StatusError(410, 'Expired', INCONSISTENT_CONTINUE, undefined, undefined, { continue: fresh });
    }
  } else if (opts.limit && !opts.continueToken) {
    ({ id: snapshotId, snapshot } = opts.snapshots.create());
  }
  const rv = opts.continueToken?.rv ?? storeRV(store, opts.resource, opts.cluster, snapshot);
  const entries: StoredEntry[] = [];
  const wantsMeta = needsMeta(opts.filter);
  const metaOf = (e: StoredEntry) => store.metaOf(key, e, snapshot);
  let next: StoredEntry | undefined;
  let remaining = 0;
  const counting = !opts.filter.labelSelector?.length && !opts.filter.fieldSelector?.length;
  const source = indexedEntries(store, key, opts, snapshot) ?? store.entries(key, { namespace: opts.namespace, cluster: opts.cluster, startKey: opts.continueToken?.start, snapshot });
  for (const e of source) {
    if (!opts.resource.clusters.includes(e.cluster)) continue;
    if (!matches(opts.filter, e, () => (wantsMeta ? metaOf(e) : undefined))) continue;
    if (opts.limit && entries.length >= opts.limit) {
      next ??= e;
      // remainingItemCount is only given for unfiltered lists, as the apiserver does.
      if (!counting) break;
      remaining++;
      continue;
    }
    entries.push(e);
  }
  let listMeta = `"resourceVersion":${JSON.stringify(rv)}`;
  if (next) {
    listMeta += `,"continue":${JSON.stringify(encodeContinue({ rv, start: next.key, ...(snapshotId ? { snap: snapshotId } : {}) }))}`;
    if (counting) listMeta += `,"remainingItemCount":${remaining}`;
  }
  try {
    return renderList(store, opts, entries, listMeta, snapshot);
  } finally {
    // The last page's snapshot goes once the page is rendered (Table rows read meta from it).
    if (!next && snapshotId) opts.snapshots.release(snapshotId);
  }
}

function renderList(store: Store, opts: ListOptions, entries: StoredEntry[], listMeta: string, snapshot: Snapshot | undefined): Buffer {
  const info = opts.resource.info;
  if (opts.form === 'table') return tableResponse(store, opts, entries, `{${listMeta}}`, snapshot);
  if (opts.form === 'metadata') {
    const items = entries.map((e) => partialMetadata(store.metaOf(gvrKey(info), e, snapshot)?.metadataJson ?? '{}'));
    return Buffer.from(`{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1","metadata":{${listMeta}},"items":[${items.join(',')}]}`);
  }
  const head = Buffer.from(`{"kind":${JSON.stringify(info.kind + 'List')},"apiVersion":${JSON.stringify(groupVersion(info))},"metadata":{${listMeta}},"items":[`);
  const parts: Buffer[] = [head];
  const comma = Buffer.from(',');
  entries.forEach((e, i) => {
    if (i > 0) parts.push(comma);
    parts.push(e.bytes);
  });
  parts.push(Buffer.from(']}'));
  return Buffer.concat(parts);
}

/**
 * With a label requirement `k=v` or `k in (…)`, the candidates come from the label index instead of
 * a scan of the whole resource; the remaining requirements are checked on each candidate as usual.
 */
function indexedEntries(store: Store, key: string, opts: ListOptions, snapshot?: Snapshot): Iterable<StoredEntry> | undefined {
  const req = opts.filter.labelSelector?.find((r) => r.operator === 'Equals') ?? opts.filter.labelSelector?.find((r) => r.operator === 'In');
  if (!req) return undefined;
  const keys = new Set<string>();
  for (const v of req.values) for (const k of store.keysLabelled(key, req.key, v, snapshot)) keys.add(k);
  // Index hits come sorted per value; several values need merging into store key order.
  const sorted = req.values.length > 1 ? [...keys].sort() : [...keys];
  const prefix = opts.namespace !== undefined ? `${key}${KEY_SEP}${opts.namespace}${KEY_SEP}` : '';
  const start = opts.continueToken?.start;
  return (function* () {
    for (const k of sorted) {
      if (start !== undefined && k < start) continue;
      if (prefix && !k.startsWith(prefix)) continue;
      const e = store.entryAt(k, snapshot);
      if (e && (opts.cluster === undefined || e.cluster === opts.cluster)) yield e;
    }
  })();
}

// The apiserver's own words for a continue token whose snapshot is gone.
const INCONSISTENT_CONTINUE =
  'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.';

/** The one member copy of namespace/name, or 404, or 409 when several members hold one. */
export function findOne(store: Store, scope: ReadScope, name: string): StoredEntry {
  const info = scope.resource.info;
  const hits = store
    .lookup(gvrKey(info), scope.namespace ?? '', name, scope.cluster)
    .filter((e) => scope.resource.clusters.includes(e.cluster));
  if (hits.length === 0) throw notFound({ group: info.group, resource: info.resource }, name);
  if (hits.length > 1) {
    const clusters = hits.map((h) => h.cluster);
    const what = `${info.resource}${info.group ? '.' + info.group : ''} "${name}"`;
    throw conflict(
      `${what}${scope.namespace ? ` in namespace "${scope.namespace}"` : ''} exists in clusters ${clusters.join(', ')}; address one with the /clusters/<name>/ path prefix, e.g. /clusters/${clusters[0]}${'/…'}`,
      { name, group: info.group, kind: info.resource },
    );
  }
  return hits[0]!;
}

export function getResponse(store: Store, scope: ReadScope, name: string, form: ResponseForm, includeObject?: ListOptions['includeObject']): Buffer {
  const hit = findOne(store, scope, name);
  if (form === 'table') return tableResponse(store, { ...scope, includeObject }, [hit], '{}');
  if (form === 'metadata') return Buffer.from(partialMetadata(store.metaOf(gvrKey(scope.resource.info), hit)?.metadataJson ?? '{}'));
  return hit.bytes;
}

export function partialMetadata(metadataJson: string): string {
  return `{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":${metadataJson}}`;
}

function tableResponse(store: Store, opts: ReadScope & { includeObject?: ListOptions['includeObject'] }, entries: StoredEntry[], metadata: string, snapshot?: Snapshot): Buffer {
  const key = gvrKey(opts.resource.info);
  const columns = columnsOf(store, opts.resource, snapshot);
  const ageIndex = ageColumnIndex(columns);
  const now = Date.now();
  const rows: string[] = [];
  for (const e of entries) {
    const meta = store.metaOf(key, e, snapshot);
    const cells = rowCells(meta, columns, ageIndex, e.name, now);
    let object = '';
    if (opts.includeObject === 'Object') object = `,"object":${e.bytes.toString('utf8')}`;
    else if (opts.includeObject !== 'None') object = `,"object":${partialMetadata(meta?.metadataJson ?? '{}')}`;
    rows.push(`{"cells":${JSON.stringify([e.cluster, ...cells])}${object}}`);
  }
  return Buffer.from(
    `{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":${metadata},"columnDefinitions":${JSON.stringify([CLUSTER_COLUMN, ...columns])},"rows":[${rows.join(',')}]}`,
  );
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
