import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { startKarmada } from '../../test/fleet/karmada.js';
import { memberJson, memberRequest, type MemberEndpoint } from '../../test/fleet/http.js';
import { livePids } from '../../test/fleet/processes.js';
import { DEFAULT_MEMBER_HEARTBEAT_MILLISECONDS } from '../../src/registry/defaults.js';
import type { BenchContext } from '../lib/context.js';
import { cpuSeconds } from '../lib/cpu-time.js';
import { procMemory, sleep } from '../lib/flotilla.js';
import { flotillaCgroup } from '../lib/memory-cgroup.js';
import { measureReads, type ReadPlan, type ReadResult } from '../lib/fleet-reads.js';
import { countedSelectors, podName, selectorNear } from '../lib/pods.js';
import { LIST_TIMEOUT_MS, MB, POD_ITEM, figureSink, ok, type Scenario } from '../lib/scenario.js';
import { BenchClient, occurrenceCounter, percentile } from '../lib/http.js';
import { epochMs } from '../lib/latency.js';
import { PeerAnswers } from '../lib/peer-answers.js';
import { MAX_PROCESSES, WATCHERS_PER_PROCESS, WATCH_NS, preparePods, startLoads, write } from './watchers.js';

/**
 * karmada: flotilla and a live karmada-search (test/fleet/karmada.ts) on the same member under the
 * same cluster names, one after the other on this machine: flotilla first (then stopped), then
 * karmada-search. Each side's initial sync (time and CPU), memory when synced, the same reads
 * (lib/fleet-reads.ts), a paused member, and what each serves against the members' own lists.
 * karmada-search is read on its own port (no aggregation hop in front of it; the list through the
 * Karmada control plane, as kubectl reaches it, is measured once beside it).
 */
type Side = 'flotilla' | 'karmada';

interface SideRun {
  syncMs: number;
  syncCpuS: number;
  rssBytes: number;
  anonBytes: number;
  /** VmHWM after the reads: what serving them took at most. */
  peakRssBytes: number;
  reads: ReadResult;
  /** What the side did not answer in time, or failed. */
  answers: PeerAnswers;
  /** The fleet list through the Karmada control plane (karmada only). */
  viaApiserverMs?: number;
  /** Every cluster's copies of every pod, as `<namespace>/<name>` counts (small fleets only). */
  items?: Map<string, number>;
  tableColumns: string[];
  paused?: PausedResult;
  watch: WatchResult;
  relabel?: RelabelResult;
}

/** A label-selected watch while pods are relabelled in and out, against the member's own watch. */
interface RelabelResult {
  /** Per pod and event type, the side's count equals the member's × the cluster names. */
  matches: boolean;
  member: string;
  side: string;
}

interface WatchResult {
  p50: number;
  p99: number;
  /** Deliveries ÷ (events written × clusters × watchers). */
  delivered: number;
  cpuUsPerDelivery: number;
}

interface Probe {
  status: number;
  ms: number;
  warning: string;
}

interface PausedResult extends Probe {
  /** 1 s in, as kubectl asks (resourceVersion unset: a fresh read, confirmed with the member). */
  early: Probe;
  /** 1 s in, at resourceVersion=0 (the cache as it stands). */
  earlyRv0: Probe;
  convergedMs: number;
}

/**
 * Its default request timeout (60 s) ends a fleet list of 100k pods with a 504 on this machine;
 * as with the member in the list scenario, what is measured is what it serves, not where it gives up.
 */
const SEARCH_ARGS = ['--request-timeout=10m'];

/** Lists small enough to parse for the side-by-side item check. */
const PARSE_LIMIT = 50_000;

/** The bound of a small request to a side (a Table's columns, a short watch): past it, unanswered. */
const PEER_REQUEST_MS = 60_000;
/** How long a paused member's side has to serve the whole fleet again once the member is resumed. */
const CONVERGE_WAIT_S = 120;
/**
 * A fresh read 1 s into the pause waits until the heartbeat finds the member silent, which it does
 * within two intervals of the member's last answer: the bound of flotilla's answer to it.
 */
const PAUSED_FRESH_READ_MS = 2 * DEFAULT_MEMBER_HEARTBEAT_MILLISECONDS - 1000;
/** A watch measurement's bound: its watches' connect wait, the writer's run, the backlog wait and the report's. */
const watchBoundMs = (ctx: BenchContext) => (60 + 2 + ctx.profile.watchSeconds + 10 + 60) * 1000 + PEER_REQUEST_MS;

const NO_WATCH: WatchResult = { p50: NaN, p99: NaN, delivered: NaN, cpuUsPerDelivery: NaN };
const noProbe: Probe = { status: 0, ms: NaN, warning: '' };
const noPause: PausedResult = { ...noProbe, early: noProbe, earlyRv0: noProbe, convergedMs: NaN };
const noTimings = { p50: NaN, p99: NaN, runs: 0 };

/** A side that could not be measured at all: every figure NaN, `answers` saying why. */
function notMeasured(answers: PeerAnswers, plan: ReadPlan): SideRun {
  return {
    syncMs: NaN,
    syncCpuS: NaN,
    rssBytes: NaN,
    anonBytes: NaN,
    peakRssBytes: NaN,
    reads: {
      listObjects: NaN,
      listBytes: NaN,
      list: noTimings,
      listRv0: { ...noTimings, objects: NaN },
      tableRows: NaN,
      table: noTimings,
      selected: Object.fromEntries(plan.selectors.map((s) => [s.name, { ...noTimings, objects: NaN }])),
      getStatus: 0,
      get: noTimings,
      nameSelected: { ...noTimings, objects: NaN },
      page: noTimings,
      walk: { ...noTimings, pages: NaN, objects: NaN },
    },
    answers,
    tableColumns: [],
    watch: NO_WATCH,
  };
}

