import { performance } from 'node:perf_hooks';
import { procMemory } from '../lib/flotilla.js';
import { BenchClient, median, occurrenceCounter, percentile, type TimedResponse } from '../lib/http.js';
import { GROUP_LABEL, GROUP_SIZES } from '../lib/pods.js';
import { MB, figureSink, ok, type Scenario } from '../lib/scenario.js';

const BIG_TIMEOUT_MS = 600_000;

/**
 * list: the fleet-wide pod list through flotilla against the same pods fetched straight from the
 * members, one `resourceVersion=0` list per registered name, all in parallel (a client fanning out
 * by itself). Bodies are read to the end and discarded; nothing is parsed in the timed path.
 */
export const list: Scenario = {
  name: 'list',
  async run(ctx, emit) {
    const seed = await ctx.ensureSeeded();
    const flotilla = await ctx.ensureFlotilla();
    const names = ctx.registered();
    const viaFlotilla = new BenchClient(flotilla.endpoint);
    const direct = new BenchClient(ctx.member);
    const { figures, add } = figureSink('list', emit);
    const notes: string[] = [];
    try {
      const fanOut = async (query: string): Promise<{ ms: number; bytes: number }> => {
        const started = performance.now();
        const all = await Promise.all(names.map(() => direct.get(`/api/v1/pods?${query}`, { timeoutMs: BIG_TIMEOUT_MS })));
        all.forEach((r) => ok(r, 'direct list'));
        return { ms: performance.now() - started, bytes: all.reduce((n, r) => n + r.bytes, 0) };
      };

      // Warm-up (connections, caches), and the object count, outside the timed rounds.
      const counter = occurrenceCounter('{"kind":"Pod","apiVersion":"v1"');
      const expected = seed.pods * names.length;
      let objects = expected;
      let servedBytes = NaN;
      let warm: TimedResponse | undefined;
      try {
        warm = ok(await viaFlotilla.get('/api/v1/pods', { timeoutMs: BIG_TIMEOUT_MS, onChunk: counter.onChunk }), 'flotilla list');
      } catch (e) {
        // Recorded as a miss; the label-selected part below still runs.
        notes.push(`the fleet-wide list through flotilla failed: ${(e as Error).message}`);
        ctx.log(`list: the fleet-wide list through flotilla failed: ${(e as Error).message}`);
      }
      if (warm) {
        objects = counter.count();
        servedBytes = Math.round(warm.bytes / Math.max(1, objects));
        const warmDirect = await fanOut('resourceVersion=0');
        ctx.log(`list: warm-up: flotilla ${warm.ms.toFixed(0)} ms for ${objects} objects (${(warm.bytes / MB).toFixed(0)} MB), direct ${warmDirect.ms.toFixed(0)} ms (${(warmDirect.bytes / MB).toFixed(0)} MB)`);
        if (objects !== expected) notes.push(`flotilla's list held ${objects} objects, expected ${expected}`);
        const viaMs: number[] = [];
        const directMs: number[] = [];
        for (let round = 0; round < ctx.profile.listRounds; round++) {
          viaMs.push(ok(await viaFlotilla.get('/api/v1/pods', { timeoutMs: BIG_TIMEOUT_MS }), 'flotilla list').ms);
          directMs.push((await fanOut('resourceVersion=0')).ms);
        }
        const f = median(viaMs);
        const d = median(directMs);
        add('objects', objects, 'objects');
        add('flotilla_ms', f, 'ms');
        add('direct_ms', d, 'ms');
        add('ratio', f / d, 'x', { op: '<=', value: 0.5 });
        notes.push(`median of ${ctx.profile.listRounds} rounds, flotilla and direct alternating; flotilla ${(warm.bytes / MB).toFixed(0)} MB per list, direct ${(warmDirect.bytes / MB).toFixed(0)} MB (managedFields included) from ${names.length} parallel requests to the one apiserver`);
      } else {
        add('objects', objects, 'objects');
        add('ratio', NaN, 'x', { op: '<=', value: 0.5 });
      }
      add('flotilla_rss_hwm_mb', procMemory(flotilla.proc.pid).peakRssBytes / MB, 'MB');

      // A label selector matching about 100 objects fleet-wide: g<size> labels group consecutive pods.
      const size = GROUP_SIZES.reduce((best, s) => (Math.abs(s * names.length - 100) < Math.abs(best * names.length - 100) ? s : best));
      const group = Math.floor(seed.pods / 2 / size);
      const selector = `labelSelector=${encodeURIComponent(`${GROUP_LABEL(size)}=g${group}`)}`;
      const selCounter = occurrenceCounter('{"kind":"Pod","apiVersion":"v1"');
      ok(await viaFlotilla.get(`/api/v1/pods?${selector}`, { timeoutMs: BIG_TIMEOUT_MS, onChunk: selCounter.onChunk }), 'flotilla selected list');
      await fanOut(`resourceVersion=0&${selector}`);
      const selMs: number[] = [];
      const selStarted = performance.now();
      while (selMs.length < ctx.profile.selectorRuns && (selMs.length < 20 || performance.now() - selStarted < ctx.profile.selectorBudgetMs)) {
        selMs.push(ok(await viaFlotilla.get(`/api/v1/pods?${selector}`, { timeoutMs: BIG_TIMEOUT_MS }), 'flotilla selected list').ms);
      }
      const selDirectMs: number[] = [];
      const directStarted = performance.now();
      while (selDirectMs.length < Math.min(50, ctx.profile.selectorRuns) && (selDirectMs.length < 10 || performance.now() - directStarted < ctx.profile.selectorBudgetMs / 3)) {
        selDirectMs.push((await fanOut(`resourceVersion=0&${selector}`)).ms);
      }
      add('label_selected_objects', selCounter.count(), 'objects');
      add('label_selected_p50_ms', percentile(selMs, 50), 'ms', { op: '<=', value: 20 });
      add('label_selected_p99_ms', percentile(selMs, 99), 'ms', { op: '<=', value: 50 });
      add('label_selected_direct_p50_ms', percentile(selDirectMs, 50), 'ms');
      notes.push(`label selector ${decodeURIComponent(selector.slice('labelSelector='.length))}: ${selMs.length} sequential requests through flotilla, ${selDirectMs.length} direct fan-outs`);
      return { figures, facts: { objects, objectBytes: Number.isNaN(servedBytes) ? seed.memberBytesAvg : servedBytes, objectBytesAre: Number.isNaN(servedBytes) ? 'as the member stores it, managedFields included' : 'as flotilla serves it: managedFields dropped, cluster annotation added', notes } };
    } finally {
      viaFlotilla.close();
      direct.close();
    }
  },
};
