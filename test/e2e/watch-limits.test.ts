import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { join } from 'node:path';
import { readFileSync } from 'node:fs';
import { request } from 'node:https';
import type { IncomingMessage } from 'node:http';
import { CoreV1Api, KubeConfig, makeInformer, type V1ConfigMap, type V1ConfigMapList } from '@kubernetes/client-node';
import { memberJson, memberRequest } from '../fleet/http.js';
import type { MemberInfo } from '../fleet/fleet.js';
import { startFlotillaProcess, type FlotillaProcess } from '../support/flotilla-process.js';
import { inParallel } from '../support/compare.js';
import { openWatch } from '../support/watch-client.js';
import { until } from '../support/poll.js';

/**
 * Where a watch ends without the client asking: the server-side watch timeout, an RV that fell out
 * of the event log (410, and a real client relisting), and a client too slow to keep up (evicted,
 * while others go on). Flotilla runs with small limits so each happens within seconds.
 */
const fleet = inject('fleet');
const NS = 'watch-limits';
const CLUSTER = 'search.flotilla.io/cluster';
const [east, west] = [fleet.members[0]!, fleet.members[1]!];
const EVENT_LOG = 1000;
let flotilla: FlotillaProcess;

async function ok(m: MemberInfo, method: string, path: string, body?: unknown): Promise<void> {
  const res = await memberRequest(m, method, path, body);
  if (res.status >= 300 && res.status !== 409) throw new Error(`${m.name} ${method} ${path}: ${res.status} ${res.body.slice(0, 300)}`);
}

const cm = (name: string, labels: Record<string, string> = {}, data: Record<string, string> = { v: '1' }): V1ConfigMap => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, labels }, data });

async function metric(name: string): Promise<number> {
  const res = await memberRequest(flotilla.endpoint, 'GET', '/metrics', undefined, { accept: 'text/plain' });
  const line = res.body.split('\n').find((l) => l.startsWith(`${name} `));
  return line ? Number(line.split(' ')[1]) : 0;
}

/**
 * The open watches, once those of earlier tests are gone: a client closes at once, flotilla counts
 * the close when it notices, so a count taken right after another test would still hold them.
 */
async function openWatchesSettled(): Promise<number> {
  await until('the watches of earlier tests to be closed', async () => (await metric('flotilla_watches')) === 0, 20_000);
  return 0;
}

