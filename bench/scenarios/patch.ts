import { BenchClient, percentile } from '../lib/http.js';
import { figureSink, ok, type Scenario } from '../lib/scenario.js';

const ROUNDS = 300;

/**
 * patch: the latency a proxied write adds. The same merge patch (an annotation, as a
 * service-discovery controller writes) goes to one pod through flotilla (`/clusters/<name>/`)
 * and straight to the member, alternating, sequentially, on warm keep-alive connections.
 * Flotilla authenticates the caller (a cached TokenReview) and forwards with Impersonate-*
 * headers, which the member then checks.
 *
 * The target figures come from flotilla caching the member under one name: as in a real fleet,
 * a patch makes one watch event in one cacher. Under every bench name, each patch comes back as
 * one event per name (100 in the full profile) while the answer returns; that is measured first,
 * without a target.
 */
export const patch: Scenario = {
  name: 'patch',
  async run(ctx, emit) {
    const seed = await ctx.ensureSeeded();
    const ns = seed.namespaces[0]!;
    const direct = new BenchClient(ctx.member);
    const pods = JSON.parse((ok(await direct.get(`/api/v1/namespaces/${ns}/pods?limit=1`, { keepHead: 1 << 20 }), 'pick a pod')).head!) as { items: { metadata: { name: string } }[] };
    const pod = pods.items[0]!.metadata.name;
    const path = `/api/v1/namespaces/${ns}/pods/${pod}`;
    const name = ctx.registered()[0]!.name;
    const { figures, add } = figureSink('patch', emit);
    try {
      const body = (i: number) => JSON.stringify({ metadata: { annotations: { 'bench.flotilla.io/seq': String(i) } } });
      /** The same patch through flotilla (caching the member under `names` names) and direct, alternating; the first 20 warm up connections and the token review cache. */
      const alternate = async (names: number, viaPath: string, directPath: string, what: string) => {
        const client = await ctx.flotillaClient(names);
        const viaMs: number[] = [];
        const directMs: number[] = [];
        for (let i = -20; i < ROUNDS; i++) {
          const a = ok(await client.send('PATCH', viaPath, { body: body(i), contentType: 'application/merge-patch+json' }), `patch ${what} through flotilla`);
          const b = ok(await direct.send('PATCH', directPath, { body: body(i), contentType: 'application/merge-patch+json' }), `patch ${what} direct`);
          if (i >= 0) {
            viaMs.push(a.ms);
            directMs.push(b.ms);
          }
        }
        return { viaMs, directMs };
      };
      const added = (r: { viaMs: number[]; directMs: number[] }, p: number) => percentile(r.viaMs, p) - percentile(r.directMs, p);
      const allNames = ctx.profile.names;
      if (allNames > 1) {
        const everyName = await alternate(allNames, `/clusters/${name}${path}`, path, 'pod');
        add('all_names_added_p50_ms', added(everyName, 50), 'ms');
        add('all_names_added_p99_ms', added(everyName, 99), 'ms');
      }
      const one = await alternate(1, `/clusters/${name}${path}`, path, 'pod');
      add('direct_p50_ms', percentile(one.directMs, 50), 'ms');
      add('direct_p99_ms', percentile(one.directMs, 99), 'ms');
      add('flotilla_p50_ms', percentile(one.viaMs, 50), 'ms');
      add('flotilla_p99_ms', percentile(one.viaMs, 99), 'ms');
      add('added_p50_ms', added(one, 50), 'ms', { op: '<=', value: 2 });
      add('added_p99_ms', added(one, 99), 'ms', { op: '<=', value: 10 });
      // A ConfigMap flotilla does not cache: the forwarding alone, with no watch event for the
      // cache to take in while the answer comes back.
      const cmPath = `/api/v1/namespaces/${ns}/configmaps/bench-patch`;
      const created = await direct.send('POST', `/api/v1/namespaces/${ns}/configmaps`, { body: JSON.stringify({ metadata: { name: 'bench-patch' } }) });
      if (created.status !== 200 && created.status !== 409) throw new Error(`create configmap ${ns}/bench-patch: HTTP ${created.status}: ${created.errorText}`);
      const cms = await alternate(1, `/clusters/${name}${cmPath}`, cmPath, 'configmap');
      add('uncached_added_p50_ms', added(cms, 50), 'ms');
      add('uncached_added_p99_ms', added(cms, 99), 'ms');
      return {
        figures,
        facts: {
          objects: 1,
          objectBytes: seed.memberBytesAvg,
          objectBytesAre: 'as the member stores the pod',
          notes: [`${ROUNDS} merge patches of one annotation on ${ns}/${pod}, through flotilla and direct alternating, after 20 warm-up rounds each; added = flotilla percentile − direct percentile, with flotilla caching the member's ${seed.pods} pods under one cluster name (one watch event per patch, as in a real fleet); all_names_added: the same with every pod cached under all ${allNames} names, so each patch comes back as ${allNames} watch events; uncached_added: a ConfigMap flotilla does not cache, under one name`],
        },
      };
    } finally {
      direct.close();
    }
  },
};
