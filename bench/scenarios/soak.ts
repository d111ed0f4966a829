import { fork, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { memberRequest, type MemberEndpoint } from '../../test/fleet/http.js';
import type { MemberInfo, TestUser } from '../../test/fleet/fleet.js';
import { startFlotillaProcess } from '../../test/support/flotilla-process.js';
import type { BenchContext } from '../lib/context.js';
import { scrapeMetrics, sleep } from '../lib/flotilla.js';
import { histogramQuantile } from '../lib/histogram-quantile.js';
import { BenchClient, percentile } from '../lib/http.js';
import { LatencyHistogram, epochMs } from '../lib/latency.js';
import { linearTrend, processHoldings } from '../lib/process-sample.js';
import type { Figure } from '../lib/report.js';
import { figureSink, MB, type Scenario } from '../lib/scenario.js';
import type { FromSoakWatchLoad, SoakWatchGroup, SoakWatchSpec, ToSoakWatchLoad } from '../lib/soak-watch-load.js';

const SOAK_WATCH_LOAD = fileURLToPath(new URL('../lib/soak-watch-load.js', import.meta.url));
const STAMP = 'soak.flotilla.io/sent';
/** The member is registered under two names: two member connections per resource, each write two events. */
const NAMES = 2;
const NAMESPACES = ['soak-0', 'soak-1', 'soak-2', 'soak-3', 'soak-4', 'soak-5', 'acme-web', 'acme-db'];
/** ConfigMaps the slow consumers watch, larger than the rest and outside the other watchers' selections. */
const BULK_NS = 'soak-bulk';
const CONFIGMAPS_PER_NS = 100;
const PODS_PER_NS = 25;
const BULK_CONFIGMAPS = 20;
const APPS = 5;
const CONFIGMAP_DATA_BYTES = 1024;
const BULK_DATA_BYTES = 32 * 1024;
/** Member writes a second: of every six, two regular configmaps, two pods, two bulk configmaps. */
const WRITES_PER_SECOND = 6;
const WRITE_CYCLE = 6;
const SLOW_CONSUMERS = 4;
/** How long a slow consumer holds its watch unread: long enough to pass the soak's watch buffer at the bulk write rate. */
const SLOW_HOLD_MS = 50_000;
/**
 * The watch buffer past which flotilla ends a watch, for this flotilla only: 1 MiB (the default is
 * 16) so that a slow consumer at ~60 KB/s is evicted within a minute, several times in a 2-minute
 * run. The bound and its check are the same code at any size.
 */
const MAX_WATCH_BUFFER_MIB = 1;
/** Resources are read from flotilla this often; each interval takes the samples in it. */
const SAMPLE_MS = 2000;
/** Stamps of an interval may still arrive this long after it ends before it is collected. */
const COLLECT_GRACE_MS = 10_000;
/** Lists and live reads: one every this many ms, round-robin over the kinds. */
const READ_PAUSE_MS = 250;
const TENANT = 'acme';

type Caller = 'admin' | 'acme' | 'alice' | 'bob';
type Kind = 'configmaps' | 'pods';

/** Which member namespaces each caller may read (RBAC written by seed()): the tenant sees its own, cut. */
const VISIBLE: Record<Caller, (ns: string) => boolean> = {
  admin: () => true,
  acme: (ns) => ns.startsWith(`${TENANT}-`),
  alice: (ns) => ns === 'soak-0' || ns === 'soak-1',
  bob: (ns) => ns === 'soak-2',
};

interface GroupDef {
  name: string;
  caller: Caller;
  kind: Kind;
  namespace?: string;
  selector?: [string, string];
  count: number;
  /** Watches that end and are opened again every 10–20 s: every open and forget of a watch, many times a minute. */
  churn?: boolean;
}

/** 1,000 watchers: the fleet admin (all, by label, one namespace, short-lived), a tenant, two users of partial RBAC. */
const GROUPS: GroupDef[] = [
  { name: 'admin-configmaps', caller: 'admin', kind: 'configmaps', count: 20 },
  { name: 'admin-configmaps-soak', caller: 'admin', kind: 'configmaps', selector: ['soak', 'yes'], count: 130 },
  { name: 'admin-configmaps-churn', caller: 'admin', kind: 'configmaps', selector: ['app', 'a3'], count: 50, churn: true },
  { name: 'admin-pods', caller: 'admin', kind: 'pods', count: 150 },
  { name: 'admin-configmaps-app', caller: 'admin', kind: 'configmaps', selector: ['app', 'a1'], count: 150 },
  { name: 'admin-pods-ns', caller: 'admin', kind: 'pods', namespace: 'soak-3', count: 100 },
  { name: 'tenant-configmaps', caller: 'acme', kind: 'configmaps', count: 150 },
  { name: 'tenant-pods', caller: 'acme', kind: 'pods', count: 50 },
  { name: 'alice-configmaps', caller: 'alice', kind: 'configmaps', count: 150 },
  { name: 'bob-configmaps-app', caller: 'bob', kind: 'configmaps', selector: ['app', 'a2'], count: 50 },
];

interface Patch {
  kind: Kind;
  namespace: string;
  labels: Record<string, string>;
}

/** Resources that must stay flat after warm-up, how each is taken from an interval's samples, and how flat. */
interface SeriesDef {
  key: 'rssAnon' | 'heap' | 'fds' | 'connections' | 'watches';
  metric: string;
  unit: string;
  scale: number;
  /** Growth allowed per 10 minutes, as a share of the level (%). */
  per10min: number;
}

/**
 * Growth allowed per 10 minutes as a share of the series' level. RssAnon and the heap's floor
 * move by a few per cent between intervals with the load's phases (GC, the slow consumers'
 * buffers filling and being dropped); 5% per 10 minutes is above that noise over 10 minutes and
 * is 30% an hour, a leak that a day's uptime would turn into an OOM kill. File descriptors and
 * open watches are counts the load holds constant: a leak of one per watch re-opened (thousands an
 * hour) breaks 2% at once. Member connections fall after the sync (idle keep-alive ones close) and
 * then hold: one kept per live read would add hundreds.
 */
export const SOAK_SERIES: SeriesDef[] = [
  { key: 'rssAnon', metric: 'rss_anon', unit: 'MB', scale: MB, per10min: 5 },
  { key: 'heap', metric: 'heap_used_floor', unit: 'MB', scale: MB, per10min: 5 },
  { key: 'fds', metric: 'open_fds', unit: 'fds', scale: 1, per10min: 2 },
  { key: 'connections', metric: 'member_connections', unit: 'connections', scale: 1, per10min: 5 },
  { key: 'watches', metric: 'watches_open', unit: 'watches', scale: 1, per10min: 2 },
];

interface Sample {
  at: number;
  rssAnon: number;
  heap: number;
  fds: number;
  connections: number;
  watches: number;
  evictions: number;
  /** flotilla_eventloop_delay_seconds, cumulative: [le, count]. */
  loop: [number, number][];
}

interface Interval {
  index: number;
  hist: LatencyHistogram;
  delivered: Record<string, number>;
  expected: Record<string, number>;
  reads: Record<'cached' | 'live', number[]>;
}

export interface SoakOptions {
  /** Minutes of load (default: 30, or 2 with --quick). */
  minutes?: number;
}

/**
 * soak: flotilla under a mixed load for a long time (30 minutes; 2 in the quick profile and in CI),
 * looking for what only time shows: memory, file descriptors, member connections or watches that
 * grow, slow consumers that stall the others, latencies that drift. One member apiserver registered
 * under two names, 800 configmaps and 200 pods in 8 namespaces (two of them tenant acme's), 20 bulk
 * configmaps. The load: 1,000 watchers over 9 groups (the fleet admin's all / by label / one
 * namespace, tenant acme's, alice's and bob's partial RBAC) in forked load-generator processes,
 * each watch ending by its own timeoutSeconds and opened again from its last resourceVersion; 10
 * member writes a second (patches of configmaps and pods, stamped); cached lists (paged,
 * label-selected, the tenant's, alice's) and live reads of secrets (not cached) back to back;
 * 4 slow consumers that stop reading, evicted past the watch buffer and replaced. After a warm-up,
 * every interval: flotilla's RssAnon, V8 heap (the interval's lowest sample: the floor under GC's
 * sawtooth), open fds, established connections to the member's port, open watches, evictions,
 * the event loop's delay p99, each watcher group's deliveries against the writes it should see,
 * delivery latency percentiles, and the reads' latencies. Reported as each series' linear trend
 * per 10 minutes against its level, and as the drift of the percentiles (last third of the
 * intervals against the first).
 */
export function soakScenario(opts: SoakOptions = {}): Scenario {
  return {
    name: 'soak',
    run: (ctx, emit) => runSoak(ctx, emit, opts.minutes ?? (ctx.profile.name === 'quick' ? 2 : 30)),
  };
}

export const soak = soakScenario();

async function runSoak(ctx: BenchContext, emit: (f: Figure) => void, minutes: number) {
  const durationMs = minutes * 60_000;
  const warmupMs = Math.min(5 * 60_000, Math.max(30_000, durationMs * 0.2));
  const intervalMs = minutes <= 3 ? 10_000 : 30_000;
  const { figures, add } = figureSink('soak', emit);
  const notes: string[] = [];
  const fleet = await ctx.ensureFleet();
  // Another scenario's flotilla would share the CPUs with this one for nothing.
  await ctx.stopFlotilla();
  const member = ctx.member;
  const seeded = await seed(member);
  ctx.log(`soak: seeded ${seeded.objects} objects in ${seeded.seconds.toFixed(1)} s`);

  const flotilla = await startFlotillaProcess({
    fleet: fleet.info,
    dir: join(ctx.dir, 'soak-flotilla'),
    members: ctx.registered(NAMES),
    resources: [{ version: 'v1', resource: 'configmaps' }, { version: 'v1', resource: 'pods' }],
    options: { maxWatchBufferMiB: MAX_WATCH_BUFFER_MIB },
    tenants: [{ id: TENANT, users: [], groups: [`${TENANT}-admins`], clusterScoped: {} }],
  });
  let flotillaStopped = false;
  const stopFlotilla = async () => {
    if (flotillaStopped) return;
    flotillaStopped = true;
    await flotilla.stop();
  };
  ctx.adopt(stopFlotilla);
  const pid = flotilla.proc.pid;
  const tokens: Record<Caller, string> = {
    admin: member.token,
    acme: userToken(fleet.info.users, `admin@${TENANT}`),
    alice: userToken(fleet.info.users, 'alice'),
    bob: userToken(fleet.info.users, 'bob'),
  };
  const as = (caller: Caller): MemberEndpoint => ({ server: flotilla.endpoint.server, caFile: flotilla.endpoint.caFile, token: tokens[caller] });

  // The load generators: the watchers spread over two processes, the slow consumers in a third.
  const t0 = epochMs() + 1000;
  const spec = (groups: SoakWatchGroup[], slow?: SoakWatchSpec['slow']): SoakWatchSpec => ({
    server: flotilla.endpoint.server,
    caFile: flotilla.endpoint.caFile,
    groups,
    stamp: STAMP,
    t0,
    intervalMs,
    // Long enough that the watchers, all opened at once, do not all come back at once within a short run.
    timeoutSeconds: minutes <= 3 ? [300, 600] : [120, 300],
    ...(slow ? { slow } : {}),
  });
  const share = (g: GroupDef, part: number, parts: number): SoakWatchGroup => ({
    name: g.name,
    token: tokens[g.caller],
    url: urlOf(g),
    count: Math.floor(g.count / parts) + (part < g.count % parts ? 1 : 0),
    ...(g.churn ? { timeoutSeconds: [10, 20] as [number, number] } : {}),
  });
  const loads = [
    startLoad(ctx, spec(GROUPS.map((g) => share(g, 0, 2)))),
    startLoad(ctx, spec(GROUPS.map((g) => share(g, 1, 2)))),
  ];
  const slowLoad = startLoad(ctx, spec([{ name: 'slow', token: tokens.admin, url: `/api/v1/namespaces/${BULK_NS}/configmaps`, count: SLOW_CONSUMERS }], { holdMs: SLOW_HOLD_MS }));
  const watchers = GROUPS.reduce((n, g) => n + g.count, 0);
  const deadline = performance.now() + 120_000;
  while (loads.reduce((n, l) => n + l.connected, 0) < watchers || slowLoad.connected < SLOW_CONSUMERS) {
    if (performance.now() > deadline) throw new Error(`soak: only ${loads.reduce((n, l) => n + l.connected, 0)} of ${watchers} watches answered`);
    if ([...loads, slowLoad].some((l) => l.exited)) throw new Error('soak: a watch load generator exited early');
    await sleep(100);
  }
  // The soak starts with the first whole interval after every watcher answered; earlier ones are not reported.
  const startIndex = Math.max(0, Math.ceil((epochMs() - t0) / intervalMs));
  const start = t0 + startIndex * intervalMs;
  ctx.log(`soak: ${watchers} watchers and ${SLOW_CONSUMERS} slow consumers connected; ${minutes} min of load, ${warmupMs / 60_000} min warm-up, ${intervalMs / 1000} s intervals`);

  const intervals = new Map<number, Interval>();
  const intervalAt = (k: number) => {
    let iv = intervals.get(k);
    if (!iv) intervals.set(k, (iv = { index: k, hist: new LatencyHistogram(), delivered: {}, expected: {}, reads: { cached: [], live: [] } }));
    return iv;
  };
  const indexOf = (at: number) => Math.floor((at - t0) / intervalMs);
  const end = start + durationMs;
  const running = () => epochMs() < end;

  // The writer: patches stamped with the time they were sent, each expected at every group that sees it.
  const writer = (async () => {
    const client = new BenchClient(member);
    let failed = 0;
    try {
      const inflight = new Set<Promise<void>>();
      for (let i = 0; running(); i++) {
        const wait = start + (i * 1000) / WRITES_PER_SECOND - epochMs();
        if (wait > 1) await sleep(wait);
        const p = patchOf(i);
        const path = `/api/v1/namespaces/${p.namespace}/${p.kind}/${p.name}`;
        const task: Promise<void> = (async () => {
          const stamp = epochMs();
          const r = await client.send('PATCH', path, { body: JSON.stringify({ metadata: { annotations: { [STAMP]: stamp.toFixed(3) } } }), contentType: 'application/merge-patch+json', timeoutMs: 30_000 }).catch(() => undefined);
          if (r?.status !== 200) {
            failed++;
            return;
          }
          const k = indexOf(stamp);
          if (k < 0) return;
          const iv = intervalAt(k);
          for (const g of GROUPS) if (sees(g, p)) iv.expected[g.name] = (iv.expected[g.name] ?? 0) + g.count * NAMES;
        })().finally(() => inflight.delete(task));
        inflight.add(task);
        if (inflight.size > 100) await Promise.race(inflight);
      }
      await Promise.all(inflight);
    } finally {
      client.close();
    }
    return failed;
  })();

  // Reads back to back: four cached lists and one live read, round-robin.
  const reads: { name: string; live: boolean; run: (c: Record<Caller, BenchClient>) => Promise<void> }[] = [
    { name: 'admin paged configmaps', live: false, run: (c) => pagedList(c.admin, '/api/v1/configmaps?labelSelector=soak%3Dyes&limit=500') },
    { name: 'admin pods by label', live: false, run: (c) => expectOk(c.admin.get('/api/v1/pods?labelSelector=app%3Da1'), 'pods by label') },
    { name: 'tenant configmaps', live: false, run: (c) => expectOk(c.acme.get('/api/v1/configmaps'), 'tenant configmaps') },
    { name: 'alice configmaps', live: false, run: (c) => expectOk(c.alice.get('/api/v1/configmaps'), 'alice configmaps') },
    { name: 'live secrets', live: true, run: (c) => expectOk(c.admin.get('/api/v1/namespaces/soak-0/secrets'), 'live secrets') },
  ];
  let readErrors = 0;
  let lastReadError = '';
  const reader = (async () => {
    const clients = Object.fromEntries((Object.keys(tokens) as Caller[]).map((c) => [c, new BenchClient(as(c))])) as Record<Caller, BenchClient>;
    try {
      for (let i = 0; running(); i++) {
        const read = reads[i % reads.length]!;
        const started = performance.now();
        try {
          await read.run(clients);
          const k = indexOf(epochMs());
          if (k >= 0) intervalAt(k).reads[read.live ? 'live' : 'cached'].push(performance.now() - started);
        } catch (e) {
          readErrors++;
          lastReadError = `${read.name}: ${(e as Error).message}`;
        }
        await sleep(READ_PAUSE_MS);
      }
    } finally {
      for (const c of Object.values(clients)) c.close();
    }
  })();

  // Flotilla from the outside, every SAMPLE_MS; and each interval's deliveries once its stamps have arrived.
  const samples: Sample[] = [];
  let sampleErrors = 0;
  const sampler = (async () => {
    while (epochMs() < end + COLLECT_GRACE_MS) {
      try {
        const held = processHoldings(pid, [member.port]);
        const m = await scrapeMetrics(flotilla.endpoint, 30_000);
        samples.push({
          at: epochMs(),
          rssAnon: held.rssAnonBytes,
          fds: held.fds,
          connections: held.connections,
          heap: m.get('nodejs_heap_size_used_bytes') ?? NaN,
          watches: m.get('flotilla_watches') ?? NaN,
          evictions: m.get('flotilla_watch_evictions_total') ?? NaN,
          loop: loopBuckets(m),
        });
      } catch {
        sampleErrors++;
      }
      await sleep(SAMPLE_MS);
    }
  })();
  const counters = { opened: 0, ended: 0, refused: 0, failed: 0, slowOpened: 0, slowEvicted: 0, slowHeldOpen: 0 };
  const collect = async (k: number) => {
    const reports = await Promise.all([...loads, slowLoad].map((l) => l.collect(k)));
    counters.opened = counters.ended = counters.refused = counters.failed = 0;
    reports.forEach((r, i) => {
      if (!r) return;
      if (i < loads.length) {
        counters.opened += r.opened;
        counters.ended += r.ended;
        counters.refused += r.refused;
        counters.failed += r.failed;
      } else {
        counters.slowOpened = r.opened;
        counters.slowEvicted = r.evicted;
        counters.slowHeldOpen = r.heldOpen;
      }
      for (const [index, hist, counts] of r.intervals) {
        const iv = intervalAt(index);
        iv.hist.addSparse(hist);
        for (const [g, n] of Object.entries(counts)) iv.delivered[g] = (iv.delivered[g] ?? 0) + n;
      }
    });
  };
  let lastLog = 0;
  const lastIndex = startIndex + Math.ceil(durationMs / intervalMs) - 1;
  for (let k = startIndex; k <= lastIndex; k++) {
    const due = t0 + (k + 1) * intervalMs + COLLECT_GRACE_MS;
    if (due - epochMs() > 0) await sleep(due - epochMs());
    await collect(k);
    if (performance.now() - lastLog > 60_000) {
      lastLog = performance.now();
      const s = samples.at(-1);
      const iv = intervalAt(k);
      ctx.log(`soak: ${(((k + 1 - startIndex) * intervalMs) / 60_000).toFixed(1)} of ${minutes} min: RssAnon ${s ? (s.rssAnon / MB).toFixed(0) : '?'} MB, heap ${s ? (s.heap / MB).toFixed(0) : '?'} MB, ${s?.fds ?? '?'} fds, ${s?.connections ?? '?'} member connections, ${s?.watches ?? '?'} watches, ${s?.evictions ?? '?'} evictions; delivery p99 ${iv.hist.percentile(99).toFixed(1)} ms, delivered ${ratio(sum(iv.delivered), sum(iv.expected)).toFixed(3)}`);
    }
  }
  const writesFailed = await writer;
  await reader;
  await sampler;
  for (const l of [...loads, slowLoad]) await l.stop();
  const lastEvictions = samples.at(-1)?.evictions ?? NaN;
  await stopFlotilla();

  // After warm-up: whole intervals only.
  const first = startIndex + Math.ceil(warmupMs / intervalMs);
  const measured = [...intervals.values()].filter((iv) => iv.index >= first && iv.index <= lastIndex).sort((a, b) => a.index - b.index);
  if (measured.length < 3) throw new Error(`soak: ${measured.length} intervals after warm-up; run longer`);
  const samplesOf = (iv: Interval) => samples.filter((s) => indexOf(s.at) === iv.index);
  const levels = measured.map((iv) => {
    const ss = samplesOf(iv);
    return {
      iv,
      minutes: ((iv.index - startIndex + 0.5) * intervalMs) / 60_000,
      rssAnon: percentile(ss.map((s) => s.rssAnon), 50),
      heap: Math.min(...ss.map((s) => s.heap)),
      fds: percentile(ss.map((s) => s.fds), 50),
      connections: percentile(ss.map((s) => s.connections), 50),
      watches: percentile(ss.map((s) => s.watches), 50),
      evictions: Math.max(...ss.map((s) => s.evictions)),
      loopP99: loopDelayP99(samples, iv.index, indexOf),
    };
  });
  const windowMinutes = (measured.length * intervalMs) / 60_000;

  add('minutes', minutes, 'min');
  add('warmup_minutes', warmupMs / 60_000, 'min');
  add('watchers', watchers, 'watchers');
  add('writes_per_second', WRITES_PER_SECOND, 'writes/s');
  for (const s of SOAK_SERIES) {
    const { slope, mean } = linearTrend(levels.map((l) => [l.minutes, l[s.key]]));
    add(`${s.metric}_level`, mean / s.scale, s.unit);
    add(`${s.metric}_growth_pct_per_10min`, (slope * 10 * 100) / mean, '%', { op: '<=', value: s.per10min });
    add(`${s.metric}_growth_pct_over_window`, (slope * windowMinutes * 100) / mean, '%');
    add(`${s.metric}_range`, (Math.max(...levels.map((l) => l[s.key])) - Math.min(...levels.map((l) => l[s.key]))) / s.scale, s.unit);
  }
  const firstEvictions = samples.find((s) => Number.isFinite(s.evictions))?.evictions ?? 0;
  add('evictions', lastEvictions - firstEvictions, 'watches', { op: '>=', value: 1 });
  add('slow_consumers_opened', counters.slowOpened, 'watches');
  add('slow_consumers_seen_evicted', counters.slowEvicted, 'watches');
  add('slow_consumers_still_served_after_hold', counters.slowHeldOpen, 'watches');
  // Every eviction must be a slow consumer's: at most one per slow watch opened.
  add('other_watches_evicted', Math.max(0, lastEvictions - counters.slowOpened), 'watches', { op: '<=', value: 0 });
  add('watches_reopened', counters.ended, 'watches');
  add('watches_refused', counters.refused, 'watches');
  add('watch_requests_failed', counters.failed, 'requests');
  const delivered = measured.map((iv) => ratio(sum(iv.delivered), sum(iv.expected)));
  const worstGroup = measured.map((iv) => Math.min(...GROUPS.map((g) => ratio(iv.delivered[g.name] ?? 0, iv.expected[g.name] ?? 0)).filter(Number.isFinite)));
  add('delivered_min', Math.min(...delivered), 'x', { op: '>=', value: 0.99 });
  add('delivered_min_group', Math.min(...worstGroup), 'x', { op: '>=', value: 0.98 });
  const p50 = measured.map((iv) => iv.hist.percentile(50));
  const p99 = measured.map((iv) => iv.hist.percentile(99));
  add('delivery_p50_ms', percentile(p50, 50), 'ms');
  add('delivery_p99_ms', percentile(p99, 50), 'ms');
  add('delivery_p99_max_ms', Math.max(...p99), 'ms');
  add('delivery_p99_drift', drift(p99), 'x', { op: '<=', value: 2 });
  const cachedP99 = measured.map((iv) => percentile(iv.reads.cached, 99));
  const liveP99 = measured.map((iv) => percentile(iv.reads.live, 99));
  add('cached_read_p99_ms', percentile(cachedP99, 50), 'ms');
  add('cached_read_p99_drift', drift(cachedP99), 'x', { op: '<=', value: 2 });
  add('live_read_p99_ms', percentile(liveP99, 50), 'ms');
  add('live_read_p99_drift', drift(liveP99), 'x', { op: '<=', value: 2 });
  const loopP99 = levels.map((l) => l.loopP99);
  add('event_loop_delay_p99_ms', percentile(loopP99, 50), 'ms');
  add('event_loop_delay_p99_drift', drift(loopP99), 'x');
  add('read_errors', readErrors, 'requests', { op: '<=', value: 0 });
  add('writes_failed', writesFailed, 'patches');

  notes.push(`deliveries by group after warm-up (received ÷ expected): ${GROUPS.map((g) => {
    const got = measured.reduce((n, iv) => n + (iv.delivered[g.name] ?? 0), 0);
    const want = measured.reduce((n, iv) => n + (iv.expected[g.name] ?? 0), 0);
    return `${g.name} ${got}/${want}`;
  }).join(', ')}`);
  if (readErrors) notes.push(`read errors: ${readErrors}, the last: ${lastReadError}`);
  if (sampleErrors) notes.push(`${sampleErrors} samples of flotilla failed (/metrics not answered in 30 s, or /proc not readable)`);
  notes.push(
    `${minutes} min of load after the watchers connected; the first ${warmupMs / 60_000} min are warm-up; ${measured.length} intervals of ${intervalMs / 1000} s measured, resources sampled every ${SAMPLE_MS / 1000} s`,
    `one kube-apiserver registered as ${NAMES} cluster names; ${seeded.objects} objects seeded (${NAMESPACES.length} namespaces × ${CONFIGMAPS_PER_NS} configmaps of ${CONFIGMAP_DATA_BYTES} B and ${PODS_PER_NS} pods, ${BULK_CONFIGMAPS} configmaps of ${BULK_DATA_BYTES / 1024} KiB in ${BULK_NS}, 20 secrets read live); tenant ${TENANT} owns ${NAMESPACES.filter((n) => n.startsWith(`${TENANT}-`)).join(', ')}; alice reads soak-0 and soak-1, bob soak-2 (RoleBindings on the member)`,
    `watchers: ${GROUPS.map((g) => `${g.count} ${g.name}`).join(', ')}; each asks a timeoutSeconds in ${minutes <= 3 ? '300–600' : '120–300'} s (the churn group 10–20 s) and is opened again at once from its last resourceVersion (watches_reopened)`,
    `writes: ${WRITES_PER_SECOND} merge patches/s on the member (of every 6, 2 a configmap, 2 a pod, 2 a bulk configmap), each a stamp; delivered = stamps received ÷ (writes × the watchers whose view holds the object × ${NAMES} names), per interval of the stamp`,
    `reads back to back (${READ_PAUSE_MS} ms apart): ${reads.map((r) => r.name).join(', ')}`,
    `slow consumers: ${SLOW_CONSUMERS} watches of ${BULK_NS} that read nothing for ${SLOW_HOLD_MS / 1000} s, then another each; flotilla runs with maxWatchBufferMiB ${MAX_WATCH_BUFFER_MIB} (default 16) so they pass it within a minute`,
    'growth: the least-squares slope of the interval values after warm-up (RssAnon and fds: the interval median; heap: the interval minimum, the floor under GC; connections and watches: the median), per 10 minutes as a share of the mean; drift: the mean of the last third of the interval percentiles ÷ the first third',
    'the machine (2 CPUs) is shared with the member, the load generators and, during this run, other work: read the trends and ratios, not the absolute times',
    'to run: `npm run soak` (30 min), `npm run soak -- --minutes N`, `npm run soak -- --quick` (2 min, as test/e2e/soak.test.ts does)',
  );
  const table = {
    header: ['min', 'RssAnon MB', 'heap floor MB', 'fds', 'member conns', 'watches', 'evictions', 'delivered', 'delivery p50 ms', 'delivery p99 ms', 'cached read p99 ms', 'live read p99 ms', 'loop p99 ms'],
    rows: levels.map((l) => [
      (((l.iv.index - startIndex + 1) * intervalMs) / 60_000).toFixed(1),
      (l.rssAnon / MB).toFixed(0),
      (l.heap / MB).toFixed(0),
      String(l.fds),
      String(l.connections),
      String(l.watches),
      String(l.evictions),
      ratio(sum(l.iv.delivered), sum(l.iv.expected)).toFixed(3),
      l.iv.hist.percentile(50).toFixed(1),
      l.iv.hist.percentile(99).toFixed(1),
      percentile(l.iv.reads.cached, 99).toFixed(0),
      percentile(l.iv.reads.live, 99).toFixed(0),
      l.loopP99.toFixed(1),
    ]),
  };
  return { figures, facts: { objects: seeded.objects * NAMES, objectBytes: seeded.configMapBytes, objectBytesAre: 'per regular configmap as the member stores it', notes, table } };
}

function userToken(users: TestUser[], name: string): string {
  const u = users.find((x) => x.name === name);
  if (!u) throw new Error(`soak: the fleet has no user ${name}`);
  return u.token;
}

function urlOf(g: GroupDef): string {
  const base = g.namespace ? `/api/v1/namespaces/${g.namespace}/${g.kind}` : `/api/v1/${g.kind}`;
  return g.selector ? `${base}?labelSelector=${encodeURIComponent(`${g.selector[0]}=${g.selector[1]}`)}` : base;
}

function sees(g: GroupDef, p: Patch): boolean {
  if (g.kind !== p.kind || !VISIBLE[g.caller](p.namespace)) return false;
  if (g.namespace !== undefined && g.namespace !== p.namespace) return false;
  return !g.selector || p.labels[g.selector[0]] === g.selector[1];
}

const appOf = (i: number) => `a${i % APPS}`;

/** The i-th write: round-robin over kinds, namespaces and objects. */
function patchOf(i: number): Patch & { name: string } {
  const slot = i % WRITE_CYCLE;
  const round = Math.floor(i / WRITE_CYCLE);
  if (slot >= 4) {
    const n = (round * 2 + slot) % BULK_CONFIGMAPS;
    return { kind: 'configmaps', namespace: BULK_NS, name: `bulk-${n}`, labels: { soak: 'bulk' } };
  }
  const namespace = NAMESPACES[(round * 2 + (slot % 2)) % NAMESPACES.length]!;
  const n = Math.floor(round / NAMESPACES.length) * 2 + (slot % 2);
  if (slot < 2) {
    const k = n % CONFIGMAPS_PER_NS;
    return { kind: 'configmaps', namespace, name: `cm-${k}`, labels: { app: appOf(k), soak: 'yes' } };
  }
  const k = n % PODS_PER_NS;
  return { kind: 'pods', namespace, name: `pod-${k}`, labels: { app: appOf(k) } };
}

/**
 * The member's objects and RBAC: namespaces (a default ServiceAccount each: the bench fleet has
 * no controller manager), configmaps and pods labelled app=a0…a4, the bulk configmaps, secrets
 * for the live reads; a ClusterRole reading configmaps and pods, bound in acme's namespaces to its
 * admins' group, in soak-0 and soak-1 to alice, in soak-2 to bob.
 */
async function seed(member: MemberInfo): Promise<{ objects: number; configMapBytes: number; seconds: number }> {
  const started = performance.now();
  const create = async (path: string, body: unknown) => {
    const res = await memberRequest(member, 'POST', path, body, { timeoutMs: 30_000 });
    if (res.status !== 201 && res.status !== 409) throw new Error(`soak: POST ${path}: ${res.status} ${res.body.slice(0, 300)}`);
    return res;
  };
  const rbac = '/apis/rbac.authorization.k8s.io/v1';
  await create(`${rbac}/clusterroles`, { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: 'soak-reader' }, rules: [{ apiGroups: [''], resources: ['configmaps', 'pods'], verbs: ['get', 'list', 'watch'] }] });
  const bind = (ns: string, subject: { kind: string; name: string }) =>
    create(`${rbac}/namespaces/${ns}/rolebindings`, {
      apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name: `soak-reader-${subject.name.replace(/[^a-z0-9-]/g, '-')}` },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'soak-reader' },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', ...subject }],
    });
  let objects = 0;
  let configMapBytes = 0;
  const tasks: (() => Promise<unknown>)[] = [];
  for (const ns of [...NAMESPACES, BULK_NS]) {
    await create('/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
    await create(`/api/v1/namespaces/${ns}/serviceaccounts`, { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'default' } });
  }
  for (const ns of NAMESPACES) {
    if (VISIBLE.acme(ns)) await bind(ns, { kind: 'Group', name: `${TENANT}-admins` });
    if (VISIBLE.alice(ns)) await bind(ns, { kind: 'User', name: 'alice' });
    if (VISIBLE.bob(ns)) await bind(ns, { kind: 'User', name: 'bob' });
    for (let k = 0; k < CONFIGMAPS_PER_NS; k++) {
      tasks.push(async () => {
        const res = await create(`/api/v1/namespaces/${ns}/configmaps`, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `cm-${k}`, labels: { app: appOf(k), soak: 'yes' } }, data: { blob: filler(CONFIGMAP_DATA_BYTES, k) } });
        if (res.status === 201) configMapBytes = Buffer.byteLength(res.body);
      });
    }
    for (let k = 0; k < PODS_PER_NS; k++) {
      tasks.push(() => create(`/api/v1/namespaces/${ns}/pods`, { apiVersion: 'v1', kind: 'Pod', metadata: { name: `pod-${k}`, labels: { app: appOf(k) } }, spec: { containers: [{ name: 'c', image: 'example.com/c:1' }] } }));
    }
  }
  for (let k = 0; k < BULK_CONFIGMAPS; k++) {
    tasks.push(() => create(`/api/v1/namespaces/${BULK_NS}/configmaps`, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `bulk-${k}`, labels: { soak: 'bulk' } }, data: { blob: filler(BULK_DATA_BYTES, k) } }));
  }
  for (let k = 0; k < 20; k++) {
    tasks.push(() => create('/api/v1/namespaces/soak-0/secrets', { apiVersion: 'v1', kind: 'Secret', metadata: { name: `s-${k}` }, stringData: { token: filler(256, k) } }));
  }
  objects = tasks.length;
  let next = 0;
  await Promise.all(Array.from({ length: 16 }, async () => {
    while (next < tasks.length) await tasks[next++]!();
  }));
  return { objects, configMapBytes, seconds: (performance.now() - started) / 1000 };
}

