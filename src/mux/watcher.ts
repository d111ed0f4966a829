import type { ServerResponse } from 'node:http';
import { encodeGlobalRV } from '../api/global-rv.js';
import type { MetaRecord } from '../store/meta-record.js';
import type { Snapshot, Store } from '../store/store.js';
import { viewRVs } from './list-plan.js';
import { encodeBookmark, encodeEvent, lineKeyOf, TableState, type BatchEncoding } from './watch-encoding.js';
import type { WatchOptions } from './watch-options.js';

/**
 * One client's watch stream: the lines it is sent, its queue of live lines between flushes, its
 * timeout and bookmarks, and the bound on what it may leave unread (a slow watcher is ended, and
 * the client watches again from the last RV it read).
 */

/** Counts across a hub's watchers, since start (metrics). */
export interface WatchCounts {
  /** Watches ended for falling behind. */
  evicted: number;
  liveLines: number;
  liveWrites: number;
}

/** What a watcher needs of its hub. */
export interface WatcherHost {
  readonly store: Store;
  readonly counts: WatchCounts;
  /** The watcher queued lines: flush it at the next flush. */
  schedule(w: Watcher): void;
  /** The watcher closed: it leaves the hub's watchers and flush. */
  forget(w: Watcher): void;
  /** Told each watcher ended for falling behind, before its response is destroyed (the log says so). */
  readonly evicted?: (w: Watcher) => void;
}

/** An owner committed (its cluster, its ownerValue) that watches with owner terms may have to hear of. */
export interface OwnerArrival {
  cluster: string;
  owner: string;
}

export class Watcher {
  /** Live batches that arrived while the watcher was catching up, in commit order; null once live. */
  pending: BatchEncoding[] | null = [];
  /** Releases the catch-up's read snapshot (idempotent). */
  releaseSnapshot: () => void = () => undefined;
  /** The store sequence the catch-up read up to: live events up to it are already sent. */
  caughtUpTo = 0;
  readonly table = new TableState();
  /** Which shared encoding of a live event this watcher takes (see BatchEncoding.line). */
  lineKey: string;
  closed = false;
  /** Live lines waiting for the next flush, in order. */
  queued: Buffer[] = [];
  queuedBytes = 0;
  /** Live bytes handed to the response so far (see evictIfBehind). */
  private liveWritten = 0;
  /** A revision asked for while it was catching up: done when it goes live. */
  revisePending: boolean;
  /** Objects announced (see ViewReviser.announce) while it caught up, per cluster: sent once live. */
  announcePending?: Map<string, Set<string>>;
  /** Owners committed while it caught up (see ViewReviser.admitDependents): what they bring is sent once live. */
  arrivalsPending?: OwnerArrival[];
  private readonly timers: NodeJS.Timeout[] = [];

  constructor(
    public opts: WatchOptions,
    readonly res: ServerResponse,
    private readonly host: WatcherHost,
  ) {
    this.lineKey = lineKeyOf(opts);
    this.revisePending = opts.reviseOnceLive === true;
  }

  get store(): Store {
    return this.host.store;
  }

  /** The watch's own end (its timeout) and, when asked for, its bookmarks. */
  startTimers(): void {
    const { opts } = this;
    this.timers.push(setTimeout(() => {
      this.flush();
      this.close();
      this.res.end();
    }, opts.timeoutMs));
    if (opts.bookmarks) {
      const tick = () => {
        if (this.closed) return;
        // Not while catching up: the current mark is ahead of the catch-up's lines, and a client
        // resuming from it would skip the rest of them.
        if (!this.pending) this.enqueue(this.encodeBookmark(this.currentMark()));
        this.timers.push(setTimeout(tick, opts.bookmarkIntervalMs));
      };
      this.timers.push(setTimeout(tick, opts.bookmarkIntervalMs));
    }
  }

  /** Marks it closed and forgets it (timers, queue, its hub); the response is the caller's. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.releaseSnapshot();
    for (const t of this.timers) clearTimeout(t);
    this.queued = [];
    this.host.forget(this);
  }

  /** Every cluster's RV the view shows, now or at `snapshot`. */
  clusterRVs(snapshot?: Snapshot): Record<string, string> {
    return viewRVs(this.host.store, this.opts.resource, this.opts.view, snapshot);
  }

  currentMark(): string {
    return encodeGlobalRV(this.clusterRVs());
  }

  /** An event's line in this watch's form (watch-encoding.ts). */
  encodeEvent(type: string, cluster: string, name: string, stored: Buffer, storedMeta: () => MetaRecord | undefined, mark: string): Buffer {
    return encodeEvent(this.host.store, this.opts, this.table, type, cluster, name, stored, storedMeta, mark);
  }

  encodeBookmark(mark: string, initialEventsEnd = false): Buffer {
    return encodeBookmark(this.host.store, this.opts, this.table, mark, initialEventsEnd);
  }

  /** Straight to the client, ahead of any live line; the bound does not count it. */
  write(line: Buffer): void {
    if (!this.closed && line.length > 0) this.res.write(line);
  }

  /** A live line: queued for the next flush; the bound on unsent bytes applies. */
  enqueue(line: Buffer): void {
    if (this.closed || line.length === 0) return;
    this.queued.push(line);
    this.queuedBytes += line.length;
    this.host.counts.liveLines++;
    if (this.evictIfBehind(this.queuedBytes)) return;
    this.host.schedule(this);
  }

  /** Writes what is queued; `joins` shares the joined bytes among watchers of one flush. */
  flush(joins?: JoinCache): void {
    if (this.closed || this.queued.length === 0) return;
    const { queued } = this;
    this.queued = [];
    this.queuedBytes = 0;
    // One HTTP chunk, one TLS write and one system call for everything queued. Corked, so the
    // system call happens here (and counts in the flush's time) rather than on the next tick.
    const joined = joins ? joins.join(queued) : Buffer.concat(queued);
    this.res.cork();
    this.res.write(joined);
    this.res.uncork();
    this.liveWritten += joined.length;
    this.host.counts.liveWrites++;
    this.evictIfBehind(0);
  }

  /**
   * The bound is on live bytes the client has not read. The response's unsent bytes may still hold
   * the catch-up (a watch-list snapshot can be far larger than the bound), which went out first:
   * so at most the live bytes written are unsent live bytes.
   */
  private evictIfBehind(queuedBytes: number): boolean {
    if (Math.min(this.res.writableLength, this.liveWritten) + queuedBytes <= this.opts.maxBufferedBytes) return false;
    this.evict();
    return true;
  }

  /** Ends a watch whose client is too far behind; it re-watches from the last RV it read. */
  evict(): void {
    this.close();
    this.host.counts.evicted++;
    this.host.evicted?.(this);
    this.res.destroy();
  }
}

/**
 * Watchers of one resource and form mostly queue the very same lines between two flushes: their
 * concatenation is made once per flush and written to each of them.
 */
export class JoinCache {
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
