/**
 * A watch load generator, run as its own process (child_process.fork) so that the clients that
 * receive events do not share a thread with the writer or with each other's parsing: it opens
 * `count` watches, scans each stream for the writer's stamp, and keeps a latency histogram of the
 * stamps inside the measured window. A watch the server ends is opened again from the last
 * resourceVersion its stream carried, as client-go's reflector does. Talks to the bench over the
 * IPC channel:
 *   parent → child: { window: { from, to } }, { report: true }
 *   child → parent: { connected: n }, { histogram: [[bucket, count], ...], count, busy, ended, refused }
 */
import { Agent, request } from 'node:https';
import type { ClientRequest } from 'node:http';
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { LatencyHistogram, epochMs } from './latency.js';
import { StampScanner, lastLineRV } from './stamp-scanner.js';
import { endpointUrl } from '../../test/fleet/http.js';

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
/**
 * busy: CPU seconds this process used from the window's start to the report ÷ wall seconds (1 = one
 * whole CPU); ended: watches the server ended before the report (each opened again); refused:
 * watch requests answered with anything but 200 (not opened again); perWatcher: each watcher's
 * deliveries inside the window, over its re-watches.
 */
export type FromWatchLoad = { connected: number } | { histogram: [number, number][]; count: number; busy: number; ended: number; refused: number; perWatcher: number[] };


/** client-go's reflector waits 800 ms (with jitter) before it watches again. */
const REWATCH_MIN_MS = 800;

function main(): void {
  const spec = JSON.parse(process.argv[2]!) as WatchLoadSpec;
  const send = (m: FromWatchLoad) => process.send!(m);
  const hist = new LatencyHistogram();
  const perWatcher = new Array<number>(spec.count).fill(0);
  let from = Infinity;
  let to = Infinity;
  const stampKey = spec.stamp;
  const agent = new Agent({ keepAlive: false, ca: readFileSync(spec.caFile), maxSockets: spec.count + 10 });
  const open = new Set<ClientRequest>();
  let connected = 0;
  let ended = 0;
  let refused = 0;
  let reporting = false;
  let windowCpu = process.cpuUsage();
  let windowWall = performance.now();
  const watch = (slot: number, rv: string | undefined, first: boolean) => {
    const url = endpointUrl(spec.server, spec.url);
    if (rv !== undefined) url.searchParams.set('resourceVersion', rv);
    let lastRV = rv;
    const req = request(url, { agent, headers: { authorization: `Bearer ${spec.token}` } }, (res) => {
      if (first) send({ connected: ++connected });
      if (res.statusCode !== 200) {
        refused++;
        res.resume();
        return;
      }
      const scan = new StampScanner(Buffer.from(`${stampKey}":"`), (stamp, at) => {
        if (stamp >= from && stamp < to) {
          hist.add(at - stamp);
          perWatcher[slot]!++;
        }
      });
      res.on('data', (chunk: Buffer) => {
        scan.push(chunk, epochMs());
        lastRV = lastLineRV(chunk) ?? lastRV;
      });
      res.on('error', () => undefined);
      res.on('close', () => {
        open.delete(req);
        if (reporting) return;
        ended++;
        // After a jittered pause, as the reflector backs off: a server that ended many slow
        // watchers at once is not answered with as many new ones in the same instant.
        setTimeout(() => {
          if (!reporting) watch(slot, lastRV, false);
        }, REWATCH_MIN_MS * (1 + Math.random()));
      });
    });
    req.on('error', () => undefined);
    req.end();
    open.add(req);
  };
  for (let n = 0; n < spec.count; n++) watch(n, undefined, true);
  process.on('message', (m: ToWatchLoad) => {
    if ('window' in m) {
      from = m.window.from;
      to = m.window.to;
      windowCpu = process.cpuUsage();
      windowWall = performance.now();
    } else {
      reporting = true;
      for (const r of open) r.destroy();
      agent.destroy();
      const cpu = process.cpuUsage(windowCpu);
      const busy = (cpu.user + cpu.system) / 1e6 / ((performance.now() - windowWall) / 1000);
      // Disconnecting at once would drop a report larger than the pipe holds (a wide histogram):
      // only once it is written.
      process.send!({ histogram: hist.toSparse(), count: hist.count, busy, ended, refused, perWatcher } satisfies FromWatchLoad, undefined, undefined, () => process.disconnect());
    }
  });
  // The bench went away without asking for the report: nothing to keep running for.
  process.on('disconnect', () => process.exit(0));
}

if (process.send) main();
