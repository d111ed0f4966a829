import { performance } from 'node:perf_hooks';
import { memberRequest, type MemberEndpoint } from '../../test/fleet/http.js';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cpuSeconds, memberPids, totalCpuSeconds } from '../lib/cpu-time.js';
import { flotillaStatus, scrapeMetrics } from '../lib/flotilla.js';
import { BenchClient, median, occurrenceCounter, type RequestOpts, type TimedResponse } from '../lib/http.js';
import { LIST_TIMEOUT_MS, MB, expectObjects, figureSink, ok, type Scenario } from '../lib/scenario.js';
import type { BenchContext } from '../lib/context.js';
import { forkServer } from '../lib/forked-server.js';
import type { RelayServerSpec } from '../lib/relay-server.js';

const RELAY_SERVER = fileURLToPath(new URL('../lib/relay-server.js', import.meta.url));

/** A relay process of lib/relay-server.ts and a client of it. */
interface Relay {
  name: string;
  pid: number;
  client: BenchClient;
  stop: () => Promise<void>;
}

async function startRelay(ctx: BenchContext, spec: RelayServerSpec): Promise<Relay> {
  const forked = await forkServer(ctx, RELAY_SERVER, spec);
  const url = new URL(ctx.member.server);
  url.port = String(forked.port);
  return { name: spec.stream ? 'streaming relay' : spec.edit ? 'editing relay' : 'relay', pid: forked.proc.pid!, client: new BenchClient({ ...ctx.member, server: url.origin }), stop: forked.stop };
}

/** The issue's share of each member: 1k ConfigMaps, so 10k over the full profile's 10 members. */
const CONFIGMAPS = 1000;

/** Flotilla's main-thread GC pauses so far, in ms: all of them and the major ones (prom-client's nodejs_gc_duration_seconds). */
async function gcPauseMs(ep: MemberEndpoint): Promise<{ all: number; major: number }> {
  let all = 0;
  let major = 0;
  for (const [series, v] of await scrapeMetrics(ep)) {
    if (!series.startsWith('nodejs_gc_duration_seconds_sum')) continue;
    all += v * 1000;
    if (series.includes('kind="major"')) major += v * 1000;
  }
  return { all, major };
}
const NAMESPACE = 'bench-live';
const SEED_CONCURRENCY = 16;
/** Lists of ~1 MB per member are quick: more rounds than the pod list's, for a steadier median. */
const ROUNDS = 11;
const IDLE_SAMPLE_MS = 3000;
const TABLE_ACCEPT = 'application/json;as=Table;v=v1;g=meta.k8s.io';
/** Once in each ConfigMap of the namespace as flotilla and the member serialize it, and nowhere else. */
const ITEM_NEEDLE = `"namespace":"${NAMESPACE}"`;

/** A ConfigMap as an application keeps its settings: a few keys, one a small properties file. */
function makeConfigMap(i: number): Record<string, unknown> {
  const app = `svc-${String(i).padStart(4, '0')}`;
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: `${app}-config`, namespace: NAMESPACE, labels: { app, tier: ['web', 'api', 'worker', 'batch'][i % 4]!, 'app.kubernetes.io/part-of': `shop-${i % 20}` } },
    data: {
      LOG_LEVEL: ['info', 'debug', 'warn'][i % 3]!,
      FEATURE_FLAGS: `checkout-v2=${i % 2 === 0},search-suggest=true,cache-ttl=${30 + (i % 90)}s`,
      'application.properties': [`server.port=${8000 + (i % 1000)}`, `db.host=db-${i % 8}.${NAMESPACE}.svc`, 'db.pool.max=20', `upstream.url=http://${app}-upstream:8080/v1`, 'retry.backoff=250ms'].join('\n') + '\n',
    },
  };
}

