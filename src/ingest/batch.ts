import { pack } from 'msgpackr';
import type { DecodedObject } from './decode.js';
import type { TableColumn } from '../api/table.js';
import { indexEntries } from '../store/meta-record.js';

/**
 * How decoded objects cross from an ingest worker to the main thread without the main thread
 * parsing anything: every object's served bytes and msgpack meta record, back to back in one
 * ArrayBuffer that is transferred (not copied), with offsets. The main thread hands Buffer views
 * of it straight to LMDB.
 */
export interface EncodedObjects {
  buffer: ArrayBuffer;
  /** Per object: bytes start, bytes length, meta start, meta length. */
  offsets: Uint32Array;
  /** Per object: namespace, name (alternating). */
  refs: string[];
  /** Per object: its label index entries (indexEntries), joined by KEY_SEP; '' when none. */
  labels: string[];
}

export interface IngestedObject {
  namespace: string;
  name: string;
  /**
   * What the label index holds for this object: `key=value` per label and indexed field, joined
   * by KEY_SEP, which none of them can contain. One string, not an array: a page's objects live
   * across several event turns, and the young-generation GC copies every object still alive
   * (nine strings and an array per pod made its pauses most of the sync's long turns).
   */
  labels: string;
  /** The served JSON bytes. */
  bytes: Buffer;
  /** The msgpack-encoded MetaRecord. */
  meta: Buffer;
}

export function encodeObjects(objects: readonly DecodedObject[]): EncodedObjects {
  const metas = objects.map((o) => pack(o.meta));
  let total = 0;
  for (let i = 0; i < objects.length; i++) total += objects[i]!.bytes.length + metas[i]!.length;
  const buffer = new ArrayBuffer(total);
  const out = new Uint8Array(buffer);
  const offsets = new Uint32Array(objects.length * 4);
  const refs: string[] = new Array<string>(objects.length * 2);
  const labels: string[] = objects.map((o) => indexEntries(o.meta));
  let at = 0;
  objects.forEach((o, i) => {
    offsets[i * 4] = at;
    offsets[i * 4 + 1] = o.bytes.length;
    out.set(o.bytes, at);
    at += o.bytes.length;
    const meta = metas[i]!;
    offsets[i * 4 + 2] = at;
    offsets[i * 4 + 3] = meta.length;
    out.set(meta, at);
    at += meta.length;
    refs[i * 2] = o.namespace;
    refs[i * 2 + 1] = o.name;
  });
  return { buffer, offsets, refs, labels };
}

export function viewObjects(enc: EncodedObjects): IngestedObject[] {
  const n = enc.offsets.length / 4;
  const out: IngestedObject[] = new Array<IngestedObject>(n);
  for (let i = 0; i < n; i++) {
    out[i] = {
      namespace: enc.refs[i * 2]!,
      name: enc.refs[i * 2 + 1]!,
      labels: enc.labels[i]!,
      bytes: Buffer.from(enc.buffer, enc.offsets[i * 4]!, enc.offsets[i * 4 + 1]!),
      meta: Buffer.from(enc.buffer, enc.offsets[i * 4 + 2]!, enc.offsets[i * 4 + 3]!),
    };
  }
  return out;
}

/** A decoded list page, as the worker returns it. */
export interface PageResult {
  rv: string;
  continueToken?: string;
  columns?: TableColumn[];
  objects: EncodedObjects;
  /** Each object's member RV, in order: the main thread never decodes a meta record to learn it. */
  objectRVs: string[];
}

/**
 * A batch of watch events, as the worker returns it. `types[i]` is the i-th event's type; events
 * that carry an object take the next object of `objects` in order.
 */
export const EVENT_TYPES = ['ADDED', 'MODIFIED', 'DELETED', 'BOOKMARK', 'ERROR'] as const;
export type EventType = (typeof EVENT_TYPES)[number];

export interface EventsResult {
  types: Uint8Array;
  /** The RV of each BOOKMARK, in order. */
  bookmarkRVs: string[];
  /** The member RV of each object-carrying event, in order (meta records hold it too, packed). */
  objectRVs: string[];
  error?: { code?: number; reason?: string; message?: string };
  columns?: TableColumn[];
  objects: EncodedObjects;
}
