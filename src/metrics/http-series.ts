import { Counter, Histogram, type Registry } from 'prom-client';

/**
 * Flotilla's own API requests: `flotilla_http_requests_total{verb,code}`, the latency of those
 * that end (`flotilla_http_request_duration_seconds{verb}`: a watch or a connection to a pod
 * lasts as long as its client wants, so they are left out, as the apiserver leaves them out of its
 * SLO), and `flotilla_http_requests_refused_total{reason}`, the 429s. Verbs are Kubernetes verbs,
 * a closed set, so the labels stay few.
 */
export const VERBS = ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete', 'deletecollection', 'connect', 'other'] as const;
export type Verb = (typeof VERBS)[number];

/** Verbs whose requests last as long as the client wants. */
const LONG_RUNNING: ReadonlySet<Verb> = new Set(['watch', 'connect']);

/** Up to a minute: a cached read takes milliseconds, a live list of a large fleet seconds. */
const BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

export interface HttpSeries {
  /** One request ended: its verb, status and seconds; `longRunning` keeps it out of the histogram (a followed log). */
  observe(verb: Verb, code: number, seconds: number, longRunning?: boolean): void;
  /** A request was refused with 429, and why. */
  refused(reason: string): void;
}

export function httpSeries(registry: Registry): HttpSeries {
  const total = new Counter({ name: 'flotilla_http_requests_total', help: "Flotilla's own API requests by Kubernetes verb and HTTP status code.", labelNames: ['verb', 'code'], registers: [registry] });
  const duration = new Histogram({
    name: 'flotilla_http_request_duration_seconds',
    help: 'Seconds from a request to the end of its answer, by Kubernetes verb; watches and connections (exec, attach, port-forward, proxy) left out.',
    labelNames: ['verb'],
    buckets: BUCKETS,
    registers: [registry],
  });
  const refused = new Counter({
    name: 'flotilla_http_requests_refused_total',
    help: "Requests refused with 429, by reason: live_busy, live_too_large, live_watches (flotilla's live-read limits), member (a member's own 429 passed on).",
    labelNames: ['reason'],
    registers: [registry],
  });
  return {
    observe(verb, code, seconds, longRunning = false) {
      total.inc({ verb, code: String(code) });
      if (!longRunning && !LONG_RUNNING.has(verb)) duration.observe({ verb }, seconds);
    },
    refused(reason) {
      refused.inc({ reason });
    },
  };
}