beforeAll(async () => {
  for (const m of [east, west]) await ok(m, 'POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
  flotilla = await startFlotillaProcess({
    fleet,
    dir: join(fleet.dir, 'flotilla-watch-limits'),
    resources: [{ version: 'v1', resource: 'configmaps', namespaces: [NS] }, { version: 'v1', resource: 'namespaces' }],
    options: { eventLogSize: EVENT_LOG, minWatchTimeoutSeconds: 2, maxWatchBufferMiB: 1, watchCatchUpStallSeconds: 5, watchBookmarkIntervalSeconds: 1 },
  });
});

afterAll(async () => {
  await flotilla?.stop();
});

describe('watch limits', () => {
  it('a @kubernetes/client-node informer whose RV fell out of the event log gets 410, relists, and ends equal to the members', async () => {
    const kc = new KubeConfig();
    kc.loadFromFile(flotilla.kubeconfig);
    const api = kc.makeApiClient(CoreV1Api);
    let lists = 0;
    // Selected: it sees no event of the churn below, so its RV stays behind while the log moves on.
    const informer = makeInformer<V1ConfigMap>(kc, `/api/v1/namespaces/${NS}/configmaps`, () => {
      lists++;
      return api.listNamespacedConfigMap({ namespace: NS, labelSelector: 'tier=rare' });
    }, 'tier=rare');
    const errors: unknown[] = [];
    informer.on('error', (e) => errors.push(e));
    await ok(east, 'POST', `/api/v1/namespaces/${NS}/configmaps`, cm('rare-0', { tier: 'rare' }));
    await informer.start();
    try {
      expect(lists).toBe(1);
      await ok(east, 'POST', `/api/v1/namespaces/${NS}/configmaps`, cm('rare-1', { tier: 'rare' }));
      await until('the informer to see rare-1 by watch', () => informer.list().some((c) => c.metadata!.name === 'rare-1'), 10_000);
      expect(lists).toBe(1);

      // More changes in east than the event log keeps, none of them selected: the informer's RV
      // (rare-1's) falls out of the log.
      const names = Array.from({ length: EVENT_LOG + 200 }, (_, i) => `churn-${i}`);
      await inParallel(names, 32, (n) => ok(east, 'POST', `/api/v1/namespaces/${NS}/configmaps`, cm(n)));

      // Its watch ends at the server-side timeout (2–4 s); resuming from its old RV is a 410.
      await until(`the informer to relist (errors: ${errors.map(String).join('; ')})`, () => lists >= 2, 20_000);
      const want = (await memberJson<V1ConfigMapList>(east, 'GET', `/api/v1/namespaces/${NS}/configmaps?labelSelector=tier%3Drare`)).items.map((c) => c.metadata!.name).sort();
      await until('the informer to equal east', () => JSON.stringify(informer.list().map((c) => c.metadata!.name).sort()) === JSON.stringify(want), 10_000);
      expect(want).toEqual(['rare-0', 'rare-1']);
      expect(informer.list().map((c) => c.metadata!.annotations![CLUSTER])).toEqual(['east', 'east']);
      expect(errors).toEqual([]);
    } finally {
      await informer.stop();
    }
  }, 120_000);

  it('a watcher that stops reading is evicted; one that reads sees every event', async () => {
    const list = await memberJson<V1ConfigMapList>(flotilla.endpoint, 'GET', `/api/v1/namespaces/${NS}/configmaps`);
    const from = list.metadata!.resourceVersion!;
    const path = `/api/v1/namespaces/${NS}/configmaps?watch=1&resourceVersion=${encodeURIComponent(from)}&timeoutSeconds=120&labelSelector=size%3Dbig`;
    const openBefore = await openWatchesSettled();
    const reader = await openWatch(flotilla.endpoint, path);
    const res = await pausedWatch(path);
    const stalled = { res, closed: new Promise<void>((r) => res.socket.once('close', () => r())) };
    try {
      const evictedBefore = await metric('flotilla_watch_evictions_total');
      // ~24 MB of events: far more than 1 MiB of buffer plus what the sockets hold.
      const big = 'x'.repeat(80 * 1024);
      const names = Array.from({ length: 300 }, (_, i) => `big-${i}`);
      await inParallel(names, 16, (n) => ok(west, 'POST', `/api/v1/namespaces/${NS}/configmaps`, cm(n, { size: 'big' }, { big })));
      await reader.until((evs) => evs.filter((e) => e.type === 'ADDED').length === names.length, 30_000);
      expect(new Set(reader.events.map((e) => e.object.metadata!.name)).size).toBe(names.length);
      await until('the stalled watcher to be evicted', async () => (await metric('flotilla_watch_evictions_total')) > evictedBefore, 10_000);
      // Flotilla closed its connection: the stalled client sees the end once it reads again.
      stalled.res.resume();
      await stalled.closed;
      // And forgotten: of the two, only the reader is still counted as open.
      await until('the evicted watch to be forgotten', async () => (await metric('flotilla_watches')) === openBefore + 1, 5_000);
    } finally {
      reader.close();
      stalled.res.destroy();
    }
  }, 120_000);
});

describe('watch catch-up and the buffer bound', () => {
  it('a watch-list client still reading a snapshot larger than the buffer is not evicted by a live event', async () => {
    // The ~24 MB of size=big configmaps the eviction test made: far more than 1 MiB plus what the sockets hold.
    const path = `/api/v1/namespaces/${NS}/configmaps?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=120&labelSelector=size%3Dbig`;
    const evictedBefore = await metric('flotilla_watch_evictions_total');
    const snapshot = (await memberJson<V1ConfigMapList>(flotilla.endpoint, 'GET', `/api/v1/namespaces/${NS}/configmaps?labelSelector=size%3Dbig`)).items.length;
    expect(snapshot).toBeGreaterThan(100);
    const slow = await pausedWatch(path);
    try {
      // A live event while the client has read almost none of the snapshot.
      await ok(east, 'POST', `/api/v1/namespaces/${NS}/configmaps`, cm('big-late', { size: 'big' }, { big: 'y'.repeat(1024) }));
      await new Promise((r) => setTimeout(r, 1500));
      expect(await metric('flotilla_watch_evictions_total')).toBe(evictedBefore);
      // Now it reads: the whole snapshot, the end-of-initial-events bookmark, then the live event.
      const chunks: string[] = [];
      let tail = '';
      slow.setEncoding('utf8');
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('the live event did not arrive after the snapshot')), 30_000);
        slow.on('data', (chunk: string) => {
          chunks.push(chunk);
          const seen = tail + chunk;
          tail = seen.slice(-64);
          if (seen.includes('"name":"big-late"')) {
            clearTimeout(timer);
            resolve();
          }
        });
        slow.on('end', () => reject(new Error('the watch ended')));
        slow.resume();
      });
      const types = chunks.join('').split('\n').filter((l) => l.startsWith('{"type"')).map((l) => JSON.parse(l) as { type: string; object: { metadata: { name: string; annotations?: Record<string, string> } } });
      const end = types.findIndex((e) => e.type === 'BOOKMARK' && e.object.metadata.annotations?.['k8s.io/initial-events-end'] === 'true');
      // Exactly the snapshot before it: no periodic bookmark (every 1 s here) inside the catch-up.
      expect(end).toBe(snapshot);
      expect(types.slice(end + 1).map((e) => `${e.type} ${e.object.metadata.name}`)).toContain('ADDED big-late');
    } finally {
      slow.destroy();
    }
  }, 120_000);
});

