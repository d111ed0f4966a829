import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { CachedResource } from '../../src/cacher/cache-roles.js';
import { listResponse } from '../../src/mux/reads.js';
import { SnapshotRegistry } from '../../src/mux/snapshots.js';
import { WatchHub } from '../../src/mux/watch-hub.js';
import { Store, type Change } from '../../src/store/store.js';
import { buildReadView, VIEW_STEPS } from '../../src/view/steps.js';
import type { ViewStep } from '../../src/view/view-step.js';
import type { ReadView } from '../../src/view/read-view.js';
import { percentile } from '../lib/http.js';
import { figureSink, type Scenario } from '../lib/scenario.js';
import { alternatingRounds, drain, openDiscardingWatchers, storedPod } from '../lib/in-process.js';

const RESOURCE = 'v1/pods';
const CLUSTER = 'bench';
const PER_NAMESPACE = 1000;
const BATCH = 5000;
const LIST_ROUNDS = 9;
const ROUND_MS = 1000;
const WATCHERS = 1000;
const VIEWS = 10;
const WATCH_OBJECTS_PER_NAMESPACE = 20;
const WATCH_COMMITS = 200;

const info = { group: '', version: 'v1', resource: 'pods', kind: 'Pod', namespaced: true, singularName: 'pod', shortNames: [], categories: [], memberVerbs: [] };
const resource: CachedResource = { info, clusters: [CLUSTER] };
const nsName = (i: number) => `ns-${String(i).padStart(4, '0')}`;

/** A step as a tenant or hierarchy step will be: the caller sees a set of namespaces. */
const namespaceSet = (namespaces: string[]): ViewStep => ({ name: 'bench-namespaces', apply: (view) => view.keepNamespaces(namespaces) });

/**
 * views: the read view's own cost, in this process on a store of its own (no member, no HTTP:
 * it times the view inside the list and the watch fan-out, nothing around it).
 * - A view narrowed to 10 namespaces of `namespaces` × 1000 pods (1M in the full profile) lists
 *   as one key range per namespace; against a label-selected list of as many objects (the label
 *   index, then each object read by key), alternating 1 s rounds, unpaged, every byte produced.
 * - 1000 watchers of one resource with 10 distinct views (each a namespace of ten, as teams or
 *   tenants watch) against 1000 watchers with one view, the same live events committed to both:
 *   CPU of the fan-out (dispatch, encoding, queueing, the flush into discarding responses) per
 *   delivered line.
 */
