import { Agent, request } from 'node:https';
import type { ClientRequest } from 'node:http';
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import type { MemberEndpoint } from '../../test/fleet/http.js';
import { memberJson, memberRequest } from '../../test/fleet/http.js';
import { BenchClient } from '../lib/http.js';
import { sleep } from '../lib/flotilla.js';
import { figureSink, type Scenario } from '../lib/scenario.js';

const NS = 'bench-watch';
const PODS = 50;
const STAMP = 'bench.flotilla.io/sent';
const WARMUP_MS = 2000;

/** Delivery latencies in 0.1 ms buckets up to 10 s: percentiles without keeping every sample. */
class LatencyHistogram {
  private readonly buckets = new Uint32Array(100_001);
  count = 0;
  add(ms: number): void {
    this.buckets[Math.min(this.buckets.length - 1, Math.max(0, Math.round(ms * 10)))]!++;
    this.count++;
  }
  percentile(p: number): number {
    let need = Math.ceil((this.count * p) / 100);
    for (let i = 0; i < this.buckets.length; i++) {
      need -= this.buckets[i]!;
      if (need <= 0) return i / 10;
    }
    return NaN;
  }
}

const now = () => performance.timeOrigin + performance.now();

/**
 * watchers: many clients watching the same pods while a writer changes them at a steady rate;
 * each event's delivery latency is the time from the writer's stamp (an annotation set by the
 * patch) to its arrival at a watcher. Once with every watcher straight on the member apiserver,
 * once through flotilla (`/clusters/<name>/`, so both see the same event stream); the same writer
 * load both times. Watchers run in the bench process and only scan for the stamp.
 */
