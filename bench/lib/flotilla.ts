import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { memberRequest, type MemberEndpoint } from '../../test/fleet/http.js';

/** Reading flotilla from the outside: /proc of its process, /metrics and /status over HTTPS. */
export interface ProcMemory {
  rssBytes: number;
  peakRssBytes: number;
  anonBytes: number;
  fileBytes: number;
}

export function procMemory(pid: number): ProcMemory {
  const text = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string) => {
    const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(text);
    return m ? Number(m[1]) * 1024 : NaN;
  };
  return { rssBytes: kb('VmRSS'), peakRssBytes: kb('VmHWM'), anonBytes: kb('RssAnon'), fileBytes: kb('RssFile') };
}

/** Flotilla's Prometheus series (scraped from /metrics) by name. */
export async function scrapeMetrics(ep: MemberEndpoint, timeoutMs = 10_000): Promise<Map<string, number>> {
  const res = await memberRequest(ep, 'GET', '/metrics', undefined, { accept: 'text/plain', timeoutMs });
  if (res.status !== 200) throw new Error(`/metrics: ${res.status} ${res.body.slice(0, 200)}`);
  return parseMetricsText(res.body);
}

/** Series of Prometheus' text format by name, labelled ones under their name and labels as written. */
export function parseMetricsText(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    // A labelled series is kept under its name and labels as written: `name{kind="major"}`.
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*(?:\{[^}]*\})?)\s+(\S+)$/.exec(line);
    if (m) out.set(m[1]!, Number(m[2]));
  }
  return out;
}

export interface CacherStatusView {
  cluster: string;
  resource: string;
  phase: string;
  synced: boolean;
  rv?: string;
  objects: number;
  relists: number;
  lastError?: string;
}

export async function flotillaStatus(ep: MemberEndpoint): Promise<{ synced: boolean; cachers: CacherStatusView[]; live?: { enabled: boolean; exclude: string[] } }> {
  const res = await memberRequest(ep, 'GET', '/status', undefined, { timeoutMs: 30_000 });
  if (res.status !== 200) throw new Error(`/status: ${res.status} ${res.body.slice(0, 200)}`);
  const status = JSON.parse(res.body) as { synced: boolean; cachers: CacherStatusView[]; live?: { enabled: boolean; exclude: string[] } };
  // What a scenario seeded, not the RBAC objects flotilla caches from every member to authorize reads.
  return { ...status, cachers: status.cachers.filter((c) => !c.resource.startsWith('rbac.authorization.k8s.io/')) };
}

export function sumOf(cachers: CacherStatusView[], field: 'objects' | 'relists'): number {
  return cachers.reduce((n, c) => n + c[field], 0);
}

export interface ReadyWatch {
  /** ms from `startedAt` until /readyz first answered 200. */
  readyMs: number;
  /** One scrape per interval while syncing (prom-client resets the lag histogram per scrape). */
  lagP99Seconds: number[];
  lagMaxSeconds: number[];
  peakRssBytes: number;
}

/**
 * Polls /readyz until it answers 200 while scraping /metrics every `scrapeMs`, so the event-loop
 * lag histogram is read in intervals that together cover the whole sync.
 */
export async function watchUntilReady(
  ep: MemberEndpoint,
  proc: { pid: number; exited: boolean; exitCode: number | null },
  startedAt: number,
  timeoutMs: number,
  scrapeMs = 2000,
): Promise<ReadyWatch> {
  const lagP99Seconds: number[] = [];
  const lagMaxSeconds: number[] = [];
  let peakRssBytes = 0;
  const scrape = async () => {
    try {
      const m = await scrapeMetrics(ep, 30_000);
      const p99 = m.get('nodejs_eventloop_lag_p99_seconds');
      const max = m.get('nodejs_eventloop_lag_max_seconds');
      if (p99 !== undefined && Number.isFinite(p99)) lagP99Seconds.push(p99);
      if (max !== undefined && Number.isFinite(max)) lagMaxSeconds.push(max);
    } catch {
      // not listening yet, or too busy to answer in time: that interval's lag shows in the next one
    }
    try {
      peakRssBytes = Math.max(peakRssBytes, procMemory(proc.pid).peakRssBytes);
    } catch {
      // gone
    }
  };
  let syncing = true;
  const scraper = (async () => {
    while (syncing) {
      await sleep(scrapeMs);
      if (syncing) await scrape();
    }
  })();
  try {
    const deadline = startedAt + timeoutMs;
    while (true) {
      if (proc.exited) throw new Error(`flotilla exited with ${proc.exitCode} before it was ready`);
      if (performance.now() > deadline) throw new Error(`flotilla not ready ${Math.round(timeoutMs / 1000)} s after it started`);
      try {
        const res = await memberRequest(ep, 'GET', '/readyz', undefined, { timeoutMs: 5000 });
        if (res.status === 200) break;
      } catch {
        // busy or not listening yet
      }
      await sleep(50);
    }
    const readyMs = performance.now() - startedAt;
    syncing = false;
    await scraper;
    await scrape(); // the tail of the sync since the last interval
    return { readyMs, lagP99Seconds, lagMaxSeconds, peakRssBytes };
  } finally {
    syncing = false;
    await scraper;
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
