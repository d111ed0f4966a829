import type { MemberEndpoint } from '../../test/fleet/http.js';
import { BenchClient, occurrenceCounter, percentile } from './http.js';
import { LIST_TIMEOUT_MS, ok } from './scenario.js';

/**
 * The reads a fleet-wide proxy serves, timed the same way against any of them (flotilla,
 * karmada-search): the whole fleet's pod list as JSON and as kubectl's Table, label-selected lists,
 * a get and a name-selected list of one pod, and kubectl's paging (limit=500 with continue).
 * Bodies are read to the end and discarded; items are counted without parsing.
 */

/** kubectl's Accept for `kubectl get`. */
export const KUBECTL_TABLE_ACCEPT = 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json';
/** Once per pod item in either server's encoding (flotilla writes kind first, Go's unstructured encoder sorts keys); never in the list's own `"kind":"PodList"` nor an owner reference's kind. */
export const POD_KIND = '"kind":"Pod",';
/** Once per Table row in either server's encoding. */
export const TABLE_ROW = '"cells":[';
const PAGE = 500;

export interface Timings {
  p50: number;
  p99: number;
  runs: number;
}

export function timings(ms: number[]): Timings {
  return { p50: percentile(ms, 50), p99: percentile(ms, 99), runs: ms.length };
}

export interface ReadPlan {
  /** Timed rounds of the whole-fleet lists (after one warm-up that counts). */
  listRounds: number;
  /** Label selectors of about 100 and 10,000 of the cached pods. */
  selectors: { name: string; query: string; runs: number }[];
  /** One pod: its namespaced path (`/api/v1/namespaces/<ns>/pods/<name>`). */
  podPath: string;
  getRuns: number;
  /** Full kubectl-style walks (limit=500, following continue) timed. */
  pagedWalks: number;
}

export interface ReadResult {
  listObjects: number;
  listBytes: number;
  list: Timings;
  tableRows: number;
  table: Timings;
  selected: Record<string, Timings & { objects: number }>;
  /** The plain get's status (a name several clusters hold may be refused as ambiguous, 409). */
  getStatus: number;
  get: Timings;
  /** `fieldSelector=metadata.name=<name>` in the pod's namespace: every cluster's copy of it. */
  nameSelected: Timings & { objects: number };
  /** Per page, over every walk; and the walks themselves. */
  page: Timings;
  walk: Timings & { pages: number; objects: number };
}

/** Times the plan's reads against `ep` (sequential requests on one keep-alive client). */
export async function measureReads(ep: MemberEndpoint, plan: ReadPlan): Promise<ReadResult> {
  const client = new BenchClient(ep);
  try {
    const timed = async (runs: number, path: string, accept?: string, acceptStatus = 200) => {
      const ms: number[] = [];
      for (let i = 0; i < runs; i++) {
        const r = await client.get(path, { timeoutMs: LIST_TIMEOUT_MS, ...(accept ? { accept } : {}) });
        if (r.status !== acceptStatus) throw new Error(`${path}: ${r.status} ${r.errorText ?? ''}`);
        ms.push(r.ms);
      }
      return ms;
    };
    const counted = async (path: string, needle: string, accept?: string) => {
      const counter = occurrenceCounter(needle);
      const r = ok(await client.get(path, { timeoutMs: LIST_TIMEOUT_MS, onChunk: counter.onChunk, ...(accept ? { accept } : {}) }), path);
      return { objects: counter.count(), bytes: r.bytes };
    };

    const warm = await counted('/api/v1/pods', POD_KIND);
    const list = timings(await timed(plan.listRounds, '/api/v1/pods'));
    const warmTable = await counted('/api/v1/pods', TABLE_ROW, KUBECTL_TABLE_ACCEPT);
    const table = timings(await timed(plan.listRounds, '/api/v1/pods', KUBECTL_TABLE_ACCEPT));

    const selected: ReadResult['selected'] = {};
    for (const s of plan.selectors) {
      const { objects } = await counted(`/api/v1/pods?${s.query}`, POD_KIND);
      selected[s.name] = { ...timings(await timed(s.runs, `/api/v1/pods?${s.query}`)), objects };
    }

    const first = await client.get(plan.podPath);
    const get = first.status === 200 ? timings(await timed(plan.getRuns, plan.podPath)) : timings([]);
    const ns = plan.podPath.split('/')[4]!;
    const name = plan.podPath.split('/').pop()!;
    const byName = `/api/v1/namespaces/${ns}/pods?fieldSelector=${encodeURIComponent(`metadata.name=${name}`)}`;
    const nameCount = await counted(byName, POD_KIND);
    const nameSelected = { ...timings(await timed(plan.getRuns, byName)), objects: nameCount.objects };

    const pageMs: number[] = [];
    const walkMs: number[] = [];
    let pages = 0;
    let walked = 0;
    for (let w = 0; w < plan.pagedWalks; w++) {
      const r = await pagedWalk(client);
      pageMs.push(...r.pageMs);
      walkMs.push(r.pageMs.reduce((a, b) => a + b, 0));
      pages = r.pageMs.length;
      walked = r.objects;
    }
    return {
      listObjects: warm.objects,
      listBytes: warm.bytes,
      list,
      tableRows: warmTable.objects,
      table,
      selected,
      getStatus: first.status,
      get,
      nameSelected,
      page: timings(pageMs),
      walk: { ...timings(walkMs), pages, objects: walked },
    };
  } finally {
    client.close();
  }
}

/** kubectl's paging of the fleet's pods: limit=500, following `continue` to the end. */
async function pagedWalk(client: BenchClient): Promise<{ pageMs: number[]; objects: number }> {
  const pageMs: number[] = [];
  let objects = 0;
  let cont = '';
  do {
    const chunks: Buffer[] = [];
    const counter = occurrenceCounter(POD_KIND);
    const r = ok(await client.get(`/api/v1/pods?limit=${PAGE}${cont ? `&continue=${encodeURIComponent(cont)}` : ''}`, {
      timeoutMs: LIST_TIMEOUT_MS,
      onChunk: (c) => {
        chunks.push(c);
        counter.onChunk(c);
      },
    }), 'paged list');
    pageMs.push(r.ms);
    objects += counter.count();
    // Where the list's metadata sits differs (first in flotilla's, last in sorted-key JSON): the last `continue` member is the list's own.
    const body = Buffer.concat(chunks).toString('utf8');
    const at = body.lastIndexOf('"continue":"');
    cont = at < 0 ? '' : body.slice(at + 12, body.indexOf('"', at + 12));
    if (pageMs.length > 100_000) throw new Error('paged list: no end after 100000 pages');
  } while (cont);
  return { pageMs, objects };
}