export const karmada: Scenario = {
  name: 'karmada',
  async run(ctx, emit) {
    const seed = await ctx.ensureSeeded();
    const names = Math.min(ctx.profile.listNames, ctx.profile.names);
    const clusters = ctx.registered(names);
    const member = ctx.member;
    const { figures, add } = figureSink('karmada', emit);
    const notes: string[] = [];

    // The watched pods (the watchers scenario's, made here when it did not run) are part of the fleet.
    await preparePods(member);
    // What the members themselves hold (other scenarios may have added pods): the expected answer.
    const own = await memberJson<{ items: { metadata: { namespace: string; name: string } }[] }>(member, 'GET', '/api/v1/pods');
    const perMember = own.items.length;
    const expected = perMember * names;
    const ownItems = new Map<string, number>();
    for (const p of own.items) ownItems.set(`${p.metadata.namespace}/${p.metadata.name}`, names);

    const middle = Math.floor(seed.pods / 2);
    const podPath = `/api/v1/namespaces/${seed.namespaces[middle % seed.namespaces.length]!}/pods/${podName(middle)}`;
    const sel = (wanted: number) => selectorNear(seed.pods, wanted / names);
    const plan: ReadPlan = {
      listRounds: ctx.profile.listRounds,
      selectors: [
        { name: 'selected_100', query: `labelSelector=${encodeURIComponent(sel(100).selector)}`, runs: 100 },
        { name: 'selected_10k', query: `labelSelector=${encodeURIComponent(sel(10_000).selector)}`, runs: 20 },
        { name: 'selected_100_rv0', query: `labelSelector=${encodeURIComponent(sel(100).selector)}&resourceVersion=0`, runs: 100 },
      ],
      podPath,
      getRuns: 100,
      // A walk of 100k pods is 200 pages; on karmada-search each takes long enough that one is the measure.
      pagedWalks: ctx.profile.name === 'full' ? 1 : 3,
    };
    // Ready when a label-selected list at resourceVersion=0 (from the cache, not the members) holds
    // its pod from every cluster: a cluster karmada-search has not set up adds nothing to its lists
    // (it answers at once, without it).
    const probe = countedSelectors(seed.pods).find((s) => s.podsMatched === 1)!;
    const probeQuery = `/api/v1/pods?labelSelector=${encodeURIComponent(probe.selector)}`;
    const syncedQuery = `${probeQuery}&resourceVersion=0`;
    const pauseSeconds = ctx.profile.name === 'full' ? 30 : 5;

    const runs: Partial<Record<Side, SideRun>> = {};
    /** What each side measured beside its reads; whatever it does not answer in time is counted in `answers`. */
    const serve = async (ep: MemberEndpoint, pid: number, answers: PeerAnswers) => ({
      tableColumns: await answers.within('Table columns', PEER_REQUEST_MS, (t) => tableColumns(ep, t), []),
      ...(expected <= PARSE_LIMIT ? { items: await answers.within('items list', LIST_TIMEOUT_MS, (t) => listedItems(ep, t), new Map<string, number>()) } : {}),
      watch: await answers.within('watch', watchBoundMs(ctx), () => watchDelivery(ctx, ep, pid, names), NO_WATCH),
      paused: await answers.within('paused member', (pauseSeconds + CONVERGE_WAIT_S) * 1000 + PEER_REQUEST_MS, () => pausedMember(ctx, ep, probeQuery, names, pauseSeconds), noPause),
      relabel: await answers.within('relabel watch', PEER_REQUEST_MS, () => relabelWatch(ep, member, names), { matches: false, member: '', side: 'not answered' }),
    });
    // flotilla
    {
      const answers = new PeerAnswers('flotilla');
      const { start, pid, syncCpuS, mem } = await freshFlotilla(ctx, names);
      const ep = start.flotilla.endpoint;
      const reads = await measureReads(ep, plan, answers);
      ctx.log(`karmada: flotilla measured (${reads.listObjects} objects listed)`);
      runs.flotilla = {
        syncMs: start.readyMs,
        syncCpuS,
        rssBytes: mem.rssBytes,
        anonBytes: mem.anonBytes,
        peakRssBytes: procMemory(pid).peakRssBytes,
        reads,
        answers,
        ...(await serve(ep, pid, answers)),
      };
      await ctx.stopFlotilla();
    }
    // karmada-search: a side that cannot be started, or stops answering, is its figures' NaN and
    // its notes; flotilla's, measured first, are reported whatever happens here.
    const answers = new PeerAnswers('karmada');
    try {
      const plane = await startKarmada({ fleet: ctx.fleet!.info, dir: join(ctx.dir, 'karmada'), log: ctx.log, searchArgs: SEARCH_ARGS });
      ctx.adopt(() => plane.stop());
      try {
        await plane.register(clusters);
        await plane.select('bench', clusters.map((c) => c.name), [{ apiVersion: 'v1', kind: 'Pod' }]);
        // Measured as flotilla's is: from a fresh process's start, its cache empty, until it serves
        // every cluster (its Clusters and ResourceRegistry are already stored, as flotilla's fleet file is).
        const t0 = performance.now();
        const pid = (await plane.restartSearch()).pid;
        const synced = await answers.within('sync', ctx.profile.readyTimeoutMs, (t) => untilSynced(plane.proxyDirect, syncedQuery, names, t).then(() => true), false);
        const syncMs = synced ? performance.now() - t0 : NaN;
        const syncCpuS = synced ? cpuSeconds(pid) : NaN;
        await sleep(2000);
        const mem = procMemory(pid);
        const guard = guardMemory(pid);
        try {
          const reads = await measureReads(plane.proxyDirect, plan, answers);
          ctx.log(`karmada: karmada-search measured (${reads.listObjects} objects listed)`);
          const via = await measureReads(plane.proxy, { ...plan, listRounds: 1, selectors: [], getRuns: 0, pagedWalks: 0 }, answers);
          runs.karmada = {
            syncMs,
            syncCpuS,
            rssBytes: mem.rssBytes,
            anonBytes: mem.anonBytes,
            peakRssBytes: procMemory(pid).peakRssBytes,
            reads,
            answers,
            viaApiserverMs: via.list.p50,
            ...(await serve(plane.proxyDirect, pid, answers)),
          };
          if (guard.tripped()) answers.failures.push(guard.tripped()!);
        } finally {
          guard.stop();
        }
      } finally {
        await plane.stop();
      }
    } catch (e) {
      answers.failures.push(`karmada-search not measured: ${(e as Error).message.slice(0, 300)}`);
      runs.karmada = notMeasured(answers, plan);
    }

    const f = runs.flotilla!;
    const k = runs.karmada!;
    // VmRSS counts the cache file's mapped pages, which the kernel drops under a limit: what
    // flotilla needs is shown by running it, afresh, inside a tenth of karmada-search's VmRSS.
    const tenth = await withinLimit(ctx, names, { ...plan, getRuns: 10, pagedWalks: 0 }, Math.floor(k.rssBytes * MEMORY_TARGET));
    add('cached_objects', expected, 'objects');
    const pair = (metric: string, unit: string, fv: number, kv: number, target?: number) => {
      add(`flotilla_${metric}`, fv, unit);
      add(`karmada_${metric}`, kv, unit);
      add(`${metric}_ratio`, fv / kv, 'x', target === undefined ? undefined : { op: '<=', value: target });
    };
    pair('sync_s', 's', f.syncMs / 1000, k.syncMs / 1000, 1.0);
    pair('sync_cpu_s', 's', f.syncCpuS, k.syncCpuS);
    pair('rss_kb_per_pod', 'KB', f.rssBytes / 1000 / expected, k.rssBytes / 1000 / expected, 0.1);
    pair('rss_anon_kb_per_pod', 'KB', f.anonBytes / 1000 / expected, k.anonBytes / 1000 / expected);
    pair('peak_rss_mb', 'MB', f.peakRssBytes / MB, k.peakRssBytes / MB);
    if ('failure' in tenth) {
      notes.push(`flotilla inside a tenth of karmada-search's VmRSS: not measured (${tenth.failure})`);
    } else {
      const within = (metric: string, unit: string, fv: number, kv: number, target?: number) => {
        add(`tenth_flotilla_${metric}`, fv, unit);
        add(`tenth_${metric}_ratio`, fv / kv, 'x', target === undefined ? undefined : { op: '<=', value: target });
      };
      add('tenth_limit_mb', tenth.limitBytes / MB, 'MB');
      add('tenth_cgroup_peak_mb', tenth.peakBytes / MB, 'MB', { op: '<=', value: tenth.limitBytes / MB });
      add('tenth_oom_kills', tenth.oomKills, 'kills', { op: '=', value: 0 });
      within('sync_s', 's', tenth.syncMs / 1000, k.syncMs / 1000, 1.0);
      within('list_p50_ms', 'ms', tenth.reads.list.p50, k.reads.list.p50, 0.5);
      within('list_rv0_p50_ms', 'ms', tenth.reads.listRv0.p50, k.reads.listRv0.p50, 0.5);
      within('table_p50_ms', 'ms', tenth.reads.table.p50, k.reads.table.p50);
      for (const sel of plan.selectors) within(`${sel.name}_p50_ms`, 'ms', tenth.reads.selected[sel.name]!.p50, k.reads.selected[sel.name]!.p50, 0.5);
      add('tenth_flotilla_listed_objects', tenth.reads.listObjects, 'objects', { op: '=', value: expected });
      add('tenth_flotilla_failed_reads', tenth.answers.failures.length + tenth.answers.timeouts.length, 'reads', { op: '=', value: 0 });
      notes.push(`flotilla inside a tenth of karmada-search's VmRSS: started afresh (cache empty) in a cgroup v${tenth.cgroupVersion} memory limit of ${(tenth.limitBytes / MB).toFixed(0)} MB (page cache of its LMDB file included, no swap), as a container limit would; synced, then the same reads (without the paged walk, and 10 gets); ratios against karmada-search unlimited`);
    }
    pair('list_p50_ms', 'ms', f.reads.list.p50, k.reads.list.p50, 0.5);
    pair('list_p99_ms', 'ms', f.reads.list.p99, k.reads.list.p99);
    pair('list_rv0_p50_ms', 'ms', f.reads.listRv0.p50, k.reads.listRv0.p50, 0.5);
    pair('list_rv0_p99_ms', 'ms', f.reads.listRv0.p99, k.reads.listRv0.p99);
    pair('table_p50_ms', 'ms', f.reads.table.p50, k.reads.table.p50);
    pair('table_p99_ms', 'ms', f.reads.table.p99, k.reads.table.p99);
    for (const s of plan.selectors) {
      pair(`${s.name}_p50_ms`, 'ms', f.reads.selected[s.name]!.p50, k.reads.selected[s.name]!.p50, 0.5);
      pair(`${s.name}_p99_ms`, 'ms', f.reads.selected[s.name]!.p99, k.reads.selected[s.name]!.p99, 0.5);
      add(`flotilla_${s.name}_objects`, f.reads.selected[s.name]!.objects, 'objects');
      add(`karmada_${s.name}_objects`, k.reads.selected[s.name]!.objects, 'objects');
    }
    add('flotilla_get_status', f.reads.getStatus, 'status');
    add('karmada_get_status', k.reads.getStatus, 'status');
    add('flotilla_get_p50_ms', f.reads.get.p50, 'ms');
    add('flotilla_get_p99_ms', f.reads.get.p99, 'ms');
    pair('name_selected_p50_ms', 'ms', f.reads.nameSelected.p50, k.reads.nameSelected.p50);
    pair('name_selected_p99_ms', 'ms', f.reads.nameSelected.p99, k.reads.nameSelected.p99);
    pair('page_p50_ms', 'ms', f.reads.page.p50, k.reads.page.p50);
    pair('page_p99_ms', 'ms', f.reads.page.p99, k.reads.page.p99);
    pair('paged_walk_ms', 'ms', f.reads.walk.p50, k.reads.walk.p50);
    add('watchers', ctx.profile.watchers, 'watchers');
    pair('watch_p50_ms', 'ms', f.watch.p50, k.watch.p50);
    // A p99 past the latency histogram's 10 s is Infinity: the ratio against it is then an upper
    // bound, taken at 10 s.
    add('flotilla_watch_p99_ms', f.watch.p99, 'ms');
    add('karmada_watch_p99_ms', k.watch.p99, 'ms');
    add('watch_p99_ms_ratio', f.watch.p99 / Math.min(k.watch.p99, 10_000), 'x', { op: '<=', value: 1.0 });
    pair('watch_cpu_us_per_delivery', 'µs', f.watch.cpuUsPerDelivery, k.watch.cpuUsPerDelivery);
    add('flotilla_watch_delivered', f.watch.delivered, 'x');
    add('karmada_watch_delivered', k.watch.delivered, 'x');
    if (k.viaApiserverMs !== undefined) add('karmada_list_via_apiserver_ms', k.viaApiserverMs, 'ms');

    // Correctness: each side's answers against the members' own lists.
    for (const [side, r] of [['flotilla', f], ['karmada', k]] as const) {
      add(`${side}_listed_objects`, r.reads.listObjects, 'objects', { op: '=', value: expected });
      add(`${side}_listed_rv0_objects`, r.reads.listRv0.objects, 'objects', { op: '=', value: expected });
      add(`${side}_table_rows`, r.reads.tableRows, 'rows', { op: '=', value: expected });
      add(`${side}_paged_objects`, r.reads.walk.objects, 'objects', { op: '=', value: expected });
      add(`${side}_name_selected_objects`, r.reads.nameSelected.objects, 'objects', { op: '=', value: names });
      if (r.items) add(`${side}_same_items`, sameItems(r.items, ownItems) ? 1 : 0, 'bool', { op: '=', value: 1 });
      add(`${side}_table_columns`, r.tableColumns.length, 'columns');
      notes.push(`${side}: Table columns ${r.tableColumns.join(', ')}; a plain get of a pod every cluster holds answered ${r.reads.getStatus}`);
      if (r.answers.said().length) notes.push(`${side} failed or did not answer: ${r.answers.said().join('; ')}`);
      add(`${side}_failed_reads`, r.answers.failures.length, 'reads');
      add(`${side}_timeouts`, r.answers.timeouts.length, 'requests', side === 'flotilla' ? { op: '=', value: 0 } : undefined);
      if (r.paused) {
        add(`${side}_paused_1s_rv0_status`, r.paused.earlyRv0.status, 'status');
        add(`${side}_paused_1s_rv0_ms`, r.paused.earlyRv0.ms, 'ms', side === 'flotilla' ? { op: '<=', value: 100 } : undefined);
        add(`${side}_paused_1s_rv0_warning`, r.paused.earlyRv0.warning ? 1 : 0, 'bool');
        add(`${side}_paused_1s_status`, r.paused.early.status, 'status');
        add(`${side}_paused_1s_ms`, r.paused.early.ms, 'ms', side === 'flotilla' ? { op: '<=', value: PAUSED_FRESH_READ_MS } : undefined);
        add(`${side}_paused_1s_warning`, r.paused.early.warning ? 1 : 0, 'bool', side === 'flotilla' ? { op: '=', value: 1 } : undefined);
        add(`${side}_paused_status`, r.paused.status, 'status');
        add(`${side}_paused_ms`, r.paused.ms, 'ms');
        add(`${side}_paused_warning`, r.paused.warning ? 1 : 0, 'bool', side === 'flotilla' ? { op: '=', value: 1 } : undefined);
        add(`${side}_paused_converged_ms`, r.paused.convergedMs, 'ms');
        for (const [when, p] of [['1 s (resourceVersion=0)', r.paused.earlyRv0], ['1 s', r.paused.early], [`${Math.round(pauseSeconds / 2)} s`, r.paused]] as const) {
          notes.push(`${side} with the member paused ${when}: ${p.status || 'no answer'} in ${p.ms.toFixed(0)} ms${p.warning ? `, Warning: ${p.warning.slice(0, 300)}` : ', no Warning'}`);
        }
      }
      if (r.relabel) {
        add(`${side}_relabel_watch_matches`, r.relabel.matches ? 1 : 0, 'bool', side === 'flotilla' ? { op: '=', value: 1 } : undefined);
        notes.push(`${side} label-selected watch across relabels: ${r.relabel.side} (the member's own watch: ${r.relabel.member}, each × ${names} cluster names)`);
      }
    }
    notes.push(
      `${perMember} pods in one kube-apiserver registered under ${names} cluster names in both (flotilla's fleet file; karmada Clusters in Push mode with the member's bearer token and CA, marked Ready by the bench, and a ResourceRegistry of core/v1 Pods); flotilla run first and stopped, then karmada-search ${`(v1.18.2, --disable-search: its proxy cache only; ${SEARCH_ARGS.join(' ')})`}`,
      'sync: from the process\'s start (cache empty) until it serves the whole fleet: flotilla\'s /readyz; karmada-search (restarted once its Clusters and ResourceRegistry are stored) until a label-selected list holds its pod from every cluster; CPU: the process\'s user+system time from its start',
      'memory: VmRSS and RssAnon of the one process (flotilla; karmada-search without its control plane) 2 s after sync, per cached pod (KB = 1000 bytes)',
      `reads: sequential on one keep-alive client; karmada-search on its own port; lists ${plan.listRounds} rounds after a warm-up, selected lists ${plan.selectors.map((s) => `${s.runs}×`).join('/')} , ${plan.getRuns} gets and name-selected lists, ${plan.pagedWalks} kubectl walks of limit=500 pages`,
      `watch: ${ctx.profile.watchers} watchers of the fleet-wide pods of ${WATCH_NS} (one stream of every cluster's copies), ${watchRate(ctx, names)} merge patches/s to the member for ${ctx.profile.watchSeconds} s (each is an event from every cluster name); latency = arrival - the writer's stamp; CPU per delivery: the side's process, over the writer's run, ÷ deliveries`,
      `paused member: SIGSTOP of the member's kube-apiserver for ${pauseSeconds} s (every cluster name is that member); one label-selected list 1 s in at resourceVersion=0 (the cache as it stands), then as kubectl asks (resourceVersion unset: flotilla's fresh read waits until the heartbeat, every ${DEFAULT_MEMBER_HEARTBEAT_MILLISECONDS / 1000} s, finds the member silent: within two intervals of the pause), and one ${Math.round(pauseSeconds / 2)} s in (status 0: no answer before the pause ended); converged: from SIGCONT until that list holds the pod from every cluster again`,
    );

    // The larger size (every name of the profile: 1M pods in the full one), lighter: sync, memory,
    // one fleet list and selected lists, each side; karmada-search stopped if it nears the
    // machine's memory, which is then its result.
    if (ctx.profile.names > names) {
      const large = await largeSize(ctx, perMember, syncedQuery, plan.selectors[0]!.query);
      const all = perMember * ctx.profile.names;
      add('large_cached_objects', all, 'objects');
      const lpair = (metric: string, unit: string, fv: number, kv: number) => {
        add(`large_flotilla_${metric}`, fv, unit);
        add(`large_karmada_${metric}`, kv, unit);
        add(`large_${metric}_ratio`, fv / kv, 'x');
      };
      const fl = large.flotilla;
      const kl = large.karmada;
      lpair('sync_s', 's', fl.syncMs / 1000, kl.syncMs / 1000);
      lpair('sync_cpu_s', 's', fl.syncCpuS, kl.syncCpuS);
      lpair('rss_kb_per_pod', 'KB', fl.rssBytes / 1000 / all, kl.rssBytes / 1000 / all);
      lpair('rss_anon_kb_per_pod', 'KB', fl.anonBytes / 1000 / all, kl.anonBytes / 1000 / all);
      lpair('list_ms', 'ms', fl.listMs, kl.listMs);
      lpair('selected_100_p50_ms', 'ms', fl.selectedP50, kl.selectedP50);
      add('large_flotilla_listed_objects', fl.listed, 'objects', { op: '=', value: all });
      add('large_karmada_listed_objects', kl.listed, 'objects', { op: '=', value: all });
      notes.push(`large size: ${perMember} pods under ${ctx.profile.names} names (${all} objects), each side alone: sync, memory 2 s after it, one fleet list (after a warm-up), 10 selected lists of about 100${fl.failure ? `; flotilla: ${fl.failure}` : ''}${kl.failure ? `; karmada-search: ${kl.failure}` : ''}`);
    }
    return { figures, facts: { objects: expected, objectBytes: seed.memberBytesAvg, objectBytesAre: 'as the member stores the pod', notes } };
  },
};

