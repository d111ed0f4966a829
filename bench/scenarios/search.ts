import { mkdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { CachedResource, ResourceCatalog } from '../../src/cacher/cache-roles.js';
import { gvrKey } from '../../src/api/resource-info.js';
import { listResponse } from '../../src/mux/reads.js';
import { SnapshotRegistry } from '../../src/mux/snapshots.js';
import { KEY_SEP, Store, type Change, type StoreOptions } from '../../src/store/store.js';
import { CREATED_FIELD, fieldIndexEntry } from '../../src/store/meta-record.js';
import { buildReadView } from '../../src/view/steps.js';
import { StoreOwnerSearch } from '../../src/view/owner-predicate.js';
import type { ViewRequest } from '../../src/view/view-step.js';
import { percentile } from '../lib/http.js';
import { figureSink, type Scenario } from '../lib/scenario.js';
import { drain, ingested } from '../lib/in-process.js';
import { makePod } from '../lib/pods.js';
import type { Figure } from '../lib/report.js';

/**
 * search: fleet search terms served from the store, in this process on a store of its own
 * (no member, no HTTP: two simulated members' names in the store). Pods named as Deployments name
 * them (`<deployment>-<pod-template-hash>-<random>`), 25 Deployments of 10 pods in each namespace
 * of each member, 250 pods a namespace and member (1M pods in 2,000 namespaces in the full
 * profile), with their ReplicaSets and Deployments cached beside them for owner search. Timed,
 * each against the label-selected list of the same 100 objects: a rare substring (100 objects)
 * within a name token, inside one and across two, a dense one (every Deployment named `checkout`)
 * paged and not, a name prefix, a pod-template-hash whole and in part, a pod's random suffix (not
 * indexed: a scan), a Deployment's pods by owner, a
 * creation-time range; then the store's size and the commits' CPU per object with the name index
 * and without the name and creation-time indexes (the same batches committed to a second store,
 * without their creation-time entries, the two taking turns).
 */

const CLUSTERS = ['east', 'west'];
const PODS_PER_NAMESPACE = 250;
const PODS_PER_DEPLOYMENT = 10;
const BATCH = 5000;
/** The one Deployment the rare searches find: in the first RARE_NAMESPACES namespaces of each member. */
const RARE = 'ledger-reconciler';
const RARE_NAMESPACES = 5;
const DEPLOYMENTS = [
  'checkout', 'cart', 'payments', 'catalog', 'search', 'frontend', 'api-gateway', 'auth', 'inventory', 'orders',
  'shipping', 'recommendations', 'reviews', 'notifications', 'email-sender', 'image-resizer', 'pricing', 'promotions', 'accounts', 'billing',
  'invoices', 'ledger', 'fraud-detector', 'session-store', 'redis-cache', 'postgres-exporter', 'metrics-agent', 'log-forwarder', 'ingress-controller', 'cert-manager',
  'external-dns', 'config-server', 'feature-flags', 'user-profile', 'wishlist', 'loyalty', 'currency', 'tax-calculator', 'geo-locator', 'report-builder',
];
// The apimachinery alphabet (no vowels), as generated names use.
const ALPHABET = 'bcdfghjklmnpqrstvwxz2456789';
const T0 = Date.parse('2026-01-01T00:00:00Z');

const info = (group: string, resource: string, kind: string) => ({ group, version: 'v1', resource, kind, namespaced: true, singularName: kind.toLowerCase(), shortNames: [], categories: [], memberVerbs: [] });
const PODS: CachedResource = { info: info('', 'pods', 'Pod'), clusters: CLUSTERS };
const REPLICASETS: CachedResource = { info: info('apps', 'replicasets', 'ReplicaSet'), clusters: CLUSTERS };
const DEPLOYS: CachedResource = { info: info('apps', 'deployments', 'Deployment'), clusters: CLUSTERS };

const nsName = (n: number) => `shop-${String(n).padStart(4, '0')}`;

/** A stable, random-looking string of the generated-name alphabet (n → string is one to one below 27^len). */
function scrambled(n: number, len: number): string {
  let x = (BigInt(n) * 2654435761n + 12345n) % BigInt(ALPHABET.length) ** BigInt(len);
  let s = '';
  for (let k = 0; k < len; k++) {
    s += ALPHABET[Number(x % 27n)];
    x /= 27n;
  }
  return s;
}

/** Deployment d of namespace n (every namespace has 25 distinct ones). */
function deploymentName(n: number, d: number): string {
  return n < RARE_NAMESPACES && d === 0 ? RARE : DEPLOYMENTS[(n + d) % DEPLOYMENTS.length]!;
}

interface Filled {
  pods: number;
  /** Ingest (decode, encode, meta record) CPU per pod: done once, for both stores. */
  ingestCpuUsPerPod: number;
  fillSeconds: number;
}

/** Makes the changes of every cached object, a namespace at a time, and hands each batch to `commit`. */
async function fill(namespaces: number, commit: (resource: string, cluster: string, batch: Change[]) => Promise<void>): Promise<{ pods: number; ingestUs: number }> {
  let rv = 1;
  let pods = 0;
  let ingestUs = 0;
  let deploymentIndex = 0;
  for (const cluster of CLUSTERS) {
    const batches: Record<string, Change[]> = { pods: [], rs: [], deploy: [] };
    const flush = async (force: boolean) => {
      for (const [kind, resource] of [['pods', gvrKey(PODS.info)], ['rs', gvrKey(REPLICASETS.info)], ['deploy', gvrKey(DEPLOYS.info)]] as const) {
        if (batches[kind]!.length === 0 || (!force && batches[kind]!.length < BATCH)) continue;
        await commit(resource, cluster, batches[kind]!);
        batches[kind] = [];
      }
    };
    for (let n = 0; n < namespaces; n++) {
      const namespace = nsName(n);
      const cpu0 = process.cpuUsage();
      for (let d = 0; d < PODS_PER_NAMESPACE / PODS_PER_DEPLOYMENT; d++) {
        const deploy = deploymentName(n, d);
        const hash = scrambled(deploymentIndex++, 10);
        const deployUid = `d-${cluster}-${namespace}-${deploy}`;
        const rsUid = `rs-${cluster}-${namespace}-${deploy}`;
        const created = new Date(T0 + (n * 25 + d) * 60_000).toISOString().replace('.000Z', 'Z');
        batches.deploy!.push(ingested(cluster, 'Deployment', { apiVersion: 'apps/v1', metadata: { namespace, name: deploy, uid: deployUid, resourceVersion: String(++rv), creationTimestamp: created, labels: { app: deploy } } }, String(rv)));
        batches.rs!.push(ingested(cluster, 'ReplicaSet', {
          apiVersion: 'apps/v1',
          metadata: { namespace, name: `${deploy}-${hash}`, uid: rsUid, resourceVersion: String(++rv), creationTimestamp: created, labels: { app: deploy, 'pod-template-hash': hash },
            ownerReferences: [{ apiVersion: 'apps/v1', kind: 'Deployment', name: deploy, uid: deployUid, controller: true, blockOwnerDeletion: true }] },
        }, String(rv)));
        for (let p = 0; p < PODS_PER_DEPLOYMENT; p++) {
          const name = `${deploy}-${hash}-${scrambled(pods, 5)}`;
          // The list scenario's pod (labels, two containers, about 2.5 KB as served), named and owned as a Deployment's.
          const pod = makePod(pods, namespace) as { metadata: Record<string, unknown> & { labels: Record<string, string> } };
          pod.metadata = {
            ...pod.metadata, name, uid: `p-${cluster}-${pods}`, resourceVersion: String(++rv), creationTimestamp: created,
            labels: { ...pod.metadata.labels, app: deploy, 'pod-template-hash': hash },
            ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: `${deploy}-${hash}`, uid: rsUid, controller: true, blockOwnerDeletion: true }],
          };
          batches.pods!.push(ingested(cluster, 'Pod', pod as never, String(rv)));
          pods++;
        }
      }
      const cpu = process.cpuUsage(cpu0);
      ingestUs += cpu.user + cpu.system;
      await flush(false);
    }
    await flush(true);
  }
  return { pods, ingestUs };
}

