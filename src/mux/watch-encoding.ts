import { decodeMeta, type MetaRecord } from '../store/meta-record.js';
import { groupVersion } from '../api/resource-info.js';
import { withCluster } from '../api/table.js';
import { encodeGlobalRV } from '../api/global-rv.js';
import { frameWatchEvent } from '../api/json-watch.js';
import { protobufWatchFrame } from '../api/protobuf-watch.js';
import type { Store, StoreEvent } from '../store/store.js';
import { joined, type ChangeKind, type ReadView } from '../view/read-view.js';
import { withResourceVersion } from '../api/fleet-object/index.js';
import { encodeColumnDefinitions, columnsOf, partialMetadata, encodePartialMetadata, TABLE_CLOSING, tableLayout, openTable, encodeTableRow, type TableLayout } from './response-forms.js';
import type { WatchOptions } from './watch-options.js';

/**
 * A watch's lines, in the watch's form (response-forms.ts, as lists and gets are), each event
 * carrying the fleet-wide mark it is at; and a live batch's encodings, made once and shared by
 * every watcher that takes the same line.
 */

/** A line not written: the view's presentation does not show its object. */
export const NOTHING = Buffer.alloc(0);

/** Watchers share a line when they agree on its form and on what their views change in it. */
export function lineKeyOf(opts: WatchOptions): string {
  return `${opts.form === 'table' ? `t:${opts.includeObject ?? ''}` : opts.form}${opts.protobuf ? ':pb' : ''}|${opts.view.lineKey}`;
}

const CANNOT_ENCODE = JSON.stringify({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: 'an object could not be encoded in protobuf', reason: 'InternalError', code: 500 });

/**
 * An event in the watch's encoding: a JSON line, or a protobuf frame of the same object. An
 * object the transcoder cannot read ends in an ERROR event (the client watches again), never a
 * line of another encoding.
 */
export function frameEvent(opts: Pick<WatchOptions, 'protobuf'>, type: string, object: Buffer | string): Buffer {
  if (!opts.protobuf) return frameWatchEvent(type, object);
  return protobufWatchFrame(type, object) ?? protobufWatchFrame('ERROR', CANNOT_ENCODE)!;
}

/**
 * What a watch is sent of a change: its new state, except for a MODIFIED that takes the object out
 * of the view, which is DELETED with the state it was last seen in (at the event's RV), as the
 * apiserver's watch cache sends it. Events logged before previous bytes were kept have the new
 * state.
 */
export function sendsPrevious(ev: StoreEvent, type: ChangeKind, prev: (() => MetaRecord) | undefined): prev is () => MetaRecord {
  return type === 'DELETED' && ev.type === 'MODIFIED' && ev.prevBytes !== undefined && prev !== undefined;
}

/** A Table watch's columns, read once, and whether its column definitions went out (on its first line). */
export class TableState {
  layout?: TableLayout;
  headerSent = false;

  /** The columns, and their definitions as JSON if this is the watch's first Table line (else null). */
  take(store: Store, opts: WatchOptions): { layout: TableLayout; header: string } {
    const layout = (this.layout ??= tableLayout(columnsOf(store, opts.resource)));
    const header = this.headerSent ? 'null' : encodeColumnDefinitions(layout.columns);
    this.headerSent = true;
    return { layout, header };
  }
}

/** A Table of one row, as a watch event's object. */
function oneRowTable(mark: string, header: string, row: string): string {
  return `${openTable(`"resourceVersion":${JSON.stringify(mark)}`, header)}${row}${TABLE_CLOSING}`;
}

/** An event's line in the watch's form, its object at `mark`; NOTHING when the view's presentation hides it. */
export function encodeEvent(store: Store, opts: WatchOptions, table: TableState, type: string, cluster: string, name: string, stored: Buffer, storedMeta: () => MetaRecord | undefined, mark: string): Buffer {
  const presentation = opts.view.presentation;
  const shown = presentation?.present({ cluster, name }, stored, storedMeta);
  // Not shown after all (a tenant's object naming another tenant's): nothing is written.
  if (presentation && !shown) return NOTHING;
  const bytes = shown ? joined(shown.bytes) : stored;
  const meta = shown ? shown.meta : storedMeta;
  if (opts.form === 'object') return frameEvent(opts, type, withResourceVersion(bytes, mark));
  if (opts.form === 'metadata') return frameWatchEvent(type, encodePartialMetadata(bytes, meta(), mark));
  const { layout, header } = table.take(store, opts);
  return frameWatchEvent(type, oneRowTable(mark, header, encodeTableRow(layout, opts.includeObject, cluster, name, bytes, meta(), Date.now(), mark)));
}

