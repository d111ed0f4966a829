import { pack } from 'msgpackr';
import type { DecodedObject } from './decode.js';
import type { TableColumn } from '../api/table.js';
import { indexEntries } from '../store/meta-record.js';
import { StoredForms } from '../store/object-compression.js';

/**
 * How decoded objects cross from an ingest worker to the main thread without the main thread
 * parsing anything: every object's served bytes, its msgpack meta record and its bytes as the
 * store keeps them (compressed: StoredForms), back to back in one ArrayBuffer that is
 * transferred (not copied), with offsets. The main thread hands Buffer views of it straight to
 * LMDB.
 */
export interface EncodedObjects {
  buffer: ArrayBuffer;
  /** Per object (OFFSETS_PER_OBJECT): bytes start and length, meta start and length, stored start and length (0: as served). */
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
  /** The bytes as the store keeps them (StoredForms), or undefined: kept as served. */
  stored: Buffer | undefined;
}

const OFFSETS_PER_OBJECT = 6;

/** One per thread (each worker has its own module instance): encodeObjects reuses its arena. */
const storedForms = new StoredForms();

export function encodeObjects(objects: readonly DecodedObject[]): EncodedObjects {
  const metas = objects.map((o) => pack(o.meta));
  storedForms.reset();
  const stored = objects.map((o) => storedForms.add(o.bytes));
  let total = 0;
  for (let i = 0; i < objects.length; i++) total += objects[i]!.bytes.length + metas[i]!.length + (stored[i]?.length ?? 0);
  const buffer = new ArrayBuffer(total);
  const out = new Uint8Array(buffer);
  const offsets = new Uint32Array(objects.length * OFFSETS_PER_OBJECT);
  const refs: string[] = new Array<string>(objects.length * 2);
  const labels: string[] = objects.map((o) => indexEntries(o.meta));
  let at = 0;
  const put = (bytes: Uint8Array, slot: number) => {
    offsets[slot] = at;
    offsets[slot + 1] = bytes.length;
    out.set(bytes, at);
    at += bytes.length;
  };
  objects.forEach((o, i) => {
    const slot = i * OFFSETS_PER_OBJECT;
    put(o.bytes, slot);
    put(metas[i]!, slot + 2);
    const s = stored[i];
    if (s) put(s, slot + 4);
    refs[i * 2] = o.namespace;
    refs[i * 2 + 1] = o.name;
  });
  return { buffer, offsets, refs, labels };
}

export function viewObjects(enc: EncodedObjects): IngestedObject[] {
  const n = enc.offsets.length / OFFSETS_PER_OBJECT;
  const out: IngestedObject[] = new Array<IngestedObject>(n);
  const view = (slot: number) => Buffer.from(enc.buffer, enc.offsets[slot]!, enc.offsets[slot + 1]!);
  for (let i = 0; i < n; i++) {
    const slot = i * OFFSETS_PER_OBJECT;
    out[i] = {
      namespace: enc.refs[i * 2]!,
      name: enc.refs[i * 2 + 1]!,
      labels: enc.labels[i]!,
      bytes: view(slot),
      meta: view(slot + 2),
      stored: enc.offsets[slot + 5]! > 0 ? view(slot + 4) : undefined,
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
