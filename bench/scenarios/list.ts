import { performance } from 'node:perf_hooks';
import { procMemory } from '../lib/flotilla.js';
import { BenchClient, median, occurrenceCounter, percentile, type TimedResponse } from '../lib/http.js';
import { countedSelectors, nodeName, podsOnNode } from '../lib/pods.js';
import { LIST_TIMEOUT_MS, MB, POD_ITEM, expectObjects, figureSink, ok, type Scenario } from '../lib/scenario.js';

/** Rounds of each fresh-read path: a quiet one waits for the member's bookmark (1–2 s). */
const FRESH_BUSY_ROUNDS = 40;
const FRESH_QUIET_ROUNDS = 6;


/**
 * list: label- and field-selected lists from the whole cache (every seeded pod under every name:
 * 1M objects in the full profile), then the fleet-wide pod list of `listNames` members (100k pods
 * in 10 in the full profile) through flotilla against the same pods fetched straight from the
 * members, one `resourceVersion=0` list per registered name, all in parallel (a client fanning
 * out by itself). Those lists through flotilla ask `resourceVersion=0` too: they measure serving
 * from the cache. Last, what a fresh read (resourceVersion unset, docs/fresh-reads.md) adds to one
 * namespace's pods of one member, against the same list at `resourceVersion=0`: after a write to a
 * pod (busy: its event confirms) and after a write to another resource (quiet: the member's watch
 * confirms). Bodies are read to the end and discarded; nothing is parsed in the timed path.
 */