function filler(bytes: number, seed: number): string {
  return `${seed}-`.padEnd(bytes, 'abcdefghijklmnopqrstuvwxyz0123456789');
}

async function expectOk(p: Promise<{ status: number; errorText?: string }>, what: string): Promise<void> {
  const r = await p;
  if (r.status !== 200) throw new Error(`${what}: ${r.status} ${r.errorText ?? ''}`);
}

/** A paged list walked to its end (the continue token read from each page's head). */
async function pagedList(client: BenchClient, path: string): Promise<void> {
  let next = path;
  for (;;) {
    const r = await client.get(next, { keepHead: 4096 });
    if (r.status !== 200) throw new Error(`paged list: ${r.status} ${r.errorText ?? ''}`);
    const token = /"continue":"([^"]+)"/.exec(r.head ?? '')?.[1];
    if (!token) return;
    next = `${path}&continue=${encodeURIComponent(token)}`;
  }
}

/** flotilla_eventloop_delay_seconds' cumulative buckets from a scrape, in increasing order. */
function loopBuckets(m: Map<string, number>): [number, number][] {
  const out: [number, number][] = [];
  for (const [key, v] of m) {
    const b = /^flotilla_eventloop_delay_seconds_bucket\{le="([^"]+)"\}$/.exec(key);
    if (b) out.push([b[1] === '+Inf' ? Infinity : Number(b[1]), v]);
  }
  return out.sort((a, b) => a[0] - b[0]);
}

