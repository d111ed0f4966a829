import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { FleetInfo, MemberInfo } from '../fleet/fleet.js';
import { livePids } from '../fleet/processes.js';
import { until } from './poll.js';

/**
 * A member apiserver that does not answer: stopped with SIGSTOP, its TCP connections stay open and
 * nothing answers on them (as a hung or swapping apiserver). Callers resume it with SIGCONT in a
 * `finally`, so a failed test leaves no member stopped for the next.
 */
/** The PID of a member's kube-apiserver, from the fleet's PID file and its --secure-port. */
export function apiserverPid(fleet: FleetInfo, m: MemberInfo): number {
  for (const p of livePids(join(fleet.dir, 'pids'))) {
    if (!p.command.endsWith('kube-apiserver')) continue;
    const args = readFileSync(`/proc/${p.pid}/cmdline`, 'utf8').split('\0');
    if (args.includes(`--secure-port=${m.port}`)) return p.pid;
  }
  throw new Error(`no kube-apiserver PID for ${m.name}`);
}

/** Stops the process and resolves once the kernel shows it stopped. */
export async function pause(pid: number, what: string): Promise<void> {
  process.kill(pid, 'SIGSTOP');
  await until(`${what} (${pid}) stopped`, () => readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.startsWith('T'));
}
