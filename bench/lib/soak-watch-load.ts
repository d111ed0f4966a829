/**
 * The soak's watch load, run as its own process (child_process.fork) as lib/watch-load.ts is, but
 * for as long as the soak lasts and for several callers at once: it opens each group's watches
 * (a caller's token, a path and query), scans every stream for the writer's stamp, and keeps one
 * latency histogram and per-group delivery counts for each interval of the soak, the interval
 * being the one the stamp was written in (so an event that arrives late still counts where it was
 * sent). Watches end by their own timeoutSeconds and are opened again at once from the last
 * resourceVersion their stream carried, as client-go's reflector does after a clean end; a
 * refused one (410) lists for a resourceVersion first.
 *
 * A `slow` load opens watches that never read: each holds its watch for `slowHoldMs` without
 * reading a byte, then reads what is left: a stream that ends within a few seconds was ended by the
 * server (evicted), one that does not is closed by the client. Either way another takes its place.
 *
 *   parent → child: { collect: k } (every interval up to k), { stop: true }
 *   child → parent: { connected: n }, { collected: k, intervals: [[k, histogram, counts], ...], opened, ended, refused, failed, evicted, heldOpen }
 */
import { Agent, request } from 'node:https';
import type { ClientRequest, IncomingMessage } from 'node:http';
import { readFileSync } from 'node:fs';
import { LatencyHistogram, epochMs } from './latency.js';
import { StampScanner, lastLineRV } from './stamp-scanner.js';
import { endpointUrl } from '../../test/fleet/http.js';

export interface SoakWatchGroup {
  name: string;
  token: string;
  /** The watch's path and query (without watch=1 or resourceVersion). */
  url: string;
  count: number;
  /** This group's timeoutSeconds range, instead of the spec's. */
  timeoutSeconds?: [number, number];
}

export interface SoakWatchSpec {
  server: string;
  caFile: string;
  groups: SoakWatchGroup[];
  /** The annotation whose value is the writer's epoch-ms stamp. */
  stamp: string;
  /** Epoch ms where interval 0 starts, and each interval's length. */
  t0: number;
  intervalMs: number;
  /** Each watch asks for a timeoutSeconds drawn from this range. */
  timeoutSeconds: [number, number];
  /** Watches that never read (see above), held this long each. */
  slow?: { holdMs: number };
}

export type ToSoakWatchLoad = { collect: number } | { stop: true };
/** One interval: its index, the latencies of stamps written in it (sparse), deliveries per group. */
export type IntervalReport = [number, [number, number][], Record<string, number>];
export type FromSoakWatchLoad =
  | { connected: number }
  | { collected: number; intervals: IntervalReport[]; opened: number; ended: number; refused: number; failed: number; evicted: number; heldOpen: number };

/** After a slow watch's hold, how long its remaining bytes may take to end in the server's close. */
const SLOW_DRAIN_MS = 5000;

