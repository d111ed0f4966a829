import type { ServerResponse } from 'node:http';
import type { CachedResource } from '../cacher/cache-manager.js';
import { decodeMeta } from '../store/meta-record.js';
import type { MetaRecord } from '../store/meta-record.js';
import { CLUSTER_COLUMN, clusterColumnAt, withCluster, type TableColumn } from '../api/table.js';
import { gvrKey, groupVersion } from '../api/resource-info.js';
import { compareMemberRV, encodeGlobalRV } from '../api/global-rv.js';
import type { ResponseForm } from '../api/negotiate.js';
import type { Snapshot, Store, StoreEvent, StoredEntry } from '../store/store.js';
import { joined, type ChangeKind, type ReadView } from '../view/read-view.js';
import { FlushPacer } from './flush-pacer.js';
import type { WatchStats } from '../metrics/metrics.js';
import { ageColumnIndex, columnsOf, metadataJsonOf, partialMetadata, rowCells, viewRanges, viewRVs } from './reads.js';
import { withResourceVersion, withResourceVersionText } from './resource-version.js';

/**
 * Client watches, served from the store. A watch first catches up (a snapshot of current objects
 * as ADDED events, and/or the event log after the client's global RV), then follows live commits.
 * Live events are encoded once per event and form, and the same bytes go to every watcher that
 * matches. They are queued per watcher and flushed together at a pace the fan-out's own cost sets
 * (flush-pacer.ts), so a busy resource with many watchers costs one socket write per watcher per
 * flush rather than per event. Each live event carries the fleet-wide mark at its commit: every
 * cluster's RV, with the event's own cluster at the event's RV, so resuming from it misses and
 * repeats nothing.
 */
export interface WatchOptions {
  resource: CachedResource;
  /** What this watch may see (src/view); its resourceVersions name only the view's clusters. */
  view: ReadView;
  form: ResponseForm;
  includeObject?: 'Metadata' | 'Object' | 'None';
  /**
   * The client's decoded global RV, of the view's clusters only; undefined for "" or "0" (start
   * from the current state).
   */
  since?: Record<string, string>;
  /** Watch-list: current state as ADDED, then a bookmark marking the end of the initial events. */
  sendInitialEvents: boolean;
  bookmarks: boolean;
  timeoutMs: number;
  bookmarkIntervalMs: number;
  /** A watcher whose unsent bytes pass this is closed; the client re-watches from its last RV. */
  maxBufferedBytes: number;
  /** A catch-up the client takes nothing of for this long is ended: it holds a read snapshot. */
  catchUpStallMs: number;
  /**
   * The view decided again (a member's RBAC changed): what it shows now and did not, or showed
   * and does not, goes to the client as ADDED or DELETED. Without it the view is fixed.
   */
  revise?: (current: ReadView) => ReadView;
  /** Decide the view again once caught up (a resumed watch replayed with the view of its time). */
  reviseOnceLive?: boolean;
}

interface Watcher {
  opts: WatchOptions;
  res: ServerResponse;
  /** Live batches that arrived while the watcher was catching up, each with its marks' base. */
  pending: BatchEncoding[] | null;
  /** Releases the catch-up's read snapshot (idempotent). */
  releaseSnapshot: () => void;
  caughtUpTo: number;
  tableHeaderSent: boolean;
  /** Which shared encoding of a live event this watcher takes (see BatchEncoding.line). */
  lineKey: string;
  columns?: TableColumn[];
  closed: boolean;
  /** Marks it closed and forgets it (timers, queue, its resource's set); the response is the caller's. */
  close: () => void;
  /** Live lines waiting for the next flush, in order. */
  queued: Buffer[];
  queuedBytes: number;
  /** Live bytes handed to the response so far (see evictIfBehind). */
  liveWritten: number;
  /** A revision asked for while it was catching up: done when it goes live. */
  revisePending: boolean;
  /** Objects announced (see announce) while it caught up, per cluster: sent once live. */
  announcePending?: Map<string, Set<string>>;
}

