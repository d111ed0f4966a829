/**
 * A watch in JSON: one WatchEvent `{"type":…,"object":…}` a line, each ended by a newline. The
 * one place its lines are cut from a stream and framed for one (protobuf-watch.ts is the
 * length-delimited counterpart). Lines stay bytes: a caller parses or copies them as it needs.
 */
const NEWLINE = 0x0a;

/** The whole lines of a newline-delimited stream as its chunks arrive. */
export class WatchLines {
  /** The start of a line whose newline has not come yet. */
  private partial: Buffer | undefined;

  /**
   * The whole lines this chunk completes, together, each with its newline (empty when it ends
   * none): one buffer, so lines that arrived together are handled together.
   */
  push(chunk: Buffer): Buffer {
    const data = this.partial ? Buffer.concat([this.partial, chunk]) : chunk;
    const end = data.lastIndexOf(NEWLINE);
    // Copied: a few bytes of a line must not keep a whole chunk's memory alive.
    const rest = end + 1 < data.length ? Buffer.from(data.subarray(end + 1)) : undefined;
    this.partial = rest;
    return end < 0 ? EMPTY : data.subarray(0, end + 1);
  }
}

const EMPTY = Buffer.alloc(0);

/** JSON's insignificant whitespace: a line of only these carries no event. */
function isBlank(bytes: Buffer, from: number, to: number): boolean {
  for (let i = from; i < to; i++) {
    const b = bytes[i]!;
    if (b !== 0x20 && b !== 0x09 && b !== 0x0d) return false;
  }
  return true;
}

/** Each line of `lines` (without its newline) that carries something, in order; a last line needs no newline. */
export function* splitWatchLines(lines: Buffer): Generator<Buffer> {
  for (let start = 0; start < lines.length; ) {
    const newline = lines.indexOf(NEWLINE, start);
    const end = newline < 0 ? lines.length : newline;
    if (!isBlank(lines, start, end)) yield lines.subarray(start, end);
    start = end + 1;
  }
}

const OBJECT_END = Buffer.from('}\n');

/** A WatchEvent's line: the event's type, then the object's JSON as given. */
export function frameWatchEvent(type: string, object: Buffer | string): Buffer {
  return Buffer.concat([Buffer.from(`{"type":"${type}","object":`), typeof object === 'string' ? Buffer.from(object) : object, OBJECT_END]);
}
