import type { IncomingMessage } from 'node:http';
import { SplicedListReader, mergeParsedLists, mergeSplicedLists, protobufListToFleet, splicedList, type SplicedList } from '../../api/fleet-object/index.js';
import { isProtobuf } from '../../api/protobuf-object.js';
import { BufferPool } from '../../util/buffer-pool.js';
import { isJsonObject } from '../../util/json-object.js';
import type { MemberResult } from '../member-fan-out.js';

/**
 * Members' answers read and merged as flotilla shows them: each member's object with a global
 * resourceVersion and its cluster annotation (api/fleet-object), lists read in place where they
 * can be (spliced) and parsed otherwise, protobuf lists edited item by item, and several members'
 * lists or Tables merged into one in the members' order.
 */

export type Doc = Record<string, unknown>;

export interface Parsed {
  cluster: string;
  /** The answer; of a spliced list, its members but items. */
  doc: Doc;
  warnings: string[];
  /** A JSON list's items read in place (api/fleet-object splicedList), and the body they are ranges of. */
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

/** The buffers members' lists are gathered in, kept between live lists (a few lists' worth). */
const LIST_BUFFERS = new BufferPool(32 * 1024 * 1024, 8 * 1024 * 1024);

/**
 * Where a member's JSON list goes as it arrives (MemberAsk.sinkFor): spliced meanwhile, so that
 * little is left to do once the slowest member has answered; in a buffer of LIST_BUFFERS, given
 * back by releaseAnswers.
 */
export function listSink(cluster: string): (res: IncomingMessage) => SplicedListReader | undefined {
  return (res) => {
    if (res.statusCode !== 200) return undefined;
    const length = Number(res.headers['content-length']);
    return new SplicedListReader(cluster, { pool: LIST_BUFFERS, ...(Number.isSafeInteger(length) && length > 0 ? { expectedLength: length } : {}) });
  };
}

/** Gives the answers' list buffers back (listSink), once their bytes have been copied into the reply. */
export function releaseAnswers(results: readonly MemberResult[]): void {
  for (const r of results) if (r.sink instanceof SplicedListReader) r.sink.release();
}

/** A list answer, its items read in place when the splice follows them (as it arrived: listSink), parsed otherwise. */
export function parsedList(r: MemberResult): Parsed | undefined {
  const list = r.sink instanceof SplicedListReader ? r.sink.end() : r.body ? splicedList(r.body, r.cluster) : undefined;
  if (!list) return parsed(r);
  return { cluster: r.cluster, doc: list.head, warnings: warningsOf(r), spliced: { list, body: r.body! } };
}

/**
 * A member's protobuf list, its items edited as toFleet edits JSON ones (a global RV of the
 * member's, the cluster annotation); undefined for an answer that is no protobuf list.
 */
export function protobufListOf(r: MemberResult): Parsed | undefined {
  const list = r.body && isProtobuf(r.headers?.['content-type']) ? protobufListToFleet(r.body, r.cluster) : undefined;
  if (!list) return undefined;
  return { cluster: r.cluster, doc: { kind: list.kind, apiVersion: list.apiVersion, metadata: list.metadata }, warnings: warningsOf(r), protobufItems: list.items };
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
  return mergeSplicedLists(answers.map((a) => a.spliced!), answers[0]!.doc, metadata);
}

/** Members' answers (lists or Tables) as one, in the members' order. */
export function merged(answers: readonly Parsed[], metadata: Doc): Doc {
  return mergeParsedLists(answers, metadata);
}
