#!/usr/bin/env node
/**
 * commit-cpu: the main thread's CPU per object of a first sync, in this process, without a member:
 * bench pods (makePod) as the member's Table list pages, decoded by a real IngestPool worker,
 * viewed and committed as ScopeWriter.commitPage does (`fresh`, unlogged), then ended as
 * commitList does. What it reports is what the main thread spends from a page's decoded answer to
 * its commit, read from the kernel's per-thread run time (schedstat, nanoseconds): building the
 * pages and waiting for the worker are not counted.
 *
 *   node dist/bench/commit-cpu.js [--pods 100000] [--clusters 10] [--namespaces 10] [--profile]
 *
 * `--profile` samples the main thread with the inspector over the commits only and splits its time
 * by the part that spent it (parts below), and within each part the time in lmdb-js's put path
 * (write.js, keys.js, ordered-binary) and in making key buffers (Buffer.from, string joins); the
 * profiler's own cost inflates everything a little, so read its split, and take totals from a run
 * without it. The store's record counts after the run give the puts per pod, by database.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Session, type Profiler } from 'node:inspector';
import { PerformanceObserver } from 'node:perf_hooks';
import { Worker, isMainThread, parentPort } from 'node:worker_threads';
import { parseArgs } from 'node:util';
import { open } from 'lmdb';
import { makePod } from './lib/pods.js';
import { threadCpuSeconds, threadSchedSeconds } from './lib/cpu-time.js';
import { IngestPool } from '../src/ingest/pool.js';
import { viewObjects } from '../src/ingest/batch.js';
import type { IngestContext } from '../src/ingest/decode.js';
import { Store, type Change } from '../src/store/store.js';
import { KEY_SEP } from '../src/store/keys.js';

const PAGE = 500;
const RESOURCE = 'v1/pods';

/** The main thread's CPU time so far, in µs (the kernel's scheduler account of it). */
function mainThreadCpuUs(): number {
  return threadSchedSeconds(process.pid).running * 1e6;
}

/** Every other thread of this process, by id: its CPU time so far in µs. */
function otherThreadsCpuUs(): Map<number, number> {
  return new Map(threadCpuSeconds(process.pid).filter((t) => !t.main).map((t) => [t.tid, t.seconds * 1e6]));
}

const POD_COLUMNS = ['Name', 'Ready', 'Status', 'Restarts', 'Age', 'IP', 'Node', 'Nominated Node', 'Readiness Gates'].map((name) => ({ name, type: 'string', format: name === 'Name' ? 'name' : '', description: '', priority: 0 }));

/** A member's Table list page of bench pods `from`…`from + count - 1` in `namespace`, as the cachers ask for it. */
function tablePage(from: number, count: number, namespace: string, rv: number): Buffer {
  const rows: string[] = [];
  for (let i = from; i < from + count; i++) {
    const pod = makePod(i, namespace) as { metadata: Record<string, unknown>; spec: { nodeName: string } };
    Object.assign(pod.metadata, {
      uid: `${namespace}-${i.toString(16).padStart(8, '0')}-4b6a-9c1d-5c7a1f2e`,
      resourceVersion: String(rv + i),
      creationTimestamp: '2026-11-28T10:00:00Z',
      managedFields: [{ manager: 'bench', operation: 'Update', apiVersion: 'v1', time: '2026-11-28T10:00:00Z', fieldsType: 'FieldsV1', fieldsV1: { 'f:metadata': { 'f:labels': {} } } }],
    });
    (pod as Record<string, unknown>).status = { phase: 'Pending', qosClass: 'Burstable' };
    const cells = [pod.metadata.name, '0/2', 'Pending', '0', '5m', '<none>', pod.spec.nodeName, '<none>', '<none>'];
    rows.push(`{"cells":${JSON.stringify(cells)},"object":${JSON.stringify(pod)}}`);
  }
  return Buffer.from(`{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"${rv}"},"columnDefinitions":${JSON.stringify(POD_COLUMNS)},"rows":[${rows.join(',')}]}`);
}

