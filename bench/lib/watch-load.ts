/**
 * A watch load generator, run as its own process (child_process.fork) so that the clients that
 * receive events do not share a thread with the writer or with each other's parsing: it opens
 * `count` watches, scans each stream for the writer's stamp, and keeps a latency histogram of the
 * stamps inside the measured window. Talks to the bench over the IPC channel:
 *   parent → child: { window: { from, to } }, { report: true }
 *   child → parent: { connected: n }, { histogram: [[bucket, count], ...], count, busy }
 */
import { Agent, request } from 'node:https';
import type { ClientRequest } from 'node:http';
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { LatencyHistogram, epochMs } from './latency.js';

export interface WatchLoadSpec {
  server: string;
  caFile: string;
  token: string;
  /** The watch URL's path and query. */
  url: string;
  count: number;
  /** The annotation whose value is the writer's epoch-ms stamp. */
  stamp: string;
}

export type ToWatchLoad = { window: { from: number; to: number } } | { report: true };
/** busy: CPU seconds this process used from the window's start to the report ÷ wall seconds (1 = one whole CPU). */
export type FromWatchLoad = { connected: number } | { histogram: [number, number][]; count: number; busy: number };

function main(): void {
  const spec = JSON.parse(process.argv[2]!) as WatchLoadSpec;
  const send = (m: FromWatchLoad) => process.send!(m);
  const hist = new LatencyHistogram();
  let from = Infinity;
  let to = Infinity;
  const stampKey = spec.stamp;
  const agent = new Agent({ keepAlive: false, ca: readFileSync(spec.caFile), maxSockets: spec.count + 10 });
  const open: ClientRequest[] = [];
  let connected = 0;
  let windowCpu = process.cpuUsage();
  let windowWall = performance.now();
  for (let n = 0; n < spec.count; n++) {
    const req = request(new URL(spec.url, spec.server), { agent, headers: { authorization: `Bearer ${spec.token}` } }, (res) => {
      send({ connected: ++connected });
      let carry = '';
      res.setEncoding('latin1');
      res.on('data', (chunk: string) => {
        const at = epochMs();
        const text = carry + chunk;
        let pos = 0;
        for (;;) {
          const i = text.indexOf(stampKey, pos);
          if (i < 0) break;
          // "<key>":"<stamp>"
          const end = text.indexOf('"', i + stampKey.length + 3);
          if (end < 0) break;
          const stamp = Number(text.slice(i + stampKey.length + 3, end));
          if (stamp >= from && stamp < to) hist.add(at - stamp);
          pos = end;
        }
        carry = text.slice(Math.max(pos, text.length - 200));
      });
      res.on('error', () => undefined);
    });
    req.on('error', () => undefined);
    req.end();
    open.push(req);
  }
  process.on('message', (m: ToWatchLoad) => {
    if ('window' in m) {
      from = m.window.from;
      to = m.window.to;
      windowCpu = process.cpuUsage();
      windowWall = performance.now();
    } else {
      for (const r of open) r.destroy();
      agent.destroy();
      const cpu = process.cpuUsage(windowCpu);
      const busy = (cpu.user + cpu.system) / 1e6 / ((performance.now() - windowWall) / 1000);
      send({ histogram: hist.toSparse(), count: hist.count, busy });
      process.disconnect();
    }
  });
  // The bench went away without asking for the report: nothing to keep running for.
  process.on('disconnect', () => process.exit(0));
}

if (process.send) main();