export const list: Scenario = {
  name: 'list',
  async run(ctx, emit) {
    const seed = await ctx.ensureSeeded();
    const direct = new BenchClient(ctx.member);
    const { figures, add } = figureSink('list', emit);
    const notes: string[] = [];
    try {
      /** The direct side: one list per registered name, all in parallel. */
      const fanOut = async (names: number, query: string): Promise<{ ms: number; bytes: number }> => {
        const started = performance.now();
        const all = await Promise.all(Array.from({ length: names }, () => direct.get(`/api/v1/pods?${query}`, { timeoutMs: LIST_TIMEOUT_MS })));
        all.forEach((r) => ok(r, 'direct list'));
        return { ms: performance.now() - started, bytes: all.reduce((n, r) => n + r.bytes, 0) };
      };

      // Selected lists from the whole cache.
      const allNames = ctx.profile.names;
      const cache = await ctx.flotillaClient(allNames);
      const cached = seed.pods * allNames;
      const selected = async (query: string, podsMatched: number) => {
        const counter = occurrenceCounter(POD_ITEM);
        ok(await cache.get(`/api/v1/pods?resourceVersion=0&${query}`, { timeoutMs: LIST_TIMEOUT_MS, onChunk: counter.onChunk }), 'flotilla selected list');
        expectObjects(counter.count(), podsMatched * allNames, `${decodeURIComponent(query)} through flotilla`);
        await fanOut(allNames, `resourceVersion=0&${query}`);
        const via: number[] = [];
        const started = performance.now();
        while (via.length < ctx.profile.selectorRuns && (via.length < 20 || performance.now() - started < ctx.profile.selectorBudgetMs)) {
          via.push(ok(await cache.get(`/api/v1/pods?resourceVersion=0&${query}`, { timeoutMs: LIST_TIMEOUT_MS }), 'flotilla selected list').ms);
        }
        const directMs: number[] = [];
        const directStarted = performance.now();
        while (directMs.length < Math.min(50, ctx.profile.selectorRuns) && (directMs.length < 10 || performance.now() - directStarted < ctx.profile.selectorBudgetMs / 3)) {
          directMs.push((await fanOut(allNames, `resourceVersion=0&${query}`)).ms);
        }
        notes.push(`${decodeURIComponent(query)} of ${cached} cached objects: ${via.length} sequential requests through flotilla, ${directMs.length} direct fan-outs of ${allNames} lists`);
        return { objects: counter.count(), via, directMs };
      };
      // A label selector matching about 100 objects of the whole cache.
      const { selector, podsMatched } = countedSelectors(seed.pods).reduce((best, s) => (Math.abs(s.podsMatched * allNames - 100) < Math.abs(best.podsMatched * allNames - 100) ? s : best));
      const byLabel = await selected(`labelSelector=${encodeURIComponent(selector)}`, podsMatched);
      add('label_selected_objects', byLabel.objects, 'objects');
      add('label_selected_p50_ms', percentile(byLabel.via, 50), 'ms', { op: '<=', value: 20 });
      add('label_selected_p99_ms', percentile(byLabel.via, 99), 'ms', { op: '<=', value: 50 });
      add('label_selected_direct_p50_ms', percentile(byLabel.directMs, 50), 'ms');
      // The same requirements named the other way round (`app=…,g10=…`): a user writes them in
      // any order, and the broad one first must not mean a walk of its whole index range.
      const requirements = selector.split(',');
      if (requirements.length > 1) {
        const reversed = await selected(`labelSelector=${encodeURIComponent(requirements.reverse().join(','))}`, podsMatched);
        add('label_selected_reversed_objects', reversed.objects, 'objects');
        add('label_selected_reversed_p50_ms', percentile(reversed.via, 50), 'ms');
        add('label_selected_reversed_p99_ms', percentile(reversed.via, 99), 'ms');
      }
      // One node's pods (bench pods are spread over 250 nodes), as a node agent lists them.
      const byField = await selected(`fieldSelector=${encodeURIComponent(`spec.nodeName=${nodeName(7)}`)}`, podsOnNode(seed.pods, 7));
      add('field_selected_objects', byField.objects, 'objects');
      add('field_selected_p50_ms', percentile(byField.via, 50), 'ms');
      add('field_selected_p99_ms', percentile(byField.via, 99), 'ms');
      add('field_selected_direct_p50_ms', percentile(byField.directMs, 50), 'ms');

      // The fleet-wide list of listNames members.
      const listNames = Math.min(ctx.profile.listNames, allNames);
      const fleet = await ctx.flotillaClient(listNames);
      const counter = occurrenceCounter(POD_ITEM);
      const expected = seed.pods * listNames;
      let objects = expected;
      let servedBytes = NaN;
      let warm: TimedResponse | undefined;
      try {
        // Warm-up (connections, caches), and the object count, outside the timed rounds.
        warm = ok(await fleet.get('/api/v1/pods?resourceVersion=0', { timeoutMs: LIST_TIMEOUT_MS, onChunk: counter.onChunk }), 'flotilla list');
      } catch (e) {
        // Recorded as a miss.
        notes.push(`the fleet-wide list through flotilla failed: ${(e as Error).message}`);
        ctx.log(`list: the fleet-wide list through flotilla failed: ${(e as Error).message}`);
      }
      if (warm) objects = counter.count();
      add('objects', objects, 'objects');
      if (warm) {
        servedBytes = Math.round(warm.bytes / Math.max(1, objects));
        const warmDirect = await fanOut(listNames, 'resourceVersion=0');
        ctx.log(`list: warm-up: flotilla ${warm.ms.toFixed(0)} ms for ${objects} objects (${(warm.bytes / MB).toFixed(0)} MB), direct ${warmDirect.ms.toFixed(0)} ms (${(warmDirect.bytes / MB).toFixed(0)} MB)`);
        expectObjects(objects, expected, 'the fleet-wide list through flotilla');
        const viaMs: number[] = [];
        const directMs: number[] = [];
        for (let round = 0; round < ctx.profile.listRounds; round++) {
          viaMs.push(ok(await fleet.get('/api/v1/pods?resourceVersion=0', { timeoutMs: LIST_TIMEOUT_MS }), 'flotilla list').ms);
          directMs.push((await fanOut(listNames, 'resourceVersion=0')).ms);
        }
        const f = median(viaMs);
        const d = median(directMs);
        add('flotilla_ms', f, 'ms');
        add('direct_ms', d, 'ms');
        add('ratio', f / d, 'x', { op: '<=', value: 0.5 });
        notes.push(`fleet list: ${seed.pods} pods × ${listNames} cluster names; median of ${ctx.profile.listRounds} rounds, flotilla and direct alternating; flotilla ${(warm.bytes / MB).toFixed(0)} MB per list, direct ${(warmDirect.bytes / MB).toFixed(0)} MB (managedFields included) from ${listNames} parallel requests to the one apiserver`);
      } else {
        add('ratio', NaN, 'x', { op: '<=', value: 0.5 });
      }
      await freshReadCost(ctx.registered(listNames)[0]!.name, direct, fleet, add, notes);
      add('flotilla_rss_hwm_mb', procMemory(ctx.flotilla!.proc.pid).peakRssBytes / MB, 'MB');
      return { figures, facts: { objects, objectBytes: Number.isNaN(servedBytes) ? seed.memberBytesAvg : servedBytes, objectBytesAre: Number.isNaN(servedBytes) ? 'as the member stores it, managedFields included' : 'as flotilla serves it: managedFields dropped, cluster annotation added', notes } };
    } finally {
      direct.close();
    }
  },
};

