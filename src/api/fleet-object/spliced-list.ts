import { oneClusterRV } from '../global-rv.js';
import { clusterColumnAt } from '../table.js';
import { pushRange, type ByteEdit, type Pieces } from '../../util/byte-edits.js';
import type { BufferPool } from '../../util/buffer-pool.js';
import { CLOSE_BRACE, CLOSE_BRACKET, COLON, COMMA, OPEN_BRACE, OPEN_BRACKET, QUOTE, forEachElement, forEachMember, parseSpan, skipSpace, skipString, skipValue } from '../../util/json-members.js';
import { clusterAnnotationEntry, clusterAnnotationInMetadata } from './cluster-annotation.js';
import { ItemFacts } from './list-item-facts.js';

type Doc = Record<string, unknown>;

/** A member's JSON list read in place: its own members but items, parsed, and its items' bytes as flotilla shows them. */
export interface SplicedList {
  /** The list's members other than `items` or `rows` (kind, apiVersion, metadata, a Table's columnDefinitions). */
  head: Record<string, unknown>;
  /**
   * The items' bytes between the list's `[` and `]`, edited as parsed-json.ts toFleet edits each item; of a
   * Table, its rows', each with its cluster cell (api/table.ts).
   */
  items: Pieces;
  count: number;
  /** The answer is a Table: `items` are its rows. */
  table?: true;
}

const STATUS = Buffer.from('Status');

/** A string value's text: its bytes as they are unless they hold an escape. */
function stringAt(body: Buffer, start: number, end: number): string {
  const raw = body.toString('utf8', start + 1, end - 1);
  return raw.includes('\\') ? (parseSpan(body, start, end) as string) : raw;
}

/**
 * A member's list with each item shown as flotilla shows it (parsed-json.ts toFleet; an item keeps its kind and
 * apiVersion, or their absence, as the member lists it), without parsing the items: each item's
 * bytes are walked once, its metadata in the same pass, and only the few edits are new bytes. A
 * Table likewise: each row gets its cluster cell after the name, and its object is shown as an
 * item is (its `columnDefinitions` are in `head`, without the Cluster column). Undefined for a row
 * that is not an object or has no cells, or bytes it does not follow (keys written with escapes,
 * metadata that is not an object): the caller parses.
 */
export function splicedList(body: Buffer, cluster: string): SplicedList | undefined {
  return SplicedListReader.of(body, cluster).end();
}

/** A step of reading: stopped for more bytes (at the answer's end, bytes it does not follow), done, or bytes it does not follow. */
const WAIT = 0;
const DONE = 1;
const FAILED = 2;
type Step = typeof WAIT | typeof DONE | typeof FAILED;

/** Where the reader is in the list's bytes. */
const enum At {
  /** Before the list's `{`. */
  Open,
  /** At a member's key, or at `}` of a list with no members. */
  FirstKey,
  Key,
  /** Past a member's value: at `,` or `}`. */
  AfterValue,
  /** In `items` (or `rows`): at an element, or at `]` of an empty array. */
  FirstElement,
  Element,
  /** Past an element: at `,` or `]`. */
  AfterElement,
  /** Past the list's `}`: whitespace only. */
  Tail,
}

/** Bytes scanned at a time while an answer arrives: a few dozen items, so that little is left for its end. */
const SCAN_BATCH = 32 * 1024;
const FIRST_CAPACITY = 64 * 1024;
/** A member's Content-Length is a hint, not a promise: no more than this is set aside on its word. */
const MAX_EXPECTED_CAPACITY = 16 * 1024 * 1024;

/**
 * A member's list spliced as its bytes arrive (splicedList's result, the same for any chunking):
 * each item is walked as soon as it is whole, while the member is still writing the rest, so a
 * live list's work overlaps the members' answers instead of following the slowest. The bytes are
 * gathered into one buffer (`body`) that the pieces are ranges of. Items that come before the
 * list's kind (custom resources' lists) are read once the whole answer is in.
 */
export class SplicedListReader {
  private buf: Buffer;
  private length = 0;
  /** The bytes so far (the reader never looks past them). */
  private view: Buffer;
  private at = At.Open;
  private pos = 0;
  private readonly expectedLength: number;
  /** Scan again once this many bytes have arrived: a batch on, or twice what an unfinished value had. */
  private scanAt: number;
  private readonly scanBatch: number;
  private failed = false;
  private readonly head: Doc = {};
  /** items or rows met before the list's kind (or a Table's columns): read once the whole answer is in. */
  private readonly later: { start: number; key: string }[] = [];
  private readonly items: ItemSplicer;
  private elementsRead = false;
  /** Where `buf` comes from and goes back to, when set (an empty buffer, before the first push, is not kept). */
  private readonly pool: BufferPool | undefined;