interface LargeRun {
  syncMs: number;
  syncCpuS: number;
  rssBytes: number;
  anonBytes: number;
  listMs: number;
  listed: number;
  selectedP50: number;
  /** Why the side has no figures (karmada-search stopped or failed): NaN figures, this said. */
  failure?: string;
}

const NOT_MEASURED: Omit<LargeRun, 'failure'> = { syncMs: NaN, syncCpuS: NaN, rssBytes: NaN, anonBytes: NaN, listMs: NaN, listed: NaN, selectedP50: NaN };

/** Until RSS passes this share of what the machine had available when the side started. */
const MEMORY_SHARE = 0.8;

/**
 * Stops (SIGTERM, by PID) a process whose RSS passes MEMORY_SHARE of the memory available now: on a
 * shared machine, a peer that would take it all is stopped, and that is its result.
 */
function guardMemory(pid: number): { tripped(): string | undefined; stop(): void } {
  const limit = memAvailableBytes() * MEMORY_SHARE + procMemory(pid).rssBytes;
  let tripped: string | undefined;
  const timer = setInterval(() => {
    try {
      const rss = procMemory(pid).rssBytes;
      if (rss > limit && !tripped) {
        tripped = `stopped at ${(rss / 1024 ** 3).toFixed(1)} GiB of RSS (its own plus ${MEMORY_SHARE * 100}% of the memory then available)`;
        process.kill(pid, 'SIGTERM');
      }
    } catch {
      // gone
    }
  }, 500);
  return { tripped: () => tripped, stop: () => clearInterval(timer) };
}