/** An object a revised view shows and the previous one did not (ADDED), or the other way (DELETED). */
interface ViewChange {
  type: 'ADDED' | 'DELETED';
  entry: StoredEntry;
  meta: () => MetaRecord | undefined;
}

/** Per live batch: lazily computed marks and encodings shared by every watcher. */
class BatchEncoding {
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

const LINE_END = Buffer.from('}\n');
/** A line not written: the view's presentation does not show its object. */
const NOTHING = Buffer.alloc(0);

/** Watchers share a line when they agree on its form and on what their views change in it. */
function lineKeyOf(opts: WatchOptions): string {
  return `${opts.form === 'table' ? `t:${opts.includeObject ?? ''}` : opts.form}|${opts.view.lineKey}`;
}

/**
 * What a watch is sent of a change: its new state, except for a MODIFIED that takes the object out
 * of the view, which is DELETED with the state it was last seen in (at the event's RV), as the
 * apiserver's watch cache sends it. Events logged before previous bytes were kept have the new
 * state.
 */
function sendsPrevious(ev: StoreEvent, type: ChangeKind, prev: (() => MetaRecord) | undefined): prev is () => MetaRecord {
  return type === 'DELETED' && ev.type === 'MODIFIED' && ev.prevBytes !== undefined && prev !== undefined;
}
/** Catch-up lines go out joined in writes of about this size. */
const CATCH_UP_CHUNK_BYTES = 64 * 1024;

function objectLine(type: string, object: Buffer | string): Buffer {
  return Buffer.concat([Buffer.from(`{"type":"${type}","object":`), typeof object === 'string' ? Buffer.from(object) : object, LINE_END]);
}

/**
 * Watchers of one resource and form mostly queue the very same lines between two flushes: their
 * concatenation is made once per flush and written to each of them.
 */
class JoinCache {
  private readonly byFirst = new Map<Buffer, { lines: Buffer[]; joined: Buffer }[]>();

  join(lines: Buffer[]): Buffer {
    if (lines.length === 1) return lines[0]!;
    let known = this.byFirst.get(lines[0]!);
    if (!known) this.byFirst.set(lines[0]!, (known = []));
    for (const k of known) if (k.lines.length === lines.length && k.lines.every((l, i) => l === lines[i])) return k.joined;
    const joined = Buffer.concat(lines);
    known.push({ lines, joined });
    return joined;
  }
}

/** Watchers whose views are alike (equal keys): the fan-out decides on an event once for them all. */
interface ViewGroup {
  view: ReadView;
  watchers: Set<Watcher>;
}

/**
 * One resource's watchers, grouped by view and indexed by the namespaces their views show: a live
 * event is offered only to the groups of its namespace and to those whose views show every
 * namespace, so watchers in views of other namespaces cost it nothing, and a thousand watchers in
 * ten views cost ten decisions.
 */
class ResourceWatchers implements Iterable<Watcher> {
  private readonly all = new Set<Watcher>();
  private readonly groups = new Map<string, ViewGroup>();
  private readonly anyNamespace = new Set<ViewGroup>();
  private readonly byNamespace = new Map<string, Set<ViewGroup>>();

  get size(): number {
    return this.all.size;
  }

  [Symbol.iterator](): Iterator<Watcher> {
    return this.all[Symbol.iterator]();
  }

  add(w: Watcher): void {
    this.all.add(w);
    const view = w.opts.view;
    let group = this.groups.get(view.key);
    if (!group) {
      this.groups.set(view.key, (group = { view, watchers: new Set() }));
      if (view.namespaces === undefined) this.anyNamespace.add(group);
      else for (const ns of view.namespaces) {
        let set = this.byNamespace.get(ns);
        if (!set) this.byNamespace.set(ns, (set = new Set()));
        set.add(group);
      }
    }
    group.watchers.add(w);
  }

