import { CLUSTER_COLUMN, clusterColumnAt, withCluster } from '../../api/table.js';
import { editProtobufItem, isProtobuf } from '../../api/protobuf-object.js';
import { readProtobufList } from '../../api/protobuf-list.js';
import { piecesLength, writePieces } from '../../util/byte-edits.js';
import { isJsonObject } from '../../util/json-object.js';
import { protobufToFleet, splicedList, toFleet, type SplicedList } from '../translate.js';
import type { MemberResult } from '../member-fan-out.js';

/**
 * Members' answers read and merged as flotilla shows them: each member's object with a global
 * resourceVersion and its cluster annotation (translate.ts), lists read in place where they can be
 * (spliced) and parsed otherwise, protobuf lists edited item by item, and several members' lists
 * or Tables merged into one in the members' order.
 */

export type Doc = Record<string, unknown>;

/** A member's object as flotilla shows it (translate.ts: a global RV, its cluster annotation). */
function itemToFleet(o: unknown, cluster: string): void {
  if (isJsonObject(o)) toFleet(o, cluster);
}

export interface Parsed {
  cluster: string;
  /** The answer; of a spliced list, its members but items. */
  doc: Doc;
  warnings: string[];
  /** A JSON list's items read in place (translate.ts splicedList), and the body they are ranges of. */
  spliced?: { list: SplicedList; body: Buffer };
  /** A protobuf list's items, each edited as flotilla shows it (its doc: kind, apiVersion, metadata). */
  protobufItems?: Uint8Array[];
}

export function warningsOf(r: MemberResult): string[] {
  const w = r.headers?.['warning'];
  return w === undefined ? [] : Array.isArray(w) ? w : [w];
}

export function parsed(r: MemberResult): Parsed | undefined {
  try {
    const doc = JSON.parse(r.body!.toString('utf8')) as unknown;
    if (!isJsonObject(doc)) return undefined;
    return { cluster: r.cluster, doc, warnings: warningsOf(r) };
  } catch {
    return undefined;
  }
}

/** A list answer, its items read in place when the splice follows them, parsed otherwise. */
export function parsedList(r: MemberResult): Parsed | undefined {
  const list = r.body ? splicedList(r.body, r.cluster) : undefined;
  if (!list) return parsed(r);
  return { cluster: r.cluster, doc: list.head, warnings: warningsOf(r), spliced: { list, body: r.body! } };
}

/**
 * A member's protobuf list, its items edited as toFleet edits JSON ones (a global RV of the
 * member's, the cluster annotation); undefined for an answer that is no protobuf list.
 */
export function protobufListOf(r: MemberResult): Parsed | undefined {
  const list = r.body && isProtobuf(r.headers?.['content-type']) ? readProtobufList(r.body) : undefined;
  if (!list) return undefined;
  const itemKind = list.kind.slice(0, -'List'.length);
  const edit = protobufToFleet(r.cluster);
  try {
    const protobufItems = list.items.map((item) => editProtobufItem(item, itemKind, edit));
    return { cluster: r.cluster, doc: { kind: list.kind, apiVersion: list.apiVersion, metadata: { ...list.metadata } }, warnings: warningsOf(r), protobufItems };
  } catch {
    return undefined;
  }
}

/** The same answer wholly parsed, for a merge where another member's answer could not be spliced. */
export function unspliced(a: Parsed): Parsed | undefined {
  if (!a.spliced) return a;
  const whole = parsed({ cluster: a.cluster, body: a.spliced.body });
  return whole && { ...whole, warnings: a.warnings };
}

/**
 * Spliced lists as one, in the members' order: the first's kind and apiVersion, `metadata`, and
 * every member's item bytes, as merged() makes them (JSON.stringify of the same values). Tables
 * likewise: the first's columns with the Cluster column, and every member's rows.
 */
export function splicedMerged(answers: readonly Parsed[], metadata: Doc): Buffer {
  const first = answers[0]!.doc;
  const table = answers[0]!.spliced!.list.table === true;
  const columns = Array.isArray(first['columnDefinitions']) ? first['columnDefinitions'] : [];
  const open = JSON.stringify({ kind: first['kind'], apiVersion: first['apiVersion'], metadata, ...(table ? { columnDefinitions: withCluster<unknown>(columns, CLUSTER_COLUMN, clusterColumnAt(columns)) } : {}) });
  const head = `${open.slice(0, -1)},${table ? '"rows"' : '"items"'}:[`;
  const parts = answers.filter((a) => a.spliced!.list.count > 0);
  let length = Buffer.byteLength(head) + Math.max(0, parts.length - 1) + 2;
  for (const a of parts) length += piecesLength(a.spliced!.list.items);
  const out = Buffer.allocUnsafe(length);
  let at = out.write(head, 0);
  parts.forEach((a, i) => {
    if (i > 0) at += out.write(',', at);
    at = writePieces(out, at, a.spliced!.list.items, a.spliced!.body);
  });
  at += out.write(']}', at);
  return at === length ? out : out.subarray(0, at);
}

/** Members' answers (lists or Tables) as one, in the members' order. */
export function merged(answers: readonly Parsed[], metadata: Doc): Doc {
  const first = answers[0]!.doc;
  if (first['kind'] === 'Table') {
    const columns = Array.isArray(first['columnDefinitions']) ? first['columnDefinitions'] : [];
    const at = clusterColumnAt(columns);
    const rows: unknown[] = [];
    for (const a of answers) {
      for (const row of Array.isArray(a.doc['rows']) ? a.doc['rows'] : []) {
        if (!isJsonObject(row)) continue;
        itemToFleet(row['object'], a.cluster);
        rows.push({ ...row, cells: withCluster<unknown>(Array.isArray(row['cells']) ? row['cells'] : [], a.cluster, at) });
      }
    }
    return { kind: 'Table', apiVersion: first['apiVersion'], metadata, columnDefinitions: withCluster<unknown>(columns, CLUSTER_COLUMN, at), rows };
  }
  const items: unknown[] = [];
  for (const a of answers) {
    for (const item of Array.isArray(a.doc['items']) ? a.doc['items'] : []) {
      itemToFleet(item, a.cluster);
      items.push(item);
    }
  }
  return { kind: first['kind'], apiVersion: first['apiVersion'], metadata, items };
}
