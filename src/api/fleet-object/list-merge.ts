import { CLUSTER_COLUMN, clusterColumnAt, withCluster } from '../table.js';
import { piecesLength, writePieces } from '../../util/byte-edits.js';
import { isJsonObject } from '../../util/json-object.js';
import type { AnswerForm } from './codec.js';
import { toFleet } from './parsed-json.js';
import type { SplicedList } from './spliced-list.js';

/**
 * The fleet's list made of members' lists, in the members' order: the first's kind and
 * apiVersion, the given `metadata` (the caller's global RV and continue), every member's items as
 * the fleet shows them. A Table: the first's columns with the Cluster column, every member's rows
 * with their Cluster cell. Live reads merge members' pages with it, forwarded deletecollections
 * the members' answers. Spliced lists are merged as bytes, parsed ones as records; both give the
 * same JSON.
 */
type Doc = Record<string, unknown>;

/** A member's list read in place (spliced-list.ts), and the body its pieces are ranges of. */
export interface SplicedMemberList {
  list: SplicedList;
  body: Buffer;
}

/** Spliced lists as one: `head` the first's members but items (SplicedList.head). */
export function mergeSplicedLists(lists: readonly SplicedMemberList[], head: Doc, metadata: Doc): Buffer {
  const table = lists[0]?.list.table === true;
  const columns = Array.isArray(head['columnDefinitions']) ? head['columnDefinitions'] : [];
  const open = JSON.stringify({ kind: head['kind'], apiVersion: head['apiVersion'], metadata, ...(table ? { columnDefinitions: withCluster<unknown>(columns, CLUSTER_COLUMN, clusterColumnAt(columns)) } : {}) });
  const lead = `${open.slice(0, -1)},${table ? '"rows"' : '"items"'}:[`;
  const parts = lists.filter((l) => l.list.count > 0);
  let length = Buffer.byteLength(lead) + Math.max(0, parts.length - 1) + 2;
  for (const l of parts) length += piecesLength(l.list.items);
  const out = Buffer.allocUnsafe(length);
  let at = out.write(lead, 0);
  parts.forEach((l, i) => {
    if (i > 0) at += out.write(',', at);
    at = writePieces(out, at, l.list.items, l.body);
  });
  at += out.write(']}', at);
  return at === length ? out : out.subarray(0, at);
}

/** Members' lists (or Tables) as the members sent them, parsed, as one; their items are shown in place (toFleet). */
export function mergeParsedLists(lists: readonly { cluster: string; doc: Doc }[], metadata: Doc, form: AnswerForm = {}): Doc {
  const first = lists[0]!.doc;
  if (first['kind'] === 'Table') {
    const columns = Array.isArray(first['columnDefinitions']) ? first['columnDefinitions'] : [];
    const at = clusterColumnAt(columns);
    const rows: unknown[] = [];
    for (const l of lists) {
      for (const row of Array.isArray(l.doc['rows']) ? l.doc['rows'] : []) {
        if (!isJsonObject(row)) continue;
        if (isJsonObject(row['object'])) toFleet(row['object'], l.cluster, form);
        rows.push({ ...row, cells: withCluster<unknown>(Array.isArray(row['cells']) ? row['cells'] : [], l.cluster, at) });
      }
    }
    return { kind: 'Table', apiVersion: first['apiVersion'], metadata, columnDefinitions: withCluster<unknown>(columns, CLUSTER_COLUMN, at), rows };
  }
  const items: unknown[] = [];
  for (const l of lists) {
    for (const item of Array.isArray(l.doc['items']) ? l.doc['items'] : []) {
      if (isJsonObject(item)) toFleet(item, l.cluster, form);
      items.push(item);
    }
  }
  return { kind: first['kind'], apiVersion: first['apiVersion'], metadata, items };
}