  /**
   * `expectedLength`: the answer's Content-Length, when it has one. `scanBatch`: the bytes read
   * at a time while the answer arrives (tests read after every byte). `pool`: where the buffer
   * gathering the answer comes from, and goes back to on release().
   */
  constructor(cluster: string, { expectedLength = 0, scanBatch = SCAN_BATCH, pool }: { expectedLength?: number; scanBatch?: number; pool?: BufferPool } = {}) {
    this.pool = pool;
    this.buf = this.view = Buffer.alloc(0);
    this.expectedLength = Math.min(expectedLength, MAX_EXPECTED_CAPACITY);
    this.items = new ItemSplicer(cluster);
    this.scanBatch = scanBatch;
    this.scanAt = scanBatch;
  }

  /** A reader of a whole answer already in memory (no copy). */
  static of(body: Buffer, cluster: string): SplicedListReader {
    const r = new SplicedListReader(cluster);
    r.buf = body;
    r.length = body.length;
    r.view = body;
    return r;
  }

  /** The answer's bytes so far; the pieces are ranges of it. */
  get body(): Buffer {
    return this.view;
  }

  /** The items (or rows) spliced so far. */
  get itemsSoFar(): number {
    return this.items.count;
  }

  push(chunk: Buffer): void {
    if (this.length + chunk.length > this.buf.length) {
      const capacity = Math.max(this.buf.length * 2, this.expectedLength, FIRST_CAPACITY, this.length + chunk.length);
      const grown = this.pool ? this.pool.take(capacity) : Buffer.allocUnsafe(capacity);
      this.buf.copy(grown, 0, 0, this.length);
      // Nothing reads the outgrown buffer: the view is made anew below, the pieces are offsets.
      this.pool?.give(this.buf);
      this.buf = grown;
    }
    chunk.copy(this.buf, this.length);
    this.length += chunk.length;
    this.view = this.buf.subarray(0, this.length);
    if (!this.failed && this.length >= this.scanAt) this.scan(false);
  }

  /**
   * Gives the buffer back to the pool once nothing reads the answer any more (the list merged and
   * copied out): the body, and the list's pieces, are gone after it.
   */
  release(): void {
    this.pool?.give(this.buf);
    this.buf = this.view = Buffer.alloc(0);
    this.length = 0;
  }

  /** The list, once the whole answer has been pushed; undefined when the caller must parse it. */
  end(): SplicedList | undefined {
    if (!this.failed) this.scan(true);
    if (this.failed) return undefined;
    const body = this.view;
    for (const { start, key } of this.later) {
      const end = this.readElementsWhole(start, key);
      if (end !== undefined && end < 0) return undefined;
    }
    // A Table without rows, or a list read as one: left to parsing.
    if ((this.head['kind'] === 'Table') !== this.items.table) return undefined;
    if (body.subarray(this.pos).toString('latin1').trim() !== '') return undefined;
    return this.items.result(this.head);
  }

  private scan(ended: boolean): void {
    const step = this.advance();
    if (step === FAILED || (step === WAIT && ended)) this.failed = true;
    // An unfinished value waits for as many bytes again as it has so far: a huge item is not walked over and over.
    else if (step === WAIT) this.scanAt = this.length + Math.max(this.scanBatch, this.length - this.pos);
  }

  /** Reads on from `pos` as far as the bytes so far go. */
  private advance(): Step {
    const b = this.view;
    for (;;) {
      const i = skipSpace(b, this.pos);
      if (this.at === At.Tail) return DONE;
      if (i >= b.length) return WAIT;
      switch (this.at) {
        case At.Open:
          if (b[i] !== OPEN_BRACE) return FAILED;
          this.pos = i + 1;
          this.at = At.FirstKey;
          break;
        case At.FirstKey:
        case At.Key: {
          if (this.at === At.FirstKey && b[i] === CLOSE_BRACE) {
            this.pos = i + 1;
            this.at = At.Tail;
            break;
          }
          const step = this.member(b, i);
          if (step !== DONE) return step;
          break;
        }
        case At.AfterValue:
          if (b[i] === CLOSE_BRACE) this.at = At.Tail;
          else if (b[i] === COMMA) this.at = At.Key;
          else return FAILED;
          this.pos = i + 1;
          break;
        case At.FirstElement:
        case At.Element: {
          if (this.at === At.FirstElement && b[i] === CLOSE_BRACKET) {
            this.endElements(i);
            break;
          }
          const end = this.items.element(b, i);
          // Cut short or not followed: which one is told at the end.
          if (end < 0) return WAIT;
          this.pos = end;
          this.at = At.AfterElement;
          break;
        }
        case At.AfterElement:
          if (b[i] === CLOSE_BRACKET) this.endElements(i);
          else if (b[i] === COMMA) {
            this.pos = i + 1;
            this.at = At.Element;
          } else return FAILED;
          break;
      }
    }
  }