/** ~24 MB of configmaps of its own (30 of 800 KB), made once; their watch-list path. */
const BIG_WATCH = `/api/v1/namespaces/${NS}/configmaps?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=120&labelSelector=mem%3Dbig`;
async function bigSnapshot(): Promise<number> {
  const names = Array.from({ length: 30 }, (_, i) => `mem-${i}`);
  const fill = 'm'.repeat(800 * 1024);
  await inParallel(names, 8, (n) => ok(west, 'POST', `/api/v1/namespaces/${NS}/configmaps`, cm(n, { mem: 'big' }, { fill })));
  const listPath = `/api/v1/namespaces/${NS}/configmaps?labelSelector=mem%3Dbig`;
  await until('flotilla to cache them', async () => (await memberJson<V1ConfigMapList>(flotilla.endpoint, 'GET', listPath)).items.length === names.length, 10_000);
  return names.length;
}

/** A watch whose client reads nothing until told to. */
function pausedWatch(path: string): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const req = request(new URL(path, flotilla.url), { ca: readFileSync(fleet.caFile), headers: { authorization: `Bearer ${flotilla.endpoint.token}` } }, (res) => {
      res.pause();
      resolve(res);
    });
    req.on('error', reject);
    req.end();
  });
}

const ADDED_LINE = Buffer.from('{"type":"ADDED"');
const INITIAL_EVENTS_END = Buffer.from('k8s.io/initial-events-end');

/** Matches of `needle` in `seen` that end past `from` (those ending before were counted with the previous chunk). */
function countFrom(seen: Buffer, needle: Buffer, from: number): number {
  let n = 0;
  for (let at = seen.indexOf(needle); at >= 0; at = seen.indexOf(needle, at + 1)) if (at + needle.length > from) n++;
  return n;
}

/** The ADDED events a watch-list sends before its end-of-initial-events bookmark; rejects if the watch ends first. */
function countUntilInitialEventsEnd(res: IncomingMessage): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    let carry = Buffer.alloc(0);
    let added = 0;
    res.on('data', (chunk: Buffer) => {
      const seen = Buffer.concat([carry, chunk]);
      added += countFrom(seen, ADDED_LINE, carry.length);
      if (countFrom(seen, INITIAL_EVENTS_END, carry.length) > 0) resolve(added);
      carry = seen.subarray(Math.max(0, seen.length - INITIAL_EVENTS_END.length));
    });
    // An evicted watch is a closed socket, not always an 'end'.
    res.once('close', () => reject(new Error(`the watch ended before the bookmark, after ${added} ADDED`)));
    res.resume();
  });
}

