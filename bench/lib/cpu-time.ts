import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * CPU time a process has used (user + system, all its threads), from /proc/<pid>/stat. The kernel
 * reports it there in USER_HZ ticks, which Linux fixes at 100 per second for user space.
 */
const TICKS_PER_SECOND = 100;

export function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // The command name (field 2) may hold spaces: count fields after its closing parenthesis.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // utime and stime are fields 14 and 15 of the line, 12 and 13 after the command name.
  return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
}

/**
 * The live member processes (kube-apiserver and etcd) of a fleet, from the PID file the fleet
 * harness keeps in its folder: the member side of a side-by-side CPU account.
 */
export function memberPids(fleetDir: string): number[] {
  const file = join(fleetDir, 'pids');
  if (!existsSync(file)) return [];
  const pids: number[] = [];
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    const [pid, command] = line.split(' ');
    if (!pid || !command || !/\/(kube-apiserver|etcd)$/.test(command)) continue;
    // A PID of a process that exited may have been reused: the command line must still match.
    try {
      if (readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[0] === command) pids.push(Number(pid));
    } catch {
      // Not running.
    }
  }
  return pids;
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