/** The event loop's delay p99 (ms) within interval k: the histogram's growth from the last sample before it to its last. */
function loopDelayP99(samples: Sample[], k: number, indexOf: (at: number) => number): number {
  const before = samples.filter((s) => indexOf(s.at) < k).at(-1);
  const last = samples.filter((s) => indexOf(s.at) === k).at(-1);
  if (!before || !last || before.loop.length !== last.loop.length) return NaN;
  return histogramQuantile(0.99, last.loop.map(([le, n], i) => [le, n - before.loop[i]![1]] as const)) * 1000;
}

const sum = (r: Record<string, number>) => Object.values(r).reduce((a, b) => a + b, 0);
const ratio = (a: number, b: number) => (b > 0 ? a / b : NaN);

/** The mean of the last third of a series ÷ the mean of its first third. */
function drift(xs: number[]): number {
  const finite = xs.filter(Number.isFinite);
  const third = Math.max(1, Math.floor(finite.length / 3));
  const mean = (ys: number[]) => ys.reduce((a, b) => a + b, 0) / ys.length;
  return mean(finite.slice(-third)) / mean(finite.slice(0, third));
}

interface SoakLoad {
  readonly connected: number;
  readonly exited: boolean;
  /** Every interval up to k, or undefined if the generator did not answer in time. */
  collect(k: number): Promise<Extract<FromSoakWatchLoad, { collected: number }> | undefined>;
  stop(): Promise<void>;
}

