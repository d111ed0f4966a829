import { BenchClient, median, occurrenceCounter, type TimedResponse } from '../lib/http.js';
import { figureSink, ok, type Scenario } from '../lib/scenario.js';

const ROUNDS = 7;
const TABLE_OBJECTS = 10_000;
// What kubectl get sends.
const KUBECTL_ACCEPT = 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json';
const KUBECTL_CHUNK = 500;

/**
 * table: `kubectl get pods -A` of 10k pods, as Table rows, through flotilla (one cluster name, so
 * both sides hold the same 10k pods) against the one member apiserver serving them. Twice: as one
 * request of 10k, and as kubectl pages it (limit 500, following continue). Alternating sides,
 * median of rounds.
 */
export const table: Scenario = {
  name: 'table',
  async run(ctx, emit) {
    const seed = await ctx.ensureSeeded();
    const flotilla = await ctx.ensureFlotilla();
    const name = ctx.registered()[0]!.name;
    const count = Math.min(TABLE_OBJECTS, seed.pods);
    const sides = {
      flotilla: { client: new BenchClient(flotilla.endpoint), path: `/clusters/${name}/api/v1/pods` },
      direct: { client: new BenchClient(ctx.member), path: '/api/v1/pods' },
    };
    const { figures, add } = figureSink('table', emit);
    try {
      const whole = async (side: keyof typeof sides): Promise<TimedResponse> => {
        const rows = occurrenceCounter('{"cells":[');
        const r = ok(await sides[side].client.get(`${sides[side].path}?limit=${count}`, { accept: KUBECTL_ACCEPT, timeoutMs: 300_000, onChunk: rows.onChunk }), `${side} table`);
        if (rows.count() !== count) throw new Error(`${side}: ${rows.count()} rows, expected ${count}`);
        return r;
      };
      const paged = async (side: keyof typeof sides): Promise<number> => {
        const started = performance.now();
        let token: string | undefined;
        let rows = 0;
        do {
          const counter = occurrenceCounter('{"cells":[');
          const q = `limit=${KUBECTL_CHUNK}${token ? `&continue=${encodeURIComponent(token)}` : ''}`;
          const r = ok(await sides[side].client.get(`${sides[side].path}?${q}`, { accept: KUBECTL_ACCEPT, timeoutMs: 300_000, keepHead: 4096, onChunk: counter.onChunk }), `${side} table page`);
          rows += counter.count();
          token = /"continue":"([^"]+)"/.exec(r.head ?? '')?.[1];
        } while (token && rows < count);
        return performance.now() - started;
      };
      const ms = { flotilla: { whole: [] as number[], paged: [] as number[] }, direct: { whole: [] as number[], paged: [] as number[] } };
      // One warm-up of each, then alternating rounds.
      await whole('flotilla');
      await whole('direct');
      for (let round = 0; round < ROUNDS; round++) {
        const order = round % 2 ? (['flotilla', 'direct'] as const) : (['direct', 'flotilla'] as const);
        for (const side of order) {
          ms[side].whole.push((await whole(side)).ms);
          ms[side].paged.push(await paged(side));
        }
      }
      add('rows', count, 'rows');
      add('direct_ms', median(ms.direct.whole), 'ms');
      add('flotilla_ms', median(ms.flotilla.whole), 'ms');
      add('ratio', median(ms.flotilla.whole) / median(ms.direct.whole), 'x', { op: '<=', value: 1 });
      add('paged_direct_ms', median(ms.direct.paged), 'ms');
      add('paged_flotilla_ms', median(ms.flotilla.paged), 'ms');
      add('paged_ratio', median(ms.flotilla.paged) / median(ms.direct.paged), 'x', { op: '<=', value: 1 });
      return {
        figures,
        facts: {
          objects: count,
          objectBytes: seed.memberBytesAvg,
          objectBytesAre: 'as the member stores the pod',
          notes: [`${count} pods as Table rows with kubectl's Accept: one request (limit=${count}) and kubectl's paging (limit=${KUBECTL_CHUNK}); ${ROUNDS} rounds alternating, medians; direct = the member apiserver's own consistent list`],
        },
      };
    } finally {
      sides.flotilla.client.close();
      sides.direct.client.close();
    }
  },
};
