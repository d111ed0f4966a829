import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { CachedResource } from '../../src/cacher/cache-roles.js';
import { listResponse } from '../../src/mux/reads.js';
import { SnapshotRegistry } from '../../src/mux/snapshots.js';
import { WatchHub } from '../../src/mux/watch-hub.js';
import { NamespaceForest, NAMESPACES } from '../../src/hierarchy/namespace-forest.js';
import { SUBNAMESPACE_OF } from '../../src/hierarchy/namespace-tree.js';
import { Store, type Change } from '../../src/store/store.js';
import { selectsByHierarchy } from '../../src/view/step-hierarchy.js';
import { buildReadView } from '../../src/view/steps.js';
import type { ReadView } from '../../src/view/read-view.js';
import type { ViewRequest } from '../../src/view/view-step.js';
import { percentile } from '../lib/http.js';
import { figureSink, type Scenario } from '../lib/scenario.js';
import { alternatingRounds, drain, ingested, openDiscardingWatchers, storedPod } from '../lib/in-process.js';

const PODS = 'v1/pods';
const CLUSTER = 'bench';
const BATCH = 5000;
const LIST_ROUNDS = 9;
const ROUND_MS = 1000;
const TEAM_LABEL = 'bench.flotilla.io/team';

const podInfo = { group: '', version: 'v1', resource: 'pods', kind: 'Pod', namespaced: true, singularName: 'pod', shortNames: [], categories: [], memberVerbs: [] };
const pods: CachedResource = { info: podInfo, clusters: [CLUSTER] };

/**
 * hierarchy: hierarchy selectors' own cost, in this process on a store of its own (no member, no
 * HTTP), as `views` measures the read view. The full profile is issue 29's shape: 100k pods in
 * 10,000 namespaces, ten teams of 1,000 namespaces each (a root, 9 children, each with 110
 * grandchildren, 1 great-grandchild each… as far as 1,000 go), 10 pods per namespace; the quick
 * profile a tenth of it.
 * - A list of one team's subtree by `<team>.tree.hnc.x-k8s.io/depth` against a label-selected list
 *   of the same pods (each carries its team as a label), alternating 1 s rounds, unpaged.
 * - A namespace holding 10,000 pods (1,000 in the quick profile) moved into a team's subtree while
 *   100 watchers select that subtree: the time from the namespace's commit until every watcher
 *   has every ADDED line (the forest's 100 ms settle included), and the CPU it took.
 */
