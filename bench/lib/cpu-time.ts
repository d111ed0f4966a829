import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { livePids, procStatFields } from '../../test/fleet/processes.js';

/**
 * CPU time a process has used (user + system, all its threads), from /proc/<pid>/stat. The kernel
 * reports it there in USER_HZ ticks, which Linux fixes at 100 per second for user space.
 */
const TICKS_PER_SECOND = 100;

export function cpuSeconds(pid: number): number {
  return statCpuSeconds(`/proc/${pid}/stat`);
}

/** user + system seconds from a /proc stat file (a process's or one thread's). */
function statCpuSeconds(path: string): number {
  const fields = procStatFields(path);
  // utime and stime are fields 14 and 15 of the line, 12 and 13 after the command name.
  return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
}

/**
 * CPU seconds of each thread of a process, most first; the main thread is the one whose id is the
 * process's. Node names every thread it starts `node`, so threads are told apart by id only.
 */
export function threadCpuSeconds(pid: number): { tid: number; main: boolean; seconds: number }[] {
  const out: { tid: number; main: boolean; seconds: number }[] = [];
  for (const tid of readdirSync(`/proc/${pid}/task`).map(Number)) {
    try {
      out.push({ tid, main: tid === pid, seconds: statCpuSeconds(`/proc/${pid}/task/${tid}/stat`) });
    } catch {
      // Ended since it was listed.
    }
  }
  return out.sort((a, b) => b.seconds - a.seconds);
}

/**
 * How long one thread of a process has run and waited runnable for a CPU (/proc/<pid>/task/<tid>/schedstat,
 * nanoseconds, with the kernel's schedstats): the wait is time a busy machine took from it.
 */
export function threadSchedSeconds(pid: number, tid = pid): { running: number; waiting: number } {
  const [running, waiting] = readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ').map(Number);
  return { running: running! / 1e9, waiting: waiting! / 1e9 };
}

/**
 * The live member processes (kube-apiserver and etcd) of a fleet, from the PID file the fleet
 * harness keeps in its folder: the member side of a side-by-side CPU account.
 */
export function memberPids(fleetDir: string): number[] {
  return livePids(join(fleetDir, 'pids'))
    .filter((p) => /\/(kube-apiserver|etcd)$/.test(p.command))
    .map((p) => p.pid);
}

/** NaN for no processes: a side that could not be read is not a side that used no CPU. */
export function totalCpuSeconds(pids: number[]): number {
  if (pids.length === 0) return NaN;
  let sum = 0;
  for (const pid of pids) {
    try {
      sum += cpuSeconds(pid);
    } catch {
      // Gone since it was listed: its time is no longer readable, and a live one would be.
    }
  }
  return sum;
}
