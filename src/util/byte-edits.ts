/**
 * Bytes assembled from text and ranges of a source buffer, as flotilla edits a member's JSON in
 * place: a few values replaced or added, every other byte copied as the member wrote it.
 */

/** A replacement of the bytes from `start` to `end` by `text`. */
export interface ByteEdit {
  start: number;
  end: number;
  text: string;
}

/**
 * Text, and [start, end) ranges of the source buffer, in order, in one flat array: a range is two
 * numbers in a row. A list spliced live has thousands of ranges; as small integers in the array
 * they cost no allocation each, where a [start, end] array per range did.
 */
export type Pieces = (string | number)[];

/** Appends the source's range [start, end) to `pieces` (nothing when empty). */
export function pushRange(pieces: Pieces, start: number, end: number): void {
  if (end > start) pieces.push(start, end);
}

/** The source's bytes from `from` to `to` with `edits` applied (they lie within, not overlapping). */
export function editedPieces(edits: ByteEdit[], from: number, to: number): Pieces {
  const pieces: Pieces = [];
  for (const e of [...edits].sort((a, b) => a.start - b.start)) {
    pushRange(pieces, from, e.start);
    if (e.text) pieces.push(e.text);
    from = e.end;
  }
  pushRange(pieces, from, to);
  return pieces;
}

export function piecesLength(pieces: Pieces): number {
  let n = 0;
  for (let i = 0; i < pieces.length; i++) {
    const p = pieces[i]!;
    n += typeof p === 'string' ? Buffer.byteLength(p) : (pieces[++i] as number) - p;
  }
  return n;
}

/** Writes the pieces into `out` at `at`; returns the offset past them. */
export function writePieces(out: Buffer, at: number, pieces: Pieces, src: Buffer | undefined): number {
  for (let i = 0; i < pieces.length; i++) {
    const p = pieces[i]!;
    at += typeof p === 'string' ? out.write(p, at) : src!.copy(out, at, p, pieces[++i] as number);
  }
  return at;
}

/** The pieces as one new buffer. */
export function joinPieces(pieces: Pieces, src: Buffer): Buffer {
  const out = Buffer.allocUnsafe(piecesLength(pieces));
  writePieces(out, 0, pieces, src);
  return out;
}

/** A buffer with one range left out (a tenant's prefix), copied once into whatever sends it. */
export interface CutBytes {
  src: Buffer;
  from: number;
  to: number;
}