describe('watch catch-up memory', () => {
  it('watch-list snapshots to clients that do not read are written as they read, not held in memory', async () => {
    const snapshot = await bigSnapshot();
    const rssAnonMB = () => Number(/RssAnon:\s+(\d+) kB/.exec(readFileSync(`/proc/${flotilla.proc.pid}/status`, 'utf8'))![1]) / 1024;
    const before = rssAnonMB();
    const clients = 8;
    const paused = await Promise.all(Array.from({ length: clients }, () => pausedWatch(BIG_WATCH)));
    try {
      await new Promise((r) => setTimeout(r, 2000));
      // Each snapshot is ~24 MB: held whole, 8 of them would be ~190 MB more.
      const grew = rssAnonMB() - before;
      expect(grew).toBeLessThan(60);
      // And each client that reads gets all of it, then the end-of-initial-events bookmark. Read
      // as a client that keeps up would: by the chunk, never joining a line of 800 KB piece by piece
      // (that made the reader itself the stalled client on a loaded machine).
      const counts = await Promise.all(paused.map((res) => countUntilInitialEventsEnd(res)));
      expect(counts).toEqual(Array.from({ length: clients }, () => snapshot));
    } finally {
      for (const res of paused) res.destroy();
    }
  }, 120_000);

  it('a catch-up the client takes nothing of for watchCatchUpStallSeconds is ended', async () => {
    await bigSnapshot();
    const evictedBefore = await metric('flotilla_watch_evictions_total');
    const openBefore = await openWatchesSettled();
    const stalled = await pausedWatch(BIG_WATCH);
    const closed = new Promise<void>((r) => stalled.socket.once('close', () => r()));
    try {
      await new Promise((r) => setTimeout(r, 2000));
      // Still open before the limit (5 s here)...
      expect(await metric('flotilla_watches')).toBe(openBefore + 1);
      // ...ended after it, and forgotten.
      // The limit counts from the last time the socket drained: the kernel's buffers take the
      // first megabytes at their own pace, slower when a loaded CI machine runs other files too
      // (once past 15 s there), so the end is awaited generously.
      await until('the stalled catch-up to be ended', async () => (await metric('flotilla_watch_evictions_total')) > evictedBefore, 40_000);
      expect(await metric('flotilla_watches')).toBe(openBefore);
      stalled.resume();
      await closed;
    } finally {
      stalled.destroy();
    }
  }, 90_000);
});

describe('watch fan-out', () => {
  it('many watchers under a burst each get every event once, in the same order, with lines joined into fewer writes', async () => {
    const list = await memberJson<V1ConfigMapList>(flotilla.endpoint, 'GET', `/api/v1/namespaces/${NS}/configmaps`);
    const from = list.metadata!.resourceVersion!;
    const path = `/api/v1/namespaces/${NS}/configmaps?watch=1&resourceVersion=${encodeURIComponent(from)}&timeoutSeconds=120&labelSelector=burst%3Dyes`;
    const watchers = await Promise.all(Array.from({ length: 200 }, () => openWatch(flotilla.endpoint, path)));
    try {
      const [linesBefore, writesBefore] = [await metric('flotilla_watch_live_lines_total'), await metric('flotilla_watch_live_writes_total')];
      const names = Array.from({ length: 60 }, (_, i) => `burst-${i}`);
      const home = (n: string) => (Number(n.split('-')[1]) % 2 ? west : east);
      await inParallel(names, 16, (n) => ok(home(n), 'POST', `/api/v1/namespaces/${NS}/configmaps`, cm(n, { burst: 'yes' })));
      await inParallel(names, 16, (n) => ok(home(n), 'PUT', `/api/v1/namespaces/${NS}/configmaps/${n}`, cm(n, { burst: 'yes' }, { v: '2' })));
      const want = names.length * 2;
      await Promise.all(watchers.map((w) => w.until((evs) => evs.length >= want, 30_000)));
      // A little longer: anything extra (a repeat) would arrive now.
      await new Promise((r) => setTimeout(r, 500));
      const seen = (w: (typeof watchers)[number]) => w.events.map((e) => `${e.type} ${e.object.metadata!.name} ${e.object.metadata!.resourceVersion}`);
      const first = seen(watchers[0]!);
      expect(first.length).toBe(want);
      for (const n of names) {
        const mine = first.filter((l) => l.split(' ')[1] === n).map((l) => l.split(' ')[0]);
        expect(mine, n).toEqual(['ADDED', 'MODIFIED']);
      }
      for (const w of watchers) expect(seen(w)).toEqual(first);
      const lines = (await metric('flotilla_watch_live_lines_total')) - linesBefore;
      const writes = (await metric('flotilla_watch_live_writes_total')) - writesBefore;
      expect(lines).toBe(want * watchers.length);
      expect(writes).toBeGreaterThan(0);
      expect(writes).toBeLessThan(lines);
    } finally {
      for (const w of watchers) w.close();
    }
  }, 120_000);
});
