import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import type { CacherStatus } from '../cacher/cacher.js';
import { CacherSeries } from './cacher-series.js';
import { trackEventLoopDelay } from './event-loop-delay.js';

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

/** The exposition, the registry (for tests), and what stops its sampling when the server closes. */
export interface Metrics {
  exposition: Exposition;
  registry: Registry;
  stop: () => void;
}

export function createMetrics(statuses: () => CacherStatus[], watches?: () => WatchStats): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const stop = trackEventLoopDelay(registry);
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
  return { exposition, registry, stop };
}

/** What live reads hold of the members' answers (forward/live-buffer-budget.ts). */
export interface LiveBufferStats {
  heldBytes: number;
  capacityBytes: number;
  refusedBusy: number;
  refusedTooLarge: number;
  watches: number;
  watchQueuedBytes: number;
}

/** The live reads' buffer: held and allowed bytes, and the reads it refused, by why. */
export function liveBufferSeries(registry: Registry, stats: () => LiveBufferStats): void {
  new Gauge({ name: 'flotilla_live_read_buffer_bytes', help: "Bytes of the members' answers live reads hold now.", registers: [registry], collect() { this.set(stats().heldBytes); } });
  new Gauge({ name: 'flotilla_live_watch_queued_bytes', help: 'Bytes of live watch events written to clients that have not read them yet.', registers: [registry], collect() { this.set(stats().watchQueuedBytes); } });
  new Gauge({ name: 'flotilla_live_read_buffer_capacity_bytes', help: 'Bytes live reads may hold at once (options.liveReads.maxBufferMiB).', registers: [registry], collect() { this.set(stats().capacityBytes); } });
  new Counter({
    name: 'flotilla_live_reads_refused_total',
    help: "Live reads refused with 429 because the members' answers would pass the buffer: busy (others hold it; Retry-After) or too_large (alone more than all of it).",
    labelNames: ['reason'],
    registers: [registry],
    collect() {
      const s = stats();
      this.reset();
      this.inc({ reason: 'busy' }, s.refusedBusy);
      this.inc({ reason: 'too_large' }, s.refusedTooLarge);
    },
  });
}
