import type { ByteEdit } from './byte-edits.js';
/**
 * Reading the members of a JSON object in place, without parsing it: where each key's value
 * starts and ends in the bytes. Lets a caller rewrite one value of a large document (an object's
 * resourceVersion) by splicing bytes instead of a parse and a stringify of the whole thing.
 *
 * Only for documents already known to be valid JSON (a member apiserver's answer); on anything
 * it cannot follow it returns undefined, and the caller falls back to parsing.
 */
export interface JsonMember {
  /** The key's bytes between its quotes, read as latin1 (escapes not decoded): compare it with ASCII names only. */
  key: string;
  /** Offset of the key's opening quote. */
  keyStart: number;
  /** Offset of the value's first byte. */
  start: number;
  /** Offset just past the value's last byte. */
  end: number;
}

export const QUOTE = 0x22;
const BACKSLASH = 0x5c;
export const COMMA = 0x2c;
export const COLON = 0x3a;
export const OPEN_BRACE = 0x7b;
export const CLOSE_BRACE = 0x7d;
export const OPEN_BRACKET = 0x5b;
export const CLOSE_BRACKET = 0x5d;

// Node's own slicers, without toString's argument checks (@types/node does not declare them).
type Slicer = (this: Uint8Array, from: number, to: number) => string;
const { latin1Slice, utf8Slice } = Buffer.prototype as unknown as { latin1Slice: Slicer; utf8Slice: Slicer };

function isSpace(b: number): boolean {
  return b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09;
}

export function skipSpace(buf: Uint8Array, i: number): number {
  while (i < buf.length && isSpace(buf[i]!)) i++;
  return i;
}

/** Past the closing quote of the string whose opening quote is at `i`; -1 when unterminated. */
export function skipString(buf: Uint8Array, i: number): number {
  for (;;) {
    // indexOf runs natively; a quote is the string's end unless an odd run of backslashes escapes it.
    const q = buf.indexOf(QUOTE, i + 1);
    if (q < 0) return -1;
    let slashes = 0;
    while (buf[q - 1 - slashes] === BACKSLASH) slashes++;
    if (slashes % 2 === 0) return q + 1;
    i = q;
  }
}

/** Past the end of the value starting at `i` (after whitespace); -1 when it cannot tell. */
export function skipValue(buf: Uint8Array, i: number): number {
  const first = buf[i];
  if (first === QUOTE) return skipString(buf, i);
  if (first === OPEN_BRACE || first === OPEN_BRACKET) {
    let depth = 0;
    for (; i < buf.length; i++) {
      const b = buf[i]!;
      if (b === QUOTE) {
        i = skipString(buf, i);
        if (i < 0) return -1;
        i--;
      } else if (b === OPEN_BRACE || b === OPEN_BRACKET) depth++;
      else if (b === CLOSE_BRACE || b === CLOSE_BRACKET) {
        if (--depth === 0) return i + 1;
      }
    }
    return -1;
  }
  // A number, true, false or null: runs to the next delimiter.
  const from = i;
  while (i < buf.length && buf[i] !== COMMA && buf[i] !== CLOSE_BRACE && buf[i] !== CLOSE_BRACKET && !isSpace(buf[i]!)) i++;
  return i > from ? i : -1;
}

/**
 * Whether the key whose opening quote is at `quote` and which ends before `past` (just past its
 * closing quote) is `name` (ASCII bytes), compared in place: no string is made of it.
 */
export function keyIs(buf: Uint8Array, quote: number, past: number, name: Uint8Array): boolean {
  if (past - quote - 2 !== name.length) return false;
  for (let k = 0; k < name.length; k++) if (buf[quote + 1 + k] !== name[k]) return false;
  return true;
}

/** Whether the bytes from `from` to `to` hold a backslash (a key written with an escape). */
export function hasEscape(buf: Uint8Array, from: number, to: number): boolean {
  for (let k = from; k < to; k++) if (buf[k] === BACKSLASH) return true;
  return false;
}