/** The bytes LMDB holds in a store's file (sparse: what the filesystem allocated). */
function storeBytes(dir: string): number {
  return statSync(join(dir, 'data.mdb')).blocks * 512;
}

interface BenchStore {
  store: Store;
  dir: string;
  commitUs: number;
  /** The batch as this store is given it (without the creation-time index's entries), made before its commit is timed. */
  batchOf?: (batch: Change[]) => Change[];
}

/** An empty store in `dir`, and what its commits cost (this process: the main thread and LMDB's writer thread). */
function emptyStore(dir: string, opts: StoreOptions, batchOf?: (batch: Change[]) => Change[]): BenchStore {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  return { store: Store.open(dir, opts), dir, commitUs: 0, ...(batchOf ? { batchOf } : {}) };
}

const CREATED_ENTRY = fieldIndexEntry(CREATED_FIELD, '');

/** A batch whose objects carry no creation-time index entry: the store without the search indexes. */
function withoutCreatedEntries(batch: Change[]): Change[] {
  return batch.map((c) => (c.labels ? { ...c, labels: c.labels.split(KEY_SEP).filter((l) => !l.startsWith(CREATED_ENTRY)).join(KEY_SEP) } : c));
}

/** Fills the stores with the same objects, batch by batch, taking turns at going first. */
async function fillStores(stores: BenchStore[], namespaces: number): Promise<Filled> {
  const started = performance.now();
  let turn = 0;
  const { pods, ingestUs } = await fill(namespaces, async (resource, cluster, batch) => {
    const order = turn++ % 2 === 0 ? stores : [...stores].reverse();
    for (const s of order) {
      const given = s.batchOf ? s.batchOf(batch) : batch;
      const cpu0 = process.cpuUsage();
      await s.store.commit({ cluster, resource }, given, { rv: batch[batch.length - 1]!.rv }, { log: false, fresh: true });
      const cpu = process.cpuUsage(cpu0);
      s.commitUs += cpu.user + cpu.system;
    }
  });
  return { pods, ingestCpuUsPerPod: ingestUs / pods, fillSeconds: (performance.now() - started) / 1000 };
}

