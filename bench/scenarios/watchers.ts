import { fork, type ChildProcess } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { MemberEndpoint } from '../../test/fleet/http.js';
import { memberJson, memberRequest } from '../../test/fleet/http.js';
import { BenchClient } from '../lib/http.js';
import { sleep } from '../lib/flotilla.js';
import { LatencyHistogram, epochMs } from '../lib/latency.js';
import type { FromWatchLoad, ToWatchLoad, WatchLoadSpec } from '../lib/watch-load.js';
import { figureSink, type Scenario } from '../lib/scenario.js';
import { cpuSeconds, memberPids, totalCpuSeconds } from '../lib/cpu-time.js';
import type { BenchContext } from '../lib/context.js';
import { forkServer } from '../lib/forked-server.js';
import type { RelayServerSpec } from '../lib/relay-server.js';
import { formatNumber } from '../lib/report.js';

export const WATCH_NS = 'bench-watch';
const PODS = 50;
const STAMP = 'bench.flotilla.io/sent';
const WARMUP_MS = 2000;
/** Watchers per load-generator process; no more processes than CPUs, which they share with the rest. */
export const WATCHERS_PER_PROCESS = 250;
export const MAX_PROCESSES = availableParallelism();
const REPORT_WAIT_MS = 60_000;
const WATCH_LOAD = fileURLToPath(new URL('../lib/watch-load.js', import.meta.url));
const RELAY_SERVER = fileURLToPath(new URL('../lib/relay-server.js', import.meta.url));
/** One step of the floor's ramp: long enough for a backlog to show in its p99. */
const RAMP_SECONDS = 3;
/** The floor's watchers keep up with a rate while its p99 stays under this (the flotilla target). */
const KEEP_UP_P99_MS = 100;

/**
 * watchers: many clients watching the same pods while a writer changes them at a steady rate;
 * each event's delivery latency is the time from the writer's stamp (an annotation set by the
 * patch) to its arrival at a watcher. Once with every watcher straight on the member apiserver,
 * once through flotilla (`/clusters/<name>/`, so both see the same event stream); the same writer
 * load both times. Flotilla caches the member under one name, so each patch is one event to it,
 * as in a real fleet. The watchers run in load-generator processes of their own (lib/watch-load.ts),
 * apart from the writer in the bench process and from flotilla. Then the same watchers on a floor:
 * a process that only writes flotilla's lines to them (lib/relay-server.ts, watch fan-out), at the
 * writer's rate and at the highest rate the watchers keep up with, found by a short ramp.
 */