/**
 * A fresh list's cost (docs/fresh-reads.md): one namespace's pods of one member through flotilla
 * with resourceVersion unset, right after a write to one of them on the member (busy: the pod's
 * event confirms the cache) and right after a write to a ConfigMap, which flotilla does not cache
 * (quiet: the member's watch is asked), each against the same list at resourceVersion=0, which asks
 * no member. The pod's annotation is all that changes; nothing else of the seed is touched.
 */
async function freshReadCost(cluster: string, direct: BenchClient, via: BenchClient, add: ReturnType<typeof figureSink>['add'], notes: string[]): Promise<void> {
  const one = JSON.parse(ok(await direct.get('/api/v1/pods?limit=1', { keepHead: 1 << 16 }), 'a seeded pod').head ?? '{}') as { items?: { metadata: { name: string; namespace: string } }[] };
  const pod = one.items?.[0]?.metadata;
  if (!pod) throw new Error('list: no seeded pod to write to');
  const path = `/clusters/${cluster}/api/v1/namespaces/${pod.namespace}/pods`;
  const patch = (i: number) => direct.send('PATCH', `/api/v1/namespaces/${pod.namespace}/pods/${pod.name}`, { body: JSON.stringify({ metadata: { annotations: { 'bench.flotilla.io/fresh': String(i) } } }), contentType: 'application/merge-patch+json' });
  const otherWrite = (i: number) => direct.send('PUT', `/api/v1/namespaces/${pod.namespace}/configmaps/bench-fresh`, { body: JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'bench-fresh' }, data: { i: String(i) } }) });
  await direct.send('POST', `/api/v1/namespaces/${pod.namespace}/configmaps`, { body: JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'bench-fresh' } }) });
  const cached: number[] = [];
  const busy: number[] = [];
  const quiet: number[] = [];
  ok(await via.get(`${path}?resourceVersion=0`), 'warm-up');
  for (let i = 0; i < FRESH_BUSY_ROUNDS; i++) {
    ok(await patch(i), 'a pod written on the member');
    busy.push(ok(await via.get(path), 'fresh list after a pod written').ms);
    cached.push(ok(await via.get(`${path}?resourceVersion=0`), 'list at resourceVersion=0').ms);
  }
  for (let i = 0; i < FRESH_QUIET_ROUNDS; i++) {
    ok(await otherWrite(i), 'a ConfigMap written on the member');
    quiet.push(ok(await via.get(path), 'fresh list after another resource written').ms);
  }
  await direct.send('DELETE', `/api/v1/namespaces/${pod.namespace}/configmaps/bench-fresh`);
  const base = median(cached);
  add('fresh_busy_p50_ms', median(busy), 'ms');
  add('fresh_quiet_p50_ms', median(quiet), 'ms');
  add('as_of_cache_p50_ms', base, 'ms');
  add('fresh_busy_ratio', median(busy) / base, 'x');
  add('fresh_quiet_ratio', median(quiet) / base, 'x');
  notes.push(`fresh reads: ${path} (one member's namespace), ${FRESH_BUSY_ROUNDS} lists right after a write to one of its pods on the member, ${FRESH_QUIET_ROUNDS} right after a write to a ConfigMap (not cached: the member's watch confirms), against the same list at resourceVersion=0 alternating with the first`);
}
