import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import type { CacherStatus } from '../cacher/cacher-status.js';
import type { FreshReadCounts } from '../cacher/fresh-reads.js';
import { CacherSeries } from './cacher-series.js';
import { trackEventLoopDelay } from './event-loop-delay.js';
import type { MemberHeartbeat } from '../members/heartbeat.js';
import { memberSeries } from './member-series.js';
import { httpSeries, type HttpSeries } from './http-series.js';
import { storeSeries } from './store-series.js';

/**
 * Prometheus metrics at /metrics: the process's own (memory, heap, event-loop lag) and one series
 * per cacher (cacher-series.ts), read from the cachers' status at scrape time so the hot paths pay
 * nothing for them.
 */

export interface WatchStats {
  /** Watches open now. */
  open: number;
  /** Watches ended because the client read too slowly, since start. */
  evicted: number;
  /** Live lines (events, bookmarks) queued to watchers, and the socket writes that carried them. */
  liveLines: number;
  liveWrites: number;
  /** The fan-out's current pause after a flush. */
  flushPauseMs: number;
}

/** What /metrics serves: prom-client's registry, then the per-cacher series. */
export interface Exposition {
  contentType: string;
  metrics(): Promise<string>;
}

/** The exposition, the registry (for tests), what the router counts requests in, and what stops its sampling when the server closes. */
export interface Metrics {
  exposition: Exposition;
  registry: Registry;
  http: HttpSeries;
  stop: () => void;
}

/** The members' heartbeats (member-series.ts) and the data directory whose store is measured (store-series.ts). */
export interface FleetSources {
  heartbeats?: () => MemberHeartbeat[];
  dataDir?: string;
  /** Fresh reads' confirmations by outcome, and the revision lists they sent (cacher/fresh-reads.ts). */
  freshReads?: () => FreshReadCounts;
}

export function createMetrics(statuses: () => CacherStatus[], watches?: () => WatchStats, fleet: FleetSources = {}): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const stop = trackEventLoopDelay(registry);
  const http = httpSeries(registry);
  if (fleet.heartbeats) memberSeries(registry, fleet.heartbeats);
  if (fleet.dataDir !== undefined) storeSeries(registry, fleet.dataDir);
  if (fleet.freshReads) freshReadSeries(registry, fleet.freshReads);
  if (watches) {
    new Gauge({ name: 'flotilla_watches', help: 'Client watches open now.', registers: [registry], collect() { this.set(watches().open); } });
    new Counter({
      name: 'flotilla_watch_evictions_total',
      help: 'Client watches ended because the client fell further behind than the watch buffer allows.',
      registers: [registry],
      collect() {
        this.reset();
        this.inc(watches().evicted);
      },
    });
    const counter = (name: string, help: string, value: (w: WatchStats) => number) =>
      new Counter({ name, help, registers: [registry], collect() { this.reset(); this.inc(value(watches())); } });
    counter('flotilla_watch_live_lines_total', 'Live watch lines (events and bookmarks) queued to client watches.', (w) => w.liveLines);
    counter('flotilla_watch_live_writes_total', 'Socket writes that carried live watch lines; lines ÷ writes is how many a flush joined.', (w) => w.liveWrites);
    new Gauge({
      name: 'flotilla_watch_flush_pause_seconds',
      help: 'Pause after a watch fan-out flush now: a multiple of what the flush took, so a busy fan-out joins events into fewer writes.',
      registers: [registry],
      collect() { this.set(watches().flushPauseMs / 1000); },
    });
  }
  const cachers = new CacherSeries(statuses);
  const exposition: Exposition = { contentType: registry.contentType, metrics: async () => (await registry.metrics()) + cachers.text() };
  return { exposition, registry, http, stop };
}

/** Fresh reads' confirmations (docs/fresh-reads.md), counted at scrape time from the cache manager's counts. */
function freshReadSeries(registry: Registry, counts: () => FreshReadCounts): void {
  new Counter({
    name: 'flotilla_fresh_read_members_total',
    help: "Members' confirmations of fresh reads by outcome: current (the cache already held the member's revision), matched (the cache held exactly the member's listed objects of a small scope), caught_up (its event came), probed (the member's watch said nothing happened in between), unconfirmed (served with a Warning), silent (not asked: the heartbeat finds it silent).",
    labelNames: ['outcome'],
    registers: [registry],
    collect() {
      this.reset();
      for (const [outcome, n] of Object.entries(counts().outcomes)) this.inc({ outcome }, n);
    },
  });
  new Counter({
    name: 'flotilla_fresh_read_revision_lists_total',
    help: "Lists of one object's metadata sent to members for their current revision; reads arriving together share one.",
    registers: [registry],
    collect() {
      this.reset();
      this.inc(counts().revisionLists);
    },
  });
}

/** What live reads hold and refused (forward/live-read-limits.ts), for /status and /metrics. */
export interface LiveReadStats {
  buffer: { heldBytes: number; capacityBytes: number; refusedBusy: number; refusedTooLarge: number };
  /** `queuedBytes`: written to watch clients that have not read them yet. */
  watches: { open: number; max: number; queuedBytes: number; refused: number };
}

/** Live reads' limits: the answers held and allowed, live watches open and queued, reads refused by why. */
export function liveReadSeries(registry: Registry, stats: () => LiveReadStats): void {
  const gauge = (name: string, help: string, value: (s: LiveReadStats) => number) =>
    new Gauge({ name, help, registers: [registry], collect() { this.set(value(stats())); } });
  gauge('flotilla_live_read_buffer_bytes', "Bytes of the members' answers live reads hold now.", (s) => s.buffer.heldBytes);
  gauge('flotilla_live_read_buffer_capacity_bytes', 'Bytes live reads may hold at once (options.liveReads.maxBufferMiB).', (s) => s.buffer.capacityBytes);
  gauge('flotilla_live_watches', 'Live watches open now.', (s) => s.watches.open);
  gauge('flotilla_live_watch_queued_bytes', 'Bytes of live watch events written to clients that have not read them yet.', (s) => s.watches.queuedBytes);
  new Counter({
    name: 'flotilla_live_reads_refused_total',
    help: "Live reads refused with 429: busy (the members' answers would pass the buffer others hold; Retry-After), too_large (alone more than the buffer), watches (options.liveReads.maxWatches open).",
    labelNames: ['reason'],
    registers: [registry],
    collect() {
      const s = stats();
      this.reset();
      this.inc({ reason: 'busy' }, s.buffer.refusedBusy);
      this.inc({ reason: 'too_large' }, s.buffer.refusedTooLarge);
      this.inc({ reason: 'watches' }, s.watches.refused);
    },
  });
}