  delete(w: Watcher): void {
    if (!this.all.delete(w)) return;
    const view = w.opts.view;
    const group = this.groups.get(view.key);
    if (!group) return;
    group.watchers.delete(w);
    if (group.watchers.size > 0) return;
    this.groups.delete(view.key);
    this.anyNamespace.delete(group);
    for (const ns of view.namespaces ?? []) {
      const set = this.byNamespace.get(ns);
      set?.delete(group);
      if (set?.size === 0) this.byNamespace.delete(ns);
    }
  }

  /** Calls `f` for each group whose view may show an object of `namespace`, each once. */
  forNamespace(namespace: string, f: (g: ViewGroup) => void): void {
    const own = this.byNamespace.get(namespace);
    if (own) for (const g of own) f(g);
    for (const g of this.anyNamespace) f(g);
  }
}

export class WatchHub {
  private readonly watchers = new Map<string, ResourceWatchers>();
  private readonly unsubscribe = new Map<string, () => void>();
  /** Watchers with queued lines. */
  private readonly dirty = new Set<Watcher>();
  private readonly pacer = new FlushPacer(() => this.flush());
  /** Watches ended for falling behind, since start (a metric). */
  private evicted = 0;
  private liveLines = 0;
  private liveWrites = 0;

  constructor(private readonly store: Store) {}

  get size(): number {
    let n = 0;
    for (const set of this.watchers.values()) n += set.size;
    return n;
  }

  /** Takes over the response: headers now, events until timeout, client close, or eviction. */
  open(res: ServerResponse, opts: WatchOptions): void {
    const key = gvrKey(opts.resource.info);
    const w: Watcher = { opts, res, pending: [], caughtUpTo: 0, tableHeaderSent: false, lineKey: lineKeyOf(opts), closed: false, close: () => undefined, releaseSnapshot: () => undefined, queued: [], queuedBytes: 0, liveWritten: 0, revisePending: opts.reviseOnceLive === true };
    let set = this.watchers.get(key);
    if (!set) {
      this.watchers.set(key, (set = new ResourceWatchers()));
      this.unsubscribe.set(key, this.store.subscribe(key, (events) => this.dispatch(key, events)));
    }
    set.add(w);

    const timers: NodeJS.Timeout[] = [];
    const close = (w.close = () => {
      if (w.closed) return;
      w.closed = true;
      w.releaseSnapshot();
      for (const t of timers) clearTimeout(t);
      this.dirty.delete(w);
      w.queued = [];
      set.delete(w);
      if (set.size === 0) {
        this.watchers.delete(key);
        this.unsubscribe.get(key)?.();
        this.unsubscribe.delete(key);
      }
    });
    res.on('close', close);
    timers.push(setTimeout(() => {
      this.flushWatcher(w);
      close();
      res.end();
    }, opts.timeoutMs));
    if (opts.bookmarks) {
      const tick = () => {
        if (w.closed) return;
        // Not while catching up: the current mark is ahead of the catch-up's lines, and a client
        // resuming from it would skip the rest of them.
        if (!w.pending) this.enqueue(w, this.bookmarkLine(w, this.currentMark(opts)));
        timers.push(setTimeout(tick, opts.bookmarkIntervalMs));
      };
      timers.push(setTimeout(tick, opts.bookmarkIntervalMs));
    }

    res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-cache, private' });
    res.flushHeaders();
    const snapshot = this.store.snapshot();
    let released = false;
    w.releaseSnapshot = () => {
      if (!released) snapshot.done();
      released = true;
    };
    this.pump(w, this.catchUp(w, snapshot));
  }