/** Creates the ConfigMaps the namespace lacks (a rerun against the same member creates none). */
async function seedConfigMaps(ep: MemberEndpoint, log: (line: string) => void): Promise<{ created: number; bytesAvg: number }> {
  const ns = await memberRequest(ep, 'POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NAMESPACE } });
  if (ns.status !== 201 && ns.status !== 409) throw new Error(`creating namespace ${NAMESPACE}: ${ns.status} ${ns.body.slice(0, 300)}`);
  const existing = await memberRequest(ep, 'GET', `/api/v1/namespaces/${NAMESPACE}/configmaps`, undefined, { timeoutMs: 60_000 });
  if (existing.status !== 200) throw new Error(`listing ${NAMESPACE} configmaps: ${existing.status} ${existing.body.slice(0, 300)}`);
  const have = new Set((JSON.parse(existing.body) as { items: { metadata: { name: string } }[] }).items.map((c) => c.metadata.name));
  const missing = Array.from({ length: CONFIGMAPS }, (_, i) => i).filter((i) => !have.has(`svc-${String(i).padStart(4, '0')}-config`));
  const started = performance.now();
  let next = 0;
  let bytes = 0;
  const worker = async () => {
    while (next < missing.length) {
      const i = missing[next++]!;
      for (let attempt = 1; ; attempt++) {
        let res;
        try {
          res = await memberRequest(ep, 'POST', `/api/v1/namespaces/${NAMESPACE}/configmaps`, makeConfigMap(i), { timeoutMs: 30_000 });
        } catch (e) {
          if (attempt >= 6) throw new Error(`creating configmap ${i}: ${(e as Error).message}`);
          await new Promise((r) => setTimeout(r, 200 * attempt));
          continue;
        }
        if (res.status === 201) {
          bytes += Buffer.byteLength(res.body);
          break;
        }
        if (res.status === 409) break; // an earlier attempt got through
        if ((res.status === 429 || res.status >= 500) && attempt < 6) {
          await new Promise((r) => setTimeout(r, 200 * attempt));
          continue;
        }
        throw new Error(`creating configmap ${i}: ${res.status} ${res.body.slice(0, 300)}`);
      }
    }
  };
  await Promise.all(Array.from({ length: SEED_CONCURRENCY }, worker));
  if (missing.length) log(`live: seeded ${missing.length} configmaps into ${NAMESPACE} in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  const sized = missing.length ? { bytesAvg: Math.round(bytes / missing.length) } : { bytesAvg: Math.round(Buffer.byteLength(existing.body) / Math.max(1, have.size)) };
  return { created: missing.length, ...sized };
}

/** The member's own count of LIST requests of configmaps it answered (every scope and code). */
async function memberConfigMapLists(ep: MemberEndpoint): Promise<number> {
  const res = await memberRequest(ep, 'GET', '/metrics', undefined, { accept: 'text/plain', timeoutMs: 30_000 });
  if (res.status !== 200) throw new Error(`member /metrics: ${res.status} ${res.body.slice(0, 200)}`);
  let n = 0;
  for (const line of res.body.split('\n')) {
    if (line.startsWith('apiserver_request_total{') && line.includes('resource="configmaps"') && line.includes('verb="LIST"')) n += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return n;
}

/**
 * Proof that the figure measures live reads, not a cache: flotilla says it reads uncached
 * resources live and caches no configmaps, and one fleet list through it makes the member answer
 * one list per registered name.
 */
async function assertServedLive(ctx: BenchContext, client: BenchClient, path: string, names: number): Promise<void> {
  const flotilla = ctx.flotilla!;
  const st = await flotillaStatus(flotilla.endpoint);
  if (!st.live?.enabled || st.live.exclude.includes('configmaps')) throw new Error(`flotilla does not read configmaps live: /status live = ${JSON.stringify(st.live)}`);
  const cached = st.cachers.filter((c) => /(^|\/)configmaps$/.test(c.resource));
  if (cached.length) throw new Error(`flotilla caches configmaps (${cached.map((c) => `${c.cluster}/${c.resource}`).join(', ')}): the list would not be live`);
  const before = await memberConfigMapLists(ctx.member);
  ok(await client.get(path, { timeoutMs: LIST_TIMEOUT_MS }), 'flotilla live list');
  const asked = (await memberConfigMapLists(ctx.member)) - before;
  if (asked !== names) throw new Error(`one fleet list through flotilla made the member answer ${asked} configmap lists, expected ${names} (one per name)`);
}

/**
 * live: the fleet-wide list of a resource flotilla does not cache (ConfigMaps, 1k per member:
 * 10k over the full profile's 10 names), which flotilla reads live from every member as the
 * caller, against the same client fanning out by itself, one list per registered name, all in
 * parallel: the time until the slowest of those lists ends is the slowest member's own list of
 * its share, under the same load on the one apiserver. Neither side sends a resourceVersion
 * (flotilla passes the caller's query on, so both are the members' consistent lists). Rounds
 * alternate which side goes first; each ratio is the median of the rounds' ratios. Bodies are
 * read to the end and discarded; nothing is parsed in the timed path.
 */
export const live: Scenario = {
  name: 'live',
  async run(ctx, emit) {
    const names = Math.min(ctx.profile.listNames, ctx.profile.names);
    // Caches pods only (the bench's default resources): configmaps are served live.
    const via = await ctx.flotillaClient(names);
    const flotilla = ctx.flotilla!;
    const seeded = await seedConfigMaps(ctx.member, ctx.log);
    const direct = new BenchClient(ctx.member);
    const members = memberPids(join(ctx.dir, 'fleet'));
    const fleetDir = ctx.fleet!.info.dir;
    const relaySpec: RelayServerSpec = { cert: join(fleetDir, 'serving.crt'), key: join(fleetDir, 'serving.key'), member: ctx.member, names };
    const relay = await startRelay(ctx, relaySpec);
    const streamingRelay = await startRelay(ctx, { ...relaySpec, stream: true });
    // Shown under the names flotilla shows them (ctx.registered): the same bytes as flotilla's answer.
    const editingRelay = await startRelay(ctx, { ...relaySpec, edit: true, clusters: ctx.registered(names).map((m) => m.name) });
    const { figures, add } = figureSink('live', emit);
    const notes: string[] = [];
    try {
      /** The direct side; `needle`: counted in each answer (a counter per answer: their chunks interleave). */
      const fanOut = async (path: string, opts: RequestOpts, needle?: string): Promise<TimedResponse & { count: number }> => {
        const counters = Array.from({ length: names }, () => (needle ? occurrenceCounter(needle) : undefined));
        const started = performance.now();
        const all = await Promise.all(counters.map((c) => direct.get(path, { timeoutMs: LIST_TIMEOUT_MS, ...opts, ...(c ? { onChunk: c.onChunk } : {}) })));
        const ms = performance.now() - started;
        all.forEach((r) => ok(r, `direct ${path}`));
        return { status: 200, bytes: all.reduce((n, r) => n + r.bytes, 0), ms, count: counters.reduce((n, c) => n + (c?.count() ?? 0), 0) };
      };
      const expected = CONFIGMAPS * names;

      const allNamespaces = '/api/v1/configmaps';
      await assertServedLive(ctx, via, allNamespaces, names);
      notes.push(`served live: /status lists no configmaps cacher and live reads enabled; one fleet list made the member answer ${names} configmap lists`);

      /**
       * Warm-up and counts (outside the timed rounds), then rounds in which the sides take turns
       * going first. `relays`: the relay floors, more sides of the fleet list.
       */
      const measure = async (what: string, path: string, opts: RequestOpts, needle: string, relays: readonly Relay[] = []) => {
        const viaCount = occurrenceCounter(needle);
        const warm = ok(await via.get(path, { timeoutMs: LIST_TIMEOUT_MS, ...opts, onChunk: viaCount.onChunk }), `flotilla ${what}`);
        const warmDirect = await fanOut(path, opts, needle);
        if (warmDirect.count !== expected) throw new Error(`${what}: the direct lists held ${warmDirect.count} objects of ${NAMESPACE}, expected ${expected}`);
        for (const relay of relays) ok(await relay.client.get(path, { timeoutMs: LIST_TIMEOUT_MS, ...opts }), `${relay.name} ${what}`);
        const viaMs: number[] = [];
        const directMs: number[] = [];
        const ratios: number[] = [];
        const floors = relays.map((relay) => ({ relay, ms: [] as number[], ratios: [] as number[], over: [] as number[], cpu: 0, memberCpu: 0 }));
        let cpu = 0;
        let memberCpuVia = 0;
        let memberCpuDirect = 0;
        const flotillaSide = async () => {
          const cpu0 = cpuSeconds(flotilla.proc.pid);
          const member0 = totalCpuSeconds(members);
          const r = ok(await via.get(path, { timeoutMs: LIST_TIMEOUT_MS, ...opts }), `flotilla ${what}`).ms;
          cpu += cpuSeconds(flotilla.proc.pid) - cpu0;
          memberCpuVia += totalCpuSeconds(members) - member0;
          viaMs.push(r);
        };
        const directSide = async () => {
          const member0 = totalCpuSeconds(members);
          directMs.push((await fanOut(path, opts)).ms);
          memberCpuDirect += totalCpuSeconds(members) - member0;
        };
        const relaySides = floors.map((f) => async () => {
          const cpu0 = cpuSeconds(f.relay.pid);
          const member0 = totalCpuSeconds(members);
          f.ms.push(ok(await f.relay.client.get(path, { timeoutMs: LIST_TIMEOUT_MS, ...opts }), `${f.relay.name} ${what}`).ms);
          f.cpu += cpuSeconds(f.relay.pid) - cpu0;
          f.memberCpu += totalCpuSeconds(members) - member0;
        });
        const sides = [directSide, flotillaSide, ...relaySides];
        // Scraped around all the rounds, not each: a scrape's own garbage would be collected in the next list.
        const gc0 = await gcPauseMs(flotilla.endpoint);
        for (let round = 0; round < ROUNDS; round++) {
          for (let k = 0; k < sides.length; k++) await sides[(round + k) % sides.length]!();
          ratios.push(viaMs[round]! / directMs[round]!);
          for (const f of floors) {
            f.ratios.push(f.ms[round]! / directMs[round]!);
            f.over.push(viaMs[round]! / f.ms[round]!);
          }
        }
        const gc1 = await gcPauseMs(flotilla.endpoint);
        const gc = { all: gc1.all - gc0.all, major: gc1.major - gc0.major };
        ctx.log(`live: ${what}: flotilla ${median(viaMs).toFixed(0)} ms (${(warm.bytes / MB).toFixed(1)} MB), slowest of ${names} direct ${median(directMs).toFixed(0)} ms (${(warmDirect.bytes / MB).toFixed(1)} MB)${floors.map((f) => `, ${f.relay.name} floor ${median(f.ms).toFixed(0)} ms`).join('')}`);
        return {
          objects: viaCount.count(),
          bytes: warm.bytes,
          directBytes: warmDirect.bytes,
          viaMs: median(viaMs),
          directMs: median(directMs),
          ratio: median(ratios),
          cpuMsPerList: (cpu * 1000) / ROUNDS,
          gcMsPerList: gc.all / ROUNDS,
          majorGcMsPerList: gc.major / ROUNDS,
          memberCpuMsVia: (memberCpuVia * 1000) / ROUNDS,
          memberCpuMsDirect: (memberCpuDirect * 1000) / ROUNDS,
          floors: floors.map((f) => ({ ms: median(f.ms), ratio: median(f.ratios), over: median(f.over), cpuMsPerList: (f.cpu * 1000) / ROUNDS, memberCpuMs: (f.memberCpu * 1000) / ROUNDS })),
        };
      };

      // The member's CPU when nobody lists (its watches, leases, etcd): part of every side's figure, by its time.
      // Flotilla's likewise (its cachers' watches, heartbeats, what its workers still do after the
      // sync): part of its CPU per list, by the list's time.
      const idle0 = totalCpuSeconds(members);
      const flotillaIdle0 = cpuSeconds(flotilla.proc.pid);
      await new Promise((r) => setTimeout(r, IDLE_SAMPLE_MS));
      const memberIdleCpuMsPerS = ((totalCpuSeconds(members) - idle0) * 1000) / (IDLE_SAMPLE_MS / 1000);
      const flotillaIdleCpuMsPerS = ((cpuSeconds(flotilla.proc.pid) - flotillaIdle0) * 1000) / (IDLE_SAMPLE_MS / 1000);
      const fleet = await measure('fleet list', allNamespaces, {}, ITEM_NEEDLE, [relay, streamingRelay, editingRelay]);
      add('objects', fleet.objects, 'objects');
      expectObjects(fleet.objects, expected, `flotilla's fleet list of the configmaps of ${NAMESPACE}`);
      add('flotilla_ms', fleet.viaMs, 'ms');
      add('slowest_member_ms', fleet.directMs, 'ms');
      add('fleet_list_vs_slowest_member', fleet.ratio, 'x', { op: '<=', value: 1.2 });
      add('flotilla_cpu_ms_per_list', fleet.cpuMsPerList, 'ms');
      // Its main thread's GC pauses over the rounds, by list (what V8's helper threads mark beside them is in the CPU above).
      add('flotilla_gc_pause_ms_per_list', fleet.gcMsPerList, 'ms');
      add('flotilla_major_gc_pause_ms_per_list', fleet.majorGcMsPerList, 'ms');
      // The one member's CPU (apiserver and etcd) for the same lists: the two CPUs the sides share.
      add('member_cpu_ms_per_flotilla_list', fleet.memberCpuMsVia, 'ms');
      add('member_cpu_ms_per_direct_fan_out', fleet.memberCpuMsDirect, 'ms');
      // The relay floors: the same fan-out through a Node relay that edits nothing, buffered as
      // flotilla answers and streaming as no list can be (lib/relay-server.ts).
      const [buffered, streaming, editing] = fleet.floors;
      add('relay_floor_ms', buffered!.ms, 'ms');
      add('relay_floor_vs_slowest_member', buffered!.ratio, 'x');
      add('fleet_list_vs_relay_floor', buffered!.over, 'x', { op: '<=', value: 1.1 });
      add('relay_cpu_ms_per_list', buffered!.cpuMsPerList, 'ms');
      add('member_cpu_ms_per_relay_list', buffered!.memberCpuMs, 'ms');
      add('streaming_relay_floor_ms', streaming!.ms, 'ms');
      add('streaming_relay_floor_vs_slowest_member', streaming!.ratio, 'x');
      add('streaming_relay_cpu_ms_per_list', streaming!.cpuMsPerList, 'ms');
      // A relay that edits every item as flotilla must, with flotilla's code and nothing else: what
      // the edits themselves cost this machine, beside the relay that edits nothing.
      add('editing_relay_floor_ms', editing!.ms, 'ms');
      add('editing_relay_vs_relay_floor', editing!.ms / buffered!.ms, 'x');
      add('fleet_list_vs_editing_relay', editing!.over, 'x');
      add('editing_relay_cpu_ms_per_list', editing!.cpuMsPerList, 'ms');
      add('member_idle_cpu_ms_per_s', memberIdleCpuMsPerS, 'ms');
      add('flotilla_idle_cpu_ms_per_s', flotillaIdleCpuMsPerS, 'ms');

      const namespaced = await measure('namespaced list', `/api/v1/namespaces/${NAMESPACE}/configmaps`, {}, ITEM_NEEDLE);
      expectObjects(namespaced.objects, expected, `flotilla's namespaced list of ${NAMESPACE}`);
      add('namespaced_flotilla_ms', namespaced.viaMs, 'ms');
      add('namespaced_slowest_member_ms', namespaced.directMs, 'ms');
      add('namespaced_vs_slowest_member', namespaced.ratio, 'x');

      const table = await measure('Table list', allNamespaces, { accept: TABLE_ACCEPT }, ITEM_NEEDLE);
      expectObjects(table.objects, expected, `flotilla's Table list (rows of ${NAMESPACE})`);
      add('table_flotilla_ms', table.viaMs, 'ms');
      add('table_slowest_member_ms', table.directMs, 'ms');
      add('table_vs_slowest_member', table.ratio, 'x');
      add('table_flotilla_cpu_ms_per_list', table.cpuMsPerList, 'ms');

      notes.push(
        `${CONFIGMAPS} ConfigMaps (${seeded.bytesAvg} B each as stored) in ${NAMESPACE} × ${names} cluster names = ${expected}${seeded.created ? `, ${seeded.created} created by this run` : ', already there'}; flotilla caches pods only`,
        `${ROUNDS} rounds after a warm-up, flotilla and the direct fan-out alternating which goes first; ratios are medians of per-round ratios; flotilla ${(fleet.bytes / MB).toFixed(1)} MB per fleet list, direct ${(fleet.directBytes / MB).toFixed(1)} MB in ${names} parallel lists (Table: ${(table.bytes / MB).toFixed(1)} against ${(table.directBytes / MB).toFixed(1)} MB)`,
      );
      return { figures, facts: { objects: expected, objectBytes: Math.round(namespaced.bytes / Math.max(1, namespaced.objects)), objectBytesAre: 'as flotilla serves it in a list: cluster annotation added, managedFields kept', notes } };
    } finally {
      direct.close();
      for (const r of [relay, streamingRelay, editingRelay]) {
        r.client.close();
        await r.stop();
      }
    }
  },
};