function memAvailableBytes(): number {
  const m = /^MemAvailable:\s+(\d+) kB/m.exec(readFileSync('/proc/meminfo', 'utf8'));
  return m ? Number(m[1]) * 1024 : Infinity;
}

async function largeSize(ctx: BenchContext, perMember: number, probeQuery: string, selectedQuery: string): Promise<Record<Side, LargeRun>> {
  const names = ctx.profile.names;
  const clusters = ctx.registered(names);
  /** One fleet list after a warm-up that counts, and 10 selected lists. */
  const reads = async (ep: MemberEndpoint, answers: PeerAnswers) => {
    const client = new BenchClient(ep);
    try {
      const counter = occurrenceCounter(POD_ITEM);
      const listMs = await answers.within('large fleet list', LIST_TIMEOUT_MS, async (t) => {
        ok(await client.get('/api/v1/pods', { timeoutMs: t, onChunk: counter.onChunk }), 'large fleet list');
        return ok(await client.get('/api/v1/pods', { timeoutMs: t }), 'large fleet list').ms;
      }, NaN);
      const selectedP50 = await answers.within('large selected list', LIST_TIMEOUT_MS, async (t) => {
        const ms: number[] = [];
        for (let i = 0; i < 10; i++) ms.push(ok(await client.get(`/api/v1/pods?${selectedQuery}`, { timeoutMs: t }), 'large selected list').ms);
        return percentile(ms, 50);
      }, NaN);
      return { listMs, listed: Number.isNaN(listMs) ? NaN : counter.count(), selectedP50, ...(answers.said().length ? { failure: answers.said().join('; ') } : {}) };
    } finally {
      client.close();
    }
  };

  const { start, syncCpuS: fcpu, mem: fmem } = await freshFlotilla(ctx, names);
  const flotilla: LargeRun = { syncMs: start.readyMs, syncCpuS: fcpu, rssBytes: fmem.rssBytes, anonBytes: fmem.anonBytes, ...(await reads(start.flotilla.endpoint, new PeerAnswers('flotilla'))) };
  ctx.log(`karmada: large size: flotilla synced ${perMember * names} objects in ${(start.readyMs / 1000).toFixed(1)} s`);
  await ctx.stopFlotilla();

  let karmada: LargeRun;
  const plane = await startKarmada({ fleet: ctx.fleet!.info, dir: join(ctx.dir, 'karmada-large'), log: ctx.log, searchArgs: SEARCH_ARGS });
  ctx.adopt(() => plane.stop());
  try {
    await plane.register(clusters);
    await plane.select('bench', clusters.map((c) => c.name), [{ apiVersion: 'v1', kind: 'Pod' }]);
    const limit = memAvailableBytes() * MEMORY_SHARE;
    const t0 = performance.now();
    const search = await plane.restartSearch();
    const synced = untilSynced(plane.proxyDirect, probeQuery, names, ctx.profile.readyTimeoutMs).then(() => 'synced' as const);
    let outcome: 'synced' | string;
    while (true) {
      const r = await Promise.race([synced.catch((e: Error) => e.message), sleep(1000).then(() => undefined)]);
      if (r !== undefined) {
        outcome = r;
        break;
      }
      if (search.exited) {
        outcome = `karmada-search exited (${search.exitCode}) while syncing`;
        break;
      }
      const rss = procMemory(search.pid).rssBytes;
      if (rss > limit) {
        outcome = `stopped while syncing at ${(rss / 1024 ** 3).toFixed(1)} GiB of RSS (${MEMORY_SHARE * 100}% of the memory available when it started), after ${((performance.now() - t0) / 1000).toFixed(0)} s`;
        break;
      }
    }
    if (outcome === 'synced') {
      const syncMs = performance.now() - t0;
      const syncCpuS = cpuSeconds(search.pid);
      await sleep(2000);
      const mem = procMemory(search.pid);
      const guard = guardMemory(search.pid);
      try {
        const measured = await reads(plane.proxyDirect, new PeerAnswers('karmada'));
        if (guard.tripped()) measured.failure = `reads failed: ${guard.tripped()}`;
        karmada = { syncMs, syncCpuS, rssBytes: mem.rssBytes, anonBytes: mem.anonBytes, ...measured };
      } finally {
        guard.stop();
      }
    } else {
      karmada = { ...NOT_MEASURED, failure: outcome };
    }
    ctx.log(`karmada: large size: karmada-search ${karmada.failure ?? `synced in ${(karmada.syncMs / 1000).toFixed(1)} s`}`);
  } finally {
    await plane.stop();
  }
  return { flotilla, karmada };
}

