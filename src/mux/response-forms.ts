import type { CachedResource } from '../cacher/cache-roles.js';
import type { MetaRecord } from '../store/meta-record.js';
import { CLUSTER_COLUMN, clusterColumnAt, withCluster, type TableColumn } from '../api/table.js';
import { gvrKey, groupVersion } from '../api/resource-info.js';
import type { Snapshot, Store, StoredEntry } from '../store/store.js';
import { ageCell } from '../table/human-duration.js';
import { reprintRelativeCells } from '../table/relative-cells.js';
import type { ResponseForm } from '../api/negotiate.js';
import { storedTypeMeta, withoutTypeMeta, type ItemBytes } from './item-type-meta.js';
import { metadataWithResourceVersion, withResourceVersion } from '../api/fleet-object/index.js';
import { joined, type CutBytes, type Presentation, type PresentedObject, type ReadView, type Shown as ShownObject } from '../view/read-view.js';

/**
 * The forms a read answers in, shared by lists, gets and watches: the objects as stored, a
 * PartialObjectMetadata of each, or Table rows. Each is assembled from the stored bytes and the
 * meta records (which carry the member's cells and the object's metadata span), never re-encoded.
 */

/** What a Table row's object is: the object, its PartialObjectMetadata (the default), or null. */
export type IncludeObject = 'Metadata' | 'Object' | 'None';

// What the apiserver's default table convertor prints for kinds without printer columns.
const DEFAULT_COLUMNS: TableColumn[] = [
  { name: 'Name', type: 'string', format: 'name', description: 'Name must be unique within a namespace.', priority: 0 },
  { name: 'Age', type: 'string', format: '', description: 'Time since the object was created.', priority: 0 },
];

export function columnsOf(store: Store, resource: CachedResource, snapshot?: Snapshot): TableColumn[] {
  for (const s of store.syncStates(gvrKey(resource.info), snapshot)) {
    if (s.sync.columns?.length) return s.sync.columns;
  }
  return DEFAULT_COLUMNS;
}

/** The member's column definitions with the Cluster column after the name, as JSON. */
export function encodeColumnDefinitions(columns: TableColumn[]): string {
  return JSON.stringify(withCluster<TableColumn>(columns, CLUSTER_COLUMN, clusterColumnAt(columns)));
}

/** A Table up to its first row: `metadataFields` inside its metadata, `columnDefinitions` as JSON (or null). */
export function openTable(metadataFields: string, columnDefinitions: string): string {
  return `{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{${metadataFields}},"columnDefinitions":${columnDefinitions},"rows":[`;
}

export const TABLE_CLOSING = ']}';

/** The served object's `metadata` JSON, sliced from its stored bytes where its meta record says. */
export function metadataJsonOf(bytes: Buffer, meta: MetaRecord | undefined): string {
  const span = meta?.metadataSpan;
  return span ? bytes.toString('utf8', span[0], span[0] + span[1]) : '{}';
}

export function partialMetadata(metadataJson: string): string {
  return `{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":${metadataJson}}`;
}

