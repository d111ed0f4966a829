import { encodeGlobalRV } from '../rv/global-rv.js';
import { selectableFieldValues } from './fields.js';
import { relativeCellsOf, type RelativeCell } from '../table/relative-cells.js';

/**
 * Turns what a member sends (list pages and watch events, in Table form with the full object
 * in each row, or as plain lists) into what flotilla stores: per object, the JSON bytes it serves
 * as they are (cluster annotation and global RV already in place) and a small meta record for
 * filtering and printing. Pure and synchronous, so it can run in a worker thread.
 */
export const CLUSTER_ANNOTATION = 'search.flotilla.io/cluster';

export interface TableColumn {
  name: string;
  type: string;
  format: string;
  description: string;
  priority: number;
}

export interface IngestContext {
  cluster: string;
  apiVersion: string;
  kind: string;
  dropManagedFields: boolean;
}

export interface MetaRecord {
  uid: string;
  /** The member's own resourceVersion of this object. */
  rv: string;
  labels?: Record<string, string>;
  created?: string;
  /** The member's Table cells for this object, when it was ingested in Table form. */
  cells?: unknown[];
  /**
   * Where the served object's `metadata` JSON lies in its stored bytes, as [byte offset, byte
   * length]: PartialObjectMetadata and Table rows slice it from there. The meta record used to
   * carry its own copy, about 700 of a bench pod's 1,300 meta bytes.
   */
  metadataSpan: [number, number];
  /** Values of the kind's selectable fields (field selectors), when it has any. */
  fields?: Record<string, string>;
  /** Cells printed relative to now (besides Age), reprinted when served. */
  relative?: RelativeCell[];
}

export interface DecodedObject {
  namespace: string;
  name: string;
  bytes: Buffer;
  meta: MetaRecord;
}

export interface DecodedPage {
  rv: string;
  continueToken?: string;
  columns?: TableColumn[];
  objects: DecodedObject[];
}

export type DecodedEvent =
  | { type: 'ADDED' | 'MODIFIED' | 'DELETED'; object: DecodedObject; columns?: TableColumn[] }
  | { type: 'BOOKMARK'; rv: string }
  | { type: 'ERROR'; status: { code?: number; reason?: string; message?: string } };

interface RawObject {
  apiVersion?: string;
  kind?: string;
  metadata?: RawMeta;
  [k: string]: unknown;
}

interface RawMeta {
  name?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  creationTimestamp?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  managedFields?: unknown;
  [k: string]: unknown;
}

interface RawTable {
  kind: 'Table';
  metadata?: { resourceVersion?: string; continue?: string };
  columnDefinitions?: TableColumn[] | null;
  rows?: { cells: unknown[]; object: RawObject }[] | null;
}

interface RawList {
  kind?: string;
  metadata?: { resourceVersion?: string; continue?: string };
  items?: RawObject[] | null;
}

export function decodeObject(obj: RawObject, ctx: IngestContext, cells?: unknown[]): DecodedObject {
  const md: RawMeta = obj.metadata ?? {};
  const memberRV = md.resourceVersion ?? '';
  if (ctx.dropManagedFields) delete md.managedFields;
  md.annotations = { ...md.annotations, [CLUSTER_ANNOTATION]: ctx.cluster };
  md.resourceVersion = encodeGlobalRV({ [ctx.cluster]: memberRV });
  const metadataJson = JSON.stringify(md);
  // Serialize once, in the apiserver's field order, reusing the metadata JSON.
  const rest: Record<string, unknown> = {};
  for (const key of Object.keys(obj)) {
    if (key !== 'apiVersion' && key !== 'kind' && key !== 'metadata') rest[key] = obj[key];
  }
  const restJson = JSON.stringify(rest);
  const lead = `{"kind":${JSON.stringify(ctx.kind)},"apiVersion":${JSON.stringify(ctx.apiVersion)},"metadata":`;
  const head = lead + metadataJson;
  const json = restJson === '{}' ? `${head}}` : `${head},${restJson.slice(1)}`;
  const meta: MetaRecord = { uid: md.uid ?? '', rv: memberRV, metadataSpan: [Buffer.byteLength(lead), Buffer.byteLength(metadataJson)] };
  if (md.labels && Object.keys(md.labels).length > 0) meta.labels = md.labels;
  if (md.creationTimestamp) meta.created = md.creationTimestamp;
  const group = ctx.apiVersion.includes('/') ? ctx.apiVersion.slice(0, ctx.apiVersion.indexOf('/')) : '';
  if (cells) {
    meta.cells = cells;
    const relative = relativeCellsOf(group, ctx.kind, obj, cells);
    if (relative) meta.relative = relative;
  }
  const fields = selectableFieldValues(group, ctx.kind, obj);
  if (fields) meta.fields = fields;
  return { namespace: md.namespace ?? '', name: md.name ?? '', bytes: Buffer.from(json), meta };
}

export function decodeListPage(body: Buffer | string, ctx: IngestContext): DecodedPage {
  const page = JSON.parse(typeof body === 'string' ? body : body.toString('utf8')) as RawTable | RawList;
  const rv = page.metadata?.resourceVersion ?? '';
  const continueToken = page.metadata?.continue || undefined;
  if (page.kind === 'Table') {
    const table = page as RawTable;
    return {
      rv,
      continueToken,
      columns: table.columnDefinitions ?? undefined,
      objects: (table.rows ?? []).map((row) => decodeObject(row.object, ctx, row.cells)),
    };
  }
  const list = page as RawList;
  return { rv, continueToken, objects: (list.items ?? []).map((item) => decodeObject(item, ctx)) };
}

export function decodeWatchLine(line: string, ctx: IngestContext): DecodedEvent {
  const event = JSON.parse(line) as { type: string; object: RawObject | RawTable };
  if (event.type === 'ERROR') return { type: 'ERROR', status: event.object as { code?: number; reason?: string; message?: string } };
  let object = event.object as RawObject;
  let cells: unknown[] | undefined;
  let columns: TableColumn[] | undefined;
  if (event.object.kind === 'Table') {
    const table = event.object as RawTable;
    const row = table.rows?.[0];
    if (!row) throw new Error(`watch event ${event.type} from ${ctx.cluster} has a Table with no row`);
    object = row.object;
    cells = row.cells;
    if (table.columnDefinitions && table.columnDefinitions.length > 0) columns = table.columnDefinitions;
  }
  if (event.type === 'BOOKMARK') return { type: 'BOOKMARK', rv: object.metadata?.resourceVersion ?? '' };
  if (event.type !== 'ADDED' && event.type !== 'MODIFIED' && event.type !== 'DELETED') {
    throw new Error(`unknown watch event type ${JSON.stringify(event.type)} from ${ctx.cluster}`);
  }
  return { type: event.type, object: decodeObject(object, ctx, cells), ...(columns ? { columns } : {}) };
}
