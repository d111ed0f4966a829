import type { ServerResponse } from 'node:http';
import type { CachedResource } from '../cacher/cache-manager.js';
import { decodeMeta } from '../ingest/batch.js';
import type { MetaRecord, TableColumn } from '../ingest/decode.js';
import { gvrKey, groupVersion } from '../resources/resource-info.js';
import { compareMemberRV, encodeGlobalRV } from '../rv/global-rv.js';
import type { ResponseForm } from '../router/negotiate.js';
import type { Store, StoreEvent } from '../store/store.js';
import { matches, needsMeta, type ObjectFilter } from './filter.js';
import { CLUSTER_COLUMN, ageColumnIndex, columnsOf, metadataJsonOf, partialMetadata, rowCells } from './reads.js';
import { withResourceVersion, withResourceVersionText } from './resource-version.js';

/**
 * Client watches, served from the store. A watch first catches up (a snapshot of current objects
 * as ADDED events, and/or the event log after the client's global RV), then follows live commits.
 * Live events are encoded once per event and form, and the same bytes go to every watcher that
 * matches. Each live event carries the fleet-wide mark at its commit: every cluster's RV, with the
 * event's own cluster at the event's RV, so resuming from it misses and repeats nothing.
 */
export interface WatchOptions {
  resource: CachedResource;
  filter: ObjectFilter;
  form: ResponseForm;
  includeObject?: 'Metadata' | 'Object' | 'None';
  /** The client's decoded global RV; undefined for "" or "0" (start from the current state). */
  since?: Record<string, string>;
  /** Watch-list: current state as ADDED, then a bookmark marking the end of the initial events. */
  sendInitialEvents: boolean;
  bookmarks: boolean;
  timeoutMs: number;
  bookmarkIntervalMs: number;
  /** A watcher whose unsent bytes pass this is closed; the client re-watches from its last RV. */
  maxBufferedBytes: number;
}

interface Watcher {
  opts: WatchOptions;
  res: ServerResponse;
  /** Live batches that arrived while the watcher was catching up. */
  pending: (readonly StoreEvent[])[] | null;
  caughtUpTo: number;
  tableHeaderSent: boolean;
  columns?: TableColumn[];
  closed: boolean;
}

/** Per live batch: lazily computed marks and encodings shared by every watcher. */
class BatchEncoding {
  private readonly marks: (string | undefined)[];
  private readonly metas: (MetaRecord | undefined)[];
  private readonly lines = new Map<string, Buffer>();

  constructor(
    readonly events: readonly StoreEvent[],
    private readonly base: Record<string, string>,
  ) {
    this.marks = new Array<string | undefined>(events.length);
    this.metas = new Array<MetaRecord | undefined>(events.length);
  }

  mark(i: number): string {
    const ev = this.events[i]!;
    return (this.marks[i] ??= encodeGlobalRV({ ...this.base, [ev.cluster]: ev.rv }));
  }

  meta(i: number): MetaRecord {
    return (this.metas[i] ??= decodeMeta(this.events[i]!.meta));
  }

  line(i: number, key: string, make: () => Buffer): Buffer {
    const k = `${i}:${key}`;
    let line = this.lines.get(k);
    if (!line) this.lines.set(k, (line = make()));
    return line;
  }
}

const LINE_END = Buffer.from('}\n');

function objectLine(type: string, object: Buffer | string): Buffer {
  return Buffer.concat([Buffer.from(`{"type":"${type}","object":`), typeof object === 'string' ? Buffer.from(object) : object, LINE_END]);
}

export class WatchHub {
  private readonly watchers = new Map<string, Set<Watcher>>();
  private readonly unsubscribe = new Map<string, () => void>();
  /** Watches ended for falling behind, since start (a metric). */
  evicted = 0;

  constructor(private readonly store: Store) {}

  get size(): number {
    let n = 0;
    for (const set of this.watchers.values()) n += set.size;
    return n;
  }