/** An object's PartialObjectMetadata; `mark`, when given, is the resourceVersion it carries (a watch event's). */
export function encodePartialMetadata(bytes: Buffer, meta: MetaRecord | undefined, mark?: string): string {
  const metadata = metadataJsonOf(bytes, meta);
  return partialMetadata(mark === undefined ? metadata : metadataWithResourceVersion(metadata, mark));
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

/** A Table's columns and where its rows' Age and Cluster cells go, worked out once per list or watch. */
export interface TableLayout {
  columns: TableColumn[];
  ageIndex: number;
  clusterAt: number;
}

export function tableLayout(columns: TableColumn[]): TableLayout {
  return { columns, ageIndex: ageColumnIndex(columns), clusterAt: clusterColumnAt(columns) };
}

/**
 * One Table row, `{"cells":[…],"object":…}`: the member's cells (relative times reprinted) with a
 * Cluster cell after the name, and the row object `includeObject` asks for. `mark`, when given, is
 * the resourceVersion the row object carries (a watch event's).
 */
export function encodeTableRow(layout: TableLayout, includeObject: IncludeObject | undefined, cluster: string, name: string, bytes: Buffer, meta: MetaRecord | undefined, now: number, mark?: string): string {
  const cells = rowCells(meta, layout.columns, layout.ageIndex, name, now);
  // includeObject=None is an explicit null, as the apiserver writes an empty row object.
  let object = 'null';
  if (includeObject === 'Object') object = (mark === undefined ? bytes : withResourceVersion(bytes, mark)).toString('utf8');
  else if (includeObject !== 'None') object = encodePartialMetadata(bytes, meta, mark);
  return `{"cells":${JSON.stringify(withCluster<unknown>(cells, cluster, layout.clusterAt))},"object":${object}}`;
}

/** An item left out: the view's presentation does not show its object. */
export const NOTHING = Buffer.alloc(0);

/** What goes around and between a list's items, per response form. */
export interface ListFrame {
  head: Buffer;
  tail: Buffer;
  /** An item's bytes, maybe in pieces; NOTHING when the view's presentation does not show it. */
  item(e: StoredEntry): ItemBytes;
}

export interface FrameOptions {
  resource: CachedResource;
  view: ReadView;
  form: ResponseForm;
  includeObject?: IncludeObject;
  /** An entry's meta record when it is not the one stored (a page read at an earlier RV). */
  metaOf?: (e: StoredEntry) => MetaRecord | undefined;
}

/**
 * The frame of a list (`many`) or of a get's one object, in the request's form; `listMeta` is
 * what goes inside the answer's metadata.
 */
export function listFrame(store: Store, opts: FrameOptions, listMeta: string, snapshot: Snapshot | undefined, many = true): ListFrame {
  const info = opts.resource.info;
  const key = gvrKey(info);
  const { shown, bytes: shownBytes } = presented(store, key, opts.view.presentation, snapshot, many, opts.metaOf);
  const tail = Buffer.from(TABLE_CLOSING);
  if (opts.form === 'table') {
    const columns = columnsOf(store, opts.resource, snapshot);
    const layout = tableLayout(columns);
    const now = Date.now();
    return {
      head: Buffer.from(openTable(listMeta, encodeColumnDefinitions(columns))),
      tail,
      item: (e) => {
        const seen = shown(e);
        return seen ? Buffer.from(encodeTableRow(layout, opts.includeObject, e.cluster, e.name, joined(seen.bytes), seen.meta(), now)) : NOTHING;
      },
    };
  }
  if (opts.form === 'metadata') {
    return {
      head: Buffer.from(`{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1","metadata":{${listMeta}},"items":[`),
      tail,
      item: (e) => {
        const seen = shown(e);
        return seen ? Buffer.from(encodePartialMetadata(joined(seen.bytes), seen.meta())) : NOTHING;
      },
    };
  }
  // Items as the member lists them: a kind compiled into it without kind and apiVersion (a get,
  // one object not `many`, keeps them, as the member's does).
  const typeMeta = many && info.listItemKinds === false ? storedTypeMeta(info.kind, groupVersion(info)) : undefined;
  return {
    head: Buffer.from(`{"kind":${JSON.stringify(info.kind + 'List')},"apiVersion":${JSON.stringify(groupVersion(info))},"metadata":{${listMeta}},"items":[`),
    tail,
    item: typeMeta ? (e) => withoutTypeMeta(shownBytes(e), typeMeta) : shownBytes,
  };
}

/** An entry as the view shows it: its bytes, and its meta record when asked for; undefined: not shown. */
type Shown = (e: StoredEntry) => ShownObject | undefined;

/**
 * Entries as stored, or as the view's presentation shows them. The objects its mark names are
 * looked up once, in the label index, for the whole list (few objects carry one).
 */
function presented(store: Store, key: string, presentation: Presentation | undefined, snapshot: Snapshot | undefined, many: boolean, metaOf = (e: StoredEntry) => store.metaOf(key, e, snapshot)): { shown: Shown; bytes: (e: StoredEntry) => ItemBytes } {
  if (!presentation) return { shown: (e) => ({ bytes: e.bytes, meta: () => metaOf(e) }), bytes: (e) => e.bytes };
  // One object (a get): its own meta record tells.
  const marks = many ? presentation.marks : undefined;
  const marked = marks ? new Set(store.keysLabelled(key, marks.key, marks.value, snapshot)) : undefined;
  const objectOf = (e: StoredEntry): PresentedObject => (marked ? { cluster: e.cluster, name: e.name, marked: marked.has(e.key) } : e);
  const shown: Shown = (e) => presentation.present(objectOf(e), e.bytes, () => metaOf(e));
  const fast = presentation.presentBytes;
  return {
    shown,
    bytes: fast ? (e) => fast.call(presentation, e, e.bytes, marked?.has(e.key)) ?? shown(e)?.bytes ?? NOTHING : (e) => shown(e)?.bytes ?? NOTHING,
  };
}

/** A list's bytes as they are gathered, copied once into one buffer at the end. */
export class ListBytes {
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

/** An item's bytes as one buffer. */
export function itemBuffer(item: ItemBytes): Buffer {
  if (Buffer.isBuffer(item) || Array.isArray(item)) return joined(item as Buffer | readonly Buffer[]);
  const cut = item as CutBytes;
  return Buffer.concat([cut.src.subarray(0, cut.from), cut.src.subarray(cut.to)]);
}
