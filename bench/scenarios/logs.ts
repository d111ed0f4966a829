import { appendFileSync, readFileSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { criLogLine, startFleet, type MemberInfo } from '../../test/fleet/fleet.js';
import type { MemberEndpoint } from '../../test/fleet/http.js';
import { memberRequest } from '../../test/fleet/http.js';
import { startFlotillaProcess } from '../../test/support/flotilla-process.js';
import { median, percentile } from '../lib/http.js';
import { figureSink, MB, type Scenario } from '../lib/scenario.js';
import { sleep } from '../lib/flotilla.js';

const ROUNDS = 5;
const LATENCY_LINES = 100;
const POD = 'talker';
const LOG_PATH = `/api/v1/namespaces/default/pods/${POD}/log`;

/**
 * logs: a container log streamed through flotilla against the same log read straight from the
 * member, alternating. The member here is its own small fleet with kwok (the bench's member runs
 * no pods), and kwok serves the pod's log from a file this scenario writes, so both readers get the
 * same bytes. Measured: a whole-log read, a `follow=true` read of the same log (to its last byte),
 * and how long a line appended while following takes to reach each reader.
 */
export const logs: Scenario = {
  name: 'logs',
  async run(ctx, emit) {
    const fleet = await startFleet({ names: ['logs'], dir: join(ctx.dir, 'logs-fleet'), nodesPerMember: 1, log: ctx.log });
    ctx.adopt(() => fleet.stop());
    const member = fleet.info.members[0]!;
    await runningPod(member);
    const lineBytes = writeLog(member.podLogFile, ctx.profile.logBytes);
    const flotilla = await startFlotillaProcess({ fleet: fleet.info, dir: join(ctx.dir, 'logs-flotilla'), resources: [{ version: 'v1', resource: 'pods' }] });
    ctx.adopt(() => flotilla.stop());
    const sides = { direct: member as MemberEndpoint, flotilla: flotilla.endpoint };
    const { figures, add } = figureSink('logs', emit);

    const expected = (await readLog(sides.direct, LOG_PATH)).bytes;
    const rate = { direct: { whole: [] as number[], follow: [] as number[] }, flotilla: { whole: [] as number[], follow: [] as number[] } };
    for (let round = 0; round < ROUNDS; round++) {
      // Alternate who goes first: neither side always meets a warmer page cache.
      const order = round % 2 ? (['flotilla', 'direct'] as const) : (['direct', 'flotilla'] as const);
      for (const side of order) {
        const whole = await readLog(sides[side], LOG_PATH);
        if (whole.bytes !== expected) throw new Error(`${side}: read ${whole.bytes} B of the log, expected ${expected}`);
        rate[side].whole.push(whole.bytes / MB / (whole.ms / 1000));
        const follow = await readLog(sides[side], `${LOG_PATH}?follow=true`, expected);
        rate[side].follow.push(follow.bytes / MB / (follow.ms / 1000));
      }
    }
    add('direct_mb_per_s', median(rate.direct.whole), 'MB/s');
    add('flotilla_mb_per_s', median(rate.flotilla.whole), 'MB/s');
    add('direct_follow_mb_per_s', median(rate.direct.follow), 'MB/s');
    add('flotilla_follow_mb_per_s', median(rate.flotilla.follow), 'MB/s');
    add('vs_direct', median(rate.flotilla.whole) / median(rate.direct.whole), 'x');
    add('follow_vs_direct', median(rate.flotilla.follow) / median(rate.direct.follow), 'x', { op: '>=', value: 0.8 });

    // Both follow at once; each appended line is timed from the append to its arrival at each.
    const followers = { direct: follower(sides.direct), flotilla: follower(sides.flotilla) };
    try {
      await Promise.all(Object.values(followers).map((f) => f.seen('caught-up-marker', () => appendFileSync(member.podLogFile, criLogLine('caught-up-marker')), 60_000)));
      const delay = { direct: [] as number[], flotilla: [] as number[] };
      for (let i = 0; i < LATENCY_LINES; i++) {
        const marker = `latency-line-${i}-${'x'.repeat(64)}`;
        const at = performance.now();
        const arrivals = Object.values(followers).map((f) => f.seen(marker));
        appendFileSync(member.podLogFile, criLogLine(marker));
        const [d, f] = await Promise.all(arrivals);
        delay.direct.push(d! - at);
        delay.flotilla.push(f! - at);
        await sleep(20);
      }
      add('follow_line_direct_p50_ms', percentile(delay.direct, 50), 'ms');
      add('follow_line_flotilla_p50_ms', percentile(delay.flotilla, 50), 'ms');
      add('follow_line_added_p50_ms', percentile(delay.flotilla, 50) - percentile(delay.direct, 50), 'ms');
      add('follow_line_added_p99_ms', percentile(delay.flotilla, 99) - percentile(delay.direct, 99), 'ms');
    } finally {
      for (const f of Object.values(followers)) f.close();
    }
    return {
      figures,
      facts: {
        objects: Math.round(expected / lineBytes),
        objectBytes: lineBytes,
        objectBytesAre: 'per log line as served',
        notes: [
          `a ${(expected / MB).toFixed(1)} MB container log served by kwok from a file (one kube-apiserver + kwok, its own fleet), read whole and with follow=true to its last byte, ${ROUNDS} rounds each alternating flotilla and direct; MB/s medians`,
          `follow line latency: ${LATENCY_LINES} lines appended to the followed log, each timed to its arrival at a direct and a flotilla follower open at once`,
        ],
      },
    };
  },
};

async function runningPod(member: MemberInfo): Promise<void> {
  const deadline = Date.now() + 120_000;
  // The controller manager makes the default ServiceAccount; a pod is refused until it exists.
  while ((await memberRequest(member, 'GET', '/api/v1/namespaces/default/serviceaccounts/default')).status !== 200) {
    if (Date.now() > deadline) throw new Error('no default ServiceAccount in the logs fleet');
    await sleep(200);
  }
  const created = await memberRequest(member, 'POST', '/api/v1/namespaces/default/pods', {
    apiVersion: 'v1', kind: 'Pod', metadata: { name: POD }, spec: { containers: [{ name: 'main', image: 'example.com/talker:1' }] },
  });
  if (created.status !== 201) throw new Error(`creating the logging pod: ${created.status} ${created.body.slice(0, 300)}`);
  while ((JSON.parse((await memberRequest(member, 'GET', `/api/v1/namespaces/default/pods/${POD}`)).body) as { status?: { phase?: string } }).status?.phase !== 'Running') {
    if (Date.now() > deadline) throw new Error('the logging pod never ran');
    await sleep(200);
  }
}

/** Fills the file kwok serves as the container's log; returns the bytes of one line as served. */
function writeLog(path: string, bytes: number): number {
  const at = new Date();
  const lines: string[] = [];
  let size = 0;
  let n = 0;
  while (size < bytes) {
    const line = criLogLine(`${String(n++).padStart(9, '0')} level=info msg="request served" path=/api/v1/items status=200 bytes=5120 took=3ms client=10.0.0.7 trace=${'ab'.repeat(16)}`, at);
    lines.push(line);
    size += line.length;
  }
  writeFileSync(path, lines.join(''));
  const served = readFileSync(path, 'utf8').split('\n', 1)[0]!;
  return served.length - served.indexOf(' F ') - 3 + 1;
}

function caOf(ep: MemberEndpoint): Buffer {
  return readFileSync(ep.caFile);
}

/** Reads a log response on a fresh connection, to its end or until `stopAt` bytes have come. */
function readLog(ep: MemberEndpoint, path: string, stopAt?: number): Promise<{ bytes: number; ms: number }> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = request(new URL(path, ep.server), { ca: caOf(ep), agent: false, headers: { authorization: `Bearer ${ep.token}` }, timeout: 120_000 }, (res) => {
      if (res.statusCode !== 200) {
        res.resume();
        reject(new Error(`GET ${path} from ${ep.server}: ${res.statusCode}`));
        return;
      }
      let bytes = 0;
      let done = false;
      res.on('data', (c: Buffer) => {
        bytes += c.length;
        if (stopAt !== undefined && bytes >= stopAt && !done) {
          done = true;
          resolve({ bytes, ms: performance.now() - started });
          req.destroy();
        }
      });
      res.on('end', () => {
        if (!done) resolve({ bytes, ms: performance.now() - started });
      });
      res.on('error', (e) => {
        if (!done) reject(e);
      });
    });
    req.on('timeout', () => req.destroy(new Error(`GET ${path} timed out`)));
    req.on('error', (e) => reject(e));
    req.end();
  });
}

