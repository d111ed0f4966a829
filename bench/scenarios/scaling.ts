import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { BenchContext } from '../lib/context.js';
import { procMemory, scrapeMetrics } from '../lib/flotilla.js';
import { MB, figureSink, fleetLists, type Scenario } from '../lib/scenario.js';

const LIST_ROUNDS = 3;

interface Point {
  /** How the figures name it: `10k`, `1m`. */
  label: string;
  names: number;
  /** Cache only these namespaces (undefined: all of them). */
  namespaces?: string[];
  objects: number;
}

/**
 * The same seeded member cached at growing sizes: every pod under 1, 10, 100… cluster names up to
 * all of them (10k, 100k and 1M objects in the full profile; with fewer names, one namespace's
 * pods under one name comes first). Each point is a fresh flotilla: time to ready, memory once
 * ready, the fleet-wide list, memory after it. One table, so the growth is visible.
 */
export const scaling: Scenario = {
  name: 'scaling',
  async run(ctx, emit) {
    const seed = await ctx.ensureSeeded();
    const points = scalingPoints(ctx, seed.namespaces);
    const { figures, add } = figureSink('scaling', emit);
    const rows: string[][] = [];
    const usPerObject: number[] = [];
    const notes: string[] = [];
    for (const point of points) {
      await ctx.stopFlotilla();
      ctx.log(`scaling: ${point.label}: ${point.names} name(s) × ${point.namespaces ? point.namespaces.join(',') : 'every namespace'}`);
      const start = await ctx.startFlotilla({ reuseData: false, names: point.names, ...(point.namespaces ? { namespaces: point.namespaces } : {}) });
      const pid = start.flotilla.proc.pid;
      const { objects } = await ctx.cachedObjects();
      if (objects !== point.objects) notes.push(`${point.label}: expected ${point.objects} cached objects, /status counts ${objects}`);
      const ready = procMemory(pid);
      const heap = (await scrapeMetrics(start.flotilla.endpoint, 30_000)).get('nodejs_heap_size_used_bytes') ?? NaN;
      const dbBytes = directoryBytes(start.flotilla.dataDir);

      const lists = await fleetLists(start.flotilla.endpoint, point.label, LIST_ROUNDS, objects);
      const after = procMemory(pid);
      const l = point.label;
      const ms = lists.ms;
      add(`objects_${l}`, objects, 'objects');
      add(`ready_s_${l}`, start.readyMs / 1000, 's');
      add(`list_ms_${l}`, ms, 'ms');
      const us = (ms * 1000) / objects;
      usPerObject.push(us);
      add(`list_us_per_object_${l}`, us, 'µs');
      add(`rss_mb_${l}`, after.rssBytes / MB, 'MB');
      add(`rss_anon_mb_${l}`, after.anonBytes / MB, 'MB');
      add(`rss_hwm_mb_${l}`, after.peakRssBytes / MB, 'MB');
      add(`heap_mb_${l}`, heap / MB, 'MB');
      add(`db_mb_${l}`, dbBytes / MB, 'MB');
      rows.push([
        l,
        String(objects),
        (start.readyMs / 1000).toFixed(1),
        ms.toFixed(0),
        us.toFixed(1),
        (ready.rssBytes / MB).toFixed(0),
        (after.rssBytes / MB).toFixed(0),
        (after.anonBytes / MB).toFixed(0),
        (heap / MB).toFixed(0),
        (dbBytes / MB).toFixed(0),
      ]);
    }
    // Still running: the last point caches every pod under every name, as later scenarios expect.
    add('list_per_object_growth', usPerObject.at(-1)! / usPerObject[0]!, 'x');
    notes.unshift(
      `each point: a fresh flotilla (empty data dir) caching the one member under that many names; memory from /proc/<pid>/status: VmRSS once ready and after ${LIST_ROUNDS + 1} fleet lists, RssAnon (the process's own memory, without LMDB's mapped file pages) after them; heap = nodejs_heap_size_used_bytes once ready; db = the LMDB files' blocks on disk; list = median of ${LIST_ROUNDS} fleet-wide lists after one warm-up, bodies read and discarded`,
      `list_per_object_growth: list time per object at the largest point ÷ at the smallest (1 = linear growth)`,
    );
    return {
      figures,
      facts: {
        objects: points.at(-1)!.objects,
        objectBytes: seed.memberBytesAvg,
        objectBytesAre: 'as the member stores it, managedFields included',
        notes,
        table: {
          header: ['point', 'objects', 'ready (s)', 'list (ms)', 'list µs/object', 'VmRSS ready (MB)', 'VmRSS after lists (MB)', 'RssAnon after lists (MB)', 'heap (MB)', 'LMDB files (MB)'],
          rows,
        },
      },
    };
  },
};

function scalingPoints(ctx: BenchContext, namespaces: string[]): Point[] {
  const { pods, names } = ctx.profile;
  // Every pod under 1, 10, 100… names, up to every name: 10k, 100k and 1M in the full profile.
  const counts: number[] = [];
  for (let n = 1; n < names; n *= 10) counts.push(n);
  counts.push(names);
  const points: Point[] = counts.map((n) => ({ label: short(pods * n), names: n, objects: pods * n }));
  if (points.length < 3) {
    // Too few names for three points: one namespace's pods under one name first (pod i goes to
    // namespace i mod n, so they are spread evenly).
    const inFirst = Math.ceil(pods / namespaces.length);
    points.unshift({ label: short(inFirst), names: 1, namespaces: [namespaces[0]!], objects: inFirst });
  }
  return points;
}

function short(n: number): string {
  if (n >= 1_000_000 && n % 100_000 === 0) return `${n / 1_000_000}m`.replace('.', '_');
  if (n >= 1000 && n % 100 === 0) return `${n / 1000}k`.replace('.', '_');
  return String(n);
}

function directoryBytes(dir: string): number {
  let total = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    // Blocks in use, not the apparent size: a file may be sparse.
    total += entry.isDirectory() ? directoryBytes(path) : statSync(path).blocks * 512;
  }
  return total;
}
