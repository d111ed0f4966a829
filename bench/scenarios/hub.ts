import { join } from 'node:path';
import { FLEET_GROUP, FLEET_PATH, FLEET_VERSION } from '../../src/api/fleet-path.js';
import { findProjectRoot } from '../../test/fleet/fleet.js';
import { apiServiceAvailable, installChart, startHub } from '../../test/fleet/hub.js';
import { freePort, startFlotillaProcess } from '../../test/support/flotilla-process.js';
import { helmBinary } from '../../test/support/helm.js';
import { PODS_RESOURCE } from '../lib/context.js';
import { cpuSeconds } from '../lib/cpu-time.js';
import { BenchClient, median, occurrenceCounter } from '../lib/http.js';
import { LIST_TIMEOUT_MS, POD_ITEM, expectObjects, figureSink, ok, type Scenario } from '../lib/scenario.js';
import type { MemberEndpoint } from '../../test/fleet/http.js';

/** Rounds of the three ways, alternated; each round one list each way. */
const ROUNDS = 15;
const PODS = '/api/v1/pods';

/**
 * hub: flotilla as the APIService of a hub (aggregated mode), against flotilla asked directly.
 * A hub kube-apiserver beside the bench fleet (the fleet's etcd, a prefix of its own) with the
 * aggregation layer's front proxy; flotilla's Helm chart applied to it, its Service an
 * ExternalName to a flotilla on this machine caching the seeded pods under one cluster name
 * (10k pods, one real member). The same fleet-wide list three ways, in alternating order, each
 * read to its last byte: through the hub (`…/apis/search.flotilla.io/v1alpha1/fleet/api/v1/pods`,
 * the hub authenticating the bearer token and proxying with its front-proxy certificate), straight
 * to flotilla at that path, and straight to flotilla at `/api/v1/pods`. The hub's own share is
 * what its hop adds to a list, over the list through it; the CPU each process spends per list is
 * read from /proc.
 */
export const hub: Scenario = {
  name: 'hub',
  async run(ctx, emit) {
    const { figures, add } = figureSink('hub', emit);
    const notes: string[] = [];
    const seed = await ctx.ensureSeeded();
    const fleet = ctx.fleet!.info;
    const hubPlane = await startHub({ fleet, dir: join(ctx.dir, 'hub'), log: ctx.log });
    ctx.adopt(() => hubPlane.stop());
    const port = await freePort();
    const chart = await installChart(hubPlane, { helm: helmBinary(), chart: join(findProjectRoot(), 'deploy', 'helm', 'flotilla'), port, dir: join(ctx.dir, 'hub-chart') });
    const flotilla = await startFlotillaProcess({
      fleet, dir: join(ctx.dir, 'hub-flotilla'), members: ctx.registered(1), resources: PODS_RESOURCE, port, tls: chart,
      authentication: null, args: [`--hub-kubeconfig=${chart.kubeconfig}`], waitReady: true,
    });
    ctx.adopt(() => flotilla.stop());
    await apiServiceAvailable(hubPlane, FLEET_GROUP, FLEET_VERSION);

    // The fleet admin's token: the hub knows it (the fleet's token file), so does flotilla through the hub.
    const ways: Record<'hub' | 'prefixed' | 'direct', { ep: MemberEndpoint; path: string }> = {
      hub: { ep: { ...hubPlane.apiserver, server: `${hubPlane.apiserver.server}${FLEET_PATH}` }, path: PODS },
      prefixed: { ep: flotilla.endpoint, path: `${FLEET_PATH}${PODS}` },
      direct: { ep: flotilla.endpoint, path: PODS },
    };
    const clients = Object.fromEntries(Object.entries(ways).map(([k, w]) => [k, new BenchClient(w.ep)])) as Record<keyof typeof ways, BenchClient>;
    try {
      // Checked before timed: every way lists every seeded pod, the same bytes.
      const sizes: Record<string, { items: number; bytes: number }> = {};
      for (const [way, w] of Object.entries(ways)) {
        const counter = occurrenceCounter(POD_ITEM);
        const r = ok(await clients[way as keyof typeof ways].get(w.path, { timeoutMs: LIST_TIMEOUT_MS, onChunk: counter.onChunk }), `hub: the fleet list (${way})`);
        sizes[way] = { items: expectObjects(counter.count(), seed.pods, `hub: the list ${way}`), bytes: r.bytes };
      }
      // The lists differ only in their resourceVersion's moment; their sizes may differ by a few bytes.
      if (Math.abs(sizes.hub!.bytes - sizes.direct!.bytes) > 64) throw new Error(`hub: the list through the hub is ${sizes.hub!.bytes} B, directly ${sizes.direct!.bytes} B`);

      const ms: Record<keyof typeof ways, number[]> = { hub: [], prefixed: [], direct: [] };
      const cpu = { hub: 0, flotilla: 0 };
      const order: (keyof typeof ways)[] = ['hub', 'prefixed', 'direct'];
      for (let round = 0; round < ROUNDS; round++) {
        // Each way goes first in turn.
        const turn = [...order.slice(round % 3), ...order.slice(0, round % 3)];
        for (const way of turn) {
          const before = { hub: cpuSeconds(hubPlane.process.pid), flotilla: cpuSeconds(flotilla.proc.pid) };
          ms[way].push(ok(await clients[way].get(ways[way].path, { timeoutMs: LIST_TIMEOUT_MS }), `hub: the fleet list (${way})`).ms);
          if (way === 'hub') {
            cpu.hub += cpuSeconds(hubPlane.process.pid) - before.hub;
            cpu.flotilla += cpuSeconds(flotilla.proc.pid) - before.flotilla;
          }
        }
      }
      const hubMs = median(ms.hub);
      const directMs = median(ms.direct);
      add('hub_list_objects', seed.pods, 'objects');
      add('hub_list_bytes', sizes.hub!.bytes, 'bytes');
      add('direct_list_p50_ms', directMs, 'ms');
      add('direct_prefixed_list_p50_ms', median(ms.prefixed), 'ms');
      add('hub_list_p50_ms', hubMs, 'ms');
      add('hub_list_vs_direct', hubMs / directMs, 'x');
      add('hub_share_of_hub_list', (hubMs - directMs) / hubMs, 'fraction');
      add('hub_cpu_ms_per_hub_list', (cpu.hub * 1000) / ROUNDS, 'ms');
      add('flotilla_cpu_ms_per_hub_list', (cpu.flotilla * 1000) / ROUNDS, 'ms');
      notes.push(`${seed.pods} pods of one real member under one cluster name; ${ROUNDS} rounds of one list each way (through the hub, straight to flotilla under ${FLEET_PATH}, straight to flotilla at the root), each way first in turn; CPU from /proc per list through the hub (the hub's kube-apiserver, and flotilla behind it; /proc counts in 10 ms ticks)`);
      return { figures, facts: { objects: seed.pods, objectBytes: Math.round(sizes.direct!.bytes / seed.pods), objectBytesAre: 'per pod in the JSON list', notes } };
    } finally {
      for (const c of Object.values(clients)) c.close();
    }
  },
};
