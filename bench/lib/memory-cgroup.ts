import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { BenchContext } from './context.js';

/**
 * A memory cgroup, as a Kubernetes container memory limit is: its limit counts the process's own
 * memory and the file pages it has in the page cache (LMDB's mapped data), and under the limit the
 * kernel reclaims clean file pages before it kills anything. cgroup v2 where the memory controller
 * is there, else v1's memory hierarchy.
 */
export interface MemoryCgroup {
  path: string;
  version: 1 | 2;
  limitBytes: number;
  add(pid: number): void;
  /** Highest usage seen (v1 max_usage_in_bytes; v2 memory.peak where the kernel has it). */
  peakBytes(): number;
  /** Processes the kernel's OOM killer ended in this group. */
  oomKills(): number;
  /** Removes the (empty) group. */
  remove(): void;
}

const V2_ROOT = '/sys/fs/cgroup';
const V1_ROOT = '/sys/fs/cgroup/memory';

/** The group, or an error saying why this machine cannot make one (not root, no memory controller). */
export function createMemoryCgroup(name: string, limitBytes: number): MemoryCgroup {
  const v2 = existsSync(join(V2_ROOT, 'cgroup.controllers')) && readFileSync(join(V2_ROOT, 'cgroup.controllers'), 'utf8').split(/\s+/).includes('memory');
  if (v2) {
    const path = join(V2_ROOT, name);
    mkdirSync(path, { recursive: true });
    writeFileSync(join(path, 'memory.max'), String(limitBytes));
    writeFileSync(join(path, 'memory.swap.max'), '0');
    return {
      path,
      version: 2,
      limitBytes,
      add: (pid) => writeFileSync(join(path, 'cgroup.procs'), String(pid)),
      peakBytes: () => (existsSync(join(path, 'memory.peak')) ? Number(readFileSync(join(path, 'memory.peak'), 'utf8')) : NaN),
      oomKills: () => statField(join(path, 'memory.events'), 'oom_kill'),
      remove: () => rmdirSync(path),
    };
  }
  if (!existsSync(join(V1_ROOT, 'memory.limit_in_bytes'))) throw new Error('no cgroup memory controller (neither v2 with memory nor v1 at /sys/fs/cgroup/memory)');
  const path = join(V1_ROOT, name);
  mkdirSync(path, { recursive: true });
  writeFileSync(join(path, 'memory.limit_in_bytes'), String(limitBytes));
  return {
    path,
    version: 1,
    limitBytes,
    add: (pid) => writeFileSync(join(path, 'cgroup.procs'), String(pid)),
    peakBytes: () => Number(readFileSync(join(path, 'memory.max_usage_in_bytes'), 'utf8')),
    oomKills: () => statField(join(path, 'memory.oom_control'), 'oom_kill'),
    remove: () => rmdirSync(path),
  };
}

/** A `name value` line of a cgroup stat file; 0 when the kernel does not report it. */
function statField(file: string, field: string): number {
  const m = new RegExp(`^${field} (\\d+)$`, 'm').exec(readFileSync(file, 'utf8'));
  return m ? Number(m[1]) : 0;
}

/**
 * A memory cgroup for the flotilla a scenario starts next (`onSpawn: (pid) => group.add(pid)`).
 * `remove` stops flotilla (only an empty group can go) and removes the group, once: when the
 * scenario is done, or when the bench is stopped before that (adopted by the context), so later
 * scenarios never get a flotilla that still runs under the limit.
 */
export function flotillaCgroup(ctx: BenchContext, name: string, limitBytes: number): { group: MemoryCgroup; remove: () => Promise<void> } {
  const group = createMemoryCgroup(name, limitBytes);
  let removed = false;
  const remove = async () => {
    if (removed) return;
    removed = true;
    await ctx.stopFlotilla();
    try {
      group.remove();
    } catch (e) {
      ctx.log(`could not remove ${group.path}: ${(e as Error).message}`);
    }
  };
  ctx.adopt(remove);
  return { group, remove };
}