export const watchers: Scenario = {
  name: 'watchers',
  async run(ctx, emit) {
    await ctx.ensureSeeded();
    // One cluster name: a change makes one watch event in flotilla, as in a real fleet.
    const flotilla = await ctx.ensureFlotilla(1);
    const member = ctx.member;
    const { watchers: count, watchEventsPerSecond: rate, watchSeconds, watchFloorSeconds } = ctx.profile;
    const name = ctx.registered()[0]!.name;
    await preparePods(member);
    // One event's object as the member stores it (flotilla drops managedFields, adds its annotation).
    const podBytes = Buffer.byteLength((await memberRequest(member, 'GET', `/api/v1/namespaces/${WATCH_NS}/pods/w-0`)).body);
    const { figures, add } = figureSink('watchers', emit);
    const processes = Math.min(MAX_PROCESSES, Math.ceil(count / WATCHERS_PER_PROCESS));
    const members = memberPids(join(ctx.dir, 'fleet'));
    const flotillaPid = flotilla.proc.pid!;
    const fleetDir = ctx.fleet!.info.dir;
    const flotillaPath = `/clusters/${name}/api/v1/namespaces/${WATCH_NS}/pods`;

    const sides: Record<'direct' | 'flotilla', { ep: MemberEndpoint; path: string }> = {
      direct: { ep: member, path: `/api/v1/namespaces/${WATCH_NS}/pods` },
      flotilla: { ep: flotilla.endpoint, path: flotillaPath },
    };
    /**
     * The floor: a relay (lib/relay-server.ts, watch fan-out) with flotilla's serving pair, holding
     * one watch through flotilla and writing its bytes to every watcher: flotilla's lines, at
     * flotilla's pace, with nothing of flotilla's fan-out behind them.
     */
    const startFloor = async () => {
      const spec: RelayServerSpec = { cert: join(fleetDir, 'serving.crt'), key: join(fleetDir, 'serving.key'), member: flotilla.endpoint, names: 1, watch: true };
      const relay = await forkServer(ctx, RELAY_SERVER, spec);
      const url = new URL(flotilla.endpoint.server);
      url.port = String(relay.port);
      return { ...relay, ep: { ...flotilla.endpoint, server: url.origin } };
    };

    /** The writer at `perSecond` patches/s for `seconds`, with every watcher on each of `which` in turn. */
    const measure = async (perSecond: number, which: SideName[], seconds: number): Promise<Partial<Record<SideName, SideResult>>> => {
      const results: Partial<Record<SideName, SideResult>> = {};
      for (const side of which) {
        const floor = side === 'floor' ? await startFloor() : undefined;
        const { ep, path } = floor ? { ep: floor.ep, path: flotillaPath } : sides[side as 'direct' | 'flotilla'];
        try {
          // The floor's watchers start from flotilla's list, as flotilla's do: it relays flotilla's watch.
          const list = await memberJson<{ metadata: { resourceVersion: string } }>(floor ? flotilla.endpoint : ep, 'GET', `${path}?limit=1`);
          const url = `${path}?watch=1&resourceVersion=${encodeURIComponent(list.metadata.resourceVersion)}`;
          const loads = startLoads(ctx, ep, url, count, processes);
          // One more watch, straight on the member, in a process of its own: when the events left
          // the member, so that a side's latency splits into the member's part and the rest.
          const memberList = await memberJson<{ metadata: { resourceVersion: string } }>(member, 'GET', `${sides.direct.path}?limit=1`);
          const probe = startLoads(ctx, member, `${sides.direct.path}?watch=1&resourceVersion=${encodeURIComponent(memberList.metadata.resourceVersion)}`, 1, 1);
          try {
            const deadline = Date.now() + 60_000;
            while (loads.connected() < count || probe.connected() < 1) {
              if (Date.now() > deadline) throw new Error(`${side}: only ${loads.connected()} of ${count} watches answered`);
              if (loads.exited() || probe.exited()) throw new Error(`${side}: a watch load generator exited early`);
              await sleep(50);
            }
            // The writer: `perSecond` merge patches a second, round-robin over the pods, straight to the
            // member, on a schedule fixed in advance so the load generators know the measured window.
            const begin = epochMs() + 100;
            const window = { from: begin + WARMUP_MS, to: begin + WARMUP_MS + seconds * 1000 };
            loads.tell({ window });
            probe.tell({ window });
            const cpuOf = () => ({ member: totalCpuSeconds(members), flotilla: cpuSeconds(flotillaPid), floor: floor ? cpuSeconds(floor.proc.pid!) : NaN });
            const cpuBefore = cpuOf();
            const { sent, failed, patchMs } = await write(member, perSecond, begin, window);
            const cpuAfter = cpuOf();
            const cpu = { member: cpuAfter.member - cpuBefore.member, flotilla: cpuAfter.flotilla - cpuBefore.flotilla, floor: cpuAfter.floor - cpuBefore.floor };
            // Let the last events arrive.
            await sleep(2000);
            const { hist, unreported, busy, ended, refused, perWatcher } = await loads.report();
            const { hist: probeMs } = await probe.report();
            // A watcher whose generator did not report is short of every event.
            const short = perWatcher.filter((n) => n < sent).length + (count - perWatcher.length);
            results[side] = { hist, sent, failed, expected: sent * count, short, unreported, busy, ended, refused, cpu, patchMs, probeMs };
            ctx.log(`watchers ${side} at ${perSecond}/s for ${seconds} s: ${hist.count} deliveries of ${sent * count} expected, ${short} watchers short, p99 ${hist.percentile(99)} ms (${processes} load-generator processes, ${unreported} did not report, each ${busy.toFixed(2)} CPUs busy; the server ended ${ended} watches, refused ${refused}; ${failed} patches timed out)`);
          } finally {
            await loads.stop();
            await probe.stop();
          }
        } finally {
          await floor?.stop();
        }
      }
      return results;
    };

    const main = await measure(rate, ['direct', 'flotilla'], watchSeconds);
    const d = main.direct!;
    const f = main.flotilla!;
    add('watchers', count, 'watchers');
    add('events_per_second', rate, 'events/s');
    add('direct_p50_ms', d.hist.percentile(50), 'ms');
    add('direct_p99_ms', d.hist.percentile(99), 'ms');
    add('flotilla_p50_ms', f.hist.percentile(50), 'ms');
    add('flotilla_p99_ms', f.hist.percentile(99), 'ms', { op: '<=', value: 100 });
    add('p99_vs_direct', ratioOf(f.hist.percentile(99), d.hist.percentile(99)), 'x', { op: '<=', value: 2 });
    add('direct_delivered', d.hist.count / Math.max(1, d.expected), 'x');
    add('flotilla_delivered', f.hist.count / Math.max(1, f.expected), 'x', { op: '>=', value: 0.999 });
    // Every watcher, not just the total: a watcher that missed events is one a client would notice.
    add('direct_watchers_short', d.short, 'watchers');
    add('flotilla_watchers_short', f.short, 'watchers', { op: '=', value: 0 });
    // The receiving side's share of the machine: near 1.0, a generator is a CPU's worth of work
    // behind on its streams; far below it while latencies run to seconds, the rest of the machine
    // (server, writer) starved it. Either way the latencies then include the receivers' backlog.
    add('direct_generator_cpu_busy', d.busy, 'x');
    add('flotilla_generator_cpu_busy', f.busy, 'x');
    // A kube-apiserver ends a watcher that stays 10 events behind for about 100 ms ("Forcing ...
    // watcher close due to unresponsiveness"); flotilla ends one further behind than
    // maxWatchBufferMiB. Either way the generator watches again from its last RV.
    add('direct_watches_ended_by_server', d.ended, 'watches');
    add('flotilla_watches_ended_by_server', f.ended, 'watches');
    add('patches_timed_out', d.failed + f.failed, 'patches');
    addFanoutCpu(add, '', d, f);
    addMemberShare(add, '', d, f);

    // The floor at the writer's rate, then (when the profile ramps) the highest rate its watchers
    // keep up with, where flotilla and the floor are measured again, side by side.
    const floor = (await measure(rate, ['floor'], watchFloorSeconds)).floor!;
    add('floor_p50_ms', floor.hist.percentile(50), 'ms');
    add('floor_p99_ms', floor.hist.percentile(99), 'ms');
    add('floor_delivered', floor.hist.count / Math.max(1, floor.expected), 'x');
    add('floor_watchers_short', floor.short, 'watchers');
    add('floor_generator_cpu_busy', floor.busy, 'x');
    add('floor_cpu_us_per_delivery', (floor.cpu.floor / Math.max(1, floor.expected)) * 1e6, 'µs');
    add('flotilla_p99_vs_floor_at_rate', ratioOf(f.hist.percentile(99), floor.hist.percentile(99)), 'x');
    // The fan-out CPU target's floor: what only writing the same lines to the same watchers costs,
    // ÷ the member's fan-out, at the same rate. Below it no fan-out on this machine can go.
    const memberFanoutUs = memberFanoutCpuUs(d, f);
    const floorUs = (floor.cpu.floor / Math.max(1, floor.expected)) * 1e6;
    add('floor_fanout_cpu_vs_member', floorUs / memberFanoutUs, 'x');
    add('fanout_cpu_vs_floor', (f.cpu.flotilla / Math.max(1, f.expected)) * 1e6 / floorUs, 'x');
    let keepUp = { rate, flotilla: f, floor };
    const ramp: string[] = [];
    if (ctx.profile.watchRampRates.length) {
      let best: number | undefined;
      for (const r of ctx.profile.watchRampRates) {
        const step = (await measure(r, ['floor'], RAMP_SECONDS)).floor!;
        const kept = keptUp(step);
        ramp.push(`${r}/s: p99 ${formatNumber(step.hist.percentile(99))} ms, ${step.short} watchers short, generators ${step.busy.toFixed(2)} CPUs busy${kept ? '' : ' (not kept up)'}`);
        if (!kept) break;
        best = r;
      }
      // Not even the lowest: measured there all the same, and said.
      const at = best ?? ctx.profile.watchRampRates[0]!;
      if (at !== rate) {
        const both = await measure(at, ['flotilla', 'floor'], watchSeconds);
        keepUp = { rate: at, flotilla: both.flotilla!, floor: both.floor! };
      } else if (watchFloorSeconds !== watchSeconds) {
        keepUp = { rate, flotilla: f, floor: (await measure(rate, ['floor'], watchSeconds)).floor! };
      }
    }
    const kf = keepUp.flotilla;
    const kfl = keepUp.floor;
    add('keep_up_rate', keepUp.rate, 'events/s');
    add('keep_up_flotilla_p50_ms', kf.hist.percentile(50), 'ms');
    add('keep_up_flotilla_p99_ms', kf.hist.percentile(99), 'ms');
    add('keep_up_floor_p50_ms', kfl.hist.percentile(50), 'ms');
    add('keep_up_floor_p99_ms', kfl.hist.percentile(99), 'ms');
    add('p99_vs_floor', ratioOf(kf.hist.percentile(99), kfl.hist.percentile(99)), 'x', { op: '<=', value: 1.2 });
    add('keep_up_flotilla_delivered', kf.hist.count / Math.max(1, kf.expected), 'x');
    add('keep_up_floor_delivered', kfl.hist.count / Math.max(1, kfl.expected), 'x');
    add('keep_up_cpu_vs_floor', ((kf.cpu.flotilla / Math.max(1, kf.expected)) / (kfl.cpu.floor / Math.max(1, kfl.expected))), 'x');
    add('load_generators_unreported', d.unreported + f.unreported + floor.unreported + (keepUp.flotilla === f ? 0 : kf.unreported) + (keepUp.floor === floor ? 0 : kfl.unreported), 'processes');
    add('watches_refused', d.refused + f.refused + floor.refused, 'watches');

    // A second, lighter load, when the profile names one: where the machine keeps up with both
    // sides, so the ratio is measured even when the issue's load starves them.
    const lighter = ctx.profile.watchEventsPerSecondLight;
    if (lighter !== undefined && lighter < rate) {
      const light = await measure(lighter, ['direct', 'flotilla'], watchSeconds);
      const ld = light.direct!;
      const lf = light.flotilla!;
      const at = `at_${lighter}_per_s`;
      add(`${at}_direct_p50_ms`, ld.hist.percentile(50), 'ms');
      add(`${at}_flotilla_p50_ms`, lf.hist.percentile(50), 'ms');
      add(`${at}_direct_p99_ms`, ld.hist.percentile(99), 'ms');
      add(`${at}_flotilla_p99_ms`, lf.hist.percentile(99), 'ms');
      add(`${at}_p99_vs_direct`, ratioOf(lf.hist.percentile(99), ld.hist.percentile(99)), 'x');
      add(`${at}_flotilla_delivered`, lf.hist.count / Math.max(1, lf.expected), 'x');
      add(`${at}_direct_delivered`, ld.hist.count / Math.max(1, ld.expected), 'x');
      addFanoutCpu(add, `${at}_`, ld, lf);
      addMemberShare(add, `${at}_`, ld, lf);
    }
    return {
      figures,
      facts: {
        objects: PODS,
        objectBytes: podBytes,
        objectBytesAre: 'small pods (one container) as the member stores them, managedFields included',
        notes: [
          `${count} watchers on ${PODS} pods of one namespace, in ${processes} load-generator processes (one that does not report within ${REPORT_WAIT_MS / 1000} s of the end is killed, its deliveries missing, its watchers out of the percentiles); ${rate} merge patches/s${lighter !== undefined && lighter < rate ? ` (then again at ${lighter}/s: the at_* figures)` : ''} for ${watchSeconds} s after ${WARMUP_MS / 1000} s warm-up, the same load direct then through flotilla; latency = arrival - the writer's stamp in the event; on this machine the load generators share its CPUs with flotilla and the apiserver; generator_cpu_busy: a generator's CPU time over the window until its report ÷ that wall time, mean over the generators that reported; a watch the server ends is opened again from the last resourceVersion its stream carried, as client-go's reflector does (watches_ended_by_server counts them); watchers_short: watchers that received fewer events stamped in the window than the writer made`,
          'CPU per delivery: user + system time from /proc/<pid>/stat while the writer ran, ÷ (events written × watchers); the member\'s fan-out = its CPU (kube-apiserver + etcd) serving every watcher directly − its CPU while flotilla served them (the writer\'s patches and one watch), which includes the re-watches of the watches it ended; flotilla\'s = all of its own',
          `floor: a relay process (bench/lib/relay-server.ts, watch fan-out) with flotilla's serving certificate, holding one watch through flotilla and writing each chunk of it, as it arrives, to every watcher (chunked HTTP over TLS): flotilla's own lines at the writer's rate, measured by the same load generators the same way; floor_* at ${rate}/s for ${watchFloorSeconds} s; floor_cpu_us_per_delivery: the relay's own CPU; floor_fanout_cpu_vs_member: that ÷ the member's fan-out CPU per delivery (the target fanout_cpu_vs_member's floor), fanout_cpu_vs_floor: flotilla's ÷ the relay's, both at ${rate}/s`,
          ctx.profile.watchRampRates.length
            ? `keep-up rate: the floor ramped through ${ctx.profile.watchRampRates.join(', ')} events/s (${RAMP_SECONDS} s each) while its watchers kept up (every watcher got every event, p99 ≤ ${KEEP_UP_P99_MS} ms): ${ramp.join('; ')}; then flotilla and the floor at ${keepUp.rate}/s for ${watchSeconds} s each (keep_up_*, p99_vs_floor)`
            : `keep-up rate: not ramped in this profile; p99_vs_floor at the writer's ${rate}/s (flotilla ${watchSeconds} s, the floor ${watchFloorSeconds} s)`,
        ],
      },
    };
  },
};

