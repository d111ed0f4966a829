import { CLOSE_BRACE, COLON, COMMA, OPEN_BRACE, QUOTE, hasEscape, keyIs, skipSpace, skipString, skipValue } from '../../util/json-members.js';

const KIND = Buffer.from('kind');
const METADATA = Buffer.from('metadata');
const NAME = Buffer.from('name');
const RESOURCE_VERSION = Buffer.from('resourceVersion');
const ANNOTATIONS = Buffer.from('annotations');

/**
 * What splicing one item of a member's list needs to know of it (spliced-list.ts), read
 * in one pass over its bytes as offsets: no key is made a string and no closure or record is
 * made per item, for lists of many thousand items read live. One instance is reused item after
 * item. Offsets are -1 where the item has no such member.
 */
export class ItemFacts {
  /** Offset of the item's closing `}`. */
  close = -1;
  /** The value of `kind` (of the last one, as a parser keeps it). */
  kindStart = -1;
  kindEnd = -1;
  /** Offset of the `}` of `metadata`; -1 when the item has none. */
  mdClose = -1;
  mdMembers = 0;
  /** Whether `metadata.name` is a string. */
  named = false;
  rvStart = -1;
  rvEnd = -1;
  /** `metadata.annotations`: its key's opening quote and its value. */
  annKey = -1;
  annStart = -1;
  annEnd = -1;

  /**
   * Reads the object whose `{` is at `open`. False when the bytes do not follow (a key among
   * those it looks at written with escapes, metadata that is not an object): the caller parses.
   */
  read(buf: Uint8Array, open: number): boolean {
    this.kindStart = this.kindEnd = this.mdClose = -1;
    this.resetMetadata();
    this.close = this.walk(buf, open, this.itemMember);
    return this.close >= 0;
  }

  /** Whether `kind` is the string `name` (ASCII, written without escapes). */
  kindIs(buf: Uint8Array, name: Uint8Array): boolean {
    return this.kindStart >= 0 && buf[this.kindStart] === QUOTE && keyIs(buf, this.kindStart, this.kindEnd, name);
  }

  private resetMetadata(): void {
    this.mdMembers = 0;
    this.named = false;
    this.rvStart = this.rvEnd = this.annKey = this.annStart = this.annEnd = -1;
  }

  /** One member of the item: its key's quote, past its key, its value's start; past its value, or -1. */
  private readonly itemMember = (buf: Uint8Array, key: number, pastKey: number, start: number): number => {
    if (keyIs(buf, key, pastKey, METADATA)) {
      if (buf[start] !== OPEN_BRACE) return -1;
      // A second metadata member replaces the first, as it would in a parse.
      this.resetMetadata();
      this.mdClose = this.walk(buf, start, this.metadataMember);
      return this.mdClose < 0 ? -1 : this.mdClose + 1;
    }
    const end = skipValue(buf, start);
    if (keyIs(buf, key, pastKey, KIND)) {
      this.kindStart = start;
      this.kindEnd = end;
    }
    return end;
  };

  /** One member of the item's metadata, as itemMember. */
  private readonly metadataMember = (buf: Uint8Array, key: number, pastKey: number, start: number): number => {
    this.mdMembers++;
    const end = skipValue(buf, start);
    if (keyIs(buf, key, pastKey, NAME)) {
      this.named = buf[start] === QUOTE;
    } else if (keyIs(buf, key, pastKey, RESOURCE_VERSION)) {
      this.rvStart = start;
      this.rvEnd = end;
    } else if (keyIs(buf, key, pastKey, ANNOTATIONS)) {
      this.annKey = key;
      this.annStart = start;
      this.annEnd = end;
    }
    return end;
  };

  /**
   * Walks the members of the object whose `{` is at `open`, each key compared in place by
   * `member` (bound once: nothing is made per object). The offset of its `}`, or -1 when the
   * bytes do not follow or a key holds an escape.
   */
  private walk(buf: Uint8Array, open: number, member: (buf: Uint8Array, key: number, pastKey: number, start: number) => number): number {
    let i = skipSpace(buf, open + 1);
    if (buf[i] === CLOSE_BRACE) return i;
    for (;;) {
      if (buf[i] !== QUOTE) return -1;
      const key = i;
      const pastKey = skipString(buf, i);
      if (pastKey < 0 || hasEscape(buf, key + 1, pastKey - 1)) return -1;
      i = skipSpace(buf, pastKey);
      if (buf[i] !== COLON) return -1;
      const end = member(buf, key, pastKey, skipSpace(buf, i + 1));
      if (end < 0) return -1;
      i = skipSpace(buf, end);
      if (buf[i] === CLOSE_BRACE) return i;
      if (buf[i] !== COMMA) return -1;
      i = skipSpace(buf, i + 1);
    }
  }
}
