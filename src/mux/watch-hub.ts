import type { ServerResponse } from 'node:http';
import type { MetaRecord } from '../store/meta-record.js';
import { gvrKey } from '../api/resource-info.js';
import type { Store, StoreEvent } from '../store/store.js';
import type { ChangeKind, ReadView } from '../view/read-view.js';
import type { WatchStats } from '../metrics/metrics.js';
import { PROTOBUF_WATCH_CONTENT_TYPE } from '../api/protobuf-watch.js';
import { FlushPacer } from './flush-pacer.js';
import { readCatchUp, streamCatchUp } from './catch-up.js';
import { ResourceWatchers } from './resource-watchers.js';
import { ViewReviser } from './view-revision.js';
import { BatchEncoding, sendsPrevious } from './watch-encoding.js';
import type { WatchOptions } from './watch-options.js';
import { JoinCache, Watcher, type WatchCounts, type WatcherHost } from './watcher.js';

/**
 * Client watches, served from the store. A watch first catches up (catch-up.ts: a snapshot of
 * current objects as ADDED events, and/or the event log after the client's global RV), then
 * follows live commits, which this hub dispatches. Live events are encoded once per event and
 * form (watch-encoding.ts), and the same bytes go to every watcher that matches. They are queued
 * per watcher (watcher.ts) and flushed together at a pace the fan-out's own cost sets
 * (flush-pacer.ts), so a busy resource with many watchers costs one socket write per watcher per
 * flush rather than per event. Each live event carries the fleet-wide mark at its commit: every
 * cluster's RV, with the event's own cluster at the event's RV, so resuming from it misses and
 * repeats nothing. Views that change under running watches are revised by view-revision.ts.
 */
export class WatchHub implements WatcherHost {
  private readonly watchers = new Map<string, ResourceWatchers>();
  private readonly unsubscribe = new Map<string, () => void>();
  /** Watchers with queued lines. */
  private readonly dirty = new Set<Watcher>();
  private readonly pacer = new FlushPacer(() => this.flush());
  private readonly reviser: ViewReviser;
  readonly counts: WatchCounts = { evicted: 0, liveLines: 0, liveWrites: 0 };
  /** Told each watcher evicted for falling behind (the server logs it). */
  evicted?: (w: Watcher) => void;

  private readonly stopArrivals: () => void;

  constructor(readonly store: Store) {
    this.reviser = new ViewReviser(store, this.watchers);
    // Any resource's objects may own what an owner term's watch shows (a ReplicaSet, its pods).
    this.stopArrivals = store.subscribeEvery((resource, cluster, changes) => this.reviser.admitDependents(resource, cluster, changes));
  }

  get size(): number {
    let n = 0;
    for (const set of this.watchers.values()) n += set.size;
    return n;
  }

  /** Takes over the response: headers now, events until timeout, client close, or eviction. */
  open(res: ServerResponse, opts: WatchOptions): void {
    const key = gvrKey(opts.resource.info);
    const w = new Watcher(opts, res, this);
    let set = this.watchers.get(key);
    if (!set) {
      this.watchers.set(key, (set = new ResourceWatchers()));
      this.unsubscribe.set(key, this.store.subscribe(key, (events) => this.dispatch(key, events)));
    }
    set.add(w);
    res.on('close', () => w.close());
    w.startTimers();

    res.writeHead(200, { 'content-type': opts.protobuf ? PROTOBUF_WATCH_CONTENT_TYPE : 'application/json', 'cache-control': 'no-cache, private' });
    res.flushHeaders();
    const snapshot = this.store.snapshot();
    let released = false;
    w.releaseSnapshot = () => {
      if (!released) snapshot.done();
      released = true;
    };
    streamCatchUp(w, readCatchUp(w, snapshot), () => this.goLive(w));
  }

  schedule(w: Watcher): void {
    this.dirty.add(w);
    this.pacer.request();
  }

  forget(w: Watcher): void {
    this.dirty.delete(w);
    const key = gvrKey(w.opts.resource.info);
    const set = this.watchers.get(key);
    if (!set) return;
    set.delete(w);
    if (set.size === 0) {
      this.watchers.delete(key);
      this.unsubscribe.get(key)?.();
      this.unsubscribe.delete(key);
    }
  }

  private goLive(w: Watcher): void {
    if (w.closed) return;
    const pending = w.pending ?? [];
    w.pending = null;
    for (const enc of pending) this.deliver(w, enc);
    if (w.revisePending) this.reviser.revise([w]);
    this.reviser.announcePendingTo(w);
    this.reviser.admitPendingTo(w);
  }

  /**
   * Decides the views of running watches again (a member's RBAC changed): each client is told
   * what its view gained and lost (view-revision.ts). All watches, or those given, or those whose
   * views `only` picks.
   */
  reviseViews(only?: Iterable<Watcher> | ((view: ReadView) => boolean)): void {
    const all = () => [...this.watchers.values()].flatMap((set) => [...set]);
    this.reviser.revise(only === undefined ? all() : typeof only === 'function' ? all().filter((w) => only(w.opts.view)) : only);
  }

  /** Objects of `resource` shown otherwise though stored alike (a namespace's tree labels): a MODIFIED to their watchers. */
  announce(resource: string, byCluster: ReadonlyMap<string, readonly string[]>): void {
    this.reviser.announce(resource, byCluster);
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
    const line = opts.form === 'table' && !w.table.headerSent
      ? w.encodeEvent(type, ev.cluster, ev.name, bytes, meta, enc.mark(i, opts.view))
      : enc.line(i, type === ev.type ? w.lineKey : `${w.lineKey}|${type}`, () => w.encodeEvent(type, ev.cluster, ev.name, bytes, meta, enc.mark(i, opts.view)));
    w.enqueue(line);
  }

  private flush(): void {
    const joins = new JoinCache();
    for (const w of this.dirty) w.flush(joins);
    this.dirty.clear();
  }

  stats(): WatchStats {
    const { evicted, liveLines, liveWrites } = this.counts;
    return { open: this.size, evicted, liveLines, liveWrites, flushPauseMs: this.pacer.pauseMs };
  }

  closeAll(): void {
    this.stopArrivals();
    for (const set of this.watchers.values()) {
      for (const w of set) {
        w.flush();
        w.res.end();
      }
    }
  }
}