type SideName = 'direct' | 'flotilla' | 'floor';

/** The floor's watchers kept up with a rate: every watcher got every event, soon enough. */
function keptUp(r: SideResult): boolean {
  return r.sent > 0 && r.short === 0 && r.hist.percentile(99) <= KEEP_UP_P99_MS;
}

/** A latency ratio, NaN unless both are known (a percentile past the histogram's 10 s is Infinity). */
function ratioOf(flotilla: number, direct: number): number {
  return Number.isFinite(flotilla) && Number.isFinite(direct) ? flotilla / direct : NaN;
}

/**
 * The servers' CPU per delivered event, side by side. Direct, the member serves the writer and every
 * watcher; through flotilla, the member serves the writer and flotilla's one watch, flotilla the
 * watchers. So the member's fan-out cost is its CPU direct less its CPU while flotilla fanned out,
 * and flotilla's is its own. Per expected delivery (events written × watchers): what a machine
 * with CPUs to spare would deliver.
 */
function addFanoutCpu(add: ReturnType<typeof figureSink>['add'], prefix: string, d: SideResult, f: SideResult): void {
  const member = memberFanoutCpuUs(d, f);
  const flotilla = (f.cpu.flotilla / Math.max(1, f.expected)) * 1e6;
  add(`${prefix}member_fanout_cpu_us_per_delivery`, member, 'µs');
  add(`${prefix}flotilla_cpu_us_per_delivery`, flotilla, 'µs');
  // The issue's target at the writer's rate: flotilla's fan-out a hundredth of the member's.
  add(`${prefix}fanout_cpu_vs_member`, flotilla / member, 'x', prefix === '' ? { op: '<=', value: 0.01 } : undefined);
}

