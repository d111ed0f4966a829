import type { CacherStatus } from '../../cacher/cacher-status.js';
import type { SyncProgress } from '../../cacher/sync-progress.js';
import type { MemberHeartbeat } from '../../members/heartbeat.js';
import type { LiveReadStats } from '../../metrics/metrics.js';
import type { StoreHealth } from '../../store/store.js';
import type { TreeProblem } from '../../hierarchy/namespace-tree.js';

/**
 * What the status page shows, made from /status and /metrics as they are read: no DOM here, so it
 * is tested in Node. This module runs in the browser too (served at /ui/status-page-model.js), so
 * it imports types only: they leave no import in the compiled script.
 */

/** /status as the page reads it; every part may be missing (an older or newer flotilla). */
export interface StatusDocument {
  synced?: boolean;
  members?: (MemberHeartbeat & { labels?: Record<string, string> })[];
  cachers?: CacherStatus[];
  live?: { enabled: boolean; served: string; exclude: string[]; concurrency?: number } & Partial<LiveReadStats>;
  hierarchy?: { problems?: (TreeProblem & { cluster: string })[] };
  store?: StoreHealth;
}

/**
 * up: it answers and every cache of it is current. syncing: a cache of it has not listed it once
 * yet. stale: reads serve what was cached last, with a Warning: the member is silent (its heartbeat
 * is overdue or failed: stopped, hung, unreachable) or a cache of it is failing.
 */
export type MemberHealth = 'up' | 'syncing' | 'stale';

export interface MemberRow {
  name: string;
  /** Its labels from the fleet file, `key=value` sorted by key. */
  labels: string[];
  health: MemberHealth;
  /** Why it is not up, in a few words. */
  why: string;
  /** The heartbeat: answering, or silent since when and why. */
  heartbeat: string;
  silent: boolean;
  /** Seconds since the member last answered; undefined before its first answer. */
  lagSeconds?: number;
  objects: number;
  synced: number;
  resources: number;
}

export interface ProgressView {
  /** 0..1 when a total is known. */
  fraction?: number;
  text: string;
}

export interface ResourceCell {
  phase: string;
  synced: boolean;
  objects: number;
  error?: string;
  progress?: ProgressView;
}

export interface ResourceRow {
  /** `pods`, or `configmaps in kube-system` for a cacher of one namespace. */
  resource: string;
  cells: Map<string, ResourceCell>;
}

export interface ErrorRow {
  where: string;
  error: string;
  /** When, where /status says (ISO). */
  at?: string;
}

export interface WatchesView {
  /** Client watches open now, and ended for falling behind (from /metrics; undefined until read). */
  open?: number;
  evicted?: number;
  /** Live watches (of uncached resources) open, their bound and refusals (from /status). */
  liveOpen?: number;
  liveMax?: number;
  liveRefused?: number;
}


/** Members by name: every member with a heartbeat or a cacher. */
export function memberNames(status: StatusDocument): string[] {
  const names = new Set<string>();
  for (const m of status.members ?? []) names.add(m.cluster);
  for (const c of status.cachers ?? []) names.add(c.cluster);
  return [...names].sort();
}

/** The cache is out of date as reads see it (`staleClusters` in cacher/cache-manager.ts). */
function failing(c: CacherStatus): boolean {
  return c.rewriting !== undefined || (c.synced && c.phase !== 'watching' && c.lastError !== undefined);
}

export function secondsBetween(fromIso: string | undefined, nowMs: number): number | undefined {
  if (fromIso === undefined) return undefined;
  const at = Date.parse(fromIso);
  return Number.isNaN(at) ? undefined : Math.max(0, (nowMs - at) / 1000);
}

function heartbeatText(hb: MemberHeartbeat | undefined, nowMs: number): string {
  if (!hb) return 'not probed';
  if (!hb.silent) return 'answering';
  const since = secondsBetween(hb.silentSince, nowMs);
  return `silent${since === undefined ? '' : ` for ${Math.round(since)} s`}${hb.lastError ? `: ${hb.lastError}` : ''}`;
}

function labelTexts(labels: Record<string, string> | undefined): string[] {
  return Object.keys(labels ?? {}).sort().map((k) => `${k}=${labels![k]}`);
}

/** Each member's health, labels, lag and objects; `nowMs` is the server's time of the document. */
export function memberRows(status: StatusDocument, nowMs: number): MemberRow[] {
  const heartbeats = new Map((status.members ?? []).map((m) => [m.cluster, m]));
  return memberNames(status).map((name) => {
    const hb = heartbeats.get(name);
    const cachers = (status.cachers ?? []).filter((c) => c.cluster === name);
    const synced = cachers.filter((c) => c.synced).length;
    const broken = cachers.filter(failing);
    let health: MemberHealth = 'up';
    let why = '';
    if (hb?.silent) {
      health = 'stale';
      why = 'its heartbeat is silent: reads serve what was cached last';
    } else if (broken.length > 0) {
      health = 'stale';
      const first = broken[0]!;
      why = `${first.resource}: ${first.rewriting ?? first.lastError}${broken.length > 1 ? ` (and ${broken.length - 1} more)` : ''}`;
    } else if (synced < cachers.length) {
      health = 'syncing';
      const erring = cachers.find((c) => !c.synced && c.lastError !== undefined);
      why = `${synced} of ${cachers.length} resources listed${erring ? `; ${erring.resource}: ${erring.lastError}` : ''}`;
    }
    const lag = secondsBetween(hb?.lastAnswerAt, nowMs);
    return {
      name,
      labels: labelTexts(hb?.labels),
      health,
      why,
      heartbeat: heartbeatText(hb, nowMs),
      silent: hb?.silent === true,
      ...(lag === undefined ? {} : { lagSeconds: lag }),
      objects: cachers.reduce((sum, c) => sum + c.objects, 0),
      synced,
      resources: cachers.length,
    };
  });
}

