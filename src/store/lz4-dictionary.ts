/**
 * LZ4 block compression with a dictionary: the block format LZ4_decompress_safe_usingDict reads,
 * which is how lmdb-js decompresses the stored objects (object-compression.ts).
 *
 * Written here because the one npm library with a dictionary that a worker thread can call
 * (lz4-napi) kept about 1 KB of native memory per call that no garbage collection freed: 1.1 GB of
 * RssAnon after a 1M-object sync. This one writes into the caller's buffer and allocates nothing
 * per call.
 *
 * Greedy, as LZ4's fast mode: a 4-byte hash table of the last position seen, matches extended
 * both ways, the search step growing over stretches without a match. The dictionary sits in front
 * of the input in one window, so a match may reach back into it; its hash table is built once and
 * copied in for every input.
 */
const MIN_MATCH = 4;
/** The format's end rules: the last 5 bytes are literals, and no match starts in the last 12. */
const LAST_LITERALS = 5;
const MF_LIMIT = 12;
const MAX_OFFSET = 65_535;
const HASH_LOG = 12;
const SKIP_TRIGGER = 6;
const RUN_MASK = 15;

/** The 4 bytes at `i`, little-endian: one DataView read is much cheaper than four byte reads and shifts. */
function read32(v: DataView, i: number): number {
  return v.getInt32(i, true);
}

function hash(sequence: number): number {
  return Math.imul(sequence, 2654435761) >>> (32 - HASH_LOG);
}

/** Writes a length's continuation bytes (after a token's 15); returns where they end. */
function writeLength(dst: Uint8Array, op: number, rest: number): number {
  for (; rest >= 255; rest -= 255) dst[op++] = 255;
  dst[op++] = rest;
  return op;
}

/**
 * Writes a sequence's token (literal length; the match length is or-ed in later) and literals;
 * returns where they end. Short runs are copied by hand: a subarray per sequence is an object.
 */
function writeLiterals(dst: Uint8Array, op: number, w: Uint8Array, from: number, to: number): number {
  const n = to - from;
  const token = op++;
  dst[token] = (n >= RUN_MASK ? RUN_MASK : n) << 4;
  if (n >= RUN_MASK) op = writeLength(dst, op, n - RUN_MASK);
  if (n > 32) {
    dst.set(w.subarray(from, to), op);
    return op + n;
  }
  for (let i = from; i < to; i++) dst[op++] = w[i]!;
  return op;
}

/** The most a block of `n` bytes can take (LZ4_COMPRESSBOUND). */
export function lz4Bound(n: number): number {
  return n + Math.floor(n / 255) + 16;
}

export class Lz4DictionaryCompressor {
  private window: Uint8Array;
  private windowView: DataView;
  private readonly dictionaryLength: number;
  private readonly dictionaryTable: Int32Array;
  private readonly table: Int32Array;

  constructor(dictionary: Uint8Array) {
    // A match reaches back 64 KB at most: LZ4 uses no more of a dictionary than that.
    const d = dictionary.subarray(Math.max(0, dictionary.length - MAX_OFFSET));
    this.dictionaryLength = d.length;
    this.window = new Uint8Array(d.length + 64 * 1024);
    this.window.set(d);
    this.windowView = new DataView(this.window.buffer);
    this.dictionaryTable = new Int32Array(1 << HASH_LOG).fill(-1);
    for (let i = 0; i + MIN_MATCH <= d.length; i++) this.dictionaryTable[hash(read32(this.windowView, i))] = i;
    this.table = new Int32Array(1 << HASH_LOG);
  }

  /** Compresses `src` into `dst` from `at` (room for lz4Bound(src.length) needed); returns where the block ends. */
  compress(src: Uint8Array, dst: Uint8Array, at: number): number {
    const base = this.dictionaryLength;
    const end = base + src.length;
    if (this.window.length < end) {
      const grown = new Uint8Array(end);
      grown.set(this.window.subarray(0, base));
      this.window = grown;
      this.windowView = new DataView(grown.buffer);
    }
    const w = this.window;
    const v = this.windowView;
    w.set(src, base);
    const table = this.table;
    table.set(this.dictionaryTable);
    let op = at;
    let anchor = base;

    if (src.length > MF_LIMIT) {
      const matchLimit = end - LAST_LITERALS;
      const lastMatchStart = end - MF_LIMIT;
      let ip = base;
      search: for (;;) {
        let ref: number;
        let sequence: number;
        let attempts = 1 << SKIP_TRIGGER;
        for (;;) {
          sequence = read32(v, ip);
          const h = hash(sequence);
          ref = table[h]!;
          table[h] = ip;
          if (ref >= 0 && ip - ref <= MAX_OFFSET && read32(v, ref) === sequence) break;
          ip += attempts++ >> SKIP_TRIGGER;
          if (ip > lastMatchStart) break search;
        }
        while (ip > anchor && ref > 0 && w[ip - 1] === w[ref - 1]) {
          ip--;
          ref--;
        }
        let length = MIN_MATCH;
        while (ip + length + 4 <= matchLimit && read32(v, ip + length) === read32(v, ref + length)) length += 4;
        while (ip + length < matchLimit && w[ip + length] === w[ref + length]) length++;

        const token = op;
        op = writeLiterals(dst, op, w, anchor, ip);
        const offset = ip - ref;
        dst[op++] = offset & 0xff;
        dst[op++] = offset >>> 8;
        const extra = length - MIN_MATCH;
        dst[token] = dst[token]! | (extra >= RUN_MASK ? RUN_MASK : extra);
        if (extra >= RUN_MASK) op = writeLength(dst, op, extra - RUN_MASK);

        ip += length;
        anchor = ip;
        if (ip > lastMatchStart) break;
        table[hash(read32(v, ip - 2))] = ip - 2;
      }
    }
    return writeLiterals(dst, op, w, anchor, end);
  }
}