  /** Takes over the response: headers now, events until timeout, client close, or eviction. */
  open(res: ServerResponse, opts: WatchOptions): void {
    const key = gvrKey(opts.resource.info);
    const w: Watcher = { opts, res, pending: [], caughtUpTo: 0, tableHeaderSent: false, closed: false };
    let set = this.watchers.get(key);
    if (!set) {
      this.watchers.set(key, (set = new Set()));
      this.unsubscribe.set(key, this.store.subscribe(key, (events) => this.dispatch(key, events)));
    }
    set.add(w);

    const timers: NodeJS.Timeout[] = [];
    const close = () => {
      if (w.closed) return;
      w.closed = true;
      for (const t of timers) clearTimeout(t);
      set.delete(w);
      if (set.size === 0) {
        this.watchers.delete(key);
        this.unsubscribe.get(key)?.();
        this.unsubscribe.delete(key);
      }
    };
    res.on('close', close);
    timers.push(setTimeout(() => {
      close();
      res.end();
    }, opts.timeoutMs));
    if (opts.bookmarks) {
      const tick = () => {
        if (w.closed) return;
        this.write(w, this.bookmarkLine(opts, this.currentMark(opts)));
        timers.push(setTimeout(tick, opts.bookmarkIntervalMs));
      };
      timers.push(setTimeout(tick, opts.bookmarkIntervalMs));
    }

    res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-cache, private' });
    res.flushHeaders();
    this.catchUp(w);
    if (w.closed) return;
    const pending = w.pending ?? [];
    w.pending = null;
    for (const batch of pending) this.deliver(w, new BatchEncoding(batch, this.store.latestRVs(key)));
  }

  private currentMark(opts: WatchOptions): string {
    return encodeGlobalRV(this.clusterRVs(opts));
  }

  private clusterRVs(opts: WatchOptions): Record<string, string> {
    const all = this.store.latestRVs(gvrKey(opts.resource.info));
    const out: Record<string, string> = {};
    for (const [c, rv] of Object.entries(all)) if (opts.resource.clusters.includes(c)) out[c] = rv;
    return out;
  }

  /**
   * One synchronous pass over one LMDB snapshot: the current objects of clusters the client has no
   * RV for (or of every cluster, for a watch from the current state), then the logged events after
   * the client's RV for the others. Live batches up to that snapshot's sequence are then skipped.
   */
  private catchUp(w: Watcher): void {
    const { opts } = w;
    const key = gvrKey(opts.resource.info);
    w.caughtUpTo = this.store.lastSeq();
    const latest = this.clusterRVs(opts);
    const since = opts.sendInitialEvents ? undefined : opts.since;

    if (since) {
      const start = this.store.logStart(key);
      for (const [cluster, rv] of Object.entries(since)) {
        const first = start[cluster];
        if (first !== undefined && compareMemberRV(rv, first) < 0) {
          this.write(w, objectLine('ERROR', JSON.stringify({
            kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure',
            message: `too old resource version: the event log of ${cluster} starts after ${rv}`, reason: 'Expired', code: 410,
          })));
          w.closed = true;
          w.res.end();
          return;
        }
      }
    }

    const progress: Record<string, string> = { ...(since ?? {}) };
    const snapshotClusters = opts.resource.clusters.filter((c) => !since || since[c] === undefined);
    for (const c of snapshotClusters) if (latest[c] !== undefined) progress[c] = latest[c];
    let mark = encodeGlobalRV(progress);
    const wantsMeta = needsMeta(opts.filter);
    w.res.cork();
    for (const cluster of snapshotClusters) {
      if (opts.filter.cluster !== undefined && cluster !== opts.filter.cluster) continue;
      for (const e of this.store.entries(key, { namespace: opts.filter.namespace, cluster })) {
        let meta: MetaRecord | undefined;
        const metaOf = () => (meta ??= this.store.metaOf(key, e));
        if (!matches(opts.filter, e, () => (wantsMeta ? metaOf() : undefined))) continue;
        // An initial event's object keeps its own RV for its own cluster (clients build updates
        // from cached objects); the other clusters' entries are the snapshot's.
        const own = metaOf()?.rv;
        const objectMark = own ? encodeGlobalRV({ ...progress, [cluster]: own }) : mark;
        this.write(w, this.encode(w, 'ADDED', e.cluster, e.name, e.bytes, metaOf, objectMark), true);
      }
    }
    const resumeAfter = since ? this.store.resumeSeq(key, since) : undefined;
    if (since && resumeAfter !== undefined) {
      for (const ev of this.store.logged(key, resumeAfter)) {
        const from = since[ev.cluster];
        if (from === undefined || compareMemberRV(ev.rv, from) <= 0) continue;
        if (!opts.resource.clusters.includes(ev.cluster)) continue;
        let meta: MetaRecord | undefined;
        const metaOf = () => (meta ??= decodeMeta(ev.meta));
        if (!matches(opts.filter, ev, metaOf)) continue;
        progress[ev.cluster] = ev.rv;
        mark = encodeGlobalRV(progress);
        this.write(w, this.encode(w, ev.type, ev.cluster, ev.name, ev.bytes, metaOf, mark), true);
      }
    }
    if (opts.sendInitialEvents) this.write(w, this.bookmarkLine(opts, encodeGlobalRV(latest), true), true);
    w.res.uncork();
  }