/** The JSON value in `buf` from `start` to `end`, parsed. */
export function parseSpan(buf: Buffer, start: number, end: number): unknown {
  // Most spans read are strings without escapes: their text is their bytes between the quotes.
  const text = buf[start] === QUOTE && end - start >= 2 ? unescapedText(buf, start + 1, end - 1) : undefined;
  return text ?? JSON.parse(buf.toString('utf8', start, end));
}

/** The bytes from `from` to `to` as UTF-8 text (latin1, cheaper, when all are ASCII); undefined when they hold an escape. */
function unescapedText(buf: Buffer, from: number, to: number): string | undefined {
  let ascii = true;
  for (let k = from; k < to; k++) {
    const b = buf[k]!;
    if (b === BACKSLASH) return undefined;
    if (b >= 0x80) ascii = false;
  }
  return ascii ? latin1Slice.call(buf, from, to) : utf8Slice.call(buf, from, to);
}

const MAX_KEPT_KEY = 48;
const KEPT_KEYS_LOG = 10;
const keptKeys: (string | undefined)[] = new Array<string | undefined>(1 << KEPT_KEYS_LOG).fill(undefined);

/**
 * A key's bytes as a latin1 string: cheaper to make than UTF-8, and equal to an ASCII name exactly
 * when the bytes are that name (a UTF-8 byte ≥ 0x80 never reads as ASCII).
 */
function keyText(buf: Uint8Array, from: number, to: number): string {
  const n = to - from;
  if (n > MAX_KEPT_KEY) return latin1Slice.call(buf, from, to);
  // Objects of a kind repeat the same few hundred keys: the last string made for a key is
  // handed out again when the bytes are the same, instead of a new string per member.
  let h = n;
  for (let k = from; k < to; k++) h = Math.imul(h ^ buf[k]!, 0x01000193);
  const slot = h >>> (32 - KEPT_KEYS_LOG);
  const kept = keptKeys[slot];
  if (kept !== undefined && kept.length === n) {
    let same = true;
    for (let k = 0; same && k < n; k++) same = kept.charCodeAt(k) === buf[from + k];
    if (same) return kept;
  }
  const made = latin1Slice.call(buf, from, to);
  keptKeys[slot] = made;
  return made;
}

/**
 * Walks the members of the object whose `{` is at `open` (after any whitespace), in order. `visit`
 * may read a member's value itself and return the offset just past it (-1 when it cannot follow
 * the value); when it returns undefined the value is skipped. So a caller descends into the values
 * it wants while every byte is still scanned once. Returns the offset of the closing `}`, or
 * undefined when `open` is not an object or the bytes do not follow.
 */
export function forEachMember(buf: Uint8Array, open: number, visit: (key: string, start: number, keyStart: number) => number | undefined): number | undefined {
  let i = skipSpace(buf, open);
  if (buf[i] !== OPEN_BRACE) return undefined;
  i = skipSpace(buf, i + 1);
  if (buf[i] === CLOSE_BRACE) return i;
  for (;;) {
    if (buf[i] !== QUOTE) return undefined;
    const keyStart = i;
    const keyEnd = skipString(buf, i);
    if (keyEnd < 0) return undefined;
    const key = keyText(buf, i + 1, keyEnd - 1);
    i = skipSpace(buf, keyEnd);
    if (buf[i] !== COLON) return undefined;
    const start = skipSpace(buf, i + 1);
    const end = visit(key, start, keyStart) ?? skipValue(buf, start);
    if (end < 0) return undefined;
    i = skipSpace(buf, end);
    if (buf[i] === CLOSE_BRACE) return i;
    if (buf[i] !== COMMA) return undefined;
    i = skipSpace(buf, i + 1);
  }
}

/**
 * Where the value of member `key` (ASCII) of the object whose `{` is at `open` starts, or -1 when
 * it has none or the bytes do not follow. Keys are compared in place, byte by byte: no string is
 * made of any, for the hot paths that look up one member of many objects (a tenant's namespace).
 */