  /** The list's member whose key's quote is at `i`: a head value parsed, items begun, or a value skipped. */
  private member(b: Buffer, i: number): Step {
    if (b[i] !== QUOTE) return FAILED;
    const keyEnd = skipString(b, i);
    if (keyEnd < 0) return WAIT;
    const key = b.toString('latin1', i + 1, keyEnd - 1);
    if (key.includes('\\')) return FAILED;
    const colon = skipSpace(b, keyEnd);
    if (colon >= b.length) return WAIT;
    if (b[colon] !== COLON) return FAILED;
    const start = skipSpace(b, colon + 1);
    if (start >= b.length) return WAIT;
    const isElements = key === 'items' || key === 'rows';
    if (isElements && b[start] === OPEN_BRACKET && this.head['kind'] !== undefined && !(key === 'rows' && this.head['columnDefinitions'] === undefined)) {
      const begun = this.beginElements(start, key);
      if (begun === FAILED) return FAILED;
      if (begun === DONE) {
        this.pos = start + 1;
        this.at = At.FirstElement;
        return DONE;
      }
    }
    // Whole values only: a number at the end of the bytes so far may go on.
    const end = skipValue(b, start);
    if (end < 0 || end >= b.length) return WAIT;
    // Built-in lists come with kind before items; custom resources' (written from unstructured
    // maps, keys sorted) with items first: those are read once the list's kind is known.
    if (isElements && b[start] === OPEN_BRACKET) this.later.push({ start, key });
    else if (!isElements) {
      try {
        this.head[key] = parseSpan(b, start, end);
      } catch {
        return FAILED;
      }
    }
    this.pos = end;
    this.at = At.AfterValue;
    return DONE;
  }

  /** Items (or rows) begun at their `[`: DONE, FAILED, or undefined for rows a list that is no Table has (skipped). */
  private beginElements(start: number, key: string): Step | undefined {
    const listKind = this.head['kind'];
    if (typeof listKind !== 'string') return FAILED;
    if ((listKind === 'Table') !== (key === 'rows')) return key === 'rows' ? undefined : FAILED;
    // A second items (or rows) member: a parser keeps the last; left to parsing.
    if (this.elementsRead) return FAILED;
    this.elementsRead = true;
    this.items.begin(start, key === 'rows', this.head['columnDefinitions']);
    return DONE;
  }

  private endElements(close: number): void {
    this.items.finish(close);
    this.pos = close + 1;
    this.at = At.AfterValue;
  }

  /** Items met before the list's kind, read in the whole answer; the offset past them, undefined when skipped, or -1. */
  private readElementsWhole(start: number, key: string): number | undefined {
    const begun = this.beginElements(start, key);
    if (begun === undefined) return undefined;
    if (begun === FAILED) return -1;
    const b = this.view;
    const end = forEachElement(b, start, (at) => this.items.element(b, at));
    if (end === undefined) return -1;
    this.items.finish(end);
    return end + 1;
  }
}

/**
 * The items (or a Table's rows) of one member's list spliced one by one: each element's few edits
 * (parsed-json.ts toFleet's, a row's cluster cell) and the bytes between them as ranges.
 */
class ItemSplicer {
  private readonly pieces: Pieces = [];
  count = 0;
  /** Offset up to which the elements' bytes are in `pieces`; -1 before the elements begin. */
  private copied = -1;
  table = false;
  private clusterAt = 0;
  private readonly edits: ByteEdit[] = [];
  private readonly facts = new ItemFacts();
  private readonly annotationEntry: string;
  private readonly clusterCell: string;
  /** An item's global RV names its cluster alone. */
  private readonly itemRV: (rv: string) => string;

  constructor(readonly cluster: string) {
    this.annotationEntry = clusterAnnotationEntry(cluster);
    this.clusterCell = JSON.stringify(cluster);
    this.itemRV = oneClusterRV(cluster);
  }

  /** The elements begin past the `[` at `open`; a Table's rows are placed by its columns. */
  begin(open: number, table: boolean, columns: unknown): void {
    this.table = table;
    this.clusterAt = table ? clusterColumnAt(Array.isArray(columns) ? columns : []) : 0;
    this.copied = open + 1;
  }

