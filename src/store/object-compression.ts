import { Lz4DictionaryCompressor, lz4Bound } from './lz4-dictionary.js';
import { OBJECT_DICTIONARY } from './object-dictionary.js';

/**
 * How the `objects` database keeps an object: LZ4 with the store's dictionary, in lmdb-js's own
 * stored form, so that lmdb-js decompresses it as it reads (environment.ts opens the database
 * with OBJECT_COMPRESSION) whoever compressed it.
 *
 * lmdb-js can compress as it writes, but it queues one task per value on libuv's pool from the
 * main thread and calls back when it is done: in a 1M-object sync that was 17 s of the main
 * thread's time. The ingest workers compress instead (batch.ts), and the store writes what they
 * made through a handle that does not compress.
 */

/** Objects smaller than this are stored as they are: a few hundred bytes save little. */
export const COMPRESSION_THRESHOLD = 512;

/** What lmdb-js is given to decompress what it reads (and to compress what is written through it). */
export const OBJECT_COMPRESSION = { dictionary: OBJECT_DICTIONARY, threshold: COMPRESSION_THRESHOLD };

/** lmdb-js's header of a compressed value whose size fits 24 bits: 254, then the size big-endian. */
const SHORT_HEADER = 254;
const SHORT_HEADER_BYTES = 4;
const SHORT_HEADER_MAX = 0xffffff;

/**
 * The stored forms of a batch of objects, written one after another into one reused arena: no
 * allocation per object. A form handed out stays valid until `reset`.
 */
export class StoredForms {
  // lmdb-js uses the dictionary's first multiple of 8 bytes; a match into more would not read back.
  private readonly lz4 = new Lz4DictionaryCompressor(OBJECT_DICTIONARY.subarray(0, OBJECT_DICTIONARY.length & ~7));
  private arena = new Uint8Array(1 << 20);
  private used = 0;

  /** The next batch begins: the forms handed out so far are no longer needed. */
  reset(): void {
    this.used = 0;
  }

  /**
   * The object's bytes as the `objects` database keeps them, or undefined when they are kept as
   * they are (below the threshold, or too large for the short header, which lmdb-js then
   * compresses itself). Byte 0 of JSON is never 254, so lmdb-js tells the two apart.
   */
  add(bytes: Uint8Array): Uint8Array | undefined {
    if (bytes.length < COMPRESSION_THRESHOLD || bytes.length > SHORT_HEADER_MAX) return undefined;
    const need = SHORT_HEADER_BYTES + lz4Bound(bytes.length);
    if (this.used + need > this.arena.length) {
      // The forms already handed out keep the old arena alive; they stay as they are.
      this.arena = new Uint8Array(Math.max(this.arena.length * 2, need));
      this.used = 0;
    }
    const a = this.arena;
    const start = this.used;
    a[start] = SHORT_HEADER;
    a[start + 1] = (bytes.length >>> 16) & 0xff;
    a[start + 2] = (bytes.length >>> 8) & 0xff;
    a[start + 3] = bytes.length & 0xff;
    this.used = this.lz4.compress(bytes, a, start + SHORT_HEADER_BYTES);
    return a.subarray(start, this.used);
  }
}