/** The member's CPU per delivery for its fan-out: its CPU serving every watcher less its CPU while flotilla served them. */
function memberFanoutCpuUs(d: SideResult, f: SideResult): number {
  return ((d.cpu.member - f.cpu.member) / Math.max(1, d.expected)) * 1e6;
}

/**
 * How much of the latency is the member's own: the writer's patch round trip, and the latency of
 * the probe (one watch straight on the member) while each side's watchers ran. Through flotilla,
 * the watchers' latency less the probe's is what flotilla's hop and fan-out added.
 */
function addMemberShare(add: ReturnType<typeof figureSink>['add'], prefix: string, d: SideResult, f: SideResult): void {
  for (const [side, r] of [['direct', d], ['flotilla', f]] as const) {
    add(`${prefix}${side}_phase_patch_p99_ms`, r.patchMs.percentile(99), 'ms');
    add(`${prefix}${side}_phase_probe_p50_ms`, r.probeMs.percentile(50), 'ms');
    add(`${prefix}${side}_phase_probe_p99_ms`, r.probeMs.percentile(99), 'ms');
  }
}

/**
 * Merge patches at `rate`/s from `begin` (epoch ms) to the window's end; returns those stamped
 * inside the window, and how many the member answered with 504.
 */
export async function write(member: MemberEndpoint, rate: number, begin: number, window: { from: number; to: number }): Promise<{ sent: number; failed: number; patchMs: LatencyHistogram }> {
  const writer = new BenchClient(member);
  const patchMs = new LatencyHistogram();
  let sent = 0;
  let failed = 0;
  // The first patch that failed otherwise: the writer's error once the rest are in (a rejection
  // left unhandled until then would end the bench process instead).
  let error: Error | undefined;
  try {
    const inflight = new Set<Promise<void>>();
    const total = Math.round(((window.to - begin) * rate) / 1000);
    for (let i = 0; i < total; i++) {
      const wait = begin + (i * 1000) / rate - epochMs();
      if (wait > 1) await sleep(wait);
      const pod = `w-${i % PODS}`;
      const p: Promise<void> = (async () => {
        const stamp = epochMs();
        const r = await writer.send('PATCH', `/api/v1/namespaces/${WATCH_NS}/pods/${pod}`, { body: JSON.stringify({ metadata: { annotations: { [STAMP]: stamp.toFixed(3) } } }), contentType: 'application/merge-patch+json' });
        // A member too busy to write in time (504) makes no event: counted, not expected.
        if (r.status === 504) failed++;
        else if (r.status !== 200) throw new Error(`patch ${pod}: ${r.status} ${r.errorText ?? ''}`);
        else if (stamp >= window.from && stamp < window.to) {
          sent++;
          patchMs.add(r.ms);
        }
      })()
        .catch((e: Error) => void (error ??= e))
        .finally(() => inflight.delete(p));
      inflight.add(p);
      if (inflight.size > 200) await Promise.race(inflight);
    }
    await Promise.all(inflight);
    if (error) throw error;
  } finally {
    writer.close();
  }
  return { sent, failed, patchMs };
}