export const watchers: Scenario = {
  name: 'watchers',
  async run(ctx, emit) {
    await ctx.ensureSeeded();
    const flotilla = await ctx.ensureFlotilla();
    const member = ctx.member;
    const { watchers: count, watchEventsPerSecond: rate, watchSeconds } = ctx.profile;
    const name = ctx.registered()[0]!.name;
    await preparePods(member);
    const { figures, add } = figureSink('watchers', emit);

    const sides = {
      direct: { ep: member as MemberEndpoint, path: `/api/v1/namespaces/${NS}/pods` },
      flotilla: { ep: flotilla.endpoint, path: `/clusters/${name}/api/v1/namespaces/${NS}/pods` },
    };
    const results: Record<string, { hist: LatencyHistogram; sent: number; expected: number }> = {};
    for (const side of ['direct', 'flotilla'] as const) {
      const { ep, path } = sides[side];
      const list = await memberJson<{ metadata: { resourceVersion: string } }>(ep, 'GET', `${path}?limit=1`);
      const hist = new LatencyHistogram();
      // Only events the writer stamped inside the measured window count, wherever they arrive.
      let windowFrom = Infinity;
      let windowTo = Infinity;
      const agent = new Agent({ keepAlive: false, ca: readFileSync(ep.caFile), maxSockets: count + 10 });
      const open: ClientRequest[] = [];
      let connected = 0;
      for (let i = 0; i < count; i++) {
        const req = request(new URL(`${path}?watch=1&resourceVersion=${encodeURIComponent(list.metadata.resourceVersion)}`, ep.server), { agent, headers: { authorization: `Bearer ${ep.token}` } }, (res) => {
          connected++;
          let carry = '';
          res.setEncoding('latin1');
          res.on('data', (chunk: string) => {
            const at = now();
            const text = carry + chunk;
            let from = 0;
            for (;;) {
              const i = text.indexOf(STAMP, from);
              if (i < 0) break;
              const end = text.indexOf('"', i + STAMP.length + 3);
              if (end < 0) break;
              const stamp = Number(text.slice(i + STAMP.length + 3, end));
              if (stamp >= windowFrom && stamp < windowTo) hist.add(at - stamp);
              from = end;
            }
            carry = text.slice(Math.max(from, text.length - 200));
          });
          res.on('error', () => undefined);
        });
        req.on('error', () => undefined);
        req.end();
        open.push(req);
      }
      const writer = new BenchClient(member);
      const deadline = Date.now() + 60_000;
      while (connected < count) {
        if (Date.now() > deadline) throw new Error(`${side}: only ${connected} of ${count} watches answered`);
        await sleep(50);
      }
      // The writer: `rate` merge patches a second, round-robin over the pods, straight to the member.
      let sent = 0;
      let seq = 0;
      const patchOne = async () => {
        const pod = `w-${seq++ % PODS}`;
        const stamp = now();
        const r = await writer.send('PATCH', `/api/v1/namespaces/${NS}/pods/${pod}`, { body: JSON.stringify({ metadata: { annotations: { [STAMP]: stamp.toFixed(3) } } }), contentType: 'application/merge-patch+json' });
        if (r.status !== 200) throw new Error(`patch ${pod}: ${r.status} ${r.errorText ?? ''}`);
        if (stamp >= windowFrom && stamp < windowTo) sent++;
      };
      const writing = (async () => {
        const started = performance.now();
        const total = Math.round(rate * (WARMUP_MS / 1000 + watchSeconds));
        const inflight = new Set<Promise<void>>();
        for (let i = 0; i < total; i++) {
          const due = started + (i * 1000) / rate;
          const wait = due - performance.now();
          if (wait > 1) await sleep(wait);
          if (performance.now() - started >= WARMUP_MS && windowFrom === Infinity) windowFrom = now();
          const p: Promise<void> = patchOne().finally(() => inflight.delete(p));
          inflight.add(p);
          if (inflight.size > 200) await Promise.race(inflight);
        }
        windowTo = now();
        await Promise.all(inflight);
      })();
      await writing;
      // Let the last events arrive.
      await sleep(2000);
      for (const r of open) r.destroy();
      agent.destroy();
      writer.close();
      results[side] = { hist, sent, expected: sent * count };
      ctx.log(`watchers ${side}: ${hist.count} deliveries of ${sent * count} expected`);
    }

    const d = results.direct!;
    const f = results.flotilla!;
    add('watchers', count, 'watchers');
    add('events_per_second', rate, 'events/s');
    add('direct_p50_ms', d.hist.percentile(50), 'ms');
    add('direct_p99_ms', d.hist.percentile(99), 'ms');
    add('flotilla_p50_ms', f.hist.percentile(50), 'ms');
    add('flotilla_p99_ms', f.hist.percentile(99), 'ms', { op: '<=', value: 100 });
    add('p99_vs_direct', f.hist.percentile(99) / d.hist.percentile(99), 'x', { op: '<=', value: 2 });
    add('direct_delivered', d.hist.count / Math.max(1, d.expected), 'x');
    add('flotilla_delivered', f.hist.count / Math.max(1, f.expected), 'x', { op: '>=', value: 0.999 });
    return {
      figures,
      facts: {
        objects: PODS,
        objectBytes: 0,
        objectBytesAre: 'small pods (one container, no managedFields through flotilla)',
        notes: [
          `${count} watchers on ${PODS} pods of one namespace; ${rate} merge patches/s for ${watchSeconds} s after ${WARMUP_MS / 1000} s warm-up, the same load direct then through flotilla; latency = arrival - the writer's stamp in the event; watchers in the bench process (on this 2-CPU machine they share CPU with flotilla and the apiserver)`,
        ],
      },
    };
  },
};

async function preparePods(member: MemberEndpoint): Promise<void> {
  const made = async (path: string, body: unknown) => {
    const res = await memberRequest(member, 'POST', path, body);
    if (res.status !== 201 && res.status !== 409) throw new Error(`POST ${path}: ${res.status} ${res.body.slice(0, 200)}`);
  };
  await made('/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
  // No controller manager in the bench fleet: the default ServiceAccount is made by hand.
  await made(`/api/v1/namespaces/${NS}/serviceaccounts`, { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'default' } });
  for (let i = 0; i < PODS; i++) {
    await made(`/api/v1/namespaces/${NS}/pods`, { apiVersion: 'v1', kind: 'Pod', metadata: { name: `w-${i}` }, spec: { containers: [{ name: 'c', image: 'example.com/c:1' }] } });
  }
}