/**
 * A bookmark in the watch's own form, as the apiserver sends it: an object of the watched kind
 * with only its resourceVersion, a PartialObjectMetadata for a metadata watch, and for a Table
 * watch a one-row Table (column definitions if none went yet) whose row object is the bookmark.
 * A client decodes a bookmark like any event; another kind there is a decode error, and
 * client-go then falls back from watch-list to a relist.
 */
export function encodeBookmark(store: Store, opts: WatchOptions, table: TableState, mark: string, initialEventsEnd = false): Buffer {
  const info = opts.resource.info;
  const annotations = initialEventsEnd ? ',"annotations":{"k8s.io/initial-events-end":"true"}' : '';
  const metadata = `{"resourceVersion":${JSON.stringify(mark)}${annotations}}`;
  // The member's empty object of the kind, as its bookmarks carry it (learned at discovery).
  const template = info.bookmark;
  const own = `{"kind":${JSON.stringify(info.kind)},"apiVersion":${JSON.stringify(groupVersion(info))},"metadata":${metadata}${template?.fields ?? ''}}`;
  if (opts.form === 'object') return frameEvent(opts, 'BOOKMARK', own);
  if (opts.form === 'metadata') return frameWatchEvent('BOOKMARK', partialMetadata(metadata));
  const { layout, header } = table.take(store, opts);
  const { columns, ageIndex, clusterAt } = layout;
  // The member printer's cells for that empty object; without them, typed blanks.
  const cells = template && template.cells.length === columns.length
    ? template.cells
    : columns.map((c, i) => (i === ageIndex ? '<unknown>' : c.type === 'integer' || c.type === 'number' ? 0 : ''));
  // The member's row object: the bookmark, or null for includeObject=None (but the end of the
  // initial events always carries its metadata, whose annotation is the point of it).
  const object = opts.includeObject === 'Object' ? own : opts.includeObject === 'None' && !initialEventsEnd ? 'null' : partialMetadata(metadata);
  return frameWatchEvent('BOOKMARK', oneRowTable(mark, header, `{"cells":${JSON.stringify(withCluster<unknown>(cells, '', clusterAt))},"object":${object}}`));
}

/** Per live batch: lazily computed marks and encodings shared by every watcher. */
export class BatchEncoding {
  /** Per view lineKey (the clusters a mark names), each event's mark. */
  private readonly marks = new Map<string, { base: Record<string, string>; marks: (string | undefined)[] }>();
  private readonly metas: (MetaRecord | undefined)[];
  private readonly prevMetas: (MetaRecord | undefined)[];
  /** Per event, its line by watcher lineKey. */
  private readonly lines: (Map<string, Buffer> | undefined)[];

  constructor(
    readonly events: readonly StoreEvent[],
    private readonly base: Record<string, string>,
  ) {
    this.metas = new Array<MetaRecord | undefined>(events.length);
    this.prevMetas = new Array<MetaRecord | undefined>(events.length);
    this.lines = new Array<Map<string, Buffer> | undefined>(events.length);
  }

  /** The fleet-wide mark at event i's commit, of the clusters the view shows. */
  mark(i: number, view: ReadView): string {
    let byView = this.marks.get(view.lineKey);
    if (!byView) {
      const base: Record<string, string> = {};
      for (const c in this.base) if (view.showsCluster(c)) base[c] = this.base[c]!;
      this.marks.set(view.lineKey, (byView = { base, marks: new Array<string | undefined>(this.events.length) }));
    }
    const ev = this.events[i]!;
    return (byView.marks[i] ??= encodeGlobalRV({ ...byView.base, [ev.cluster]: ev.rv }));
  }

  meta(i: number): MetaRecord {
    return (this.metas[i] ??= decodeMeta(this.events[i]!.meta));
  }

  /** What the object's meta record was before a MODIFIED event, when the store kept it. */
  prevMeta(i: number): (() => MetaRecord) | undefined {
    const prev = this.events[i]!.prevMeta;
    return prev ? () => (this.prevMetas[i] ??= decodeMeta(prev)) : undefined;
  }

  line(i: number, key: string, make: () => Buffer): Buffer {
    const byKey = (this.lines[i] ??= new Map());
    let line = byKey.get(key);
    if (!line) byKey.set(key, (line = make()));
    return line;
  }
}
