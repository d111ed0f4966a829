import { afterAll, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findProjectRoot } from '../fleet/fleet.js';
import { startBench, type BenchProcess } from '../support/bench-process.js';
import { livePids } from '../fleet/processes.js';

/**
 * `npm run bench` end to end, every scenario at a small size: its own real member (and the logs
 * scenario's kwok fleet, the karmada scenario's live karmada-search with its control plane),
 * flotilla as its own process, the forked watch load generators. What is
 * checked is the run itself, not the figures' targets: every scenario reports, every line has the
 * documented form, counts add up, results are recorded, and nothing it started outlives it.
 */
const root = findProjectRoot();
const PODS = 300;
const NAMES = 2;
const SCENARIOS = ['ingest', 'decode', 'client-decode', 'warm-restart', 'list', 'peers', 'hub', 'live', 'scaling', 'memory-limit', 'table', 'patch', 'watchers', 'logs', 'views', 'search', 'hierarchy', 'tenants', 'authz', 'karmada'];
// `BENCH <scenario>.<metric> = <value> <unit> (target <op> <value>: ok|miss)`, the target optional.
const LINE = /^BENCH ([a-z_]+)\.([a-z0-9_]+) = (-?[0-9.]+(?:e[+-]?[0-9]+)?|NaN|-?Infinity) (\S+)(?: \(target (<=|>=|=) (-?[0-9.]+): (ok|miss)\))?$/;

const work = mkdtempSync(join(tmpdir(), 'flotilla-bench-test-'));
let bench: BenchProcess | undefined;
afterAll(async () => {
  await bench?.stop();
  rmSync(work, { recursive: true, force: true });
}, 60_000);

function runBench(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  bench = startBench(root, work, args);
  return bench.done;
}

describe('npm run bench', () => {
  it('runs every scenario against a real member, reports each figure in the documented form, records the run and stops what it started', async () => {
    const r = await runBench(['--quick', '--pods', String(PODS), '--names', String(NAMES), '--watchers', '20', '--watch-rate', '10', '--results-dir', work]);
    expect(r.code, r.stderr.slice(-4000)).toBe(0);

    const lines = r.stdout.trim().split('\n');
    const figures = new Map<string, number>();
    for (const line of lines) {
      const m = LINE.exec(line);
      expect(m, `not a BENCH line: ${line}`).not.toBeNull();
      figures.set(`${m![1]}.${m![2]}`, Number(m![3]));
      // A target's verdict agrees with its value, unless the two print alike (`10.0` and `10`): the
      // verdict reads the unrounded value.
      if (m![5] && Number(m![3]) !== Number(m![6])) {
        const [value, op, target] = [Number(m![3]), m![5], Number(m![6])];
        const ok = Number.isFinite(value) && (op === '<=' ? value <= target : op === '>=' ? value >= target : value === target);
        expect(m![7], line).toBe(ok ? 'ok' : 'miss');
      }
    }
    const scenariosReported = new Set([...figures.keys()].map((k) => k.split('.')[0]));
    expect([...scenariosReported].sort()).toEqual(SCENARIOS.map((s) => s.replace('-', '_')).sort());

    // Counts that must add up whatever the machine's speed.
    expect(figures.get('ingest.objects')).toBe(PODS * NAMES);
    expect(figures.get('memory_limit.listed_objects')).toBe(PODS * NAMES);
    // The live scenario seeds its own 1000 ConfigMaps, listed under every name.
    expect(figures.get('live.objects')).toBe(1000 * NAMES);
    expect(figures.get('memory_limit.oom_kills')).toBe(0);
    expect(figures.get('warm_restart.relists')).toBe(0);
    expect(figures.get('warm_restart.after_sigkill_relists')).toBe(0);
    expect(figures.get('watchers.flotilla_delivered')).toBeGreaterThanOrEqual(0.999);
    expect(figures.get('logs.follow_vs_direct')).toBeGreaterThan(0);
    // karmada: a live karmada-search beside the same member serves what flotilla serves, and both
    // what the member holds (under every cluster name), as a list, as Table rows and paged.
    for (const side of ['flotilla', 'karmada']) {
      expect(figures.get(`karmada.${side}_same_items`), side).toBe(1);
      expect(figures.get(`karmada.${side}_listed_objects`), side).toBe(figures.get('karmada.cached_objects'));
      expect(figures.get(`karmada.${side}_table_rows`), side).toBe(figures.get('karmada.cached_objects'));
      expect(figures.get(`karmada.${side}_paged_objects`), side).toBe(figures.get('karmada.cached_objects'));
      expect(figures.get(`karmada.${side}_name_selected_objects`), side).toBe(NAMES);
    }
    expect(figures.get('karmada.cached_objects')).toBeGreaterThanOrEqual(PODS * NAMES);
    for (const name of ['list.ratio', 'table.ratio', 'live.fleet_list_vs_slowest_member', 'patch.added_p50_ms', 'ingest.objects_per_second', 'ingest.eventloop_delay_p99_ms', 'peers.get_p50_ms']) {
      expect(Number.isFinite(figures.get(name)), name).toBe(true);
    }

    // Recorded where asked, with the commit, and every figure in the run's table.
    const md = readFileSync(join(work, 'RESULTS.md'), 'utf8');
    const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: root, encoding: 'utf8' }).trim();
    expect(md).toContain(`## quick-${PODS}x${NAMES}-w20x10 profile: ${SCENARIOS.join(', ')}`);
    expect(md).toContain(`- commit: ${commit}`);
    for (const name of figures.keys()) expect(md, name).toContain(`| \`${name}\` |`);
    expect(existsSync(join(work, 'results.json'))).toBe(true);

    // Every process of its fleets (apiserver, etcd, kwok, flotilla) is gone.
    for (const fleet of ['fleet', 'logs-fleet', 'karmada']) {
      const pids = join(work, 'run', fleet, 'pids');
      expect(existsSync(pids), pids).toBe(true);
      expect(livePids(pids)).toEqual([]);
    }
  }, 23 * 60_000);
});