  /**
   * Writes the catch-up in chunks as fast as the client reads it (a watch-list snapshot of a large
   * cache is gigabytes: it must not sit in memory), then goes live with the batches that came
   * meanwhile.
   */
  private pump(w: Watcher, lines: Iterator<Buffer>): void {
    const step = (): void => {
      try {
        while (!w.closed) {
          const parts: Buffer[] = [];
          let size = 0;
          let r = lines.next();
          for (; !r.done; r = lines.next()) {
            parts.push(r.value);
            size += r.value.length;
            if (size >= CATCH_UP_CHUNK_BYTES) break;
          }
          const more = !r.done;
          const flowing = parts.length === 0 || w.res.write(parts.length === 1 ? parts[0]! : Buffer.concat(parts));
          if (!more) {
            w.releaseSnapshot();
            this.goLive(w);
            return;
          }
          if (!flowing) {
            // An LMDB reader pins the pages of its snapshot: one the client never drains must not
            // hold them (and the file's growth) for the whole watch timeout.
            const stalled = setTimeout(() => {
              if (!w.closed) this.evict(w);
            }, w.opts.catchUpStallMs);
            stalled.unref();
            w.res.once('drain', () => {
              clearTimeout(stalled);
              step();
            });
            return;
          }
        }
      } catch {
        w.close();
        w.res.destroy();
      }
    };
    step();
  }

  private goLive(w: Watcher): void {
    if (w.closed) return;
    const pending = w.pending ?? [];
    w.pending = null;
    for (const enc of pending) this.deliver(w, enc);
    if (w.revisePending) this.reviseViews([w]);
    if (w.announcePending) {
      const resource = gvrKey(w.opts.resource.info);
      const held = this.announced(resource, w.announcePending);
      w.announcePending = undefined;
      this.announceTo(w, resource, held);
    }
  }

  /**
   * Decides the views of running watches again (a member's RBAC changed) and tells each client
   * what its view gained (ADDED, the object as it is) and lost (DELETED, as it is), at the current
   * mark, as it would have seen had it started now. Watchers whose views change alike (the same
   * caller, the same request) share one pass over the store.
   */
  reviseViews(only?: Iterable<Watcher> | ((view: ReadView) => boolean)): void {
    const changes = new Map<string, ViewChange[]>();
    const encoded = new Map<string, Buffer[]>();
    const all = () => [...this.watchers.values()].flatMap((set) => [...set]);
    const targets = only === undefined ? all() : typeof only === 'function' ? all().filter((w) => only(w.opts.view)) : [...only];
    for (const w of targets) {
      if (w.closed || !w.opts.revise) continue;
      if (w.pending) {
        w.revisePending = true;
        continue;
      }
      w.revisePending = false;
      const key = gvrKey(w.opts.resource.info);
      const set = this.watchers.get(key);
      const prev = w.opts.view;
      const next = w.opts.revise(prev);
      if (next.key === prev.key || !set) continue;
      set.delete(w);
      w.opts = { ...w.opts, view: next };
      w.lineKey = lineKeyOf(w.opts);
      set.add(w);
      const pair = `${key}\n${prev.key}\n${next.key}`;
      let changed = changes.get(pair);
      if (!changed) changes.set(pair, (changed = this.viewChanges(key, prev, next)));
      this.enqueueShared(w, encoded, `${pair}\n${w.lineKey}`, () => {
        const latest = this.clusterRVs(w.opts);
        return changed.map((c) => {
          // As an initial event: the object's own RV for its cluster, the others' current.
          const own = c.type === 'ADDED' ? c.meta()?.rv : undefined;
          const mark = encodeGlobalRV(own ? { ...latest, [c.entry.cluster]: own } : latest);
          return this.encode(w, c.type, c.entry.cluster, c.entry.name, c.entry.bytes, c.meta, mark);
        });
      });
    }
  }

  /**
   * Enqueues lines made once for every watcher of one pass whose `shareKey` is equal (a Table's
   * first line carries its column definitions, so Table lines are each watcher's own).
   */
  private enqueueShared(w: Watcher, encoded: Map<string, Buffer[]>, shareKey: string, make: () => Buffer[]): void {
    const shared = w.opts.form !== 'table';
    let lines = shared ? encoded.get(shareKey) : undefined;
    if (!lines) {
      lines = make();
      if (shared) encoded.set(shareKey, lines);
    }
    for (const line of lines) this.enqueue(w, line);
  }

