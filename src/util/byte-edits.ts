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

/** Text, or a [start, end) range of the source buffer. */
export type Piece = string | [number, number];

/** The source's bytes from `from` to `to` with `edits` applied (they lie within, not overlapping). */
export function editedPieces(edits: ByteEdit[], from: number, to: number): Piece[] {
  const pieces: Piece[] = [];
  for (const e of [...edits].sort((a, b) => a.start - b.start)) {
    if (e.start > from) pieces.push([from, e.start]);
    if (e.text) pieces.push(e.text);
    from = e.end;
  }
  if (to > from) pieces.push([from, to]);
  return pieces;
}

export function piecesLength(pieces: Piece[]): number {
  let n = 0;
  for (const p of pieces) n += typeof p === 'string' ? Buffer.byteLength(p) : p[1] - p[0];
  return n;
}

/** Writes the pieces into `out` at `at`; returns the offset past them. */
export function writePieces(out: Buffer, at: number, pieces: Piece[], src: Buffer | undefined): number {
  for (const p of pieces) at += typeof p === 'string' ? out.write(p, at) : src!.copy(out, at, p[0], p[1]);
  return at;
}

/** The pieces as one new buffer. */
export function joinPieces(pieces: Piece[], src: Buffer): Buffer {
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
