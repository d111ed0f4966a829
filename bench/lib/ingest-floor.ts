import { rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Registry } from 'prom-client';
import { trackEventLoopDelay } from '../../src/metrics/event-loop-delay.js';
import { TABLE_ACCEPT } from '../../src/cacher/paged-list.js';
import { openStoreRoot } from '../../src/store/environment.js';
import { forEachElement, forEachMember, memberValueAt, parseSpan, skipValue } from '../../src/util/json-members.js';
import { Semaphore } from '../../src/util/semaphore.js';
import type { MemberEndpoint } from '../../test/fleet/http.js';
import type { BenchContext } from './context.js';
import { parseMetricsText } from './flotilla.js';
import { forkHelper } from './forked-server.js';
import { BenchClient } from './http.js';

/**
 * The floor under a first sync: a forked process that makes the lists flotilla's cachers make (one
 * chain of pages per cluster name, Table rows with their objects, the same page size, no more
 * pages at once than flotilla's page slots) and puts each row's object into an LMDB environment
 * opened with the store's own options, keyed by cluster, namespace and name, a page per commit.
 * Nothing is decoded, edited, compressed or indexed: each object's bytes are found with flotilla's
 * own byte walker (util/json-members.ts) and stored as the member sent them. What it costs is what
 * any Node cache of these objects in LMDB costs this machine, and its event loop (the same delay
 * histogram as flotilla's) what such a process's loop looks like over such a sync.
 */
const SCRIPT = fileURLToPath(import.meta.url);

export interface IngestFloorSpec {
  member: MemberEndpoint;
  /** One list chain per name, as flotilla has one cacher per cluster. */
  clusters: string[];
  /** The collection listed, without a query. */
  path: string;
  pageSize: number;
  /** Pages requested or being stored at once (flotilla's maxInflightListPages). */
  pageSlots: number;
  /** The LMDB environment's directory; emptied before and after. */
  dir: string;
}

export interface IngestFloorResult {
  objects: number;
  seconds: number;
  /** The floor process's CPU (user + system, all threads: its LMDB writer's too) over the sync. */
  cpuSeconds: number;
  /** Its event-loop delay histogram and the rest of its series (parseMetricsText). */
  metrics: Map<string, number>;
}

interface FloorReport {
  objects: number;
  seconds: number;
  cpuSeconds: number;
  metrics: string;
}

/** Runs the floor's sync once; resolves when every list is stored. */
export async function runIngestFloor(ctx: BenchContext, spec: IngestFloorSpec): Promise<IngestFloorResult> {
  rmSync(spec.dir, { recursive: true, force: true });
  const { proc, stop } = await forkHelper<'ready'>(ctx, SCRIPT, ['--floor', JSON.stringify(spec)]);
  try {
    const report = await new Promise<FloorReport | { error: string }>((resolve, reject) => {
      proc.once('message', resolve);
      proc.once('exit', (code) => reject(new Error(`ingest floor exited (${code}) before it reported`)));
      proc.send('go');
    });
    if ('error' in report) throw new Error(`ingest floor: ${report.error}`);
    return { objects: report.objects, seconds: report.seconds, cpuSeconds: report.cpuSeconds, metrics: parseMetricsText(report.metrics) };
  } finally {
    await stop();
    rmSync(spec.dir, { recursive: true, force: true });
  }
}

const METADATA = Buffer.from('metadata');
const NAME = Buffer.from('name');
const NAMESPACE = Buffer.from('namespace');

/** A string member of the object at `open`, or '' (a cluster-scoped object's namespace). */
function textMember(buf: Buffer, open: number, key: Uint8Array): string {
  const at = memberValueAt(buf, open, key);
  if (at < 0) return '';
  const v = parseSpan(buf, at, skipValue(buf, at));
  return typeof v === 'string' ? v : '';
}

/** Each row's object in a Table page, as its byte range and its namespace and name; the page's continue token. */
export function walkTablePage(buf: Buffer, visit: (start: number, end: number, namespace: string, name: string) => void): string | undefined {
  let token: string | undefined;
  const close = forEachMember(buf, 0, (key, start) => {
    if (key === 'metadata') {
      const end = skipValue(buf, start);
      token = (parseSpan(buf, start, end) as { continue?: string }).continue || undefined;
      return end;
    }
    if (key !== 'rows') return undefined;
    const end = forEachElement(buf, start, (row) => {
      const rowClose = forEachMember(buf, row, (k, objectAt) => {
        if (k !== 'object') return undefined;
        const objectEnd = skipValue(buf, objectAt);
        const md = memberValueAt(buf, objectAt, METADATA);
        if (objectEnd < 0 || md < 0) return -1;
        visit(objectAt, objectEnd, textMember(buf, md, NAMESPACE), textMember(buf, md, NAME));
        return objectEnd;
      });
      return rowClose === undefined ? -1 : rowClose + 1;
    });
    return end === undefined ? -1 : end + 1;
  });
  if (close === undefined) throw new Error('a list page the walk could not follow');
  return token;
}

/** The forked side: the lists, the puts, the histogram; one report, then it waits to be stopped. */
async function runFloor(spec: IngestFloorSpec): Promise<void> {
  const registry = new Registry();
  trackEventLoopDelay(registry);
  const root = openStoreRoot(spec.dir);
  const objects = root.openDB<Buffer, string>({ name: 'objects', encoding: 'binary' });
  const client = new BenchClient(spec.member);
  const slots = new Semaphore(spec.pageSlots);
  const get = async (path: string) => {
    const chunks: Buffer[] = [];
    const r = await client.get(path, { accept: TABLE_ACCEPT, onChunk: (c) => chunks.push(c) });
    if (r.status !== 200) throw new Error(`${path}: the member answered ${r.status} ${r.errorText ?? ''}`);
    return Buffer.concat(chunks);
  };
  await new Promise((r) => process.once('message', r));
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  let stored = 0;
  await Promise.all(spec.clusters.map(async (cluster) => {
    let token: string | undefined;
    do {
      const release = await slots.acquire();
      try {
        const q = new URLSearchParams({ limit: String(spec.pageSize), includeObject: 'Object', ...(token ? { continue: token } : {}) });
        const page = await get(`${spec.path}?${q}`);
        let last: Promise<boolean> | undefined;
        token = walkTablePage(page, (start, end, namespace, name) => {
          last = objects.put(`${cluster}/${namespace}/${name}`, page.subarray(start, end));
          stored++;
        });
        // Committed before the slot is free, as a cacher's page is.
        await last;
      } finally {
        release();
      }
    } while (token);
  }));
  const seconds = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpuBefore);
  client.close();
  await root.close();
  process.send!({ objects: stored, seconds, cpuSeconds: (cpu.user + cpu.system) / 1e6, metrics: await registry.metrics() } satisfies FloorReport);
}

if (process.argv[1] === SCRIPT && process.argv[2] === '--floor') {
  process.on('disconnect', () => process.exit(0));
  runFloor(JSON.parse(process.argv[3]!) as IngestFloorSpec).catch((e: Error) => process.send!({ error: e.message }));
  process.send!('ready');
}
