import { memberRequest, type MemberEndpoint } from '../fleet/http.js';
import { decodeGlobalRV } from '../../src/api/global-rv.js';

/**
 * The differential harness: one request sent to a member directly and to flotilla addressing that
 * member (`/clusters/<name>/…`), the two answers compared after normalising only what flotilla
 * documents as different:
 * - resourceVersions are global on flotilla's side: an object's is turned back into the member's
 *   own; a list's (taken at another moment) is dropped on both sides, as are continue tokens;
 * - flotilla's `search.flotilla.io/cluster` annotation;
 * - a Table's Cluster column (its definition and each row's first cell);
 * - list items' kind and apiVersion (a member omits them for built-in kinds);
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
  if (Array.isArray(doc['items'])) {
    for (const item of doc['items']) {
      if (fromFlotilla) normaliseObject(item, cluster);
      // Items of a built-in kind's list carry no kind/apiVersion on a member, and do on flotilla
      // (its stored bytes are the object's own; README, "Where flotilla differs").
      if (isObject(item)) {
        delete item['kind'];
        delete item['apiVersion'];
      }
    }
  }
  if (kind === 'Table') {
    let columns = doc['columnDefinitions'] as Json[] | null | undefined;
    if (fromFlotilla && Array.isArray(columns)) {
      columns = columns.slice(1);
      doc['columnDefinitions'] = columns;
    }
    const age = Array.isArray(columns) ? columns.findIndex((c) => c['name'] === 'Age') : -1;
    for (const row of (doc['rows'] as Json[] | undefined) ?? []) {
      let cells = row['cells'] as unknown[];
      if (fromFlotilla) cells = cells.slice(1);
      if (age >= 0) cells = cells.map((c, i) => (i === age ? '<age>' : c));
      row['cells'] = cells;
      if (fromFlotilla) normaliseObject(row['object'], cluster);
    }
  }
  return doc;
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
