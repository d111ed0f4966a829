import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import type { BenchContext } from '../lib/context.js';
import type { BytesServerSpec } from '../lib/bytes-server.js';
import type { MemberEndpoint } from '../../test/fleet/http.js';
import { procMemory } from '../lib/flotilla.js';
import { forkServer } from '../lib/forked-server.js';
import { BenchClient, median, occurrenceCounter } from '../lib/http.js';
import { podName, selectorNear } from '../lib/pods.js';
import { LIST_TIMEOUT_MS, POD_ITEM, expectObjects, figureSink, fleetLists, ok, type Scenario } from '../lib/scenario.js';
import { PeerAnswers } from '../lib/peer-answers.js';

/**
 * What karmada-search's users and maintainers published, as the issue quotes them from
 * karmada-io/karmada#2518: a load test of 100k pods in 10 clusters against a karmada-search pod of
 * 16 GB and 8 vCPUs (medians of 100, 100 and 22 requests), and for 2M pods in about 100 clusters
 * about 140 GB of memory and a fleet-wide list in a median 8.6 s.
 */
const KARMADA = {
  getMs: 1.8,
  list100Ms: 53.2,
  list10kMs: 2490,
  fleetListUsPerPod: 8.6e6 / 2e6,
  memoryKBPerPod: 140e9 / 2e6 / 1000,
} as const;

const BYTES_SERVER = fileURLToPath(new URL('../lib/bytes-server.js', import.meta.url));

/** The median time `rounds` GETs of `bytes` bytes take from a forked bytes-server, stopped by its PID after. */
async function bytesServedFloor(ctx: BenchContext, like: MemberEndpoint, bytes: number, rounds: number): Promise<number> {
  const dir = ctx.fleet!.info.dir;
  const spec: BytesServerSpec = { cert: join(dir, 'serving.crt'), key: join(dir, 'serving.key'), bytes };
  const { port, stop } = await forkServer(ctx, BYTES_SERVER, spec);
  try {
    const url = new URL(like.server);
    url.port = String(port);
    const client = new BenchClient({ ...like, server: url.origin });
    try {
      ok(await client.get('/'), 'bytes-server warm-up');
      const ms: number[] = [];
      for (let round = 0; round < rounds; round++) ms.push(ok(await client.get('/', { timeoutMs: LIST_TIMEOUT_MS }), 'bytes-server').ms);
      return median(ms);
    } finally {
      client.close();
    }
  } finally {
    await stop();
  }
}

/**
 * peers: the same operations on the same shape as that load test. Flotilla caches the seeded pods
 * under `listNames` cluster names (100k pods in 10 in the full profile); sequential requests, as
 * many as theirs, each figure's target the published median. Their proxy had 8 vCPUs to itself;
 * here 2 CPUs are shared with the member and the client. The same requests straight to the member
 * (fanned out to every name in parallel, resourceVersion=0) are measured beside them, for scale.
 */