/** Which part of the commit path a profile frame belongs to (the innermost frame that names one decides). */
const PARTS: [string, (fn: string, url: string) => boolean][] = [
  ['name index', (_fn, url) => url.endsWith('/store/name-index.js')],
  ['label index', (_fn, url) => url.endsWith('/store/label-index.js')],
  ['event log', (_fn, url) => url.endsWith('/store/event-log.js')],
  ['sync state', (_fn, url) => url.endsWith('/store/sync-state.js')],
  ['objects, meta, byCluster', (_fn, url) => url.endsWith('/store/objects.js')],
  ['store commit loop, object key', (_fn, url) => url.endsWith('/store/store.js')],
  ['transaction queue, environment', (_fn, url) => url.endsWith('/store/transaction-queue.js') || url.endsWith('/store/environment.js')],
  ['viewObjects', (_fn, url) => url.endsWith('/ingest/batch.js')],
  ['worker answers (piscina)', (_fn, url) => url.includes('/piscina/')],
  ['building pages (harness, not counted)', (fn) => fn === 'tablePage' || fn === 'makePod'],
];

function isLmdbPutPath(url: string): boolean {
  return url.includes('/node_modules/lmdb/') || url.includes('/node_modules/ordered-binary/');
}

function isKeyBuilding(fn: string, url: string): boolean {
  return url === 'node:buffer' || url.includes('internal/buffer') || fn === 'from' || fn === 'fromString' || fn === 'fromStringFast';
}

interface PartTime {
  total: number;
  lmdb: number;
  keys: number;
}

/** Splits a profile's sampled time by part (µs). */
function splitProfile(profile: Profiler.Profile): Map<string, PartTime> {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const parts = new Map<string, PartTime>();
  const deltas = profile.timeDeltas ?? [];
  const samples = profile.samples ?? [];
  for (let i = 0; i < samples.length; i++) {
    const us = deltas[i + 1] ?? 0;
    const leaf = byId.get(samples[i]!)!;
    let part: string | undefined;
    let lmdb = false;
    let keys = false;
    const leafFn = leaf.callFrame.functionName;
    if (leafFn === '(garbage collector)') part = 'GC';
    else if (leafFn === '(idle)' || leafFn === '(program)') part = leafFn;
    for (let id: number | undefined = leaf.id; id !== undefined && part === undefined; id = parent.get(id)) {
      const f = byId.get(id)!.callFrame;
      if (isLmdbPutPath(f.url)) lmdb = true;
      else if (!lmdb && isKeyBuilding(f.functionName, f.url)) keys = true;
      const named = PARTS.find(([, test]) => test(f.functionName, f.url));
      if (named) part = named[0];
    }
    part ??= 'other';
    const t = parts.get(part) ?? { total: 0, lmdb: 0, keys: 0 };
    t.total += us;
    if (lmdb) t.lmdb += us;
    else if (keys) t.keys += us;
    parts.set(part, t);
  }
  return parts;
}

/** The records the store holds, by database, and the label index's entries by kind. */
function recordCounts(dir: string): Record<string, number> {
  const root = open({ path: dir, readOnly: true, maxDbs: 16 });
  try {
    const out: Record<string, number> = {};
    for (const name of ['objects', 'meta', 'byCluster', 'events', 'eventRVs', 'sync', 'logs']) out[name] = root.openDB({ name }).getCount();
    const labels = root.openDB<Buffer, Buffer>({ name: 'labelIndex', keyEncoding: 'binary', encoding: 'binary' });
    const kinds: Record<string, number> = {};
    for (const k of labels.getKeys()) {
      const s = k.toString('utf8');
      const entry = s.split(KEY_SEP)[1] ?? '';
      const kind = entry.startsWith(':') ? entry.slice(0, entry.indexOf('=')) : 'label';
      kinds[kind] = (kinds[kind] ?? 0) + 1;
    }
    for (const [k, n] of Object.entries(kinds)) out[`labelIndex ${k}`] = n;
    return out;
  } finally {
    void root.close();
  }
}

/** A page to build: pods `from`…, `count` of them, in `namespace`, listed at `rv`. */
interface PageOrder {
  from: number;
  count: number;
  namespace: string;
  rv: number;
}