  /**
   * Tells the watchers of a resource that objects changed as they are shown though not as stored
   * (a namespace's tree labels, when a parent moved): a MODIFIED with the object as it is shown
   * now, at the current mark, to each watcher whose view shows it. A watcher still catching up
   * hears it once live (the event log has nothing of it to replay).
   */
  announce(resource: string, byCluster: ReadonlyMap<string, readonly string[]>): void {
    const set = this.watchers.get(resource);
    if (!set || byCluster.size === 0) return;
    const entries = this.announced(resource, byCluster);
    const encoded = new Map<string, Buffer[]>();
    for (const w of set) {
      if (w.closed) continue;
      if (w.pending) {
        for (const [cluster, names] of byCluster) {
          let held = (w.announcePending ??= new Map()).get(cluster);
          if (!held) w.announcePending.set(cluster, (held = new Set<string>()));
          for (const n of names) held.add(n);
        }
        continue;
      }
      this.announceTo(w, resource, entries, encoded);
    }
  }

  /** The stored objects (cluster-scoped) that `byCluster` names, as they are now. */
  private announced(resource: string, byCluster: ReadonlyMap<string, Iterable<string>>): StoredEntry[] {
    const out: StoredEntry[] = [];
    for (const [cluster, names] of byCluster) {
      for (const name of names) {
        const entry = this.store.lookup(resource, '', name, cluster).find((e) => e.cluster === cluster);
        if (entry) out.push(entry);
      }
    }
    return out;
  }

  private announceTo(w: Watcher, resource: string, entries: readonly StoredEntry[], encoded = new Map<string, Buffer[]>()): void {
    const { view } = w.opts;
    // Equal views (key) sharing lines (line key) get the same lines.
    this.enqueueShared(w, encoded, `${w.lineKey}\n${view.key}`, () => {
      const mark = encodeGlobalRV(this.clusterRVs(w.opts));
      const lines: Buffer[] = [];
      for (const entry of entries) {
        let meta: MetaRecord | undefined;
        const metaOf = () => (meta ??= this.store.metaOf(resource, entry));
        if (!view.showsCluster(entry.cluster) || !view.admits(entry, () => (view.needsMeta ? metaOf() : undefined))) continue;
        lines.push(this.encode(w, 'MODIFIED', entry.cluster, entry.name, entry.bytes, metaOf, mark));
      }
      return lines;
    });
  }

  /** What `next` shows of a resource's stored objects that `prev` did not, and the other way round. */
  private viewChanges(key: string, prev: ReadView, next: ReadView): ViewChange[] {
    const out: ViewChange[] = [];
    const clusters = [...new Set([...prev.clusters, ...next.clusters])];
    const namespaces = prev.namespaces === undefined || next.namespaces === undefined
      ? [undefined]
      : [...new Set([...prev.namespaces, ...next.namespaces])].sort();
    const needsMeta = prev.needsMeta || next.needsMeta;
    for (const cluster of clusters) {
      for (const namespace of namespaces) {
        for (const entry of this.store.entries(key, { ...(namespace !== undefined ? { namespace } : {}), cluster })) {
          if (entry.cluster !== cluster) continue;
          let meta: MetaRecord | undefined;
          const metaOf = () => (meta ??= this.store.metaOf(key, entry));
          const was = prev.admits(entry, () => (needsMeta ? metaOf() : undefined));
          const now = next.admits(entry, () => (needsMeta ? metaOf() : undefined));
          if (was !== now) out.push({ type: now ? 'ADDED' : 'DELETED', entry, meta: metaOf });
        }
      }
    }
    return out;
  }

  private currentMark(opts: WatchOptions): string {
    return encodeGlobalRV(this.clusterRVs(opts));
  }

  private clusterRVs(opts: WatchOptions, snapshot?: Snapshot): Record<string, string> {
    return viewRVs(this.store, opts.resource, opts.view, snapshot);
  }

