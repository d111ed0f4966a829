import type { BenchContext } from '../lib/context.js';
import { procMemory } from '../lib/flotilla.js';
import { flotillaCgroup, type MemoryCgroup } from '../lib/memory-cgroup.js';
import { MB, figureSink, fleetLists, type Scenario } from '../lib/scenario.js';

const LIMIT_BYTES = 1.5 * 1024 ** 3;
/** Timed fleet lists after the one that counts; under the limit each may read the whole file from disk. */
const LIST_ROUNDS = { limited: 1, unlimited: 3 };

/**
 * memory-limit: flotilla caching every seeded pod under every name (1M objects in the full
 * profile) inside a 1.5 GiB memory cgroup, as a container with `limits.memory: 1536Mi` would run.
 * VmRSS counts LMDB's mapped file pages, which the kernel may drop and read again; the limit shows
 * what flotilla really needs: it syncs, serves the fleet list, and is not OOM-killed. The same
 * data is then listed by an unlimited flotilla (a warm restart on the same data dir), so the cost
 * of the limit is a ratio from one run.
 */
export const memoryLimit: Scenario = {
  name: 'memory-limit',
  async run(ctx, emit) {
    const seed = await ctx.ensureSeeded();
    const { figures, add } = figureSink('memory_limit', emit);
    const notes: string[] = [];
    const facts = () => ({ objects: seed.pods * ctx.profile.names, objectBytes: seed.memberBytesAvg, objectBytesAre: 'as the member stores it, managedFields included', notes });
    await ctx.stopFlotilla();
    let cgroup: ReturnType<typeof flotillaCgroup>;
    try {
      cgroup = flotillaCgroup(ctx, `flotilla-bench-${process.pid}`, LIMIT_BYTES);
    } catch (e) {
      notes.push(`not measured: this machine cannot make a memory cgroup (${(e as Error).message}); it needs root and a cgroup memory controller`);
      add('oom_kills', NaN, 'kills', { op: '=', value: 0 });
      return { figures, facts: facts() };
    }
    const { group, remove: removeGroup } = cgroup;
    try {
      await measure(ctx, group, removeGroup, add, notes);
      return { figures, facts: facts() };
    } catch (e) {
      // Later scenarios must not get a flotilla that still runs under the limit.
      await removeGroup();
      throw e;
    }
  },
};

async function measure(
  ctx: BenchContext,
  group: MemoryCgroup,
  removeGroup: () => Promise<void>,
  add: ReturnType<typeof figureSink>['add'],
  notes: string[],
): Promise<void> {
  add('limit_mb', LIMIT_BYTES / MB, 'MB');
  ctx.log(`memory-limit: flotilla in ${group.path} (cgroup v${group.version}), limit ${LIMIT_BYTES / MB} MB`);
  const limited = await ctx.startFlotilla({ reuseData: false, onSpawn: (pid) => group.add(pid) });
  const { objects } = await ctx.cachedObjects();
  add('objects', objects, 'objects');
  add('ready_s', limited.readyMs / 1000, 's');
  const limitedLists = await fleetLists(limited.flotilla.endpoint, 'limited', LIST_ROUNDS.limited, objects);
  const pid = limited.flotilla.proc.pid;
  const mem = procMemory(pid);
  add('list_ms', limitedLists.ms, 'ms');
  add('listed_objects', limitedLists.objects, 'objects', { op: '=', value: objects });
  add('rss_mb', mem.rssBytes / MB, 'MB');
  add('rss_anon_mb', mem.anonBytes / MB, 'MB');
  add('rss_file_mb', mem.fileBytes / MB, 'MB');
  add('cgroup_peak_mb', group.peakBytes() / MB, 'MB', { op: '<=', value: LIMIT_BYTES / MB });
  add('oom_kills', group.oomKills() + (limited.flotilla.proc.exited ? 1 : 0), 'kills', { op: '=', value: 0 });

  // The same data without the limit: a warm restart (no relist) outside the group.
  await removeGroup();
  const warm = await ctx.startFlotilla({ reuseData: true });
  const unlimited = await fleetLists(warm.flotilla.endpoint, 'unlimited', LIST_ROUNDS.unlimited, objects);
  add('unlimited_list_ms', unlimited.ms, 'ms');
  add('list_vs_unlimited', limitedLists.ms / unlimited.ms, 'x');
  notes.push(
    `cgroup v${group.version} memory limit ${LIMIT_BYTES / MB} MB on flotilla's process from its first instruction (main thread and ingest workers); page cache of the LMDB file counts against it`,
    `list: median of ${LIST_ROUNDS.limited} (limited) and ${LIST_ROUNDS.unlimited} (unlimited) fleet-wide lists after one that counts the items, bodies read and discarded; rss_* from /proc/<pid>/status after the lists; oom_kills from the group's OOM counter, plus 1 if flotilla died`,
    `unlimited: the same data dir restarted warm outside the group, the same lists`,
  );
}