export const hierarchy: Scenario = {
  name: 'hierarchy',
  async run(ctx, emit) {
    const scale = ctx.profile.name === 'full' ? 1 : ctx.profile.pods >= 10_000 ? 10 : 100;
    const teams = 10;
    const perTeam = 1000 / scale;
    const podsPerNamespace = 10;
    const moved = 10_000 / scale;
    const watchers = 100;
    const dir = join(ctx.dir, 'hierarchy-store');
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    const store = Store.open(dir);
    const snapshots = new SnapshotRegistry(store);
    const forest = new NamespaceForest(store);
    const { figures, add } = figureSink('hierarchy', emit);
    const notes: string[] = [];
    try {
      const fillStarted = performance.now();
      let rv = 1;
      // The tree: each team a root whose namespaces hang in a broad, shallow tree (parent = (i-1)/10).
      const namespaces: Change[] = [];
      const members: string[][] = [];
      for (let t = 0; t < teams; t++) {
        const names = Array.from({ length: perTeam }, (_, i) => (i === 0 ? `team-${t}` : `t${t}-ns-${i}`));
        members.push(names);
        names.forEach((name, i) => namespaces.push(namespaceChange(name, i === 0 ? undefined : names[Math.floor((i - 1) / 10)], String(++rv))));
      }
      namespaces.push(namespaceChange('moving', 'team-1', String(++rv)));
      await store.commit({ cluster: CLUSTER, resource: NAMESPACES }, namespaces, { rv: String(rv) }, { log: false, fresh: true });
      let batch: Change[] = [];
      const flush = async () => {
        if (batch.length) await store.commit({ cluster: CLUSTER, resource: PODS }, batch, { rv: String(rv) }, { log: false, fresh: true });
        batch = [];
      };
      for (let t = 0; t < teams; t++) {
        for (const ns of members[t]!) {
          for (let p = 0; p < podsPerNamespace; p++) {
            batch.push(storedPod(CLUSTER, ns, `p-${p}`, String(++rv), { [TEAM_LABEL]: `team-${t}` }));
            if (batch.length >= BATCH) await flush();
          }
        }
      }
      for (let p = 0; p < moved; p++) {
        batch.push(storedPod(CLUSTER, 'moving', `m-${p}`, String(++rv), { [TEAM_LABEL]: 'team-1' }));
        if (batch.length >= BATCH) await flush();
      }
      await flush();
      const total = teams * perTeam * podsPerNamespace + moved;
      notes.push(`${total} pods in ${teams * perTeam + 1} namespaces (${teams} teams of ${perTeam}, ${podsPerNamespace} pods each, and one of ${moved}) committed in ${((performance.now() - fillStarted) / 1000).toFixed(1)} s`);

      // The subtree of team-3, by the tree and by a label.
      const request = (labelSelector: string, watching: boolean): ViewRequest => ({ resource: pods, watching, labelSelector, hierarchy: forest });
      const byTree = buildReadView(request('team-3.tree.hnc.x-k8s.io/depth', false));
      const byLabel = buildReadView(request(`${TEAM_LABEL}=team-3`, false));
      const listOf = (view: ReadView) => drain(listResponse(store, { resource: pods, view, form: 'object', snapshots, caller: 'bench' }));
      const sizes = { tree: listOf(byTree), label: listOf(byLabel) };
      if (sizes.tree.items !== sizes.label.items || sizes.tree.items !== perTeam * podsPerNamespace) throw new Error(`hierarchy: the lists hold ${sizes.tree.items} and ${sizes.label.items} pods, expected ${perTeam * podsPerNamespace}`);
      const ms = alternatingRounds({ tree: () => listOf(byTree), label: () => listOf(byLabel) }, ['tree', 'label'], LIST_ROUNDS, ROUND_MS);
      add('subtree_objects', sizes.tree.items, 'objects');
      add('subtree_list_p50_ms', percentile(ms.tree, 50), 'ms');
      add('label_selected_p50_ms', percentile(ms.label, 50), 'ms');
      add('subtree_list_vs_label', percentile(ms.tree, 50) / percentile(ms.label, 50), 'x', { op: '<=', value: 1.5 });
      notes.push(`lists of a ${perTeam}-namespace subtree (${sizes.tree.items} pods of ${total}) by team-3.tree.hnc.x-k8s.io/depth and by ${TEAM_LABEL}=team-3; ${ms.tree.length} and ${ms.label.length} lists in ${LIST_ROUNDS} alternating rounds of ${ROUND_MS} ms`);

      // The move: 100 watchers of team-0's subtree, then `moving` (under team-1) moves under team-0.
      const hub = new WatchHub(store);
      const stopFollowing = forest.onChange(() => hub.reviseViews(selectsByHierarchy));
      const watchRequest = request('team-0.tree.hnc.x-k8s.io/depth', true);
      const responses = openDiscardingWatchers(hub, watchers, () => ({ resource: pods, view: buildReadView(watchRequest), since: store.latestRVs(PODS), revise: () => buildReadView(watchRequest) }));
      try {
        await new Promise((r) => setTimeout(r, 300));
        const all = () => responses.every((r) => r.lines >= moved);
        const cpu0 = process.cpuUsage();
        const started = performance.now();
        const next = namespaceChange('moving', 'team-0', String(++rv));
        await store.commit({ cluster: CLUSTER, resource: NAMESPACES }, [{ ...next, type: 'MODIFIED' }], { rv: String(rv) }, { log: true });
        while (!all() && performance.now() - started < 60_000) await new Promise((r) => setTimeout(r, 2));
        const elapsed = performance.now() - started;
        const cpu = process.cpuUsage(cpu0);
        if (!all()) throw new Error(`hierarchy: after 60 s, watchers had ${Math.min(...responses.map((r) => r.lines))} of ${moved} ADDED lines`);
        add('move_to_watchers_ms', elapsed, 'ms', { op: '<=', value: 1000 });
        add('move_cpu_ms', (cpu.user + cpu.system) / 1000, 'ms');
        notes.push(`a namespace of ${moved} pods moved into the subtree ${watchers} watchers select: every watcher had its ${moved} ADDED lines ${elapsed.toFixed(0)} ms after the namespace's commit (100 ms of it the forest's settle), ${((cpu.user + cpu.system) / 1000).toFixed(0)} ms CPU`);
      } finally {
        stopFollowing();
        hub.closeAll();
        for (const r of responses) r.destroy();
      }
      return { figures, facts: { objects: total, objectBytes: sizes.tree.bytes / Math.max(1, sizes.tree.items), objectBytesAre: 'per pod as stored', notes } };
    } finally {
      forest.close();
      snapshots.close();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  },
};

function namespaceChange(name: string, parent: string | undefined, rv: string): Change {
  return ingested(CLUSTER, 'Namespace', { metadata: { name, uid: `ns-${name}`, resourceVersion: rv, labels: { 'kubernetes.io/metadata.name': name }, ...(parent ? { annotations: { [SUBNAMESPACE_OF]: parent } } : {}) }, spec: { finalizers: ['kubernetes'] }, status: { phase: 'Active' } }, rv);
}
