import { performance } from 'node:perf_hooks';
import { decodeListPage, decodeListPageByParsing, type DecodedPage, type IngestContext } from '../../src/ingest/decode.js';
import { TABLE_ACCEPT } from '../../src/cacher/paged-list.js';
import { BenchClient, median } from '../lib/http.js';
import { figureSink, ok, type Scenario } from '../lib/scenario.js';

const PAGE = 500;
const ROUNDS = 9;
const ROUND_MS = 1000;

/**
 * decode: the ingest workers' work on one list page as the cachers get it from the member (Table
 * rows with their objects, 500 pods): reading each object in place (what flotilla does) against
 * parsing the page whole and serializing each object again (its fallback, and how it worked
 * before). Both run in this process on the same bytes, alternating 1 s rounds; medians. The two
 * must give the same bytes, or the scenario fails.
 */
export const decode: Scenario = {
  name: 'decode',
  async run(ctx, emit) {
    const seed = await ctx.ensureSeeded();
    const direct = new BenchClient(ctx.member);
    const { figures, add } = figureSink('decode', emit);
    try {
      const r = ok(await direct.get(`/api/v1/pods?limit=${PAGE}&includeObject=Object`, { accept: TABLE_ACCEPT, keepHead: 64 << 20 }), 'list page');
      const page = Buffer.from(r.head!);
      const dc: IngestContext = { cluster: 'bench', apiVersion: 'v1', kind: 'Pod', dropManagedFields: true };
      const ways = {
        in_place: () => decodeListPage(page, dc),
        parsed: () => decodeListPageByParsing(page.toString('utf8'), dc),
      };
      const a = ways.in_place();
      const b = ways.parsed();
      if (a.objects.length !== b.objects.length || a.objects.some((o, i) => !o.bytes.equals(b.objects[i]!.bytes))) throw new Error('decode: reading in place and parsing gave different bytes');
      const objects = a.objects.length;
      const usPerObject: Record<keyof typeof ways, number[]> = { in_place: [], parsed: [] };
      for (let round = 0; round < ROUNDS; round++) {
        for (const way of round % 2 ? (['parsed', 'in_place'] as const) : (['in_place', 'parsed'] as const)) {
          let runs = 0;
          let sink: DecodedPage | undefined;
          const started = performance.now();
          while (performance.now() - started < ROUND_MS) {
            sink = ways[way]();
            runs++;
          }
          if (sink?.objects.length !== objects) throw new Error('decode: a page lost objects');
          usPerObject[way].push(((performance.now() - started) * 1000) / (runs * objects));
        }
      }
      add('in_place_us_per_object', median(usPerObject.in_place), 'µs');
      add('parsed_us_per_object', median(usPerObject.parsed), 'µs');
      add('ratio', median(usPerObject.in_place) / median(usPerObject.parsed), 'x');
      return {
        figures,
        facts: {
          objects,
          objectBytes: Math.round(page.length / objects),
          objectBytesAre: 'per Table row with its object, as the member sends it',
          notes: [`one page of ${objects} pods (${page.length} B) as the cachers list them, decoded ${ROUNDS} × ${ROUND_MS} ms each way, alternating, in the bench process; medians; seeded pods are ${seed.memberBytesAvg} B as the member stores them`],
        },
      };
    } finally {
      direct.close();
    }
  },
};