export const peers: Scenario = {
  name: 'peers',
  async run(ctx, emit) {
    const seed = await ctx.ensureSeeded();
    const names = Math.min(ctx.profile.listNames, ctx.profile.names);
    const via = await ctx.flotillaClient(names);
    const flotilla = ctx.flotilla!;
    const direct = new BenchClient(ctx.member);
    const { figures, add } = figureSink('peers', emit);
    const notes: string[] = [];
    try {
      const cached = seed.pods * names;
      add('objects', cached, 'objects');

      const timed = async (runs: number, request: () => Promise<number>): Promise<number> => {
        const ms: number[] = [];
        for (let i = 0; i < runs; i++) ms.push(await request());
        return median(ms);
      };
      const fanOut = async (query: string): Promise<number> => {
        const started = performance.now();
        const all = await Promise.all(Array.from({ length: names }, () => direct.get(`/api/v1/pods?${query}`, { timeoutMs: LIST_TIMEOUT_MS })));
        all.forEach((r) => ok(r, 'direct list'));
        return performance.now() - started;
      };

      // GET of one pod by name. Every bench name is the same member, so each name holds the pod and
      // a get without a cluster would be ambiguous (409): the get names its cluster, as
      // /clusters/<name>/ does; flotilla serves it from the cache all the same.
      const middle = Math.floor(seed.pods / 2);
      const podPath = `/api/v1/namespaces/${seed.namespaces[middle % seed.namespaces.length]!}/pods/${podName(middle)}`;
      const viaPodPath = `/clusters/${ctx.registered()[0]!.name}${podPath}`;
      // Each side's reads: one that does not answer in time, or fails, is its figure's NaN, counted
      // and named, and the scenario goes on.
      const sides = { flotilla: new PeerAnswers('flotilla'), direct: new PeerAnswers('direct') };
      // At resourceVersion=0, from the cache as it stands, as karmada-search answers every read
      // (and as the fleet list below is read, against the floor of the same bytes from memory);
      // with it unset, a fresh read (docs/fresh-reads.md) first confirms with the member.
      const flotillaGet = (path: string) => sides.flotilla.within('get', LIST_TIMEOUT_MS, async (t) => {
        ok(await via.get(path, { timeoutMs: t }), 'flotilla get');
        return timed(100, async () => ok(await via.get(path, { timeoutMs: t }), 'flotilla get').ms);
      }, NaN);
      add('get_p50_ms', await flotillaGet(`${viaPodPath}?resourceVersion=0`), 'ms', { op: '<=', value: KARMADA.getMs });
      add('get_fresh_p50_ms', await flotillaGet(viaPodPath), 'ms');
      add('get_direct_p50_ms', await sides.direct.within('get', LIST_TIMEOUT_MS, (t) => timed(100, async () => ok(await direct.get(podPath, { timeoutMs: t }), 'direct get').ms), NaN), 'ms');

      /** A label-selected list of about `wanted` of the cached pods: the objects it returned, its median through flotilla and direct. */
      const selected = async (wanted: number, runs: number, directRuns: number) => {
        const { selector, podsMatched } = selectorNear(seed.pods, wanted / names);
        const query = `labelSelector=${encodeURIComponent(selector)}`;
        const counter = occurrenceCounter(POD_ITEM);
        // From the cache as it stands, as get above.
        const viaMs = await sides.flotilla.within(`list of ${wanted}`, LIST_TIMEOUT_MS, async (t) => {
          ok(await via.get(`/api/v1/pods?resourceVersion=0&${query}`, { timeoutMs: t, onChunk: counter.onChunk }), 'flotilla selected list');
          expectObjects(counter.count(), podsMatched * names, `${selector} through flotilla`);
          return timed(runs, async () => ok(await via.get(`/api/v1/pods?resourceVersion=0&${query}`, { timeoutMs: t }), 'flotilla selected list').ms);
        }, NaN);
        const directMs = await sides.direct.within(`list of ${wanted}`, LIST_TIMEOUT_MS, async () => {
          await fanOut(`resourceVersion=0&${query}`);
          return timed(directRuns, () => fanOut(`resourceVersion=0&${query}`));
        }, NaN);
        notes.push(`${selector} selects ${counter.count()} of ${cached} cached pods: ${runs} sequential lists through flotilla, ${directRuns} direct fan-outs of ${names}`);
        return { objects: Number.isNaN(viaMs) ? NaN : counter.count(), viaMs, directMs };
      };
      const hundred = await selected(100, 100, 20);
      add('list_100_objects', hundred.objects, 'objects');
      add('list_100_p50_ms', hundred.viaMs, 'ms', { op: '<=', value: KARMADA.list100Ms });
      add('list_100_direct_p50_ms', hundred.directMs, 'ms');
      const tenThousand = await selected(10_000, 22, 10);
      add('list_10k_objects', tenThousand.objects, 'objects');
      add('list_10k_p50_ms', tenThousand.viaMs, 'ms', { op: '<=', value: KARMADA.list10kMs });
      add('list_10k_direct_p50_ms', tenThousand.directMs, 'ms');

      // The fleet-wide list, per pod: theirs listed 2M, this one lists what it caches.
      const fleet = await sides.flotilla.within('fleet list', LIST_TIMEOUT_MS * (ctx.profile.listRounds + 1), () => fleetLists(flotilla.endpoint, 'peers', ctx.profile.listRounds, cached, 'resourceVersion=0'), { ms: NaN, objects: NaN, bytes: NaN });
      add('fleet_list_ms', fleet.ms, 'ms');
      add('fleet_list_us_per_pod', (fleet.ms * 1000) / Math.max(1, fleet.objects), 'µs', { op: '<=', value: KARMADA.fleetListUsPerPod });
      // The floor under it on this machine: the same number of bytes from a process that holds
      // them in memory, over the same TLS and loopback to the same client.
      const floorMs = Number.isNaN(fleet.bytes) ? NaN : await bytesServedFloor(ctx, flotilla.endpoint, fleet.bytes, ctx.profile.listRounds);
      add('fleet_list_floor_ms', floorMs, 'ms');
      add('fleet_list_vs_floor', fleet.ms / floorMs, 'x');
      notes.push(`fleet list floor: ${(fleet.bytes / 1e6).toFixed(0)} MB from a forked TLS server holding them in memory (bench/lib/bytes-server.ts), median of ${ctx.profile.listRounds}`);

      // Memory per cached pod. VmRSS counts the cache file's pages in the page cache, which a
      // memory limit reclaims (memory-limit scenario); RssAnon is flotilla's own.
      const mem = procMemory(flotilla.proc.pid);
      add('rss_kb_per_pod', mem.rssBytes / 1000 / cached, 'KB', { op: '<=', value: KARMADA.memoryKBPerPod });
      add('rss_anon_kb_per_pod', mem.anonBytes / 1000 / cached, 'KB');
      for (const [side, answers] of Object.entries(sides)) {
        add(`${side}_timeouts`, answers.timeouts.length, 'requests', side === 'flotilla' ? { op: '=', value: 0 } : undefined);
        add(`${side}_failed_reads`, answers.failures.length, 'reads', side === 'flotilla' ? { op: '=', value: 0 } : undefined);
        if (answers.said().length) notes.push(`${side} failed or did not answer: ${answers.said().join('; ')}`);
      }
      notes.push(`targets: karmada-search's published medians for 100k pods in 10 clusters on 8 vCPUs (get ${KARMADA.getMs} ms, 100 pods ${KARMADA.list100Ms} ms, 10000 pods ${KARMADA.list10kMs} ms), and for 2M pods: 8.6 s per fleet list, 140 GB (KB = 1000 bytes); flotilla's get, selected and fleet lists at resourceVersion=0 (its cache as it stands, as karmada-search serves reads), its fresh get (resourceVersion unset: confirmed with the member first) reported beside`);
      return { figures, facts: { objects: cached, objectBytes: seed.memberBytesAvg, objectBytesAre: 'as the member stores the pod', notes } };
    } finally {
      direct.close();
    }
  },
};
