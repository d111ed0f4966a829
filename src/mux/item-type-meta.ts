import { storedObjectLead } from '../ingest/decode.js';
import type { CutBytes } from '../util/byte-edits.js';

/** A list item's bytes: a buffer, pieces of buffers, or a buffer with a range left out. */
export type ItemBytes = Buffer | readonly Buffer[] | CutBytes;

const OPEN_BRACE = Buffer.from('{');
const METADATA_KEY = '"metadata":';

/**
 * `{"kind":…,"apiVersion":…,`: how every stored object of a kind starts (storedObjectLead), the
 * part a member leaves out of each item when it lists a kind compiled into it.
 */
export function storedTypeMeta(kind: string, apiVersion: string): Buffer {
  const lead = storedObjectLead(kind, apiVersion);
  return Buffer.from(lead.slice(0, -METADATA_KEY.length));
}

function startsWith(bytes: Buffer, typeMeta: Buffer): boolean {
  return bytes.length > typeMeta.length && bytes.compare(typeMeta, 0, typeMeta.length, 0, typeMeta.length) === 0;
}

/**
 * A stored object as an item of a member's list of a kind compiled into it: without its kind and
 * apiVersion (`typeMeta`, storedTypeMeta). Bytes that do not start so (a presentation rewrote
 * them) stay as they are.
 */
export function withoutTypeMeta(item: ItemBytes, typeMeta: Buffer): ItemBytes {
  if (Buffer.isBuffer(item)) return startsWith(item, typeMeta) ? { src: item, from: 1, to: typeMeta.length } : item;
  if (Array.isArray(item)) {
    const parts = item as readonly Buffer[];
    const first = parts[0];
    return first && startsWith(first, typeMeta) ? [OPEN_BRACE, first.subarray(typeMeta.length), ...parts.slice(1)] : item;
  }
  const cut = item as CutBytes;
  // A tenant's cut lies in the metadata, after the kind and apiVersion.
  if (cut.from < typeMeta.length || !startsWith(cut.src, typeMeta)) return item;
  return [OPEN_BRACE, cut.src.subarray(typeMeta.length, cut.from), cut.src.subarray(cut.to)];
}
