import { memberRequest, type MemberEndpoint } from '../fleet/http.js';
import { decodeGlobalRV } from '../../src/api/global-rv.js';
import { openWatch, type OpenWatch, type WatchEvent } from './watch-client.js';

/**
 * The differential harness: one request sent to a member directly and to flotilla addressing that
 * member (`/clusters/<name>/…`), the two answers compared after normalising only what flotilla
 * documents as different:
 * - resourceVersions are global on flotilla's side: an object's is turned back into the member's
 *   own; a list's (taken at another moment) is dropped on both sides, as are continue tokens;
 * - flotilla's `search.flotilla.io/cluster` annotation;
 * - a Table's Cluster column (its definition and each row's cell), where the README puts it: after
 *   the name column shown by default, else first (anywhere else, it stays and the answers differ);
 * - Age cells, which both sides print relative to their own now.
 * Everything else must be equal: kinds, items and their order, fields, Table columns and cells,
 * PartialObjectMetadata, and for errors the code, reason and details.
 */
export const CLUSTER_ANNOTATION = 'search.flotilla.io/cluster';

export const ACCEPT = {
  json: 'application/json',
  table: 'application/json;as=Table;v=v1;g=meta.k8s.io',
  metadata: 'application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io',
  metadataList: 'application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io',
} as const;

export interface Difference {
  path: string;
  accept: string;
  member: unknown;
  flotilla: unknown;
}

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** An object's metadata as the member would write it. */
function memberMetadata(md: unknown, cluster: string): void {
  if (!isObject(md)) return;
  const rv = md['resourceVersion'];
  if (typeof rv === 'string' && rv !== '') {
    try {
      md['resourceVersion'] = decodeGlobalRV(rv)[cluster] ?? `(not from ${cluster}: ${rv})`;
    } catch {
      // the member's own: nothing to undo
    }
  }
  const ann = md['annotations'];
  if (isObject(ann) && CLUSTER_ANNOTATION in ann) {
    delete ann[CLUSTER_ANNOTATION];
    if (Object.keys(ann).length === 0) delete md['annotations'];
  }
}

function normaliseObject(o: unknown, cluster: string): void {
  if (isObject(o)) memberMetadata(o['metadata'], cluster);
}

/** Normalises an answer in place; `fromFlotilla` also takes flotilla's own additions out. */
export function normalise(doc: unknown, cluster: string, fromFlotilla: boolean): unknown {
  if (!isObject(doc)) return doc;
  const kind = doc['kind'];
  if (kind === 'Status') {
    // Messages are worded per server; clients branch on code, reason and details.
    return { kind, code: doc['code'], reason: doc['reason'], details: doc['details'] };
  }
  const md = doc['metadata'];
  const isList = Array.isArray(doc['items']) || Array.isArray(doc['rows']);
  if (isList && isObject(md)) {
    delete md['resourceVersion'];
    delete md['continue'];
    delete md['selfLink'];
  } else if (fromFlotilla) {
    normaliseObject(doc, cluster);
  }
  if (Array.isArray(doc['items']) && fromFlotilla) {
    for (const item of doc['items']) normaliseObject(item, cluster);
  }
  if (kind === 'Table') {
    let columns = doc['columnDefinitions'] as Json[] | null | undefined;
    if (fromFlotilla && Array.isArray(columns)) {
      columns = withoutClusterColumn(columns);
      doc['columnDefinitions'] = columns;
    }
    normaliseRows(doc, columns, cluster, fromFlotilla);
  }
  return doc;
}

/** Where flotilla's Cluster column stands among a member's columns: after the name column shown by default, else first. */
export function clusterColumnIndex(memberColumns: readonly unknown[]): number {
  return memberColumns.findIndex((c) => isObject(c) && c['format'] === 'name' && !c['priority']) + 1;
}

/** Flotilla's columns without its Cluster column, when that stands where it should. */
function withoutClusterColumn(columns: Json[]): Json[] {
  const at = columns.findIndex((c) => c['name'] === 'Cluster');
  if (at < 0) return columns;
  const rest = [...columns.slice(0, at), ...columns.slice(at + 1)];
  return clusterColumnIndex(rest) === at ? rest : columns;
}

