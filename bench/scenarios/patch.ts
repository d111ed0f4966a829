import { BenchClient, percentile } from '../lib/http.js';
import { figureSink, ok, type Scenario } from '../lib/scenario.js';

const ROUNDS = 300;

/**
 * patch: the latency a proxied write adds. The same merge patch (an annotation, as a
 * service-discovery controller writes) goes to one pod through flotilla (`/clusters/<name>/`,
 * since the bench's member is registered under several names) and straight to the member,
 * alternating, sequentially, on warm keep-alive connections. Flotilla authenticates the caller
 * (a cached TokenReview) and forwards with Impersonate-* headers, which the member then checks.
 */
export const patch: Scenario = {
  name: 'patch',
  async run(ctx, emit) {
    const seed = await ctx.ensureSeeded();
    const flotilla = await ctx.ensureFlotilla();
    const name = ctx.registered()[0]!.name;
    const ns = seed.namespaces[0]!;
    const pods = JSON.parse((ok(await new BenchClient(ctx.member).get(`/api/v1/namespaces/${ns}/pods?limit=1`, { keepHead: 1 << 20 }), 'pick a pod')).head!) as { items: { metadata: { name: string } }[] };
    const pod = pods.items[0]!.metadata.name;
    const path = `/api/v1/namespaces/${ns}/pods/${pod}`;
    const via = new BenchClient(flotilla.endpoint);
    const direct = new BenchClient(ctx.member);
    const { figures, add } = figureSink('patch', emit);
    try {
      const body = (i: number) => JSON.stringify({ metadata: { annotations: { 'bench.flotilla.io/seq': String(i) } } });
      /** The same patch through flotilla and direct, alternating; the first 20 warm up connections and the token review cache. */
      const alternate = async (viaPath: string, directPath: string, what: string) => {
        const viaMs: number[] = [];
        const directMs: number[] = [];
        for (let i = -20; i < ROUNDS; i++) {
          const a = ok(await via.send('PATCH', viaPath, { body: body(i), contentType: 'application/merge-patch+json' }), `patch ${what} through flotilla`);
          const b = ok(await direct.send('PATCH', directPath, { body: body(i), contentType: 'application/merge-patch+json' }), `patch ${what} direct`);
          if (i >= 0) {
            viaMs.push(a.ms);
            directMs.push(b.ms);
          }
        }
        return { viaMs, directMs };
      };
      const pods = await alternate(`/clusters/${name}${path}`, path, 'pod');
      add('direct_p50_ms', percentile(pods.directMs, 50), 'ms');
      add('direct_p99_ms', percentile(pods.directMs, 99), 'ms');
      add('flotilla_p50_ms', percentile(pods.viaMs, 50), 'ms');
      add('flotilla_p99_ms', percentile(pods.viaMs, 99), 'ms');
      add('added_p50_ms', percentile(pods.viaMs, 50) - percentile(pods.directMs, 50), 'ms', { op: '<=', value: 2 });
      add('added_p99_ms', percentile(pods.viaMs, 99) - percentile(pods.directMs, 99), 'ms', { op: '<=', value: 10 });
      // A ConfigMap flotilla does not cache: the forwarding alone, with no watch event for the
      // cache to take in while the answer comes back.
      const cmPath = `/api/v1/namespaces/${ns}/configmaps/bench-patch`;
      const created = await direct.send('POST', `/api/v1/namespaces/${ns}/configmaps`, { body: JSON.stringify({ metadata: { name: 'bench-patch' } }) });
      if (created.status !== 200 && created.status !== 409) throw new Error(`create configmap ${ns}/bench-patch: HTTP ${created.status}: ${created.errorText}`);
      const cms = await alternate(`/clusters/${name}${cmPath}`, cmPath, 'configmap');
      add('uncached_added_p50_ms', percentile(cms.viaMs, 50) - percentile(cms.directMs, 50), 'ms');
      add('uncached_added_p99_ms', percentile(cms.viaMs, 99) - percentile(cms.directMs, 99), 'ms');
      return {
        figures,
        facts: {
          objects: 1,
          objectBytes: seed.memberBytesAvg,
          objectBytesAre: 'as the member stores the pod',
          notes: [`${ROUNDS} merge patches of one annotation on ${ns}/${pod}, through flotilla and direct alternating, after 20 warm-up rounds each; added = flotilla percentile − direct percentile; uncached_added: the same for a ConfigMap flotilla does not cache`],
        },
      };
    } finally {
      via.close();
      direct.close();
    }
  },
};