/** A cacher's first-sync progress as /status gives it: objects listed, of about how many, time left. */
export function progressOf(progress: SyncProgress | undefined): ProgressView | undefined {
  if (!progress) return undefined;
  const done = progress.objects;
  const total = progress.remainingItemCount === undefined ? undefined : done + progress.remainingItemCount;
  const fraction = total !== undefined && total > 0 ? Math.min(1, done / total) : undefined;
  const parts = [total === undefined ? `${done} listed` : `${done} of ~${total}`];
  if (fraction !== undefined) parts.push(`${Math.floor(fraction * 100)}%`);
  if (progress.estimatedSecondsLeft !== undefined) parts.push(`~${Math.ceil(progress.estimatedSecondsLeft)} s left`);
  return { ...(fraction === undefined ? {} : { fraction }), text: parts.join(', ') };
}

/** Resources by name (one row per cacher scope), a cell per member that caches it. */
export function resourceRows(status: StatusDocument): ResourceRow[] {
  const rows = new Map<string, ResourceRow>();
  for (const c of status.cachers ?? []) {
    const resource = c.namespace ? `${c.resource} in ${c.namespace}` : c.resource;
    let row = rows.get(resource);
    if (!row) rows.set(resource, (row = { resource, cells: new Map() }));
    const progress = progressOf(c.progress);
    const error = c.rewriting ?? c.lastError;
    row.cells.set(c.cluster, {
      phase: c.phase,
      synced: c.synced,
      objects: c.objects,
      ...(error === undefined ? {} : { error }),
      ...(progress ? { progress } : {}),
    });
  }
  return [...rows.values()].sort((a, b) => a.resource.localeCompare(b.resource));
}

/** What is failing now: members' heartbeats, cachers, history rewrites, the store, namespace trees. */
export function recentErrors(status: StatusDocument): ErrorRow[] {
  const rows: ErrorRow[] = [];
  for (const m of status.members ?? []) {
    if (m.lastError) rows.push({ where: `${m.cluster} heartbeat`, error: m.lastError, ...(m.silentSince ? { at: m.silentSince } : {}) });
  }
  for (const c of status.cachers ?? []) {
    const where = `${c.cluster} ${c.namespace ? `${c.resource} in ${c.namespace}` : c.resource}`;
    if (c.lastError) rows.push({ where, error: c.lastError, ...(c.lastEventAt ? { at: c.lastEventAt } : {}) });
    if (c.lastHistoryReset) rows.push({ where, error: `history rewritten: ${c.lastHistoryReset.reason}`, at: c.lastHistoryReset.at });
  }
  const store = status.store;
  if (store?.full) rows.push({ where: 'store', error: `writes refused: ${store.full.message}`, at: store.full.since });
  if (store?.damaged) rows.push({ where: 'store', error: `damaged: ${store.damaged.reason}`, at: store.damaged.since });
  if (store?.rebuilt) rows.push({ where: 'store', error: `rebuilt after: ${store.rebuilt.fault}`, at: store.rebuilt.at });
  for (const p of status.hierarchy?.problems ?? []) rows.push({ where: `${p.cluster} namespace ${p.namespace}`, error: `${p.problem} (parent ${p.parent})` });
  return rows;
}

/**
 * The sum of each named family's samples in a Prometheus text exposition (labels summed over);
 * a family absent from the text is absent from the map.
 */
export function metricSums(text: string, names: readonly string[]): Map<string, number> {
  const wanted = new Set(names);
  const sums = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const sample = /^([a-zA-Z_:][\w:]*)(?:\{.*\})?\s+(\S+)/.exec(line);
    if (!sample || !wanted.has(sample[1]!)) continue;
    const value = Number(sample[2]);
    if (Number.isFinite(value)) sums.set(sample[1]!, (sums.get(sample[1]!) ?? 0) + value);
  }
  return sums;
}

export const WATCH_FAMILIES = ['flotilla_watches', 'flotilla_watch_evictions_total'] as const;

export function watchesView(status: StatusDocument, metrics: Map<string, number> | undefined): WatchesView {
  const live = status.live?.watches;
  const open = metrics?.get('flotilla_watches');
  const evicted = metrics?.get('flotilla_watch_evictions_total');
  return {
    ...(open === undefined ? {} : { open }),
    ...(evicted === undefined ? {} : { evicted }),
    ...(live ? { liveOpen: live.open, liveMax: live.max, liveRefused: live.refused } : {}),
  };
}

/** Seconds as a person reads them: `<1 s`, `12 s`, `4 min`, `3 h`. */
export function shortDuration(seconds: number): string {
  if (seconds < 1) return '<1 s';
  if (seconds < 120) return `${Math.round(seconds)} s`;
  if (seconds < 7200) return `${Math.round(seconds / 60)} min`;
  return `${Math.round(seconds / 3600)} h`;
}

/** Bytes as a person reads them. */
export function shortBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}