/** A Table's rows: flotilla's Cluster cell out (where `columns`, the member's, place it), Age cells blanked. */
function normaliseRows(table: Json, columns: unknown, cluster: string, fromFlotilla: boolean): void {
  const age = Array.isArray(columns) ? (columns as Json[]).findIndex((c) => c['name'] === 'Age') : -1;
  const at = clusterColumnIndex(Array.isArray(columns) ? columns : []);
  for (const row of (table['rows'] as Json[] | undefined) ?? []) {
    let cells = row['cells'] as unknown[];
    const own = Math.min(at, cells.length - 1);
    if (fromFlotilla && cells[own] === cluster) cells = [...cells.slice(0, own), ...cells.slice(own + 1)];
    if (age >= 0) cells = cells.map((c, i) => (i === age ? '<age>' : c));
    row['cells'] = cells;
    if (fromFlotilla) normaliseObject(row['object'], cluster);
  }
}

/** Sends `path` (with query) to the member and to flotilla for that member; undefined when they agree. */
export async function differ(member: MemberEndpoint & { name: string }, flotilla: MemberEndpoint, path: string, accept: string): Promise<Difference | undefined> {
  const [direct, through] = await Promise.all([
    memberRequest(member, 'GET', path, undefined, { accept }),
    memberRequest(flotilla, 'GET', `/clusters/${member.name}${path}`, undefined, { accept }),
  ]);
  const parse = (body: string, status: number): unknown => {
    try {
      return { status, body: JSON.parse(body) as unknown };
    } catch {
      return { status, body };
    }
  };
  const m = parse(direct.body, direct.status) as { status: number; body: unknown };
  const f = parse(through.body, through.status) as { status: number; body: unknown };
  m.body = normalise(m.body, member.name, false);
  f.body = normalise(f.body, member.name, true);
  return canonical(m) === canonical(f) ? undefined : { path, accept, member: m, flotilla: f };
}