/** Polls a label-selected list until it holds one pod per cluster. */
const RELABEL = 'bench.flotilla.io/relabel';
/** Which of the watched pods enter (in) and leave (out) the selection, in order. */
const RELABELS: [string, 'in' | 'out'][] = [['w-0', 'in'], ['w-1', 'in'], ['w-2', 'in'], ['w-1', 'out'], ['w-3', 'in'], ['w-0', 'out'], ['w-1', 'in']];

/**
 * A watch of `RELABEL=in` pods on the side and on the member itself, from a list's RV, while
 * RELABELS moves pods in and out: an apiserver sends ADDED when a pod starts to match and DELETED
 * when it stops (MODIFIED while it matches). The side serves the member under `clusters` names,
 * so it must send each of the member's events once per name.
 */
async function relabelWatch(ep: MemberEndpoint, member: MemberEndpoint, clusters: number): Promise<RelabelResult> {
  const path = `/api/v1/namespaces/${WATCH_NS}/pods`;
  const label = (pod: string, value: string) =>
    memberRequest(member, 'PATCH', `${path}/${pod}`, { metadata: { labels: { [RELABEL]: value } } }, { contentType: 'application/merge-patch+json' });
  const pods = [...new Set(RELABELS.map(([p]) => p))];
  for (const pod of pods) await label(pod, 'out');
  await sleep(1500);
  const selector = `labelSelector=${encodeURIComponent(`${RELABEL}=in`)}`;
  // Each watch ends by itself (timeoutSeconds) and is read whole: karmada-search writes its
  // events as indented JSON over several lines, so the stream is read as consecutive JSON values.
  const open = async (on: MemberEndpoint) => {
    const rv = (await memberJson<{ metadata: { resourceVersion: string } }>(on, 'GET', `${path}?${selector}`)).metadata.resourceVersion;
    return memberRequest(on, 'GET', `${path}?${selector}&watch=1&resourceVersion=${encodeURIComponent(rv)}&timeoutSeconds=8`, undefined, { timeoutMs: 30_000 });
  };
  const watches = [open(member), open(ep)];
  // Handled from the start: a side that refuses its watch while the relabels run fails this
  // measurement (Promise.all below), not the bench process with an unhandled rejection.
  const settled = Promise.allSettled(watches);
  try {
    await sleep(1000);
    for (const [pod, value] of RELABELS) {
      await label(pod, value);
      await sleep(300);
    }
  } finally {
    await settled;
    for (const pod of pods) await label(pod, 'out');
  }
  const [own, side] = await Promise.all(watches);
  const counts = (body: string) => {
    const out = new Map<string, number>();
    for (const e of jsonValues(body) as { type?: string; object?: { metadata?: { name?: string } } }[]) {
      if (e.type === 'BOOKMARK') continue;
      const key = `${e.object?.metadata?.name} ${e.type}`;
      out.set(key, (out.get(key) ?? 0) + 1);
    }
    return out;
  };
  const mine = counts(own!.body);
  const theirs = counts(side!.body);
  const text = (m: Map<string, number>) => [...m].sort(([a], [b]) => a.localeCompare(b)).map(([k, n]) => `${k}×${n}`).join(', ') || 'no events';
  const matches = mine.size > 0 && mine.size === theirs.size && [...mine].every(([k, n]) => theirs.get(k) === n * clusters);
  return { matches, member: text(mine), side: text(theirs) };
}