  /** The elements end at the `]` at `close`. */
  finish(close: number): void {
    pushRange(this.pieces, this.copied, close);
    this.copied = close;
  }

  result(head: Doc): SplicedList {
    return { head, items: this.copied < 0 ? [] : this.pieces, count: this.count, ...(this.table ? { table: true as const } : {}) };
  }

  /**
   * The element at `at` spliced into the pieces; the offset past it, or -1 when the bytes stop
   * before its end or do not follow (nothing is kept of it then).
   */
  element(b: Buffer, at: number): number {
    this.edits.length = 0;
    let end: number;
    if (this.table) {
      const rowClose = this.rowEdits(b, at);
      if (rowClose < 0) return -1;
      end = rowClose + 1;
    } else if (b[at] !== OPEN_BRACE) {
      // Not an object (null): kept as it is. A number at the end of the bytes may go on.
      end = skipValue(b, at);
      if (end < 0 || end >= b.length) return -1;
      this.count++;
      return end;
    } else {
      if (!this.objectEdits(b, at)) return -1;
      end = this.facts.close + 1;
    }
    this.take();
    this.count++;
    return end;
  }

  /** The edits showing the object at `at` as flotilla shows it; false when the caller must parse. */
  private objectEdits(b: Buffer, at: number): boolean {
    const facts = this.facts;
    if (!facts.read(b, at)) return false;
    const isStatus = facts.kindIs(b, STATUS);
    if (facts.mdClose < 0) return true;
    const rv = facts.rvStart >= 0 && b[facts.rvStart] === QUOTE ? stringAt(b, facts.rvStart, facts.rvEnd) : undefined;
    if (rv) this.edits.push({ start: facts.rvStart, end: facts.rvEnd, text: `"${this.itemRV(rv)}"` });
    if (facts.named && !isStatus) {
      const annotations = facts.annStart < 0 ? undefined : { key: 'annotations', keyStart: facts.annKey, start: facts.annStart, end: facts.annEnd };
      const edit = clusterAnnotationInMetadata(b, annotations, facts.mdClose, facts.mdMembers, this.cluster, this.annotationEntry);
      if (!edit) return false;
      this.edits.push(edit);
    }
    return true;
  }

  /** A Table row's edits: its cluster cell added, its object shown as an item is. The offset of its `}`, or -1. */
  private rowEdits(b: Buffer, at: number): number {
    if (b[at] !== OPEN_BRACE) return -1;
    let cells = false;
    const rowClose = forEachMember(b, at, (key, start) => {
      if (key.includes('\\')) return -1;
      if (key === 'cells') {
        const edit = b[start] === OPEN_BRACKET ? this.cellsEdit(b, start) : undefined;
        if (!edit) return -1;
        this.edits.push(edit);
        cells = true;
        return undefined;
      }
      if (key !== 'object' || b[start] !== OPEN_BRACE) return undefined;
      if (!this.objectEdits(b, start)) return -1;
      return this.facts.close + 1;
    });
    return rowClose === undefined || !cells ? -1 : rowClose;
  }

  /** The Cluster cell added to the cells whose `[` is at `open`, where withCluster adds it (api/table.ts); undefined when the bytes do not follow. */
  private cellsEdit(b: Buffer, open: number): ByteEdit | undefined {
    const clusterCell = this.clusterCell;
    let i = skipSpace(b, open + 1);
    if (b[i] === CLOSE_BRACKET) return { start: i, end: i, text: clusterCell };
    if (this.clusterAt === 0) return { start: i, end: i, text: `${clusterCell},` };
    for (let k = 1; ; k++) {
      const past = skipValue(b, i);
      if (past < 0) return undefined;
      const next = skipSpace(b, past);
      // After the first `clusterAt` cells, or after the last of fewer.
      if (k === this.clusterAt || b[next] === CLOSE_BRACKET) return { start: past, end: past, text: `,${clusterCell}` };
      if (b[next] !== COMMA) return undefined;
      i = skipSpace(b, next + 1);
    }
  }

  /** The element's edits into `pieces`, in byte order (its annotations may come before its resourceVersion). */
  private take(): void {
    const edits = this.edits;
    // Insertion sort: an item has two or three edits, and sort() with a comparator costs more.
    for (let i = 1; i < edits.length; i++) {
      const e = edits[i]!;
      let j = i - 1;
      for (; j >= 0 && edits[j]!.start > e.start; j--) edits[j + 1] = edits[j]!;
      edits[j + 1] = e;
    }
    for (const e of edits) {
      pushRange(this.pieces, this.copied, e.start);
      if (e.text) this.pieces.push(e.text);
      this.copied = e.end;
    }
  }
}