/** A `follow=true&tailLines=1` reader that reports when a given marker arrives. */
function follower(ep: MemberEndpoint): { seen(marker: string, trigger?: () => void, timeoutMs?: number): Promise<number>; close(): void } {
  let tail = '';
  const waiting = new Map<string, (at: number) => void>();
  const req = request(new URL(`${LOG_PATH}?follow=true&tailLines=1`, ep.server), { ca: caOf(ep), agent: false, headers: { authorization: `Bearer ${ep.token}` } }, (res) => {
    res.setEncoding('utf8');
    res.on('data', (chunk: string) => {
      const at = performance.now();
      tail = (tail + chunk).slice(-8192);
      for (const [marker, done] of waiting) {
        if (tail.includes(marker)) {
          waiting.delete(marker);
          done(at);
        }
      }
    });
  });
  req.on('error', () => undefined);
  req.end();
  return {
    seen(marker, trigger, timeoutMs = 10_000) {
      return new Promise<number>((resolve, reject) => {
        const timer = setTimeout(() => {
          waiting.delete(marker);
          reject(new Error(`${ep.server}: "${marker.slice(0, 40)}" did not arrive in ${timeoutMs} ms`));
        }, timeoutMs);
        waiting.set(marker, (at) => {
          clearTimeout(timer);
          resolve(at);
        });
        // Until a reader is following, an appended line may land before it looks: append again.
        if (trigger) {
          const again = setInterval(() => (waiting.has(marker) ? trigger() : clearInterval(again)), 500);
          trigger();
        }
      });
    },
    close: () => req.destroy(),
  };
}
