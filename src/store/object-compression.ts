import { compressSync } from 'lz4-napi';
import { OBJECT_DICTIONARY } from './object-dictionary.js';

/**
 * How the `objects` database keeps an object: LZ4 with the store's dictionary, in lmdb-js's own
 * stored form, so that lmdb-js decompresses it as it reads (environment.ts opens the database
 * with OBJECT_COMPRESSION) whoever compressed it.
 *
 * lmdb-js can compress as it writes, but it queues one task per value on libuv's pool from the
 * main thread and calls back when it is done: in a 1M-object sync that was 17 s of the main
 * thread's time and a good part of its garbage. The ingest workers compress instead (batch.ts),
 * and the store writes what they made through a handle that does not compress.
 */

/** Objects smaller than this are stored as they are: a few hundred bytes save little. */
export const COMPRESSION_THRESHOLD = 512;

/** lmdb-js uses the dictionary's first multiple of 8 bytes; compressing with more would not read back. */
const DICTIONARY = OBJECT_DICTIONARY.subarray(0, OBJECT_DICTIONARY.length & ~7);

/** What lmdb-js is given to decompress what it reads (and to compress what is written through it). */
export const OBJECT_COMPRESSION = { dictionary: OBJECT_DICTIONARY, threshold: COMPRESSION_THRESHOLD };

/** lmdb-js's header of a compressed value whose size fits 24 bits: 254, then the size big-endian. */
const SHORT_HEADER = 254;
const SHORT_HEADER_MAX = 0xffffff;

/**
 * The object's bytes as the `objects` database keeps them, or undefined when they are kept as
 * they are (below the threshold, or too large for the short header, which lmdb-js then compresses
 * itself). Byte 0 of JSON is never 254, so lmdb-js tells the two apart.
 */
export function compressObject(bytes: Uint8Array): Buffer | undefined {
  if (bytes.length < COMPRESSION_THRESHOLD || bytes.length > SHORT_HEADER_MAX) return undefined;
  const source = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length);
  const framed = compressSync(source, DICTIONARY);
  // lz4-napi puts the size (4 bytes, little-endian) before the LZ4 block; it becomes lmdb-js's
  // 4-byte header in place, so the block is not copied.
  framed[0] = SHORT_HEADER;
  framed[1] = (bytes.length >>> 16) & 0xff;
  framed[2] = (bytes.length >>> 8) & 0xff;
  framed[3] = bytes.length & 0xff;
  return framed;
}
