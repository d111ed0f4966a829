import { execFile, execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { findProjectRoot } from '../../test/fleet/fleet.js';
import { median } from '../lib/http.js';
import { figureSink, LIST_TIMEOUT_MS, type Scenario } from '../lib/scenario.js';

const run = promisify(execFile);
const ROUNDS = 3;
const FORMATS = ['json', 'protobuf'] as const;
type Format = (typeof FORMATS)[number];

interface Cost {
  objects: number;
  cpuMs: number;
  allocMb: number;
  heapMb: number;
  lists: number;
  watches: number;
  listBytes: number;
  gzippedLists: number;
}

const COST = /^COST objects=(\d+) cpu_ms=([0-9.]+) alloc_mb=([0-9.]+) heap_mb=([0-9.]+) lists=(\d+) watches=(\d+) list_bytes=(\d+) gzipped_lists=(\d+)$/m;

/** The client-go test program (test/clients/go), built once and cached by the same script the e2e tests use. */
function informerBinary(): string {
  const script = join(findProjectRoot(), 'scripts', 'build-fleet-binaries.mjs');
  return join(execFileSync('node', [script, '--clients'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim(), 'informer');
}

/** This run's command line, less where it was recorded (which changes no figure): so the section can be run again. */
function benchCommand(): string {
  const args = process.argv.slice(2).filter((a) => !a.startsWith('--results-dir='));
  const at = args.indexOf('--results-dir');
  if (at >= 0) args.splice(at, 2);
  return ['npm run bench --', ...args].join(' ');
}

/**
 * client-decode (issue 32): what a client-go informer spends to fill its cache of every seeded
 * pod when it reads JSON (all flotilla serves) against protobuf (what most built-in controllers
 * ask for), straight from the member, which serves both. Each round starts the program once per
 * format (a fresh process, so its CPU and allocations from start to sync are the informer's
 * alone), alternating which goes first; medians. Informational: it says whether flotilla serving
 * protobuf reads would save its clients enough to be worth building. Both formats must fill the
 * cache with every seeded pod from one list, or the scenario fails.
 */
export const clientDecode: Scenario = {
  name: 'client-decode',
  async run(ctx, emit) {
    const seed = await ctx.ensureSeeded();
    const bin = informerBinary();
    const { figures, add } = figureSink('client_decode', emit);
    const costs: Record<Format, Cost[]> = { json: [], protobuf: [] };
    for (let round = 0; round < ROUNDS; round++) {
      // Odd rounds (the first, third, ...) protobuf first: neither format always meets a colder member.
      const order: readonly Format[] = round % 2 === 0 ? ['protobuf', 'json'] : FORMATS;
      for (const format of order) {
        const { stdout } = await run(bin, ['-kubeconfig', ctx.member.kubeconfig, '-mode', 'informer-cost', '-content-type', format], {
          // A LIST and a WATCH, as informers did before watch-list: the cost of decoding one list is
          // what is compared, not how a watch-list stream is put together.
          env: { ...process.env, KUBE_FEATURE_WatchListClient: 'false' },
          timeout: LIST_TIMEOUT_MS,
        });
        const m = COST.exec(stdout);
        if (!m) throw new Error(`client-decode: ${format}: no COST line in ${JSON.stringify(stdout.slice(-500))}`);
        const cost: Cost = { objects: Number(m[1]), cpuMs: Number(m[2]), allocMb: Number(m[3]), heapMb: Number(m[4]), lists: Number(m[5]), watches: Number(m[6]), listBytes: Number(m[7]), gzippedLists: Number(m[8]) };
        if (cost.objects !== seed.pods || cost.lists !== 1) throw new Error(`client-decode: ${format}: ${cost.objects} objects from ${cost.lists} lists, expected ${seed.pods} from 1`);
        ctx.log(`client-decode round ${round + 1} ${format}: ${m[0]}`);
        costs[format].push(cost);
      }
    }
    const perObject = (format: Format, pick: (c: Cost) => number) => median(costs[format].map((c) => pick(c) / c.objects));
    const cpuUs = (c: Cost) => c.cpuMs * 1000;
    const allocB = (c: Cost) => c.allocMb * 1024 * 1024;
    const heapB = (c: Cost) => c.heapMb * 1024 * 1024;
    for (const format of FORMATS) {
      add(`${format}_cpu_us_per_object`, perObject(format, cpuUs), 'µs');
      add(`${format}_alloc_bytes_per_object`, perObject(format, allocB), 'B');
      add(`${format}_heap_bytes_per_object`, perObject(format, heapB), 'B');
      add(`${format}_list_bytes_per_object`, perObject(format, (c) => c.listBytes), 'B');
    }
    add('protobuf_vs_json_cpu', perObject('protobuf', cpuUs) / perObject('json', cpuUs), 'x');
    add('protobuf_vs_json_alloc', perObject('protobuf', allocB) / perObject('json', allocB), 'x');
    add('protobuf_vs_json_list_bytes', perObject('protobuf', (c) => c.listBytes) / perObject('json', (c) => c.listBytes), 'x');
    return {
      figures,
      facts: {
        objects: seed.pods,
        objectBytes: Math.round(median(costs.json.map((c) => c.listBytes / c.objects))),
        objectBytesAre: 'per pod in the member\'s JSON list, as the informer read it',
        notes: [
          `run as: ${benchCommand()}`,
          `a client-go v0.34 pods informer (test/clients/go, -mode informer-cost) filled from the member directly, ${ROUNDS} rounds × (JSON, protobuf), alternating which goes first; per object: CPU and bytes allocated from the process's start to the sync, heap after a GC; medians`,
          `one LIST (watch-list off) at resourceVersion 0, served from the member's watch cache; lists the member sent gzipped (client-go asks for it; the CPU then includes inflating): JSON ${costs.json[0]!.gzippedLists}/1, protobuf ${costs.protobuf[0]!.gzippedLists}/1`,
        ],
      },
    };
  },
};