/** Consecutive JSON values (one per line, or each over several lines) of a stream's text. */
function jsonValues(text: string): unknown[] {
  const out: unknown[] = [];
  let depth = 0;
  let start = -1;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === '{' || c === '[') {
      if (depth++ === 0) start = i;
    } else if ((c === '}' || c === ']') && --depth === 0) out.push(JSON.parse(text.slice(start, i + 1)));
  }
  return out;
}

/** The issue's memory target, flotilla ÷ karmada-search. */
const MEMORY_TARGET = 0.1;
/**
 * Below this a limit measures Node's own footprint, not a cache (a small fleet's tenth is a few
 * MB): not run. The quick profile's 20k pods give 148 MB.
 */
const MIN_LIMIT_BYTES = 128 * MB;

interface LimitedRun {
  limitBytes: number;
  cgroupVersion: number;
  syncMs: number;
  peakBytes: number;
  oomKills: number;
  reads: ReadResult;
  answers: PeerAnswers;
}

/**
 * Flotilla started afresh inside a memory cgroup of `limitBytes`, synced and read; the failure
 * instead when this machine cannot make the group (it needs root and the memory controller) or
 * flotilla did not come up under it.
 */
async function withinLimit(ctx: BenchContext, names: number, plan: ReadPlan, limitBytes: number): Promise<LimitedRun | { failure: string }> {
  if (!Number.isFinite(limitBytes) || limitBytes <= 0) return { failure: 'karmada-search\'s VmRSS was not measured' };
  if (limitBytes < MIN_LIMIT_BYTES) return { failure: `a tenth of karmada-search's VmRSS, ${(limitBytes / MB).toFixed(0)} MB, is less than the ${MIN_LIMIT_BYTES / MB} MB this bench runs flotilla in at least` };
  await ctx.stopFlotilla();
  let cgroup;
  try {
    cgroup = flotillaCgroup(ctx, `flotilla-bench-tenth-${process.pid}`, limitBytes);
  } catch (e) {
    return { failure: `no memory cgroup here: ${(e as Error).message}` };
  }
  const { group } = cgroup;
  try {
    ctx.log(`karmada: flotilla inside ${(limitBytes / MB).toFixed(0)} MB (${group.path})`);
    const start = await ctx.startFlotilla({ reuseData: false, names, onSpawn: (pid) => group.add(pid) });
    const answers = new PeerAnswers('flotilla');
    const reads = await measureReads(start.flotilla.endpoint, plan, answers);
    const killed = start.flotilla.proc.exited ? 1 : 0;
    return { limitBytes, cgroupVersion: group.version, syncMs: start.readyMs, peakBytes: group.peakBytes(), oomKills: group.oomKills() + killed, reads, answers };
  } catch (e) {
    return { failure: `${(e as Error).message}; OOM kills in the group: ${group.oomKills()}` };
  } finally {
    await cgroup.remove();
  }
}