/** Pages are built in a thread of their own, so the main thread's account and its GC hold only what is measured. */
class PageBuilder {
  private readonly worker = new Worker(new URL(import.meta.url));
  private readonly waiting: ((body: Buffer) => void)[] = [];

  constructor() {
    this.worker.on('message', (bytes: Uint8Array) => this.waiting.shift()!(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)));
  }

  build(order: PageOrder): Promise<Buffer> {
    return new Promise((resolve) => {
      this.waiting.push(resolve);
      this.worker.postMessage(order);
    });
  }

  close(): Promise<number> {
    return this.worker.terminate();
  }
}

function servePages(): void {
  parentPort!.on('message', (o: PageOrder) => {
    const body = tablePage(o.from, o.count, o.namespace, o.rv);
    const owned = new Uint8Array(body);
    parentPort!.postMessage(owned, [owned.buffer]);
  });
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { pods: { type: 'string', default: '100000' }, clusters: { type: 'string', default: '10' }, namespaces: { type: 'string', default: '10' }, profile: { type: 'boolean', default: false }, 'keep-store': { type: 'boolean', default: false } } });
  const pods = Number(values.pods);
  const clusters = Number(values.clusters);
  const namespaces = Number(values.namespaces);
  const perCluster = Math.ceil(pods / clusters);
  const perNamespace = Math.ceil(perCluster / namespaces);
  const dir = mkdtempSync(join(tmpdir(), 'commit-cpu-'));
  const store = Store.open(dir, { verify: false });
  const pool = new IngestPool(1);
  const builder = new PageBuilder();
  let gcMs = { minor: 0, major: 0 };
  const gc = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      const kind = (e as { detail?: { kind?: number } }).detail?.kind === 1 ? 'minor' : 'major';
      gcMs[kind] += e.duration;
    }
  });
  let session: Session | undefined;
  if (values.profile) {
    session = new Session();
    session.connect();
    session.post('Profiler.enable');
    session.post('Profiler.setSamplingInterval', { interval: 200 });
  }
  // A warm-up cluster, not counted: the JIT and the first LMDB pages.
  const measured = { mainUs: 0, objects: 0, wholeFrom: 0, wholeUs: 0 };
  let othersBefore = new Map<number, number>();
  for (let c = -1; c < clusters; c++) {
    const cluster = c < 0 ? 'warmup' : `c${String(c).padStart(3, '0')}`;
    if (c === 0) {
      gcMs = { minor: 0, major: 0 };
      gc.observe({ entryTypes: ['gc'] });
      othersBefore = otherThreadsCpuUs();
      measured.wholeFrom = mainThreadCpuUs();
      session?.post('Profiler.start');
    }
    const ctx: IngestContext = { cluster, apiVersion: 'v1', kind: 'Pod', dropManagedFields: true };
    const count = c < 0 ? Math.min(perCluster, 5000) : perCluster;
    let rv = 1000;
    for (let n = 0; n < namespaces; n++) {
      const namespace = `bench-${String(n).padStart(2, '0')}`;
      const scope = { cluster, resource: RESOURCE, namespace };
      const inNamespace = Math.min(perNamespace, count - n * perNamespace);
      const order = (from: number) => builder.build({ from: n * perNamespace + from, count: Math.min(PAGE, inNamespace - from), namespace, rv });
      let next = order(0);
      for (let from = 0; from < inNamespace; from += PAGE) {
        const body = await next;
        if (from + PAGE < inNamespace) next = order(from + PAGE);
        const decoding = pool.decodePage(body, ctx);
        const t0 = mainThreadCpuUs();
        const page = await decoding;
        // As ScopeWriter.commitPage does for a first list.
        const objects = viewObjects(page.objects);
        const changes: Change[] = [];
        for (let i = 0; i < objects.length; i++) changes.push({ type: 'ADDED', ...objects[i]!, rv: page.objectRVs[i]! });
        await store.commit(scope, changes, { rv: '' }, { log: false, fresh: true });
        if (c >= 0) {
          measured.mainUs += mainThreadCpuUs() - t0;
          measured.objects += objects.length;
        }
      }
      const t0 = mainThreadCpuUs();
      await store.commit(scope, [], { rv: String(rv), listedAt: new Date().toISOString() }, { log: false, logStartRV: String(rv) });
      if (c >= 0) measured.mainUs += mainThreadCpuUs() - t0;
      rv += 1;
    }
  }
  measured.wholeUs = mainThreadCpuUs() - measured.wholeFrom;
  gc.disconnect();
  const othersAfter = otherThreadsCpuUs();
  let profile: Profiler.Profile | undefined;
  if (session) {
    session.post('Profiler.stop', (err, r) => {
      if (!err) profile = r.profile;
    });
    session.disconnect();
  }
  await pool.close();
  await builder.close();
  await store.close();

  const per = (us: number) => (us / measured.objects).toFixed(1);
  console.log(`commit-cpu: ${measured.objects} pods (${clusters} clusters × ${namespaces} namespaces), main thread ${per(measured.mainUs)} µs/pod from decoded pages to commits (${per(measured.wholeUs)} over the whole run), GC on it ${per((gcMs.minor + gcMs.major) * 1000)} µs/pod (minor ${gcMs.minor.toFixed(0)} ms, major ${gcMs.major.toFixed(0)} ms)`);
  for (const [tid, us] of othersAfter) {
    const d = us - (othersBefore.get(tid) ?? 0);
    if (d > measured.objects) console.log(`  thread ${tid}: ${per(d)} µs/pod`);
  }
  const counts = recordCounts(dir);
  const stored = counts.objects!;
  console.log(`  records per pod: ${Object.entries(counts).map(([k, n]) => `${k} ${(n / stored).toFixed(2)}`).join(', ')}`);
  if (profile) {
    const parts = splitProfile(profile);
    let sampled = 0;
    for (const [name, t] of parts) if (!name.startsWith('building') && !name.startsWith('(idle')) sampled += t.total;
    // Samples are wall time apart: on a loaded machine they count time the thread waited for a CPU
    // too, so each part's share of the sampled busy time is scaled to the measured CPU time.
    const scale = measured.wholeUs / sampled;
    console.log(`  profile: main thread by part, µs/pod (share of sampled busy time × the measured ${per(measured.wholeUs)}); of which lmdb-js put path, of which key buffers:`);
    for (const [name, t] of [...parts].sort((a, b) => b[1].total - a[1].total)) {
      if (name.startsWith('(idle')) continue;
      console.log(`    ${name.padEnd(40)} ${per(t.total * scale).padStart(7)} ${((100 * t.total) / sampled).toFixed(1).padStart(5)}%  lmdb ${per(t.lmdb * scale).padStart(6)}  keys ${per(t.keys * scale).padStart(6)}`);
    }
    const self = new Map<string, number>();
    const deltas = profile.timeDeltas ?? [];
    const byId = new Map(profile.nodes.map((n) => [n.id, n]));
    (profile.samples ?? []).forEach((id, i) => {
      const f = byId.get(id)!.callFrame;
      const name = `${f.functionName || '(anonymous)'} ${f.url.replace(/.*node_modules\//, '').replace(/.*dist\//, '')}:${f.lineNumber + 1}`;
      self.set(name, (self.get(name) ?? 0) + (deltas[i + 1] ?? 0));
    });
    console.log('  top self time (scaled as above, µs/pod):');
    for (const [name, us] of [...self].sort((a, b) => b[1] - a[1]).slice(0, 30)) if (!name.startsWith('(idle)')) console.log(`    ${per(us * scale).padStart(7)}  ${name}`);
  }
  console.log(`COMMIT_CPU ${JSON.stringify({ pods: measured.objects, mainUsPerPod: measured.mainUs / measured.objects, wholeUsPerPod: measured.wholeUs / measured.objects, gcMinorMs: gcMs.minor, gcMajorMs: gcMs.major })}`);
  if (!values['keep-store']) rmSync(dir, { recursive: true, force: true });
  else console.log(`  store kept at ${dir}`);
}

if (isMainThread) await main();
else servePages();
