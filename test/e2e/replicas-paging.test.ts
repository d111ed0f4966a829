import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { join } from 'node:path';
import { startFleet, type Fleet, type MemberInfo } from '../fleet/fleet.js';
import { memberJson, memberRequest, type MemberEndpoint } from '../fleet/http.js';
import { startFlotillaProcess, writeProxyKubeconfig, type FlotillaProcess } from '../support/flotilla-process.js';
import { startRoundRobinFront, type RoundRobinFront } from '../support/round-robin-front.js';
import { startRequestFront, type RequestFront } from '../support/round-robin-requests.js';
import { kubectl } from '../support/kubectl.js';
import { decodeGlobalRV, encodeGlobalRV } from '../../src/api/global-rv.js';
import { encodeContinue } from '../../src/api/continue-token.js';
import { CLUSTER_ANNOTATION } from '../../src/api/fleet-object/cluster-annotation.js';

/**
 * A paged list through two replicas, each with its own store, behind a round-robin front, as the
 * chart runs them: every page of one list is of one state (the first page's resourceVersion), on
 * whichever replica it lands, while a writer creates, updates and deletes configmaps in both
 * members. The state is checked against the members' own lists at the list's member RVs
 * (resourceVersionMatch=Exact): nothing missed, nothing repeated, every object as it was then.
 */
const NS = 'paging';
const SEEDED = 250;
const CONFIGMAPS = '/api/v1/configmaps';
let fleet: Fleet;
const replicas: FlotillaProcess[] = [];
let front: RoundRobinFront;
let requests: RequestFront;
let writer: Writer;

interface Item {
  metadata: { namespace: string; name: string; uid: string; resourceVersion: string; annotations?: Record<string, string> };
  data?: Record<string, string>;
}
interface List {
  metadata: { resourceVersion: string; continue?: string; remainingItemCount?: number };
  items: Item[];
}

function configmap(name: string, keys: number): unknown {
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: NS }, data: Object.fromEntries(Array.from({ length: keys }, (_, i) => [`k${i}`, `${name}-${i}`])) };
}

/** Creates, updates (changing how many keys it holds) and deletes configmaps in every member until stopped. */
class Writer {
  writes = 0;
  private stopped = false;
  private done: Promise<void> | undefined;
  private readonly names: Map<string, string[]>;
  private serial = 0;

  constructor(private readonly members: MemberInfo[]) {
    this.names = new Map(members.map((m) => [m.name, Array.from({ length: SEEDED }, (_, i) => `cm-${i}`)]));
  }

  start(): void {
    this.stopped = false;
    this.done = (async () => {
      while (!this.stopped) {
        await Promise.all(this.members.map((m) => this.writeOne(m)));
        await new Promise((r) => setTimeout(r, 10));
      }
    })();
  }

  private async writeOne(m: MemberInfo): Promise<void> {
    const names = this.names.get(m.name)!;
    const roll = Math.random();
    const path = `/api/v1/namespaces/${NS}/configmaps`;
    if (roll < 0.3 || names.length < 10) {
      const name = `w-${this.serial++}`;
      await memberJson(m, 'POST', path, configmap(name, 1 + (this.serial % 4)));
      names.push(name);
    } else {
      const i = Math.floor(Math.random() * names.length);
      const name = names[i]!;
      if (roll < 0.7) {
        await memberJson(m, 'PUT', `${path}/${name}`, configmap(name, 1 + Math.floor(Math.random() * 5)));
      } else {
        names.splice(i, 1);
        await memberJson(m, 'DELETE', `${path}/${name}`);
      }
    }
    this.writes++;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.done;
  }
}

