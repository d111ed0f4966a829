import type { MemberEndpoint } from '../../test/fleet/http.js';
import { BenchClient, occurrenceCounter, percentile } from './http.js';
import { performance } from 'node:perf_hooks';
import { LIST_TIMEOUT_MS, POD_ITEM, ok } from './scenario.js';
import type { PeerAnswers } from './peer-answers.js';

/**
 * The reads a fleet-wide proxy serves, timed the same way against any of them (flotilla,
 * karmada-search): the whole fleet's pod list as JSON and as kubectl's Table, label-selected lists,
 * a get and a name-selected list of one pod, and kubectl's paging (limit=500 with continue).
 * Bodies are read to the end and discarded; items are counted without parsing.
 */

/** kubectl's Accept for `kubectl get`. */
export const KUBECTL_TABLE_ACCEPT = 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json';
/** Once per Table row in either server's encoding. */
export const TABLE_ROW = '"cells":[';
const PAGE = 500;
/** Timed runs of one read stop past this, once three are in. */
const BUDGET_MS = 60_000;
const SLOW_LIST_MS = 10_000;

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
  /** Each read's bound (LIST_TIMEOUT_MS unless said): past it, the read is counted as unanswered. */
  timeoutMs?: number;
}

export interface ReadResult {
  listObjects: number;
  listBytes: number;
  list: Timings;
  listRv0: Timings & { objects: number };
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

/**
 * Times the plan's reads against `ep` (sequential requests on one keep-alive client). A read the
 * server fails or does not answer in time (a 504 past its request timeout, a silent peer) is a
 * result: its figures are NaN, `answers` counts and names it, and the other reads are still measured.
 */
export async function measureReads(ep: MemberEndpoint, plan: ReadPlan, answers: PeerAnswers): Promise<ReadResult> {
  const client = new BenchClient(ep);
  const bound = plan.timeoutMs ?? LIST_TIMEOUT_MS;
  try {
    // A slow server gets fewer rounds, not a longer run: past the budget, three runs are enough.
    const timed = async (timeoutMs: number, runs: number, path: string, accept?: string, acceptStatus = 200) => {
      const ms: number[] = [];
      const started = performance.now();
      for (let i = 0; i < runs && (i < 3 || performance.now() - started < BUDGET_MS); i++) {
        const r = await client.get(path, { timeoutMs, ...(accept ? { accept } : {}) });
        if (r.status !== acceptStatus) throw new Error(`${path}: ${r.status} ${r.errorText ?? ''}`);
        ms.push(r.ms);
      }
      return ms;
    };
    const counted = async (timeoutMs: number, path: string, needle: string, accept?: string) => {
      const counter = occurrenceCounter(needle);
      const r = ok(await client.get(path, { timeoutMs, onChunk: counter.onChunk, ...(accept ? { accept } : {}) }), path);
      return { objects: counter.count(), bytes: r.bytes, ms: r.ms };
    };
    const attempt = <T>(what: string, fn: (timeoutMs: number) => Promise<T>, failed: T): Promise<T> => answers.within(what, bound, fn, failed);
    const none = { objects: NaN, bytes: NaN, ms: NaN };
    const noTimings = timings([]);

    // A whole-fleet list whose warm-up took longer than SLOW_LIST_MS is timed once more, not listRounds times.
    const rounds = (warmMs: number) => (warmMs > SLOW_LIST_MS ? 1 : plan.listRounds);
    const warm = await attempt('fleet list', (t) => counted(t, '/api/v1/pods', POD_ITEM), none);
    const list = Number.isNaN(warm.objects) ? noTimings : await attempt('fleet list', async (t) => timings(await timed(t, rounds(warm.ms), '/api/v1/pods')), noTimings);
    const warmTable = await attempt('fleet Table', (t) => counted(t, '/api/v1/pods', TABLE_ROW, KUBECTL_TABLE_ACCEPT), none);
    const table = Number.isNaN(warmTable.objects) ? noTimings : await attempt('fleet Table', async (t) => timings(await timed(t, rounds(warmTable.ms), '/api/v1/pods', KUBECTL_TABLE_ACCEPT)), noTimings);

    // The same list at resourceVersion=0 (any cached state will do, as an informer's first list asks):
    // a proxy that sends a consistent list (no resourceVersion, as kubectl's) to its members serves this one from its cache.
    const warmRv0 = await attempt('fleet list at resourceVersion=0', (t) => counted(t, '/api/v1/pods?resourceVersion=0', POD_ITEM), none);
    const listRv0 = Number.isNaN(warmRv0.objects) ? noTimings : await attempt('fleet list at resourceVersion=0', async (t) => timings(await timed(t, rounds(warmRv0.ms), '/api/v1/pods?resourceVersion=0')), noTimings);

    const selected: ReadResult['selected'] = {};
    for (const s of plan.selectors) {
      selected[s.name] = await attempt(s.name, async (t) => {
        const { objects } = await counted(t, `/api/v1/pods?${s.query}`, POD_ITEM);
        return { ...timings(await timed(t, s.runs, `/api/v1/pods?${s.query}`)), objects };
      }, { ...noTimings, objects: NaN });
    }

    let getStatus = 0;
    let get = noTimings;
    let nameSelected = { ...noTimings, objects: NaN };
    if (plan.getRuns > 0) {
      getStatus = await attempt('get', async (t) => (await client.get(plan.podPath, { timeoutMs: t })).status, 0);
      if (getStatus === 200) get = await attempt('get', async (t) => timings(await timed(t, plan.getRuns, plan.podPath)), noTimings);
      const ns = plan.podPath.split('/')[4]!;
      const name = plan.podPath.split('/').pop()!;
      const byName = `/api/v1/namespaces/${ns}/pods?fieldSelector=${encodeURIComponent(`metadata.name=${name}`)}`;
      nameSelected = await attempt('name-selected list', async (t) => {
        const nameCount = await counted(t, byName, POD_ITEM);
        return { ...timings(await timed(t, plan.getRuns, byName)), objects: nameCount.objects };
      }, nameSelected);
    }

    const pageMs: number[] = [];
    const walkMs: number[] = [];
    let pages = NaN;
    let walked = NaN;
    for (let w = 0; w < plan.pagedWalks; w++) {
      const r = await attempt('paged list', (t) => pagedWalk(client, t), undefined);
      if (!r) break;
      pageMs.push(...r.pageMs);
      walkMs.push(r.pageMs.reduce((a, b) => a + b, 0));
      pages = r.pageMs.length;
      walked = r.objects;
    }
    return {
      listObjects: warm.objects,
      listBytes: warm.bytes,
      list,
      listRv0: { ...listRv0, objects: warmRv0.objects },
      tableRows: warmTable.objects,
      table,
      selected,
      getStatus,
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
async function pagedWalk(client: BenchClient, timeoutMs: number): Promise<{ pageMs: number[]; objects: number }> {
  const pageMs: number[] = [];
  let objects = 0;
  let cont = '';
  do {
    const chunks: Buffer[] = [];
    const counter = occurrenceCounter(POD_ITEM);
    const r = ok(await client.get(`/api/v1/pods?limit=${PAGE}${cont ? `&continue=${encodeURIComponent(cont)}` : ''}`, {
      timeoutMs,
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