function main(): void {
  const spec = JSON.parse(process.argv[2]!) as SoakWatchSpec;
  const send = (m: FromSoakWatchLoad) => process.send!(m);
  const agent = new Agent({ keepAlive: false, ca: readFileSync(spec.caFile), maxSockets: spec.groups.reduce((n, g) => n + g.count, 0) + 10 });
  const intervals = new Map<number, { hist: LatencyHistogram; counts: Record<string, number> }>();
  const open = new Set<ClientRequest>();
  let stopping = false;
  let connected = 0;
  let opened = 0;
  let ended = 0;
  let refused = 0;
  let failed = 0;
  let evicted = 0;
  let heldOpen = 0;
  let collectedUpTo = -1;

  const intervalOf = (stamp: number) => {
    const k = Math.floor((stamp - spec.t0) / spec.intervalMs);
    // Stamps before the soak, or of intervals already reported (a repeat after a re-watch), are not counted.
    if (k < 0 || k <= collectedUpTo) return undefined;
    let iv = intervals.get(k);
    if (!iv) intervals.set(k, (iv = { hist: new LatencyHistogram(), counts: {} }));
    return iv;
  };

  const get = (group: SoakWatchGroup, query: Record<string, string>, onResponse: (res: IncomingMessage) => void) => {
    const url = endpointUrl(spec.server, group.url);
    for (const [k, v] of Object.entries(query)) url.searchParams.set(k, v);
    const req = request(url, { agent, headers: { authorization: `Bearer ${group.token}` } }, onResponse);
    req.on('error', () => undefined);
    req.end();
    return req;
  };

  /** The collection's current resourceVersion, as the caller lists it (limit=1). */
  const currentRV = (group: SoakWatchGroup): Promise<string> =>
    new Promise((resolve, reject) => {
      const req = get(group, { limit: '1' }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const body = Buffer.concat(chunks).toString('utf8');
          if (res.statusCode !== 200) return reject(new Error(`${group.name}: list ${res.statusCode} ${body.slice(0, 200)}`));
          resolve((JSON.parse(body) as { metadata: { resourceVersion: string } }).metadata.resourceVersion);
        });
        res.on('error', reject);
      });
      req.on('error', reject);
    });

  const timeout = (group: SoakWatchGroup) => {
    const [lo, hi] = group.timeoutSeconds ?? spec.timeoutSeconds;
    return String(Math.round(lo + Math.random() * (hi - lo)));
  };

  const watch = async (group: SoakWatchGroup, rv: string | undefined, first: boolean): Promise<void> => {
    if (stopping) return;
    if (rv === undefined) {
      try {
        rv = await currentRV(group);
      } catch {
        if (!stopping) setTimeout(() => void watch(group, undefined, first), 1000);
        return;
      }
    }
    let lastRV = rv;
    let answered = false;
    opened++;
    const req = get(group, { watch: '1', resourceVersion: rv, timeoutSeconds: timeout(group), allowWatchBookmarks: 'true' }, (res) => {
      answered = true;
      if (first) send({ connected: ++connected });
      if (res.statusCode !== 200) {
        refused++;
        res.resume();
        res.on('end', () => setTimeout(() => void watch(group, undefined, false), 500));
        return;
      }
      const scan = new StampScanner(Buffer.from(`${spec.stamp}":"`), (stamp, at) => {
        const iv = intervalOf(stamp);
        if (!iv) return;
        iv.hist.add(at - stamp);
        iv.counts[group.name] = (iv.counts[group.name] ?? 0) + 1;
      });
      res.on('data', (chunk: Buffer) => {
        scan.push(chunk, epochMs());
        lastRV = lastLineRV(chunk) ?? lastRV;
      });
      res.on('error', () => undefined);
      res.on('close', () => {
        open.delete(req);
        if (stopping) return;
        ended++;
        void watch(group, lastRV, false);
      });
    });
    // A request that failed before any answer (a reset connection) is tried again, as a reflector would.
    req.on('error', () => {
      open.delete(req);
      if (answered || stopping) return;
      failed++;
      setTimeout(() => void watch(group, lastRV, first), 1000);
    });
    open.add(req);
  };

  /** A watch that reads nothing for holdMs, then tells whether the server had ended it. */
  const slowWatch = async (group: SoakWatchGroup, first: boolean): Promise<void> => {
    if (stopping) return;
    let rv: string;
    try {
      rv = await currentRV(group);
    } catch {
      if (!stopping) setTimeout(() => void slowWatch(group, first), 1000);
      return;
    }
    opened++;
    let answered = false;
    const req = get(group, { watch: '1', resourceVersion: rv, timeoutSeconds: '3600' }, (res) => {
      answered = true;
      if (first) send({ connected: ++connected });
      res.pause();
      let done = false;
      const next = (wasEvicted: boolean) => {
        if (done) return;
        done = true;
        open.delete(req);
        if (wasEvicted) evicted++;
        else heldOpen++;
        req.destroy();
        if (!stopping) setTimeout(() => void slowWatch(group, false), 1000);
      };
      setTimeout(() => {
        // Read now: a stream the server ended runs out and ends; one still served keeps coming.
        res.on('end', () => next(true));
        res.on('close', () => next(true));
        res.resume();
        setTimeout(() => next(false), SLOW_DRAIN_MS);
      }, spec.slow!.holdMs);
      res.on('error', () => undefined);
    });
    req.on('error', () => {
      open.delete(req);
      if (!answered && !stopping) setTimeout(() => void slowWatch(group, first), 1000);
    });
    open.add(req);
  };

  for (const group of spec.groups) {
    for (let n = 0; n < group.count; n++) void (spec.slow ? slowWatch(group, true) : watch(group, undefined, true));
  }

  process.on('message', (m: ToSoakWatchLoad) => {
    if ('collect' in m) {
      const out: IntervalReport[] = [];
      for (const [k, iv] of [...intervals].sort((a, b) => a[0] - b[0])) {
        if (k > m.collect) continue;
        out.push([k, iv.hist.toSparse(), iv.counts]);
        intervals.delete(k);
      }
      collectedUpTo = Math.max(collectedUpTo, m.collect);
      send({ collected: m.collect, intervals: out, opened, ended, refused, failed, evicted, heldOpen });
    } else {
      stopping = true;
      for (const r of open) r.destroy();
      agent.destroy();
      process.disconnect();
    }
  });
  process.on('disconnect', () => process.exit(0));
}

if (process.send) main();