interface Timed {
  objects: number;
  p50: number;
  p99: number;
  cpuP50: number;
  runs: number;
}

/** `read` repeated for `budgetMs` (at least `minRuns` times): wall and CPU milliseconds per run. */
function timed(read: () => number, budgetMs: number, minRuns: number): Timed {
  const wall: number[] = [];
  const cpu: number[] = [];
  let objects = 0;
  const started = performance.now();
  while (wall.length < minRuns || performance.now() - started < budgetMs) {
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    objects = read();
    wall.push(performance.now() - t0);
    const c = process.cpuUsage(c0);
    cpu.push((c.user + c.system) / 1000);
    if (wall.length >= 2000) break;
  }
  return { objects, p50: percentile(wall, 50), p99: percentile(wall, 99), cpuP50: percentile(cpu, 50), runs: wall.length };
}

export interface SearchMeasurement {
  figures: Figure[];
  notes: string[];
  pods: number;
}

/**
 * The scenario's work, at `namespaces` × 250 pods per member (2,000: 1M pods), in `dir`. With
 * `compare` the same objects are also committed to a store without the name and creation-time indexes (ingest CPU
 * and store size side by side).
 */
export async function measureSearch(dir: string, namespaces: number, emit: (f: Figure) => void, log: (line: string) => void, compare = true, budgetMs = 3000): Promise<SearchMeasurement> {
  const { figures, add } = figureSink('search', emit);
  const notes: string[] = [];
  const catalog: ResourceCatalog = { resource: (k) => [PODS, REPLICASETS, DEPLOYS].find((r) => gvrKey(r.info) === k), cachedResources: () => [PODS, REPLICASETS, DEPLOYS] };
  const indexed = emptyStore(join(dir, 'with-index'), {});
  const without = compare ? emptyStore(join(dir, 'without-index'), { indexNames: false, indexCreated: false }, withoutCreatedEntries) : undefined;
  const filled = await fillStores(without ? [indexed, without] : [indexed], namespaces);
  const { store } = indexed;
  log(`search: ${filled.pods} pods (and their ReplicaSets and Deployments) committed in ${filled.fillSeconds.toFixed(1)} s${without ? ', to two stores' : ''}`);
  const snapshots = new SnapshotRegistry(store);
  const scanSnapshots = without ? new SnapshotRegistry(without.store) : undefined;
  try {
    const owners = new StoreOwnerSearch(store, catalog);
    const listIn = (st: Store, snaps: SnapshotRegistry, req: Partial<ViewRequest>, limit?: number) => {
      const view = buildReadView({ resource: PODS, watching: false, owners, ...req });
      return drain(listResponse(st, { resource: PODS, view, form: 'object', snapshots: snaps, caller: 'bench', ...(limit ? { limit } : {}) })).items;
    };
    const list = (req: Partial<ViewRequest>, limit?: number) => listIn(store, snapshots, req, limit);
    const label = timed(() => list({ labelSelector: `app=${RARE}` }), budgetMs, 20);
    // `scan`: timed in the store without the name and creation-time indexes too (a few runs: each reads every pod).
    // `slow`: served by a scan whatever the index (two runs: each reads every pod, and at 1M the meta records too).
    // `target`: the issue's budget for a search of about 100 objects (p50, p99, and against the label-selected list).
    const cases: { name: string; req: Partial<ViewRequest>; limit?: number; target?: boolean; scan?: boolean; slow?: boolean }[] = [
      { name: 'rare_token', req: { labelSelector: 'search.flotilla.io/name-contains=reconciler' }, target: true, scan: true },
      { name: 'rare_token_limit100', req: { labelSelector: 'search.flotilla.io/name-contains=reconciler' }, limit: 100, scan: true },
      { name: 'rare_inside_token', req: { labelSelector: 'search.flotilla.io/name-contains=concil' } },
      // Both words common (every `ledger` Deployment's pods, every `recommendations` one's): a pair of the index.
      { name: 'rare_across_tokens', req: { labelSelector: 'search.flotilla.io/name-contains=ledger-rec' }, target: true, scan: true },
      { name: 'rare_prefix', req: { labelSelector: 'search.flotilla.io/name-prefix=ledger-re' }, target: true, scan: true },
      // `ledger-reconciler-…` and `ledger-<hash starting with r>-…` (about 1,000 objects at 1M pods).
      { name: 'prefix_into_hashes', req: { labelSelector: 'search.flotilla.io/name-prefix=ledger-r' }, scan: true },
      // A pod-template-hash, whole and a part of it: generated tokens of six characters or more are indexed.
      { name: 'generated_token', req: { labelSelector: `search.flotilla.io/name-contains=${scrambled(0, 10)}` }, target: true, scan: true },
      { name: 'generated_inside_token', req: { labelSelector: `search.flotilla.io/name-contains=${scrambled(0, 10).slice(1)}` }, scan: true },
      // Five generated characters, as a pod's random suffix has: too short to be indexed (a scan).
      { name: 'pod_suffix', req: { labelSelector: `search.flotilla.io/name-contains=${scrambled(0, 5)}` }, slow: true },
      { name: 'dense_limit100', req: { labelSelector: 'search.flotilla.io/name-contains=checkout' }, limit: 100, scan: true },
      { name: 'dense', req: { labelSelector: 'search.flotilla.io/name-contains=checkout' }, scan: true },
      { name: 'created_range', req: { labelSelector: `search.flotilla.io/created-after=${(T0 + 10 * 60_000) / 1000},search.flotilla.io/created-before=${(T0 + 20 * 60_000) / 1000}` }, scan: true },
    ];
    add('label_selected_objects', label.objects, 'objects');
    add('label_selected_p50_ms', label.p50, 'ms');
    add('label_selected_cpu_p50_ms', label.cpuP50, 'ms');
    for (const c of cases) {
      const t = c.slow ? timed(() => list(c.req, c.limit), 0, 2) : timed(() => list(c.req, c.limit), budgetMs, 5);
      add(`${c.name}_objects`, t.objects, 'objects');
      add(`${c.name}_p50_ms`, t.p50, 'ms', c.target ? { op: '<=', value: 20 } : undefined);
      add(`${c.name}_p99_ms`, t.p99, 'ms', c.target ? { op: '<=', value: 60 } : undefined);
      add(`${c.name}_cpu_p50_ms`, t.cpuP50, 'ms');
      if (c.target) {
        add(`${c.name}_vs_label`, t.p50 / label.p50, 'x', { op: '<=', value: 2 });
        add(`${c.name}_cpu_vs_label`, t.cpuP50 / label.cpuP50, 'x', { op: '<=', value: 2 });
      }
      notes.push(`${c.name}: ${c.req.labelSelector}${c.limit ? ` limit=${c.limit}` : ''}: ${t.objects} objects, ${t.runs} lists`);
      if (c.scan && without && scanSnapshots) {
        const scan = timed(() => listIn(without.store, scanSnapshots, c.req, c.limit), 0, 3);
        if (scan.objects !== t.objects) throw new Error(`search: ${c.name}: ${t.objects} objects through the index, ${scan.objects} by a scan`);
        add(`${c.name}_scan_p50_ms`, scan.p50, 'ms');
        add(`${c.name}_scan_cpu_p50_ms`, scan.cpuP50, 'ms');
      }
    }
    // A Deployment's pods by owner, through its ReplicaSet.
    const ownerNs = nsName(namespaces >> 1);
    const ownerName = deploymentName(namespaces >> 1, 1);
    const ownerReq = (): Partial<ViewRequest> => {
      const found = owners.find({ kind: 'Deployment', name: ownerName }, CLUSTERS, ownerNs);
      return { namespace: ownerNs, labelSelector: `search.flotilla.io/owner-kind=Deployment,search.flotilla.io/owner-name=${ownerName}`, ownersFound: found };
    };
    const owner = timed(() => list(ownerReq()), budgetMs, 20);
    add('owner_objects', owner.objects, 'objects');
    add('owner_p50_ms', owner.p50, 'ms', { op: '<=', value: 10 });
    add('owner_cpu_p50_ms', owner.cpuP50, 'ms');

    add('store_mb', storeBytes(indexed.dir) / 2 ** 20, 'MB');
    add('commit_cpu_us_per_pod', indexed.commitUs / filled.pods, 'µs');
    add('ingest_cpu_us_per_pod', filled.ingestCpuUsPerPod, 'µs');
    notes.push(`${filled.pods} pods in ${namespaces} namespaces × ${CLUSTERS.length} members, with a ReplicaSet and a Deployment per 10 pods`);
  } finally {
    snapshots.close();
    scanSnapshots?.close();
    await store.close();
  }
  if (without) {
    await without.store.close();
    const withBytes = storeBytes(indexed.dir);
    const withoutBytes = storeBytes(without.dir);
    const ingestWith = filled.ingestCpuUsPerPod + indexed.commitUs / filled.pods;
    const ingestWithout = filled.ingestCpuUsPerPod + without.commitUs / filled.pods;
    add('store_mb_without_indexes', withoutBytes / 2 ** 20, 'MB');
    add('store_size_vs_without', withBytes / withoutBytes, 'x', { op: '<=', value: 1.2 });
    add('commit_cpu_us_per_pod_without_indexes', without.commitUs / filled.pods, 'µs');
    add('ingest_cpu_vs_without', ingestWith / ingestWithout, 'x', { op: '<=', value: 1.1 });
    notes.push(`ingest CPU per pod: decoding, encoding and the meta record once (${filled.ingestCpuUsPerPod.toFixed(0)} µs), plus each store's commits of the same batches, the two stores taking turns at going first`);
    rmSync(without.dir, { recursive: true, force: true });
  }
  rmSync(indexed.dir, { recursive: true, force: true });
  return { figures, notes, pods: filled.pods };
}

export const search: Scenario = {
  name: 'search',
  async run(ctx, emit) {
    // 1M pods in the full profile; 100k in the quick one; 10k in the bench's own test.
    const namespaces = ctx.profile.name === 'full' ? 2000 : ctx.profile.pods >= 10_000 ? 200 : 20;
    const dir = join(ctx.dir, 'search-store');
    try {
      const m = await measureSearch(dir, namespaces, emit, ctx.log, true, ctx.profile.name === 'full' ? 10_000 : 3000);
      return { figures: m.figures, facts: { objects: m.pods, objectBytes: NaN, objectBytesAre: 'pods of a few hundred bytes as stored', notes: m.notes } };
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  },
};