export const views: Scenario = {
  name: 'views',
  async run(ctx, emit) {
    // 1M objects in the full profile, 100k in the quick one, 10k in the bench's own test.
    const namespaces = ctx.profile.name === 'full' ? 1000 : ctx.profile.pods >= 10_000 ? 100 : 10;
    const dir = join(ctx.dir, 'views-store');
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    const store = Store.open(dir);
    const snapshots = new SnapshotRegistry(store);
    const { figures, add } = figureSink('views', emit);
    const notes: string[] = [];
    try {
      // Ten namespaces, spread over the range; the label value held by as many objects.
      const spread = namespaces / 10;
      const fillStarted = performance.now();
      let objectBytes = 0;
      let rv = 1;
      let batch: Change[] = [];
      for (let n = 0; n < namespaces; n++) {
        for (let p = 0; p < PER_NAMESPACE; p++) {
          const i = n * PER_NAMESPACE + p;
          const c = storedPod(CLUSTER, nsName(n), `p-${p}`, String(++rv), { app: 'bench', 'bench.flotilla.io/spread': `s${i % spread}` });
          objectBytes = c.bytes.length;
          batch.push(c);
          if (batch.length >= BATCH) {
            await store.commit({ cluster: CLUSTER, resource: RESOURCE }, batch, { rv: String(rv) }, { log: false, fresh: true });
            batch = [];
          }
        }
      }
      if (batch.length) await store.commit({ cluster: CLUSTER, resource: RESOURCE }, batch, { rv: String(rv) }, { log: false, fresh: true });
      const total = namespaces * PER_NAMESPACE;
      notes.push(`${total} pods in ${namespaces} namespaces committed in ${((performance.now() - fillStarted) / 1000).toFixed(1)} s`);

      const offset = 3 % spread;
      const chosen = Array.from({ length: 10 }, (_, k) => nsName(k * spread + offset));
      const byNamespaces = buildReadView({ resource, watching: false }, [...VIEW_STEPS, namespaceSet(chosen)]);
      const byLabel = buildReadView({ resource, watching: false, labelSelector: `bench.flotilla.io/spread=s${offset}` });
      const listOf = (view: ReadView) => drain(listResponse(store, { resource, view, form: 'object', snapshots, caller: 'bench' }));
      const sizes = { namespaces: listOf(byNamespaces), label: listOf(byLabel) };
      if (sizes.namespaces.items !== sizes.label.items) throw new Error(`views: the two lists differ in size (${sizes.namespaces.items} vs ${sizes.label.items})`);
      const ms = alternatingRounds({ namespaces: () => listOf(byNamespaces), label: () => listOf(byLabel) }, ['namespaces', 'label'], LIST_ROUNDS, ROUND_MS);
      add('namespace_view_objects', sizes.namespaces.items, 'objects');
      add('namespace_view_p50_ms', percentile(ms.namespaces, 50), 'ms');
      add('label_selected_p50_ms', percentile(ms.label, 50), 'ms');
      add('namespace_view_vs_label', percentile(ms.namespaces, 50) / percentile(ms.label, 50), 'x', { op: '<=', value: 1 });
      notes.push(`lists of ${sizes.namespaces.items} objects of ${total}: 10 namespaces as a view, and a label selector; ${ms.namespaces.length} and ${ms.label.length} lists in ${LIST_ROUNDS} alternating rounds of ${ROUND_MS} ms`);

      const fanOut = await watchFanOut(store);
      add('watch_ten_namespace_views_vs_one', fanOut.namespaceViews, 'x', { op: '<=', value: 1.5 });
      add('watch_ten_selector_views_vs_one', fanOut.selectorViews, 'x', { op: '<=', value: 1.5 });
      notes.push(...fanOut.notes);
      return { figures, facts: { objects: total, objectBytes, objectBytesAre: 'per pod as stored', notes } };
    } finally {
      snapshots.close();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  },
};

/**
 * Live events to 1000 watchers, CPU per delivered line, with the views compared at the same lines
 * per flush (a write's cost is per write, not per line, so that must not differ):
 * - ten namespace views (teams, tenants): events spread over ten namespaces, two per namespace per
 *   commit, against one view with two events per commit;
 * - ten label-selector views that all match every event (the view evaluated for every watcher,
 *   lines shared across views), against one view, twenty events per commit both.
 */
async function watchFanOut(store: Store): Promise<{ namespaceViews: number; selectorViews: number; notes: string[] }> {
  const watchResource: CachedResource = { info: { ...info, resource: 'configmaps', kind: 'ConfigMap' }, clusters: [CLUSTER] };
  const key = 'v1/configmaps';
  const objects: Change[] = [];
  let rv = 1;
  for (let n = 0; n < VIEWS; n++) for (let p = 0; p < WATCH_OBJECTS_PER_NAMESPACE; p++) objects.push(storedPod(CLUSTER, nsName(n), `w-${p}`, String(++rv), { app: 'bench', shard: `s${p % VIEWS}` }));
  await store.commit({ cluster: CLUSTER, resource: key }, objects, { rv: String(rv) }, { log: false, fresh: true });
  const notes: string[] = [];
  // Event e of commit b: spread over the namespaces round robin.
  const objectFor = (b: number, e: number) => objects[(e % VIEWS) * WATCH_OBJECTS_PER_NAMESPACE + ((b + Math.floor(e / VIEWS)) % WATCH_OBJECTS_PER_NAMESPACE)]!;
  const run = async (label: string, viewFor: (w: number) => ReadView, perCommit: number): Promise<number> => {
    let us = 0;
    // The second of two runs counts (the first warms up).
    for (let attempt = 0; attempt < 2; attempt++) {
      const hub = new WatchHub(store);
      const responses = openDiscardingWatchers(hub, WATCHERS, (w) => ({ resource: watchResource, view: viewFor(w), since: store.latestRVs(key) }));
      await new Promise((r) => setTimeout(r, 200));
      const before = hub.stats();
      const cpu0 = process.cpuUsage();
      for (let b = 0; b < WATCH_COMMITS; b++) {
        const changes = Array.from({ length: perCommit }, (_, e) => ({ ...objectFor(b, e), type: 'MODIFIED' as const, rv: String(++rv) }));
        await store.commit({ cluster: CLUSTER, resource: key }, changes, { rv: String(rv) }, { log: true });
        await new Promise((r) => setImmediate(r));
      }
      await new Promise((r) => setTimeout(r, 100));
      const cpu = process.cpuUsage(cpu0);
      const after = hub.stats();
      const lines = after.liveLines - before.liveLines;
      const writes = after.liveWrites - before.liveWrites;
      us = (cpu.user + cpu.system) / lines;
      if (attempt === 1) notes.push(`${label}: ${WATCH_COMMITS} commits of ${perCommit} events to ${WATCHERS} watchers, ${lines} lines in ${writes} writes, ${us.toFixed(2)} µs CPU per line`);
      hub.closeAll();
      for (const r of responses) r.destroy();
    }
    return us;
  };
  const oneView = buildReadView({ resource: watchResource, watching: true });
  const namespaceViews = Array.from({ length: VIEWS }, (_, v) => buildReadView({ resource: watchResource, watching: true, namespace: nsName(v) }));
  // Ten distinct selectors, each true of every object.
  const selectorViews = Array.from({ length: VIEWS }, (_, v) => buildReadView({ resource: watchResource, watching: true, labelSelector: `app=bench,shard!=none-${v}` }));
  const oneAtTwo = await run('one view, 2 events per commit', () => oneView, 2);
  const tenNamespaces = await run(`${VIEWS} namespace views, 2 events per namespace per commit`, (w) => namespaceViews[w % VIEWS]!, 2 * VIEWS);
  const oneAtTwenty = await run('one view, 20 events per commit', () => oneView, 20);
  const tenSelectors = await run(`${VIEWS} label-selector views, each matching every event`, (w) => selectorViews[w % VIEWS]!, 20);
  return { namespaceViews: tenNamespaces / oneAtTwo, selectorViews: tenSelectors / oneAtTwenty, notes };
}