/**
 * Flotilla started afresh (its cache empty) under `names`, measured as karmada-search is: its CPU
 * from start to synced, and its memory 2 s after.
 */
async function freshFlotilla(ctx: BenchContext, names: number) {
  await ctx.stopFlotilla();
  const start = await ctx.startFlotilla({ reuseData: false, names });
  const pid = start.flotilla.proc.pid;
  const syncCpuS = cpuSeconds(pid);
  await sleep(2000);
  return { start, pid, syncCpuS, mem: procMemory(pid) };
}

async function untilSynced(ep: MemberEndpoint, query: string, clusters: number, timeoutMs: number): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (performance.now() < deadline) {
    const r = await memberRequest(ep, 'GET', query, undefined, { timeoutMs: 30_000 }).catch(() => undefined);
    if (r?.status === 200 && (JSON.parse(r.body) as { items: unknown[] }).items.length >= clusters) return;
    await sleep(100);
  }
  throw new Error(`karmada-search not synced within ${timeoutMs / 1000} s`);
}

/** The columns `kubectl get pods -A` shows (before kubectl adds NAMESPACE). */
async function tableColumns(ep: MemberEndpoint, timeoutMs: number): Promise<string[]> {
  const r = await memberRequest(ep, 'GET', '/api/v1/pods?limit=1', undefined, { timeoutMs, accept: 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json' });
  if (r.status !== 200) return [];
  return ((JSON.parse(r.body) as { columnDefinitions?: { name: string }[] }).columnDefinitions ?? []).map((c) => c.name);
}

async function listedItems(ep: MemberEndpoint, timeoutMs: number): Promise<Map<string, number>> {
  const r = await memberRequest(ep, 'GET', '/api/v1/pods', undefined, { timeoutMs });
  if (r.status !== 200) throw new Error(`items list: ${r.status} ${r.body.slice(0, 300)}`);
  const list = JSON.parse(r.body) as { items: { metadata: { namespace: string; name: string } }[] };
  const items = new Map<string, number>();
  for (const p of list.items) {
    const key = `${p.metadata.namespace}/${p.metadata.name}`;
    items.set(key, (items.get(key) ?? 0) + 1);
  }
  return items;
}

function sameItems(a: Map<string, number>, b: Map<string, number>): boolean {
  if (a.size !== b.size) return false;
  for (const [key, n] of a) if (b.get(key) !== n) return false;
  return true;
}

/**
 * SIGSTOP of the member's kube-apiserver for `seconds`: one label-selected list half-way (its
 * status, time and Warning header), then SIGCONT and the time until the list is whole again.
 */
/**
 * Note: flotilla authenticates a bearer token by a TokenReview to a member (the bench's fleet
 * file), caching the answer for a while; when that member is the paused one, a token it reviewed
 * within authentication.tokenReviewStaleSeconds is still let in (a token it never saw would get a
 * 503 after the review's 2 s timeout), so the probes measure the reads, not the reviewer.
 */
async function pausedMember(ctx: BenchContext, ep: MemberEndpoint, query: string, clusters: number, seconds: number): Promise<PausedResult> {
  const apiserver = livePids(join(ctx.dir, 'fleet', 'pids')).find((p) => p.command.endsWith('/kube-apiserver'));
  if (!apiserver) throw new Error('paused member: no kube-apiserver of the bench fleet');
  const resume = () => {
    try {
      process.kill(apiserver.pid, 'SIGCONT');
    } catch {
      // gone
    }
  };
  // Whatever happens here, the member is not left stopped.
  ctx.adopt(async () => resume());
  // The caller's token freshly reviewed (flotilla keeps a review 10 s), as for a client that was just active.
  await memberRequest(ep, 'GET', query);
  const stoppedAt = performance.now();
  process.kill(apiserver.pid, 'SIGSTOP');
  const probe = async (atMs: number, path = query): Promise<Probe> => {
    const wait = atMs - (performance.now() - stoppedAt);
    if (wait > 0) await sleep(wait);
    const t = performance.now();
    const remaining = seconds * 1000 - (t - stoppedAt);
    const r = await memberRequest(ep, 'GET', path, undefined, { timeoutMs: Math.max(1000, remaining) }).catch((e: Error) => ({ status: 0, headers: {} as Record<string, string | string[] | undefined>, body: e.message }));
    const warning = r.headers.warning;
    return { status: r.status, ms: performance.now() - t, warning: Array.isArray(warning) ? warning.join('; ') : (warning ?? '') };
  };
  let result: Omit<PausedResult, 'convergedMs'>;
  try {
    // One second in (a caller's token is still in flotilla's authentication cache; the heartbeat has
    // not yet found the member silent), then half-way.
    const earlyRv0 = await probe(1000, `${query}&resourceVersion=0`);
    const early = await probe(1000);
    result = { ...(await probe((seconds * 1000) / 2)), early, earlyRv0 };
    const left = seconds * 1000 - (performance.now() - stoppedAt);
    if (left > 0) await sleep(left);
  } finally {
    resume();
  }
  const resumed = performance.now();
  let convergedMs = NaN;
  while (performance.now() - resumed < CONVERGE_WAIT_S * 1000) {
    const r = await memberRequest(ep, 'GET', query, undefined, { timeoutMs: 30_000 }).catch(() => undefined);
    if (r?.status === 200 && (JSON.parse(r.body) as { items: unknown[] }).items.length === clusters && !r.headers.warning) {
      convergedMs = performance.now() - resumed;
      break;
    }
    await sleep(100);
  }
  return { ...result, convergedMs };
}

/** Patches a second: each is an event from every cluster name, so a watcher sees about the profile's event rate. */
function watchRate(ctx: BenchContext, clusters: number): number {
  const perWatcher = Math.min(ctx.profile.watchEventsPerSecond, ctx.profile.watchEventsPerSecondLight ?? Infinity);
  return Math.max(1, Math.round(perWatcher / clusters));
}

/**
 * The profile's watchers on the fleet-wide pods of the watched namespace (in forked load
 * generators, lib/watch-load.ts) while the watchers scenario's writer patches them on the member.
 */
async function watchDelivery(ctx: BenchContext, ep: MemberEndpoint, pid: number, clusters: number): Promise<WatchResult> {
  const count = ctx.profile.watchers;
  const rate = watchRate(ctx, clusters);
  const path = `/api/v1/namespaces/${WATCH_NS}/pods`;
  const list = await memberJson<{ metadata: { resourceVersion: string } }>(ep, 'GET', `${path}?limit=1`);
  const loads = startLoads(ctx, ep, `${path}?watch=1&resourceVersion=${encodeURIComponent(list.metadata.resourceVersion)}`, count, Math.min(MAX_PROCESSES, Math.ceil(count / WATCHERS_PER_PROCESS)));
  try {
    const deadline = Date.now() + 60_000;
    while (loads.connected() < count) {
      if (Date.now() > deadline) throw new Error(`watch: only ${loads.connected()} of ${count} watches answered`);
      if (loads.exited()) throw new Error('watch: a load generator exited early');
      await sleep(50);
    }
    const begin = epochMs() + 100;
    const window = { from: begin + 2000, to: begin + 2000 + ctx.profile.watchSeconds * 1000 };
    loads.tell({ window });
    const cpu0 = cpuSeconds(pid);
    const { sent } = await write(ctx.member, rate, begin, window);
    const cpu = cpuSeconds(pid) - cpu0;
    // Seconds behind is a result, not a loss: the report waits for a slow side's backlog.
    await sleep(10_000);
    const { hist } = await loads.report();
    return {
      p50: hist.percentile(50),
      p99: hist.percentile(99),
      delivered: hist.count / Math.max(1, sent * clusters * count),
      cpuUsPerDelivery: (cpu / Math.max(1, hist.count)) * 1e6,
    };
  } finally {
    await loads.stop();
  }
}