interface SideResult {
  hist: LatencyHistogram;
  sent: number;
  failed: number;
  expected: number;
  /** Watchers that received fewer in-window events than were written. */
  short: number;
  unreported: number;
  busy: number;
  ended: number;
  refused: number;
  /** CPU seconds the member (kube-apiserver + etcd), flotilla and the floor (NaN unless it ran) used while the writer ran. */
  cpu: { member: number; flotilla: number; floor: number };
  /** The writer's patch round trips, and the probe watch's latencies, inside the window. */
  patchMs: LatencyHistogram;
  probeMs: LatencyHistogram;
}

export interface Loads {
  connected(): number;
  exited(): boolean;
  tell(m: ToWatchLoad): void;
  /** Asks every generator for its histogram and merges them; busy = the reporting generators' mean CPU use; ended, refused: summed. */
  report(): Promise<{ hist: LatencyHistogram; unreported: number; busy: number; ended: number; refused: number; perWatcher: number[] }>;
  stop(): Promise<void>;
}

/** `count` watches spread over `processes` forked load generators, each stopped by its PID. */
export function startLoads(ctx: BenchContext, ep: MemberEndpoint, url: string, count: number, processes: number): Loads {
  const children: { proc: ChildProcess; connected: number; exited: boolean; report?: (m: FromWatchLoad) => void }[] = [];
  for (let i = 0; i < processes; i++) {
    const share = Math.floor(count / processes) + (i < count % processes ? 1 : 0);
    const spec: WatchLoadSpec = { server: ep.server, caFile: ep.caFile, token: ep.token, url, count: share, stamp: STAMP };
    const proc = fork(WATCH_LOAD, [JSON.stringify(spec)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    const child: (typeof children)[number] = { proc, connected: 0, exited: false };
    proc.on('message', (m: FromWatchLoad) => {
      if ('connected' in m) child.connected = m.connected;
      else child.report?.(m);
    });
    proc.on('exit', () => (child.exited = true));
    children.push(child);
  }
  const stop = async () => {
    await Promise.all(
      children.map(async (c) => {
        if (c.exited) return;
        c.proc.kill('SIGKILL');
        await new Promise((r) => c.proc.once('exit', r));
      }),
    );
  };
  ctx.adopt(stop);
  return {
    connected: () => children.reduce((n, c) => n + c.connected, 0),
    exited: () => children.some((c) => c.exited),
    tell: (m) => children.forEach((c) => c.proc.send(m)),
    async report() {
      const hist = new LatencyHistogram();
      let unreported = 0;
      let ended = 0;
      let refused = 0;
      const perWatcher: number[] = [];
      const busy: number[] = [];
      await Promise.all(
        children.map(
          (c) =>
            new Promise<void>((resolve) => {
              // A generator far behind on its streams reads the request only after what it has
              // already received; past the wait its watchers count as not delivered.
              const timer = setTimeout(() => {
                unreported++;
                ctx.log(`watchers: load generator ${c.proc.pid} sent no report within ${REPORT_WAIT_MS / 1000} s; its deliveries count as missing`);
                c.proc.kill('SIGKILL');
                resolve();
              }, REPORT_WAIT_MS);
              c.report = (m) => {
                if ('histogram' in m) {
                  hist.addSparse(m.histogram);
                  busy.push(m.busy);
                  ended += m.ended;
                  refused += m.refused;
                  perWatcher.push(...m.perWatcher);
                }
                clearTimeout(timer);
                resolve();
              };
              c.proc.send({ report: true } satisfies ToWatchLoad);
            }),
        ),
      );
      return { hist, unreported, busy: busy.length ? busy.reduce((a, b) => a + b, 0) / busy.length : NaN, ended, refused, perWatcher };
    },
    stop,
  };
}

export async function preparePods(member: MemberEndpoint): Promise<void> {
  const made = async (path: string, body: unknown) => {
    const res = await memberRequest(member, 'POST', path, body);
    if (res.status !== 201 && res.status !== 409) throw new Error(`POST ${path}: ${res.status} ${res.body.slice(0, 200)}`);
  };
  await made('/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: WATCH_NS } });
  // No controller manager in the bench fleet: the default ServiceAccount is made by hand.
  await made(`/api/v1/namespaces/${WATCH_NS}/serviceaccounts`, { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'default' } });
  for (let i = 0; i < PODS; i++) {
    await made(`/api/v1/namespaces/${WATCH_NS}/pods`, { apiVersion: 'v1', kind: 'Pod', metadata: { name: `w-${i}` }, spec: { containers: [{ name: 'c', image: 'example.com/c:1' }] } });
  }
}
