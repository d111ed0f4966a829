import { execFile, execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { findProjectRoot } from '../../test/fleet/fleet.js';
import { median } from '../lib/http.js';
import { figureSink, LIST_TIMEOUT_MS, type Scenario } from '../lib/scenario.js';
import { cpuSeconds } from '../lib/cpu-time.js';

const run = promisify(execFile);
const ROUNDS = 3;
/** Each arm: the member's JSON, the member's protobuf, flotilla's protobuf (transcoded from its cache). */
const ARMS = ['json', 'protobuf', 'flotilla_protobuf'] as const;
type Arm = (typeof ARMS)[number];

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
 * client-decode: what a client-go informer spends to fill its cache of every seeded pod when it
 * reads JSON against protobuf (what most built-in controllers ask for) straight from the member,
 * which serves both, and protobuf from flotilla, which transcodes its cached JSON. Each round
 * starts the program once per arm (a fresh process, so its CPU and allocations from start to sync
 * are the informer's alone), rotating which goes first; medians. The target: flotilla's protobuf
 * costs the client no more than the member's (≤ 1.05). Flotilla's own CPU per object it served
 * in protobuf is reported beside it. Every arm must fill the cache with every seeded pod from one
 * list, or the scenario fails.
 */
export const clientDecode: Scenario = {
  name: 'client-decode',
  async run(ctx, emit) {
    const seed = await ctx.ensureSeeded();
    const bin = informerBinary();
    // Every pod under one cluster name: the informer's list holds each seeded pod once.
    const flotilla = await ctx.ensureFlotilla(1);
    const { figures, add } = figureSink('client_decode', emit);
    const costs: Record<Arm, Cost[]> = { json: [], protobuf: [], flotilla_protobuf: [] };
    const flotillaCpuUs: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      // Rotated: no arm always meets a colder member.
      const order = ARMS.map((_, i) => ARMS[(i + round) % ARMS.length]!);
      for (const arm of order) {
        const format = arm === 'json' ? 'json' : 'protobuf';
        const kubeconfig = arm === 'flotilla_protobuf' ? flotilla.kubeconfig : ctx.member.kubeconfig;
        const cpuBefore = cpuSeconds(flotilla.proc.pid!);
        const { stdout } = await run(bin, ['-kubeconfig', kubeconfig, '-mode', 'informer-cost', '-content-type', format], {
          // A LIST and a WATCH, as informers did before watch-list: the cost of decoding one list is
          // what is compared, not how a watch-list stream is put together.
          env: { ...process.env, KUBE_FEATURE_WatchListClient: 'false' },
          timeout: LIST_TIMEOUT_MS,
        });
        const m = COST.exec(stdout);
        if (!m) throw new Error(`client-decode: ${arm}: no COST line in ${JSON.stringify(stdout.slice(-500))}`);
        const cost: Cost = { objects: Number(m[1]), cpuMs: Number(m[2]), allocMb: Number(m[3]), heapMb: Number(m[4]), lists: Number(m[5]), watches: Number(m[6]), listBytes: Number(m[7]), gzippedLists: Number(m[8]) };
        // Flotilla pages a list at resourceVersion 0 (the reflector asks for 500 at a time), where
        // the member's watch cache answers it whole.
        if (cost.objects !== seed.pods || (arm !== 'flotilla_protobuf' && cost.lists !== 1)) throw new Error(`client-decode: ${arm}: ${cost.objects} objects from ${cost.lists} lists, expected ${seed.pods} from 1`);
        if (arm === 'flotilla_protobuf') flotillaCpuUs.push(((cpuSeconds(flotilla.proc.pid!) - cpuBefore) * 1e6) / cost.objects);
        ctx.log(`client-decode round ${round + 1} ${arm}: ${m[0]}`);
        costs[arm].push(cost);
      }
    }
    const perObject = (arm: Arm, pick: (c: Cost) => number) => median(costs[arm].map((c) => pick(c) / c.objects));
    const cpuUs = (c: Cost) => c.cpuMs * 1000;
    const allocB = (c: Cost) => c.allocMb * 1024 * 1024;
    const heapB = (c: Cost) => c.heapMb * 1024 * 1024;
    for (const arm of ARMS) {
      add(`${arm}_cpu_us_per_object`, perObject(arm, cpuUs), 'µs');
      add(`${arm}_alloc_bytes_per_object`, perObject(arm, allocB), 'B');
      add(`${arm}_heap_bytes_per_object`, perObject(arm, heapB), 'B');
      add(`${arm}_list_bytes_per_object`, perObject(arm, (c) => c.listBytes), 'B');
    }
    add('flotilla_protobuf_vs_member_protobuf_cpu', perObject('flotilla_protobuf', cpuUs) / perObject('protobuf', cpuUs), 'x', { op: '<=', value: 1.05 });
    add('flotilla_protobuf_vs_member_json_cpu', perObject('flotilla_protobuf', cpuUs) / perObject('json', cpuUs), 'x');
    add('flotilla_cpu_us_per_object_served', median(flotillaCpuUs), 'µs');
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
          `a client-go pods informer (test/clients/go, -mode informer-cost) filled from the member directly in JSON and in protobuf, and from flotilla in protobuf (every pod under one cluster name), ${ROUNDS} rounds × 3 arms, rotating which goes first; per object: CPU and bytes allocated from the process's start to the sync, heap after a GC; medians`,
          `one LIST (watch-list off) at resourceVersion 0, served whole from the member's watch cache, in ${costs.flotilla_protobuf[0]!.lists} pages of 500 (the reflector's limit) from flotilla's store; lists sent gzipped (client-go asks for it; the CPU then includes inflating): member JSON ${costs.json[0]!.gzippedLists}/1, member protobuf ${costs.protobuf[0]!.gzippedLists}/1, flotilla protobuf ${costs.flotilla_protobuf[0]!.gzippedLists}/1`,
          `flotilla's CPU per object it served in protobuf: its process's CPU over the flotilla arm's run (the list, transcoded from JSON, and the watch's start)`,
        ],
      },
    };
  },
};
