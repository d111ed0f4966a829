import { Gauge, type Registry } from 'prom-client';
import type { MemberHeartbeat } from '../members/heartbeat.js';

/**
 * Each member's heartbeat (members/heartbeat.ts) as two gauges, read at scrape time:
 * `flotilla_member_up` 1 while the member answers its heartbeat, and `flotilla_member_silent`
 * 1 while it is silent (a probe outstanding past the interval, or failed). Before its first
 * answer a member is neither up nor silent.
 */
export function memberSeries(registry: Registry, heartbeats: () => MemberHeartbeat[]): void {
  new Gauge({
    name: 'flotilla_member_up',
    help: "1 while the member answers its heartbeat (its /readyz, or any other answer but a 5xx), else 0.",
    labelNames: ['cluster'],
    registers: [registry],
    collect() {
      this.reset();
      for (const h of heartbeats()) this.set({ cluster: h.cluster }, !h.silent && h.lastAnswerAt !== undefined ? 1 : 0);
    },
  });
  new Gauge({
    name: 'flotilla_member_silent',
    help: '1 while the member is silent: its heartbeat probe is unanswered past the interval (options.memberHeartbeatMilliseconds) or failed; reads then name it stale.',
    labelNames: ['cluster'],
    registers: [registry],
    collect() {
      this.reset();
      for (const h of heartbeats()) this.set({ cluster: h.cluster }, h.silent ? 1 : 0);
    },
  });
}