export function memberValueAt(buf: Uint8Array, open: number, key: Uint8Array): number {
  let i = skipSpace(buf, open);
  if (buf[i] !== OPEN_BRACE) return -1;
  i = skipSpace(buf, i + 1);
  if (buf[i] === CLOSE_BRACE) return -1;
  for (;;) {
    if (buf[i] !== QUOTE) return -1;
    const keyEnd = skipString(buf, i);
    if (keyEnd < 0) return -1;
    let same = keyEnd - i - 2 === key.length;
    for (let k = 0; same && k < key.length; k++) same = buf[i + 1 + k] === key[k];
    i = skipSpace(buf, keyEnd);
    if (buf[i] !== COLON) return -1;
    const start = skipSpace(buf, i + 1);
    if (same) return start;
    const end = skipValue(buf, start);
    if (end < 0) return -1;
    i = skipSpace(buf, end);
    if (buf[i] !== COMMA) return -1;
    i = skipSpace(buf, i + 1);
  }
}

/** As forEachMember, for the elements of the array whose `[` is at `open`; returns the offset of its `]`. */
export function forEachElement(buf: Uint8Array, open: number, visit: (start: number) => number | undefined): number | undefined {
  let i = skipSpace(buf, open);
  if (buf[i] !== OPEN_BRACKET) return undefined;
  i = skipSpace(buf, i + 1);
  if (buf[i] === CLOSE_BRACKET) return i;
  for (;;) {
    const end = visit(i) ?? skipValue(buf, i);
    if (end < 0) return undefined;
    i = skipSpace(buf, end);
    if (buf[i] === CLOSE_BRACKET) return i;
    if (buf[i] !== COMMA) return undefined;
    i = skipSpace(buf, i + 1);
  }
}

/**
 * The members of the object whose `{` is at `open` (after any whitespace), in order, and the
 * offset of its closing `}`; undefined when `open` is not an object or the bytes do not follow.
 */
export function objectMembers(buf: Uint8Array, open: number): { members: JsonMember[]; close: number } | undefined {
  const members: JsonMember[] = [];
  const close = forEachMember(buf, open, (key, start, keyStart) => {
    const end = skipValue(buf, start);
    if (end >= 0) members.push({ key, keyStart, start, end });
    return end;
  });
  return close === undefined ? undefined : { members, close };
}

/**
 * objectMembers of an object none of whose keys is written with escapes, else undefined: an
 * escaped key could spell a member an edit in place must see (`resourceVersion`, an annotation).
 */
export function plainObjectMembers(buf: Uint8Array, open: number): { members: JsonMember[]; close: number } | undefined {
  const found = objectMembers(buf, open);
  return found && !found.members.some((m) => m.key.includes('\\')) ? found : undefined;
}

/**
 * objectMembers, also finding in the same pass the members of each member whose value is an
 * object (`nested`, by the value's offset): one walk of an object's bytes serves reads two levels
 * deep (an object's `metadata.labels`, its `spec.nodeName`).
 */
export function objectMembersTwoDeep(buf: Uint8Array, open: number): { members: JsonMember[]; close: number; nested: Map<number, JsonMember[]> } | undefined {
  const members: JsonMember[] = [];
  const nested = new Map<number, JsonMember[]>();
  const close = forEachMember(buf, open, (key, start, keyStart) => {
    let end: number;
    if (buf[start] === OPEN_BRACE) {
      const inner = objectMembers(buf, start);
      if (!inner) return -1;
      nested.set(start, inner.members);
      end = inner.close + 1;
    } else {
      end = skipValue(buf, start);
    }
    if (end >= 0) members.push({ key, keyStart, start, end });
    return end;
  });
  return close === undefined ? undefined : { members, close, nested };
}

/** The edit that removes `members[index]` from its object: the member and one comma next to it. */
export function memberRemoval(members: readonly JsonMember[], index: number): ByteEdit {
  const m = members[index]!;
  const next = members[index + 1];
  const before = members[index - 1];
  if (next) return { start: m.keyStart, end: next.keyStart, text: '' };
  if (before) return { start: before.end, end: m.end, text: '' };
  return { start: m.keyStart, end: m.end, text: '' };
}
