import { oneClusterRV } from '../api/global-rv.js';
import { metadataEdits, metadataToFleet, type MetadataToFleet } from '../api/fleet-object/index.js';
import { ownerFacts, selectableFieldValues } from './fields.js';
import type { TableColumn } from '../api/table.js';
import { RENAMED_OWNERS_FIELD, type MetaRecord } from '../store/meta-record.js';
import { relativeCellsOf } from '../table/relative-cells.js';
import { OPEN_BRACE, OPEN_BRACKET, forEachElement, forEachMember, objectMembers, objectMembersTwoDeep, parseSpan, skipValue, type JsonMember } from '../util/json-members.js';
import { bytesView, parsedView, type JsonView } from '../util/json-view.js';
import { editedPieces, piecesLength, writePieces, type Pieces } from '../util/byte-edits.js';

/**
 * Turns what a member sends (list pages and watch events, in Table form with the full object
 * in each row, or as plain lists) into what flotilla stores: per object, the JSON bytes it serves
 * as they are (cluster annotation and global RV already in place) and a small meta record for
 * filtering and printing. Pure and synchronous, so it can run in a worker thread.
 *
 * Objects are not parsed: their bytes are walked in place, only `metadata` (less its
 * managedFields) and `cells` are parsed, the fields the meta record needs are read by path, and
 * the served bytes are the new metadata followed by the member's own bytes for everything else.
 * Parsing each object and serializing it again was most of ingest's CPU. Anything the walk cannot
 * follow (keys written with escapes, a malformed body) goes through JSON.parse instead.
 */