  /**
   * The catch-up's lines, all read from one LMDB snapshot (pump() takes them across turns): the
   * current objects of clusters the client has no RV for (or of every cluster, for a watch from the
   * current state), then the logged events after the client's RV for the others. Live batches up
   * to that snapshot's sequence are then skipped. An RV older than the log is answered here, at
   * once, with a 410 ERROR line.
   */
  private *catchUp(w: Watcher, snapshot: Snapshot): Generator<Buffer> {
    const { opts } = w;
    const key = gvrKey(opts.resource.info);
    w.caughtUpTo = this.store.lastSeq(snapshot);
    const latest = this.clusterRVs(opts, snapshot);
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
          w.close();
          w.res.end();
          return;
        }
      }
    }

    const progress: Record<string, string> = { ...(since ?? {}) };
    const { view } = opts;
    const snapshotClusters = view.clusters.filter((c) => !since || since[c] === undefined);
    for (const c of snapshotClusters) if (latest[c] !== undefined) progress[c] = latest[c];
    let mark = encodeGlobalRV(progress);
    const ranges = viewRanges(view);
    for (const cluster of snapshotClusters) {
      for (const range of ranges) for (const e of this.store.entries(key, { ...range, cluster, snapshot })) {
        let meta: MetaRecord | undefined;
        const metaOf = () => (meta ??= this.store.metaOf(key, e, snapshot));
        if (!view.admits(e, () => (view.needsMeta ? metaOf() : undefined))) continue;
        // An initial event's object keeps its own RV for its own cluster (clients build updates
        // from cached objects); the other clusters' entries are the snapshot's.
        const own = metaOf()?.rv;
        const objectMark = own ? encodeGlobalRV({ ...progress, [cluster]: own }) : mark;
        yield this.encode(w, 'ADDED', e.cluster, e.name, e.bytes, metaOf, objectMark);
      }
    }
    const resumeAfter = since ? this.store.resumeSeq(key, since, snapshot) : undefined;
    if (since && resumeAfter !== undefined) {
      for (const ev of this.store.logged(key, resumeAfter, snapshot)) {
        const from = since[ev.cluster];
        if (from === undefined || compareMemberRV(ev.rv, from) <= 0) continue;
        let meta: MetaRecord | undefined;
        const metaOf = () => (meta ??= decodeMeta(ev.meta));
        const prev = ev.prevMeta;
        const prevOf = prev ? () => decodeMeta(prev) : undefined;
        const type = view.eventType(ev, metaOf, prevOf);
        if (!type) continue;
        progress[ev.cluster] = ev.rv;
        mark = encodeGlobalRV(progress);
        const previous = sendsPrevious(ev, type, prevOf);
        yield this.encode(w, type, ev.cluster, ev.name, previous ? ev.prevBytes! : ev.bytes, previous ? prevOf : metaOf, mark);
      }
    }
    // Watch-list ends its initial events with this bookmark; so does a watch from the current
    // state ("" or "0") that allows bookmarks, as the apiserver's watch cache does.
    if (opts.sendInitialEvents || (!opts.since && opts.bookmarks)) yield this.bookmarkLine(w, encodeGlobalRV(latest), true);
  }

  /**
   * A committed batch: watchers still catching up keep it for later; for the others, event by
   * event (so each watcher's lines stay in commit order), the watchers of its namespace.
   */
  private dispatch(key: string, events: readonly StoreEvent[]): void {
    const set = this.watchers.get(key);
    if (!set || set.size === 0) return;
    const enc = new BatchEncoding(events, this.store.latestRVs(key));
    for (const w of set) if (w.pending) w.pending.push(enc);
    for (let i = 0; i < events.length; i++) {
      const ev = events[i]!;
      // One pair of meta getters per event, not per watcher.
      const meta = () => enc.meta(i);
      const prevMeta = enc.prevMeta(i);
      set.forNamespace(ev.namespace, (g) => {
        const type = g.view.eventType(ev, meta, prevMeta);
        if (type) for (const w of g.watchers) if (!w.pending) this.deliverTyped(w, enc, i, type, meta, prevMeta);
      });
    }
  }

  /** A batch that came while the watcher was catching up, all of it to this watcher. */
  private deliver(w: Watcher, enc: BatchEncoding): void {
    for (let i = 0; i < enc.events.length; i++) this.deliverEvent(w, enc, i, () => enc.meta(i), enc.prevMeta(i));
  }

  private deliverEvent(w: Watcher, enc: BatchEncoding, i: number, meta: () => MetaRecord, prevMeta: (() => MetaRecord) | undefined): void {
    const type = w.opts.view.eventType(enc.events[i]!, meta, prevMeta);
    if (type) this.deliverTyped(w, enc, i, type, meta, prevMeta);
  }

  private deliverTyped(w: Watcher, enc: BatchEncoding, i: number, type: ChangeKind, now: () => MetaRecord, prevMeta: (() => MetaRecord) | undefined): void {
    const ev = enc.events[i]!;
    if (w.closed || ev.seq <= w.caughtUpTo) return;
    const { opts } = w;
    const previous = sendsPrevious(ev, type, prevMeta);
    const bytes = previous ? ev.prevBytes! : ev.bytes;
    const meta = previous ? prevMeta : now;
    // A Table watch's first event carries the column definitions; that line is this watcher's own.
    // Watchers share a line only when they also agree on its type (a selection it entered or left).
    const line = opts.form === 'table' && !w.tableHeaderSent
      ? this.encode(w, type, ev.cluster, ev.name, bytes, meta, enc.mark(i, opts.view))
      : enc.line(i, type === ev.type ? w.lineKey : `${w.lineKey}|${type}`, () => this.encode(w, type, ev.cluster, ev.name, bytes, meta, enc.mark(i, opts.view)));
    this.enqueue(w, line);
  }

  private encode(w: Watcher, type: string, cluster: string, name: string, stored: Buffer, storedMeta: () => MetaRecord | undefined, mark: string): Buffer {
    const { opts } = w;
    const presentation = opts.view.presentation;
    const shown = presentation?.present({ cluster, name }, stored, storedMeta);
    // Not shown after all (a tenant's object naming another tenant's): nothing is written.
    if (presentation && !shown) return NOTHING;
    const bytes = shown ? joined(shown.bytes) : stored;
    const meta = shown ? shown.meta : storedMeta;
    if (opts.form === 'object') return objectLine(type, withResourceVersion(bytes, mark));
    const m = meta();
    const metadata = withResourceVersionText(metadataJsonOf(bytes, m), mark);
    if (opts.form === 'metadata') return objectLine(type, partialMetadata(metadata));
    const { columns, header } = this.tableHeader(w);
    const cells = rowCells(m, columns, ageColumnIndex(columns), name, Date.now());
    // includeObject=None is an explicit null, as the apiserver writes an empty row object.
    let object = ',"object":null';
    if (opts.includeObject === 'Object') object = `,"object":${withResourceVersion(bytes, mark).toString('utf8')}`;
    else if (opts.includeObject !== 'None') object = `,"object":${partialMetadata(metadata)}`;
    return objectLine(type, `{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":${JSON.stringify(mark)}},"columnDefinitions":${header},"rows":[{"cells":${JSON.stringify(withCluster<unknown>(cells, cluster, clusterColumnAt(columns)))}${object}}]}`);
  }

  /** A Table watch's columns, and its column definitions if this is its first Table line (else null). */
  private tableHeader(w: Watcher): { columns: TableColumn[]; header: string } {
    w.columns ??= columnsOf(this.store, w.opts.resource);
    const header = w.tableHeaderSent ? 'null' : JSON.stringify(withCluster<TableColumn>(w.columns, CLUSTER_COLUMN, clusterColumnAt(w.columns)));
    w.tableHeaderSent = true;
    return { columns: w.columns, header };
  }

  /**
   * A bookmark in the watch's own form, as the apiserver sends it: an object of the watched kind
   * with only its resourceVersion, a PartialObjectMetadata for a metadata watch, and for a Table
   * watch a one-row Table (column definitions if none went yet) whose row object is the bookmark.
   * A client decodes a bookmark like any event; another kind there is a decode error, and
   * client-go then falls back from watch-list to a relist.
   */
  private bookmarkLine(w: Watcher, mark: string, initialEventsEnd = false): Buffer {
    const { opts } = w;
    const info = opts.resource.info;
    const annotations = initialEventsEnd ? ',"annotations":{"k8s.io/initial-events-end":"true"}' : '';
    const metadata = `{"resourceVersion":${JSON.stringify(mark)}${annotations}}`;
    // The member's empty object of the kind, as its bookmarks carry it (learned at discovery).
    const template = info.bookmark;
    const own = `{"kind":${JSON.stringify(info.kind)},"apiVersion":${JSON.stringify(groupVersion(info))},"metadata":${metadata}${template?.fields ?? ''}}`;
    if (opts.form === 'object') return objectLine('BOOKMARK', own);
    if (opts.form === 'metadata') return objectLine('BOOKMARK', partialMetadata(metadata));
    const { columns, header } = this.tableHeader(w);
    // The member printer's cells for that empty object; without them, typed blanks.
    const age = ageColumnIndex(columns);
    const cells = withCluster<unknown>(template && template.cells.length === columns.length
      ? template.cells
      : columns.map((c, i) => (i === age ? '<unknown>' : c.type === 'integer' || c.type === 'number' ? 0 : '')), '', clusterColumnAt(columns));
    // The member's row object: the bookmark, or null for includeObject=None (but the end of the
    // initial events always carries its metadata, whose annotation is the point of it).
    const object = opts.includeObject === 'Object' ? own : opts.includeObject === 'None' && !initialEventsEnd ? 'null' : partialMetadata(metadata);
    return objectLine('BOOKMARK', `{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":${JSON.stringify(mark)}},"columnDefinitions":${header},"rows":[{"cells":${JSON.stringify(cells)},"object":${object}}]}`);
  }

  /** Straight to the client, ahead of any live line; the bound does not count it. */
  private write(w: Watcher, line: Buffer): void {
    if (!w.closed && line.length > 0) w.res.write(line);
  }

  /** A live line: queued for the next flush; the bound on unsent bytes applies. */
  private enqueue(w: Watcher, line: Buffer): void {
    if (w.closed || line.length === 0) return;
    w.queued.push(line);
    w.queuedBytes += line.length;
    this.liveLines++;
    if (this.evictIfBehind(w, w.queuedBytes)) return;
    this.dirty.add(w);
    this.pacer.request();
  }

  private flush(): void {
    const joins = new JoinCache();
    for (const w of this.dirty) this.flushWatcher(w, joins);
    this.dirty.clear();
  }

  private flushWatcher(w: Watcher, joins?: JoinCache): void {
    if (w.closed || w.queued.length === 0) return;
    const { queued } = w;
    w.queued = [];
    w.queuedBytes = 0;
    // One HTTP chunk, one TLS write and one system call for everything queued. Corked, so the
    // system call happens here (and counts in the flush's time) rather than on the next tick.
    const joined = joins ? joins.join(queued) : Buffer.concat(queued);
    w.res.cork();
    w.res.write(joined);
    w.res.uncork();
    w.liveWritten += joined.length;
    this.liveWrites++;
    this.evictIfBehind(w, 0);
  }

  /**
   * The bound is on live bytes the client has not read. The response's unsent bytes may still hold
   * the catch-up (a watch-list snapshot can be far larger than the bound), which went out first:
   * so at most the live bytes written are unsent live bytes.
   */
  private evictIfBehind(w: Watcher, queuedBytes: number): boolean {
    if (Math.min(w.res.writableLength, w.liveWritten) + queuedBytes <= w.opts.maxBufferedBytes) return false;
    this.evict(w);
    return true;
  }

  /** Ends a watch whose client is too far behind; it re-watches from the last RV it read. */
  private evict(w: Watcher): void {
    w.close();
    this.evicted++;
    w.res.destroy();
  }

  stats(): WatchStats {
    return { open: this.size, evicted: this.evicted, liveLines: this.liveLines, liveWrites: this.liveWrites, flushPauseMs: this.pacer.pauseMs };
  }

  closeAll(): void {
    for (const set of this.watchers.values()) {
      for (const w of set) {
        this.flushWatcher(w);
        w.res.end();
      }
    }
  }
}