  private dispatch(key: string, events: readonly StoreEvent[]): void {
    const set = this.watchers.get(key);
    if (!set || set.size === 0) return;
    const enc = new BatchEncoding(events, this.store.latestRVs(key));
    for (const w of set) {
      if (w.pending) w.pending.push(events);
      else this.deliver(w, enc);
    }
  }

  private deliver(w: Watcher, enc: BatchEncoding): void {
    const { opts } = w;
    w.res.cork();
    enc.events.forEach((ev, i) => {
      if (w.closed || ev.seq <= w.caughtUpTo) return;
      if (!opts.resource.clusters.includes(ev.cluster)) return;
      if (!matches(opts.filter, ev, () => enc.meta(i))) return;
      const formKey = opts.form === 'table' ? `t:${opts.includeObject ?? ''}:${w.tableHeaderSent}` : opts.form;
      // A Table watch's first event carries the column definitions; that line is this watcher's own.
      const line = opts.form === 'table' && !w.tableHeaderSent
        ? this.encode(w, ev.type, ev.cluster, ev.name, ev.bytes, () => enc.meta(i), enc.mark(i))
        : enc.line(i, formKey, () => this.encode(w, ev.type, ev.cluster, ev.name, ev.bytes, () => enc.meta(i), enc.mark(i)));
      this.write(w, line);
    });
    w.res.uncork();
  }

  private encode(w: Watcher, type: string, cluster: string, name: string, bytes: Buffer, meta: () => MetaRecord | undefined, mark: string): Buffer {
    const { opts } = w;
    if (opts.form === 'object') return objectLine(type, withResourceVersion(bytes, mark));
    const m = meta();
    const metadata = withResourceVersionText(metadataJsonOf(bytes, m), mark);
    if (opts.form === 'metadata') return objectLine(type, partialMetadata(metadata));
    w.columns ??= columnsOf(this.store, opts.resource);
    const columns = w.columns;
    const cells = rowCells(m, columns, ageColumnIndex(columns), name, Date.now());
    let object = '';
    if (opts.includeObject === 'Object') object = `,"object":${withResourceVersion(bytes, mark).toString('utf8')}`;
    else if (opts.includeObject !== 'None') object = `,"object":${partialMetadata(metadata)}`;
    const header = w.tableHeaderSent ? 'null' : JSON.stringify([CLUSTER_COLUMN, ...columns]);
    w.tableHeaderSent = true;
    return objectLine(type, `{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":${JSON.stringify(mark)}},"columnDefinitions":${header},"rows":[{"cells":${JSON.stringify([cluster, ...cells])}${object}}]}`);
  }

  private bookmarkLine(opts: WatchOptions, mark: string, initialEventsEnd = false): Buffer {
    const info = opts.resource.info;
    const annotations = initialEventsEnd ? ',"annotations":{"k8s.io/initial-events-end":"true"}' : '';
    return objectLine('BOOKMARK', `{"kind":${JSON.stringify(info.kind)},"apiVersion":${JSON.stringify(groupVersion(info))},"metadata":{"resourceVersion":${JSON.stringify(mark)}${annotations}}}`);
  }

  private write(w: Watcher, line: Buffer, catchingUp = false): void {
    if (w.closed) return;
    w.res.write(line);
    // While catching up the whole snapshot is written at once; the bound applies to live events.
    if (!catchingUp && w.res.writableLength > w.opts.maxBufferedBytes) {
      w.closed = true;
      this.evicted++;
      w.res.destroy();
    }
  }

  closeAll(): void {
    for (const set of this.watchers.values()) for (const w of set) w.res.end();
  }
}