/** JSON with object keys sorted: key order is not part of the API. */
function canonical(v: unknown): string {
  return JSON.stringify(v, (_k, value: unknown) => (isObject(value) ? Object.fromEntries(Object.entries(value).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : value));
}

/*
 * Watches, event by event. The same watch is opened on the member and through flotilla for that
 * member; the two streams are compared after the normalisation above, applied to each event's
 * object (an object's global RV turned back into the member's, the cluster annotation, a Table's
 * Cluster column and Age cells), plus what follows from bookmarks coming at their own times:
 * - periodic bookmarks are taken out of the ordered comparison; each one, on either side, must be
 *   in the watched form (`watchedBookmarkForm`: kind and apiVersion, and a Table's row layout) and
 *   not behind an event delivered before it;
 * - the `k8s.io/initial-events-end` bookmark stays in the ordered stream, by its form (its RV is
 *   the member's or flotilla's current one, taken at different moments, so only set-or-not);
 * - a Table watch sends its column definitions on its first line, whichever that is (a bookmark
 *   may come first on one side only), and a member sometimes again on the next lines (see
 *   compareWatch): they are compared once, and that the first line has them.
 * Everything else must be equal: event types, their order and count, and the objects.
 */
export const INITIAL_EVENTS_END = 'k8s.io/initial-events-end';

export interface WatchForm {
  name: string;
  accept: string;
  includeObject?: 'Object' | 'Metadata' | 'None';
}

export const WATCH_FORMS: readonly WatchForm[] = [
  { name: 'json', accept: ACCEPT.json },
  { name: 'metadata', accept: ACCEPT.metadata },
  { name: 'table includeObject=Object', accept: ACCEPT.table, includeObject: 'Object' },
  { name: 'table includeObject=Metadata', accept: ACCEPT.table, includeObject: 'Metadata' },
  { name: 'table includeObject=None', accept: ACCEPT.table, includeObject: 'None' },
];

export interface NormalisedEvent {
  type: string;
  object: unknown;
}

export interface NormalisedStream {
  /** The column definitions of a Table watch (flotilla's without Cluster). */
  columns?: unknown;
  /** Which lines carried column definitions (a Table watch: only the first, [0]). */
  columnsAt: number[];
  /** Every event but periodic bookmarks, in order; an initial-events-end bookmark by its form. */
  events: NormalisedEvent[];
  /** The form of each periodic bookmark. */
  bookmarks: unknown[];
  /** This side's own faults: bookmarks behind the events before them. */
  faults: string[];
}

/** A bookmark's (or a row object's) form: kind, apiVersion, annotations and whether it has an RV. */
function objectForm(o: unknown): unknown {
  if (!isObject(o)) return o ?? null;
  const md = isObject(o['metadata']) ? o['metadata'] : {};
  const rv = md['resourceVersion'];
  return {
    kind: o['kind'],
    apiVersion: o['apiVersion'],
    annotations: md['annotations'] ?? {},
    resourceVersion: typeof rv === 'string' && rv !== '' ? '<set>' : rv,
  };
}

/** A bookmark's form; a Table bookmark's also its rows' (cell count, row object's form). */
export function bookmarkForm(obj: unknown, fromFlotilla: boolean): unknown {
  const form = objectForm(obj);
  if (!isObject(obj) || obj['kind'] !== 'Table' || !isObject(form)) return form;
  const rows = Array.isArray(obj['rows']) ? (obj['rows'] as Json[]) : [];
  return {
    ...form,
    rows: rows.map((r) => ({
      cells: Array.isArray(r['cells']) ? r['cells'].length - (fromFlotilla ? 1 : 0) : r['cells'],
      object: objectForm(r['object']),
    })),
  };
}

/**
 * The form every periodic bookmark of a watch takes, as the apiserver sends it: an object of the
 * watched kind with only metadata, in the watch's form: PartialObjectMetadata; a Table of one row
 * whose object is the bookmark object for includeObject=Object, its PartialObjectMetadata for
 * Metadata, and none (null) for None. `columns`: the Table's column count (the member's own).
 * (The initial-events-end bookmark keeps its PartialObjectMetadata with None: its annotation is
 * what it says. It is compared in the ordered stream.)
 */
export function watchedBookmarkForm(form: WatchForm, watched: { kind: string; apiVersion: string }, columns: number): unknown {
  const own = { ...watched, annotations: {}, resourceVersion: '<set>' };
  const partial = { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', annotations: {}, resourceVersion: '<set>' };
  if (form.accept === ACCEPT.json) return own;
  if (form.accept === ACCEPT.metadata) return partial;
  const object = form.includeObject === 'Object' ? own : form.includeObject === 'None' ? null : partial;
  return { kind: 'Table', apiVersion: 'meta.k8s.io/v1', annotations: {}, resourceVersion: '<set>', rows: [{ cells: columns, object }] };
}

/** What compareWatch leaves out, each a known difference that a case of its own pins. */
export interface Tolerated {
  /**
   * The row object of a periodic bookmark in a Table watch with includeObject=None: null from a
   * member, a PartialObjectMetadata from flotilla.
   */
  noneBookmarkRowObject?: boolean;
}

/** An event object's or Table's RV (the member's, once normalised), as a number when it is one. */
function rvOf(o: unknown): bigint | undefined {
  const md = isObject(o) ? o['metadata'] : undefined;
  const rv = isObject(md) ? md['resourceVersion'] : undefined;
  return typeof rv === 'string' && /^[0-9]+$/.test(rv) ? BigInt(rv) : undefined;
}

/** One side's events (left as they are), normalised for comparison. */
export function normaliseWatch(raw: readonly WatchEvent[], cluster: string, fromFlotilla: boolean): NormalisedStream {
  const out: NormalisedStream = { columnsAt: [], events: [], bookmarks: [], faults: [] };
  let newest: bigint | undefined;
  (structuredClone(raw) as WatchEvent[]).forEach((ev, i) => {
    const obj: unknown = ev.object;
    const table = isObject(obj) && obj['kind'] === 'Table';
    if (table) {
      const defs = obj['columnDefinitions'];
      if (defs !== null && defs !== undefined) {
        out.columnsAt.push(i);
        out.columns ??= fromFlotilla && Array.isArray(defs) ? withoutClusterColumn(defs as Json[]) : defs;
      }
      delete obj['columnDefinitions'];
    }
    if (ev.type === 'BOOKMARK') {
      if (fromFlotilla && isObject(obj)) memberMetadata(obj['metadata'], cluster);
      const rv = rvOf(obj);
      if (rv === undefined) out.faults.push(`line ${i}: a bookmark without an RV`);
      else if (newest !== undefined && rv < newest) out.faults.push(`line ${i}: a bookmark at RV ${rv} behind an event before it at ${newest}`);
      const form = bookmarkForm(obj, fromFlotilla);
      const inner = table ? ((obj['rows'] as Json[] | undefined)?.[0]?.['object'] as Json | undefined) : (obj as Json);
      const annotations = (inner?.['metadata'] as Json | undefined)?.['annotations'];
      if (isObject(annotations) && annotations[INITIAL_EVENTS_END] === 'true') out.events.push({ type: ev.type, object: form });
      else out.bookmarks.push(form);
      return;
    }
    let object = obj;
    if (table) {
      // The Table's own RV is the event's: flotilla's is a global one like its objects'.
      if (fromFlotilla) memberMetadata(obj['metadata'], cluster);
      normaliseRows(obj, out.columns, cluster, fromFlotilla);
    } else {
      object = normalise(obj, cluster, fromFlotilla);
    }
    const rv = rvOf(object);
    if (rv !== undefined && (newest === undefined || rv > newest)) newest = rv;
    out.events.push({ type: ev.type, object });
  });
  return out;
}

/** The name of a normalised event's object (a Table's from its row, or its first cell for includeObject=None). */
export function eventName(e: NormalisedEvent): string | undefined {
  const o = e.object;
  if (!isObject(o)) return undefined;
  if (o['kind'] === 'Table') {
    const row = (o['rows'] as Json[] | undefined)?.[0];
    const fromObject = ((row?.['object'] as Json | null | undefined)?.['metadata'] as Json | undefined)?.['name'];
    return typeof fromObject === 'string' ? fromObject : (row?.['cells'] as unknown[] | undefined)?.[0] as string | undefined;
  }
  const name = (o['metadata'] as Json | undefined)?.['name'];
  return typeof name === 'string' ? name : undefined;
}

function summary(events: NormalisedEvent[]): string[] {
  return events.map((e) => `${e.type} ${eventName(e) ?? canonical(e.object).slice(0, 120)} @${String(rvOf(e.object))}`);
}

export interface WatchDifference {
  form: string;
  what: string;
  member: unknown;
  flotilla: unknown;
}

/**
 * Compares one watch's two streams. `watched` is the watched kind (for the bookmarks' form); a
 * bookmark's Table columns are counted against the member's column definitions.
 */
export function compareWatch(form: WatchForm, member: readonly WatchEvent[], flotilla: readonly WatchEvent[], cluster: string, watched: { kind: string; apiVersion: string }, tolerated: Tolerated = {}): WatchDifference[] {
  const m = normaliseWatch(member, cluster, false);
  const f = normaliseWatch(flotilla, cluster, true);
  const out: WatchDifference[] = [];
  const differ = (what: string, a: unknown, b: unknown) => {
    if (canonical(a) !== canonical(b)) out.push({ form: form.name, what, member: a, flotilla: b });
  };
  differ('column definitions', m.columns, f.columns);
  // The first line carries them on both sides. A member may repeat them on the lines after it:
  // its watch encoder drops headers only once it has encoded an event itself, and an event
  // another watcher with the same options encoded first comes from the object's encoding cache
  // (apiserver handlers/response.go, watchEmbeddedEncoder). Which connection is first is timing,
  // so the member's two connections (the test's, and flotilla's for a live watch) differ in it.
  differ('lines carrying column definitions', m.columnsAt.slice(0, 1), f.columnsAt.slice(0, 1));
  const n = Math.max(m.events.length, f.events.length);
  for (let i = 0; i < n; i++) {
    if (canonical(m.events[i]) === canonical(f.events[i])) continue;
    out.push({
      form: form.name,
      what: `event ${i} (of ${m.events.length} from the member, ${f.events.length} from flotilla)`,
      member: { event: m.events[i], stream: summary(m.events) },
      flotilla: { event: f.events[i], stream: summary(f.events) },
    });
    break;
  }
  const columns = Array.isArray(m.columns) ? m.columns.length : Array.isArray(f.columns) ? f.columns.length : 0;
  const skipRowObject = tolerated.noneBookmarkRowObject && form.includeObject === 'None';
  const withoutRowObject = (b: unknown) => (skipRowObject && isObject(b) && Array.isArray(b['rows']) ? { ...b, rows: (b['rows'] as Json[]).map((r) => ({ ...r, object: '(tolerated)' })) } : b);
  const expected = withoutRowObject(watchedBookmarkForm(form, watched, columns));
  for (const [side, s] of [['member', m], ['flotilla', f]] as const) {
    const wrong = s.bookmarks.map(withoutRowObject).find((b) => canonical(b) !== canonical(expected));
    if (wrong) out.push({ form: form.name, what: `a periodic bookmark from the ${side} is not in the watched form`, member: side === 'member' ? wrong : expected, flotilla: side === 'flotilla' ? wrong : expected });
    if (s.faults.length) out.push({ form: form.name, what: `${side} stream faults`, member: side === 'member' ? s.faults : [], flotilla: side === 'flotilla' ? s.faults : [] });
  }
  return out;
}

export interface WatchPair {
  form: WatchForm;
  member: OpenWatch;
  flotilla: OpenWatch;
}

/**
 * Opens the watch `path?query` in every form on the member and through flotilla for it (`query`
 * per side: a resumed watch's RVs differ).
 */
export async function openWatchPairs(member: MemberEndpoint & { name: string }, flotilla: MemberEndpoint, path: string, query: { member: string; flotilla: string }, forms: readonly WatchForm[] = WATCH_FORMS): Promise<WatchPair[]> {
  const url = (q: string, form: WatchForm) => `${path}?${q}${form.includeObject ? `&includeObject=${form.includeObject}` : ''}`;
  const pairs: WatchPair[] = [];
  try {
    for (const form of forms) {
      const [m, f] = await Promise.all([openWatch(member, url(query.member, form), form.accept), openWatch(flotilla, `/clusters/${member.name}${url(query.flotilla, form)}`, form.accept)]);
      pairs.push({ form, member: m, flotilla: f });
      if (m.status !== 200 || f.status !== 200) throw new Error(`watch ${url(query.member, form)} (${form.name}): ${m.status} from the member, ${f.status} from flotilla`);
    }
  } catch (e) {
    closePairs(pairs);
    throw e;
  }
  return pairs;
}

export function closePairs(pairs: readonly WatchPair[]): void {
  for (const p of pairs) {
    p.member.close();
    p.flotilla.close();
  }
}

/**
 * Waits until every stream of every pair is done (`done` on its normalised events; without it, until
 * the server ends it), each within `deadlineMs`, then `settleMs` more for anything that should not
 * come, and closes them all. A stream that is not done in time is left as it is, and its pair's
 * comparison shows what was missing: this never hangs.
 */
export async function finishPairs(pairs: readonly WatchPair[], cluster: string, done: ((events: NormalisedEvent[]) => boolean) | undefined, deadlineMs = 20_000, settleMs = 300): Promise<void> {
  const waits = pairs.flatMap((p) => [
    [p.member, false],
    [p.flotilla, true],
  ] as const).map(async ([w, fromFlotilla]) => {
    if (done) {
      await w.until((events) => done(normaliseWatch(events, cluster, fromFlotilla).events), deadlineMs).catch(() => undefined);
    } else {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([w.ended, new Promise((r) => (timer = setTimeout(r, deadlineMs)))]);
      clearTimeout(timer);
    }
  });
  try {
    await Promise.all(waits);
    await new Promise((r) => setTimeout(r, settleMs));
  } finally {
    closePairs(pairs);
  }
}