beforeAll(async () => {
  fleet = await startFleet({ names: ['pg-east', 'pg-west'], dir: join(inject('fleet').dir, 'replicas-paging-fleet'), workloads: false });
  for (const m of fleet.info.members) {
    await memberJson(m, 'POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
    for (let i = 0; i < SEEDED; i += 25) {
      await Promise.all(Array.from({ length: Math.min(25, SEEDED - i) }, (_, j) => memberJson(m, 'POST', `/api/v1/namespaces/${NS}/configmaps`, configmap(`cm-${i + j}`, 1 + ((i + j) % 3)))));
    }
  }
  for (const i of [0, 1]) {
    replicas.push(await startFlotillaProcess({ fleet: fleet.info, dir: join(fleet.info.dir, `flotilla-${i}`), resources: [{ version: 'v1', resource: 'configmaps' }] }));
  }
  const ports = replicas.map((r) => Number(new URL(r.endpoint.server).port));
  front = await startRoundRobinFront(ports);
  requests = await startRequestFront(ports, { cert: join(fleet.info.dir, 'serving.crt'), key: join(fleet.info.dir, 'serving.key'), caFile: fleet.info.caFile });
  // Both replicas hold every seeded configmap before the lists start.
  for (const r of replicas) {
    for (let t = 0; ; t++) {
      const list = JSON.parse((await memberRequest(r.endpoint, 'GET', `/api/v1/namespaces/${NS}/configmaps`)).body) as List;
      if (list.items?.length === 2 * SEEDED) break;
      if (t > 120) throw new Error(`replica ${r.endpoint.server} holds ${list.items?.length} configmaps`);
      await new Promise((res) => setTimeout(res, 500));
    }
  }
  writer = new Writer(fleet.info.members);
}, 300_000);

afterAll(async () => {
  await writer?.stop();
  await front?.close();
  await requests?.close();
  for (const r of replicas) await r.stop();
  await fleet?.stop();
});

/** An item as the member lists it: cluster/namespace/name → uid@member RV, keys of its data. */
function fleetEntry(i: Item): [string, string] {
  const cluster = i.metadata.annotations![CLUSTER_ANNOTATION]!;
  return [`${cluster}/${i.metadata.namespace}/${i.metadata.name}`, `${i.metadata.uid}@${decodeGlobalRV(i.metadata.resourceVersion)[cluster]}:${Object.keys(i.data ?? {}).length}`];
}

/** The members' own lists at each one's RV of a global RV. */
async function membersAt(rv: string): Promise<Map<string, string>> {
  const rvs = decodeGlobalRV(rv);
  const state = new Map<string, string>();
  for (const m of fleet.info.members) {
    const list = await memberJson<List>(m, 'GET', `${CONFIGMAPS}?resourceVersion=${rvs[m.name]}&resourceVersionMatch=Exact`);
    for (const i of list.items) state.set(`${m.name}/${i.metadata.namespace}/${i.metadata.name}`, `${i.metadata.uid}@${i.metadata.resourceVersion}:${Object.keys(i.data ?? {}).length}`);
  }
  return state;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * A paged list as client-go's pager reads it, each request on a new connection (so pages
 * alternate replicas); a 504 with Retry-After (a replica not yet at the list's RV) is retried.
 */
async function pageThrough(endpoint: MemberEndpoint, limit: number): Promise<{ rv: string; items: Item[]; pages: number; retries: number; remaining: number[] }> {
  const items: Item[] = [];
  let rv: string | undefined;
  let token: string | undefined;
  let pages = 0;
  let retries = 0;
  const remaining: number[] = [];
  do {
    const res = await memberRequest(endpoint, 'GET', `${CONFIGMAPS}?limit=${limit}${token ? `&continue=${encodeURIComponent(token)}` : ''}`, undefined, { headers: { connection: 'close' } });
    if (res.status === 504 && res.headers['retry-after']) {
      retries++;
      await sleep(Number(res.headers['retry-after']) * 1000);
      continue;
    }
    if (res.status !== 200) throw new Error(`page ${pages + 1}: ${res.status} ${res.body.slice(0, 400)}`);
    const page = JSON.parse(res.body) as List;
    rv ??= page.metadata.resourceVersion;
    expect(page.metadata.resourceVersion).toBe(rv);
    items.push(...page.items);
    pages++;
    if (page.metadata.remainingItemCount !== undefined) remaining.push(items.length + page.metadata.remainingItemCount);
    token = page.metadata.continue;
    // The writer gets in between pages.
    await sleep(30);
  } while (token);
  return { rv: rv!, items, pages, retries, remaining };
}

describe('a paged list through two replicas', () => {
  it('is one state, the first page’s, on whichever replica each page lands, under concurrent writes', async () => {
    writer.start();
    await sleep(500);
    const before = new Map(front.connections);
    const writesBefore = writer.writes;
    const endpoint = { ...replicas[0]!.endpoint, server: front.url };
    const list = await pageThrough(endpoint, 20);
    const writesDuring = writer.writes - writesBefore;
    const served = [...front.connections].map(([port, n]) => n - (before.get(port) ?? 0));
    const entries = list.items.map(fleetEntry);
    const keys = entries.map(([k]) => k);
    expect(new Set(keys).size, 'no object twice').toBe(keys.length);
    const expected = await membersAt(list.rv);
    const got = new Map(entries);
    const missed = [...expected.keys()].filter((k) => !got.has(k));
    const extra = [...got.keys()].filter((k) => !expected.has(k));
    const changed = [...got].filter(([k, v]) => expected.has(k) && expected.get(k) !== v).map(([k]) => k);
    console.log(`paged list: ${list.pages} pages, ${list.items.length} objects, ${list.retries} retried 504s, connections per replica ${served.join('/')}, ${writesDuring} writes during it; missed ${missed.length}, extra ${extra.length}, changed ${changed.length}`);
    expect({ missed, extra, changed }).toEqual({ missed: [], extra: [], changed: [] });
    expect(served.every((n) => n >= list.pages / 2 - 1)).toBe(true);
    expect(writesDuring).toBeGreaterThan(20);
    // remainingItemCount on every page counts what the list holds at its RV.
    for (const r of list.remaining) expect(r).toBe(list.items.length);
  }, 180_000);

  it('completes kubectl --chunk-size through a front that spreads its requests, objects and Table rows as they were at the list’s RV', async () => {
    writer.start();
    const kubeconfig = join(fleet.info.dir, 'request-front-kubeconfig');
    writeProxyKubeconfig(kubeconfig, requests.url, fleet.info.caFile, replicas[0]!.endpoint.token);
    for (const output of [['-o', 'json'], []]) {
      const from = requests.served.length;
      const run = await kubectl(kubeconfig, ['get', 'configmaps', '-A', '--chunk-size=30', ...output], { timeoutMs: 120_000 });
      expect(run.code, run.stderr).toBe(0);
      const pages = requests.served.slice(from).filter((s) => s.path.startsWith(`${CONFIGMAPS}?`) && s.path.includes('limit=30'));
      expect(pages.filter((p) => p.status === 200).length).toBeGreaterThan(10);
      expect(new Set(pages.map((p) => p.port)).size).toBe(2);
      const rv = (JSON.parse(pages[0]!.body) as List).metadata.resourceVersion;
      const expected = await membersAt(rv);
      let got: [string, string][];
      if (output.length > 0) {
        got = (JSON.parse(run.stdout) as List).items.map(fleetEntry);
      } else {
        // The Table pages kubectl printed from: rows' DATA cells as the objects had them then.
        got = [];
        for (const p of pages.filter((q) => q.status === 200)) {
          const table = JSON.parse(p.body) as { metadata: { resourceVersion: string }; columnDefinitions: { name: string }[]; rows: { cells: unknown[]; object: Item }[] };
          expect(table.metadata.resourceVersion).toBe(rv);
          const data = table.columnDefinitions.findIndex((c) => c.name === 'Data');
          for (const row of table.rows) {
            const [key, at] = fleetEntry(row.object);
            got.push([key, `${at.slice(0, at.lastIndexOf(':'))}:${String(row.cells[data])}`]);
          }
        }
        expect(run.stdout.trim().split('\n').length - 1).toBe(got.length);
      }
      const keys = got.map(([k]) => k);
      expect(new Set(keys).size).toBe(keys.length);
      expect(new Map(got)).toEqual(expected);
    }
    await writer.stop();
  }, 240_000);

  it('answers 410 with the inconsistent-continue token where a replica’s log does not reach back to the list’s RV', async () => {
    const stale = encodeContinue({ rv: encodeGlobalRV(Object.fromEntries(fleet.info.members.map((m) => [m.name, '2']))), start: `v1/configmaps\u0005${NS}\u0005cm-1` });
    for (const r of replicas) {
      const res = await memberRequest(r.endpoint, 'GET', `${CONFIGMAPS}?limit=10&continue=${encodeURIComponent(stale)}`);
      expect(res.status).toBe(410);
      const status = JSON.parse(res.body) as { reason: string; message: string; metadata: { continue?: string } };
      expect(status.reason).toBe('Expired');
      expect(status.message).toMatch(/^The provided continue parameter is too old to display a consistent list result/);
      const rest = await memberRequest(r.endpoint, 'GET', `${CONFIGMAPS}?limit=10&continue=${encodeURIComponent(status.metadata.continue!)}`);
      expect(rest.status).toBe(200);
    }
  });
});
