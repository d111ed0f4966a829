import { performance } from 'node:perf_hooks';
import { Histogram, type Registry } from 'prom-client';

/**
 * The event loop's delay as a Prometheus histogram kept since start: how late a 20 ms timer
 * fired, once per firing. prom-client's `nodejs_eventloop_lag_p99_seconds` is a percentile of
 * the interval since the last scrape, reset by every scrape: a second scraper halves each one's
 * window, and no percentile over a longer span (a whole first sync, an hour) can be had from it.
 * Buckets can be summed over any span (`histogram_quantile` over `rate()` of them).
 */
const BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.02, 0.03, 0.04, 0.05, 0.075, 0.1, 0.25, 0.5, 1, 2.5, 5];

export interface EventLoopDelayOptions {
  intervalMs?: number;
  /** The clock, in ms (a test's manual one). */
  now?: () => number;
}

/** Registers `flotilla_eventloop_delay_seconds` and starts sampling; the returned function stops it. */
export function trackEventLoopDelay(registry: Registry, opts: EventLoopDelayOptions = {}): () => void {
  // Each firing wakes an idle process: measured here, a 10 ms timer cost an idle process about 1%
  // of a CPU, a 20 ms one 0.6% (prom-client's own lag monitor, native at 10 ms, another 0.6%).
  const intervalMs = opts.intervalMs ?? 20;
  const now = opts.now ?? (() => performance.now());
  const histogram = new Histogram({
    name: 'flotilla_eventloop_delay_seconds',
    help: `How late a ${intervalMs} ms timer on the event loop fired, each time it fired, since start.`,
    buckets: BUCKETS,
    registers: [registry],
  });
  let due = now() + intervalMs;
  const timer = setInterval(() => {
    const at = now();
    histogram.observe(Math.max(0, at - due) / 1000);
    due = at + intervalMs;
  }, intervalMs);
  // A metric never keeps the process alive.
  timer.unref();
  return () => clearInterval(timer);
}