/** A forked soak watch load generator, stopped by its PID. */
function startLoad(ctx: BenchContext, spec: SoakWatchSpec): SoakLoad {
  const proc: ChildProcess = fork(SOAK_WATCH_LOAD, [JSON.stringify(spec)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  let connected = 0;
  let exited = false;
  let waiting: ((m: Extract<FromSoakWatchLoad, { collected: number }>) => void) | undefined;
  proc.on('message', (m: FromSoakWatchLoad) => {
    if ('connected' in m) connected = m.connected;
    else waiting?.(m);
  });
  proc.on('exit', () => (exited = true));
  const stop = async () => {
    if (exited) return;
    proc.kill('SIGKILL');
    await new Promise((r) => proc.once('exit', r));
  };
  ctx.adopt(stop);
  return {
    get connected() {
      return connected;
    },
    get exited() {
      return exited;
    },
    collect: (k) =>
      new Promise((resolve) => {
        if (exited) return resolve(undefined);
        const timer = setTimeout(() => {
          waiting = undefined;
          ctx.log(`soak: load generator ${proc.pid} did not report interval ${k} within 30 s`);
          resolve(undefined);
        }, 30_000);
        waiting = (m) => {
          clearTimeout(timer);
          waiting = undefined;
          resolve(m);
        };
        proc.send({ collect: k } satisfies ToSoakWatchLoad);
      }),
    stop,
  };
}