export interface IngestContext {
  cluster: string;
  apiVersion: string;
  kind: string;
  dropManagedFields: boolean;
  /** The fields the member's CustomResourceDefinition makes selectable (`spec.color`), for a custom resource. */
  selectableFields?: readonly string[];
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

export interface RawObject {
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

const COMMA = 0x2c;
const CLOSE_BRACE = 0x7d;

/** What the meta record takes from an object's metadata, and the served metadata's bytes. */
interface FleetMetadata {
  uid: string;
  name: string;
  namespace: string;
  /** The member's own resourceVersion. */
  rv: string;
  labels?: Record<string, string>;
  created?: string;
  pieces: Pieces;
}

/** What every stored object of a kind starts with, up to its metadata's value. */
export function storedObjectLead(kind: string, apiVersion: string): string {
  return `{"kind":${JSON.stringify(kind)},"apiVersion":${JSON.stringify(apiVersion)},"metadata":`;
}

/**
 * The served object: kind, apiVersion, metadata, then the rest of its members, the apiserver's
 * order. `src` holds the bytes the pieces' ranges point into.
 */
function served(src: Buffer | undefined, md: FleetMetadata, rest: Pieces, view: JsonView, ctx: IngestContext, cells: unknown[] | undefined): DecodedObject {
  const lead = storedObjectLead(ctx.kind, ctx.apiVersion);
  const leadLength = Buffer.byteLength(lead);
  const metadataLength = piecesLength(md.pieces);
  const restLength = piecesLength(rest);
  const bytes = Buffer.allocUnsafe(leadLength + metadataLength + (restLength > 0 ? restLength + 1 : 0) + 1);
  let at = bytes.write(lead, 0);
  at = writePieces(bytes, at, md.pieces, src);
  if (restLength > 0) {
    bytes[at++] = COMMA;
    at = writePieces(bytes, at, rest, src);
  }
  bytes[at] = CLOSE_BRACE;
  const meta: MetaRecord = { uid: md.uid, rv: md.rv, metadataSpan: [leadLength, metadataLength] };
  if (md.labels && Object.keys(md.labels).length > 0) meta.labels = md.labels;
  if (md.created) meta.created = md.created;
  const group = ctx.apiVersion.includes('/') ? ctx.apiVersion.slice(0, ctx.apiVersion.indexOf('/')) : '';
  if (cells) {
    meta.cells = cells;
    const relative = relativeCellsOf(group, ctx.kind, view, cells);
    if (relative) meta.relative = relative;
  }
  const fields = selectableFieldValues(group, ctx.kind, view, ctx.selectableFields);
  if (fields) meta.fields = fields;
  const owned = ownerFacts(view);
  if (owned.owners) meta.owners = owned.owners;
  if (owned.renamedForTenants) meta.fields = { ...meta.fields, [RENAMED_OWNERS_FIELD]: 'true' };
  return { namespace: md.namespace, name: md.name, bytes, meta };
}

/** How ingest makes an object's metadata the fleet's: every stored object is annotated and carries a global RV. */
function toFleetFor(ctx: IngestContext): MetadataToFleet {
  return { cluster: ctx.cluster, annotate: true, everyRV: true, dropManagedFields: ctx.dropManagedFields, globalRV: oneClusterRV(ctx.cluster) };
}

/** Parsed metadata made flotilla's (in place): no managedFields if dropped, the cluster annotation, the global RV. */
function parsedMetadata(md: RawMeta, ctx: IngestContext): FleetMetadata {
  const rv = md.resourceVersion ?? '';
  metadataToFleet(md, toFleetFor(ctx));
  return { uid: md.uid ?? '', name: md.name ?? '', namespace: md.namespace ?? '', rv, labels: md.labels, created: md.creationTimestamp, pieces: [JSON.stringify(md)] };
}

/** An object already parsed (the fallback, and tests that build objects). */
export function decodeObject(obj: RawObject, ctx: IngestContext, cells?: unknown[]): DecodedObject {
  const rest: Record<string, unknown> = {};
  for (const key of Object.keys(obj)) {
    if (key !== 'apiVersion' && key !== 'kind' && key !== 'metadata') rest[key] = obj[key];
  }
  return served(undefined, parsedMetadata(obj.metadata ?? {}, ctx), [JSON.stringify(rest).slice(1, -1)], parsedView(obj), ctx, cells);
}

/** An object's members and those of its members that are objects, by offset (objectMembersTwoDeep). */
interface FoundObject {
  members: JsonMember[];
  nested: Map<number, JsonMember[]>;
}

/**
 * The object whose `{` is at `open` and whose members have been found, read in place; undefined
 * when a key is written with escapes or its metadata is not an object.
 */
function splicedObject(buf: Buffer, open: number, found: FoundObject, ctx: IngestContext, cells: unknown[] | undefined): DecodedObject | undefined {
  const { members, nested } = found;
  let metadataAt: JsonMember | undefined;
  const rest: Pieces = [];
  for (const m of members) {
    if (m.key.includes('\\')) return undefined;
    if (m.key === 'metadata') metadataAt = m;
    else if (m.key !== 'apiVersion' && m.key !== 'kind') {
      if (rest.length > 0) rest.push(',');
      rest.push(m.keyStart, m.end);
    }
  }
  let md: FleetMetadata | undefined;
  if (!metadataAt) md = parsedMetadata({}, ctx);
  else if (buf[metadataAt.start] === OPEN_BRACE) {
    md = splicedMetadata(buf, metadataAt, nested.get(metadataAt.start)!, ctx) ?? parsedMetadata(parseSpan(buf, metadataAt.start, metadataAt.end) as RawMeta, ctx);
  }
  if (!md) return undefined;
  nested.set(open, members);
  return served(buf, md, rest, bytesView(buf, open, nested), ctx, cells);
}

/**
 * The metadata object at `at` (members `ms`) made flotilla's by editing its bytes, as
 * parsedMetadata does to the parsed object, member order included. Undefined for what it leaves to
 * parsedMetadata: keys written with escapes, a name, namespace, uid, resourceVersion or
 * creationTimestamp that is not a string, annotations that are neither an object nor null.
 */
function splicedMetadata(buf: Buffer, at: JsonMember, ms: JsonMember[], ctx: IngestContext): FleetMetadata | undefined {
  const member = (key: string) => ms.find((m) => m.key === key);
  const text = (key: string): string | null | undefined => {
    const m = member(key);
    if (!m) return undefined;
    const v = parseSpan(buf, m.start, m.end);
    return typeof v === 'string' ? v : null;
  };
  if (ms.some((m) => m.key.includes('\\'))) return undefined;
  const uid = text('uid');
  const name = text('name');
  const namespace = text('namespace');
  const rv = text('resourceVersion');
  const created = text('creationTimestamp');
  if (uid === null || name === null || namespace === null || rv === null || created === null) return undefined;
  const labelsAt = member('labels');
  const labels = labelsAt ? (parseSpan(buf, labelsAt.start, labelsAt.end) as Record<string, string> | null) : undefined;

  const annotationsAt = member('annotations');
  // parsedMetadata spreads the old value into the new object: only an object or null spread alike.
  if (annotationsAt && buf[annotationsAt.start] !== OPEN_BRACE && buf.toString('latin1', annotationsAt.start, annotationsAt.end) !== 'null') return undefined;
  const fleet = metadataEdits(buf, ms, at.end - 1, toFleetFor(ctx));
  if (!fleet) return undefined;
  // Up to the metadata's closing brace, its last byte.
  const pieces = editedPieces(fleet.edits, at.start, at.end - 1);
  pieces.push('}');
  return { uid: uid ?? '', name: name ?? '', namespace: namespace ?? '', rv: rv ?? '', ...(labels ? { labels } : {}), ...(created ? { created } : {}), pieces };
}

/** A Table row at `at`: its cells parsed, its object read in place. */
function splicedRow(buf: Buffer, at: number, ctx: IngestContext): { object: DecodedObject; end: number } | undefined {
  let cells: unknown[] | undefined;
  const found: { open?: number; object?: FoundObject } = {};
  const close = forEachMember(buf, at, (key, start) => {
    // A key written with escapes could spell one this looks for.
    if (key.includes('\\')) return -1;
    if (key === 'object') {
      const o = objectMembersTwoDeep(buf, start);
      if (!o) return -1;
      found.open = start;
      found.object = o;
      return o.close + 1;
    }
    if (key !== 'cells') return undefined;
    const end = skipValue(buf, start);
    if (end >= 0) cells = (parseSpan(buf, start, end) as unknown[] | null) ?? undefined;
    return end;
  });
  if (close === undefined || found.open === undefined) return undefined;
  const object = splicedObject(buf, found.open, found.object!, ctx, cells);
  return object && { object, end: close + 1 };
}

function splicedItem(buf: Buffer, at: number, ctx: IngestContext): { object: DecodedObject; end: number } | undefined {
  const o = objectMembersTwoDeep(buf, at);
  const object = o && splicedObject(buf, at, o, ctx, undefined);
  return object && { object, end: o.close + 1 };
}

/** A list page walked once: its rows (or items) read in place as the walk reaches them. */
function splicedPage(buf: Buffer, ctx: IngestContext): DecodedPage | undefined {
  const objects: DecodedObject[] = [];
  const spans: Record<string, [number, number]> = {};
  const close = forEachMember(buf, 0, (key, start) => {
    if (key.includes('\\')) return -1;
    if ((key === 'rows' || key === 'items') && buf[start] === OPEN_BRACKET) {
      const read = key === 'rows' ? splicedRow : splicedItem;
      const end = forEachElement(buf, start, (el) => {
        const r = read(buf, el, ctx);
        if (!r) return -1;
        objects.push(r.object);
        return r.end;
      });
      return end === undefined ? -1 : end + 1;
    }
    if (key !== 'metadata' && key !== 'columnDefinitions') return undefined;
    const end = skipValue(buf, start);
    spans[key] = [start, end];
    return end;
  });
  if (close === undefined) return undefined;
  const parse = (key: string): unknown => (spans[key] ? parseSpan(buf, ...spans[key]) : undefined);
  const md = parse('metadata') as RawTable['metadata'] | null | undefined;
  const columns = parse('columnDefinitions') as TableColumn[] | null | undefined;
  return { rv: md?.resourceVersion ?? '', continueToken: md?.continue || undefined, columns: columns ?? undefined, objects };
}

/** The fallback: the page parsed whole. Exported for the bench, which weighs one way against the other. */
export function decodeListPageByParsing(text: string, ctx: IngestContext): DecodedPage {
  const page = JSON.parse(text) as RawTable | RawList;
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

export function decodeListPage(body: Buffer | string, ctx: IngestContext): DecodedPage {
  const buf = typeof body === 'string' ? Buffer.from(body) : body;
  return splicedPage(buf, ctx) ?? decodeListPageByParsing(buf.toString('utf8'), ctx);
}

/** An ADDED, MODIFIED or DELETED event read in place; the rest (bookmarks, errors, the unexpected) are parsed. */
function splicedEvent(buf: Buffer, ctx: IngestContext): DecodedEvent | undefined {
  const top = objectMembers(buf, 0)?.members;
  if (!top || top.some((m) => m.key.includes('\\'))) return undefined;
  const typeAt = top.find((m) => m.key === 'type');
  const objectAt = top.find((m) => m.key === 'object');
  if (!typeAt || !objectAt) return undefined;
  const type = parseSpan(buf, typeAt.start, typeAt.end);
  if (type !== 'ADDED' && type !== 'MODIFIED' && type !== 'DELETED') return undefined;
  const object = objectMembersTwoDeep(buf, objectAt.start);
  if (!object || object.members.some((m) => m.key.includes('\\'))) return undefined;
  const members = object.members;
  const member = (key: string): unknown => {
    const m = members.find((x) => x.key === key);
    return m ? parseSpan(buf, m.start, m.end) : undefined;
  };
  const kindAt = members.find((m) => m.key === 'kind');
  if (!kindAt || buf.toString('utf8', kindAt.start, kindAt.end) !== '"Table"') {
    const decoded = splicedObject(buf, objectAt.start, object, ctx, undefined);
    return decoded && { type, object: decoded };
  }
  const rowsAt = members.find((m) => m.key === 'rows');
  if (!rowsAt || buf[rowsAt.start] !== OPEN_BRACKET) return undefined;
  // A watch event's Table has one row.
  const found: { row?: { object: DecodedObject; end: number } } = {};
  forEachElement(buf, rowsAt.start, (el) => {
    if (found.row) return undefined;
    found.row = splicedRow(buf, el, ctx);
    return found.row?.end ?? -1;
  });
  if (!found.row) return undefined;
  const columns = member('columnDefinitions') as TableColumn[] | null | undefined;
  return { type, object: found.row.object, ...(columns && columns.length > 0 ? { columns } : {}) };
}

function parsedEvent(line: string, ctx: IngestContext): DecodedEvent {
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

export function decodeWatchLine(line: Buffer | string, ctx: IngestContext): DecodedEvent {
  const buf = typeof line === 'string' ? Buffer.from(line) : line;
  return splicedEvent(buf, ctx) ?? parsedEvent(buf.toString('utf8'), ctx);
}
