import { afterAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findProjectRoot } from '../fleet/fleet.js';
import { startBench, type BenchProcess } from '../support/bench-process.js';

/**
 * The soak's short profile (bench/scenarios/soak.ts, `npm run soak -- --quick`): 2 minutes of the
 * mixed load (1,000 watchers of the fleet admin, a tenant and two users of partial RBAC, writes,
 * cached lists, live reads, slow consumers) against flotilla on a member of its own, the first
 * 30 s warm-up. What a leak breaks: the growth over the measured 90 s of RssAnon, the heap's floor,
 * open fds and open watches, against tolerances above this machine's noise (see TOLERANCE); and
 * what a stall breaks: every slow consumer evicted and none of the others, every other watcher's
 * events delivered in every interval, no read failing. About 3.5 minutes with the member's start.
 */
const root = findProjectRoot();
const LINE = /^BENCH soak\.([a-z0-9_]+) = (-?[0-9.]+(?:e[+-]?[0-9]+)?|NaN|-?Infinity) (\S+)/;

/**
 * Growth allowed over the 90 s measured, % of the level. Open watches and fds are counts the load
 * holds constant (runs here: within 1.2%): a watch never forgotten, or a socket kept, adds one per
 * re-watch, ~300 in the window. Memory is still settling 30 s in (runs here on a busy machine:
 * RssAnon +12% and +25%, the heap's floor +17%): its tolerance catches a gross leak only (~1 MB/s,
 * e.g. a 64 KiB buffer kept per request); the 30-minute soak's trend is the finer test.
 */
const TOLERANCE: Record<string, number> = {
  rss_anon: 35,
  heap_used_floor: 35,
  open_fds: 3,
  watches_open: 3,
};

const work = mkdtempSync(join(tmpdir(), 'flotilla-soak-test-'));
let bench: BenchProcess | undefined;
afterAll(async () => {
  await bench?.stop();
  rmSync(work, { recursive: true, force: true });
}, 60_000);

function runSoak(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  bench = startBench(root, work, ['soak', ...args]);
  return bench.done;
}

describe('soak (2 minutes)', () => {
  it('keeps memory, fds and watches flat, evicts only the slow consumers and delivers every event to the others', async () => {
    const r = await runSoak(['--quick', '--minutes', '2', '--results-dir', work]);
    const figures = new Map<string, number>();
    for (const line of r.stdout.split('\n')) {
      const m = LINE.exec(line);
      if (m) figures.set(m[1]!, Number(m[2]));
    }
    const context = `${r.stdout}\n${r.stderr.slice(-3000)}`;
    expect(figures.get('watchers'), context).toBe(1000);
    for (const [series, tolerance] of Object.entries(TOLERANCE)) {
      expect(figures.get(`${series}_growth_pct_over_window`), `${series} grew over the window\n${context}`).toBeLessThanOrEqual(tolerance);
    }
    // Connections to the member: the cachers' watches, and keep-alive ones for live reads that
    // close when idle (runs here: 25 after the sync falling to 17–20). One kept per live read
    // (one every 1.25 s) would add ~70 in the window.
    expect(figures.get('member_connections_growth_pct_over_window'), context).toBeLessThanOrEqual(20);
    expect(figures.get('evictions'), context).toBeGreaterThanOrEqual(1);
    expect(figures.get('other_watches_evicted'), context).toBe(0);
    expect(figures.get('delivered_min'), context).toBeGreaterThanOrEqual(0.98);
    expect(figures.get('read_errors'), context).toBe(0);
    expect(r.code, context).toBe(0);
  }, 480_000);
});
