import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import type { CacherStatus } from '../cacher/cacher.js';
import { trackEventLoopDelay } from './event-loop-delay.js';

/**
 * Prometheus metrics at /metrics: the process's own (memory, heap, event-loop lag) and one series
 * per cacher, read from the cachers' status at scrape time so the hot paths pay nothing for them.
 */
const PHASES = ['pending', 'listing', 'watching', 'backoff', 'stopped'] as const;

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

/** The registry, and what stops its sampling when the server closes. */
export interface Metrics {
  registry: Registry;
  stop: () => void;
}

export function createMetrics(statuses: () => CacherStatus[], watches?: () => WatchStats): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const stop = trackEventLoopDelay(registry);
  const labelNames = ['cluster', 'resource', 'namespace'] as const;
  const labels = (s: CacherStatus) => ({ cluster: s.cluster, resource: s.resource, namespace: s.namespace ?? '' });

  const gauge = (name: string, help: string, value: (s: CacherStatus) => number | undefined) =>
    new Gauge({
      name,
      help,
      labelNames,
      registers: [registry],
      collect() {
        this.reset();
        for (const s of statuses()) {
          const v = value(s);
          if (v !== undefined) this.set(labels(s), v);
        }
      },
    });

  gauge('flotilla_cacher_objects', 'Objects cached for this cluster and resource.', (s) => s.objects);
  gauge('flotilla_cacher_synced', '1 once the cacher has listed its member at least once.', (s) => (s.synced ? 1 : 0));
  gauge('flotilla_cacher_relists_total', 'Full lists done (the first one, then one per expired watch).', (s) => s.relists);
  gauge('flotilla_cacher_resource_version', "The member's last resourceVersion the cache is complete up to.", (s) => (s.rv ? Number(s.rv) : undefined));
  gauge('flotilla_cacher_seconds_since_last_event', 'Seconds since the last watch event or bookmark.', (s) =>
    s.lastEventAt ? (Date.now() - Date.parse(s.lastEventAt)) / 1000 : undefined,
  );
  gauge('flotilla_cacher_errored', '1 when the last attempt failed (see /status for the error).', (s) => (s.lastError ? 1 : 0));
  new Gauge({
    name: 'flotilla_cacher_phase',
    help: 'The phase each cacher is in (1 for the current one).',
    labelNames: [...labelNames, 'phase'],
    registers: [registry],
    collect() {
      this.reset();
      for (const s of statuses()) for (const phase of PHASES) this.set({ ...labels(s), phase }, s.phase === phase ? 1 : 0);
    },
  });
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
  return { registry, stop };
}
