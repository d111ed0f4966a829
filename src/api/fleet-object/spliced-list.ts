import { encodeGlobalRV } from '../global-rv.js';
import { clusterColumnAt } from '../table.js';
import { pushRange, type ByteEdit, type Pieces } from '../../util/byte-edits.js';
import { CLOSE_BRACKET, COMMA, OPEN_BRACE, OPEN_BRACKET, QUOTE, forEachElement, forEachMember, parseSpan, skipSpace, skipValue } from '../../util/json-members.js';
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

const MEMBER_RV_DIGITS = /^[0-9]+$/;
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
  const head: Doc = {};
  const pieces: Pieces = [];
  let count = 0;
  let copied = -1;
  const edits: ByteEdit[] = [];
  const facts = new ItemFacts();
  const annotationEntry = clusterAnnotationEntry(cluster);
  const clusterCell = JSON.stringify(cluster);
  let clusterAt = 0;
  // An item's global RV names its cluster alone: the JSON before the member's RV is the same for
  // every item. Member RVs are digits; anything else takes the general encoding.
  const rvJsonPrefix = `{${clusterCell}:"`;
  const itemRV = (rv: string) => (MEMBER_RV_DIGITS.test(rv) ? Buffer.from(`${rvJsonPrefix}${rv}"}`).toString('base64url') : encodeGlobalRV({ [cluster]: rv }));
  // Built-in lists come with kind before items; custom resources' (written from unstructured
  // maps, keys sorted) with items first: those are read once the list's kind is known.
  const later: { start: number; key: string }[] = [];
  let table = false;
  const close = forEachMember(body, 0, (key, start) => {
    if (key.includes('\\')) return -1;
    if (key !== 'items' && key !== 'rows') {
      const end = skipValue(body, start);
      if (end < 0) return end;
      head[key] = parseSpan(body, start, end);
      return end;
    }
    if (body[start] !== OPEN_BRACKET) return undefined;
    // A Table's rows are placed by its columns (the apiserver writes them first).
    if (head['kind'] === undefined || (key === 'rows' && head['columnDefinitions'] === undefined)) {
      later.push({ start, key });
      return skipValue(body, start);
    }
    return readElements(start, key);
  });
  if (close === undefined) return undefined;
  for (const { start, key } of later) {
    const end = readElements(start, key);
    if (end !== undefined && end < 0) return undefined;
  }
  // A Table without rows, or a list read as one: left to parsing.
  if ((head['kind'] === 'Table') !== table) return undefined;
  // Anything after the list but whitespace: not a member's answer as expected.
  if (body.subarray(close + 1).toString('latin1').trim() !== '') return undefined;
  return { head, items: copied < 0 ? [] : pieces, count, ...(table ? { table } : {}) };

  /** The items (or a Table's rows) at `start` read into `pieces`; the offset past them, or -1 when the caller must parse. */
  function readElements(start: number, key: string): number | undefined {
    const listKind = head['kind'];
    if (typeof listKind !== 'string') return -1;
    if ((listKind === 'Table') !== (key === 'rows')) return key === 'rows' ? undefined : -1;
    // A second items (or rows) member: a parser keeps the last; left to parsing.
    if (copied >= 0) return -1;
    table = key === 'rows';
    const columns = head['columnDefinitions'];
    clusterAt = table ? clusterColumnAt(Array.isArray(columns) ? columns : []) : 0;
    copied = start + 1;
    const end = forEachElement(body, start, (at) => {
      count++;
      edits.length = 0;
      if (table) {
        const rowClose = rowEdits(at);
        if (rowClose < 0) return -1;
        take();
        return rowClose + 1;
      }
      if (body[at] !== OPEN_BRACE) return undefined;
      if (!objectEdits(at)) return -1;
      take();
      return facts.close + 1;
    });
    if (end === undefined) return -1;
    pushRange(pieces, copied, end);
    return end + 1;
  }

  /** The edits showing the object at `at` as flotilla shows it; false when the caller must parse. */
  function objectEdits(at: number): boolean {
    if (!facts.read(body, at)) return false;
    const isStatus = facts.kindIs(body, STATUS);
    if (facts.mdClose < 0) return true;
    const rv = facts.rvStart >= 0 && body[facts.rvStart] === QUOTE ? stringAt(body, facts.rvStart, facts.rvEnd) : undefined;
    if (rv) edits.push({ start: facts.rvStart, end: facts.rvEnd, text: `"${itemRV(rv)}"` });
    if (facts.named && !isStatus) {
      const annotations = facts.annStart < 0 ? undefined : { key: 'annotations', keyStart: facts.annKey, start: facts.annStart, end: facts.annEnd };
      const edit = clusterAnnotationInMetadata(body, annotations, facts.mdClose, facts.mdMembers, cluster, annotationEntry);
      if (!edit) return false;
      edits.push(edit);
    }
    return true;
  }

  /** A Table row's edits: its cluster cell added, its object shown as an item is. The offset of its `}`, or -1. */
  function rowEdits(at: number): number {
    if (body[at] !== OPEN_BRACE) return -1;
    let cells = false;
    const rowClose = forEachMember(body, at, (key, start) => {
      if (key.includes('\\')) return -1;
      if (key === 'cells') {
        const edit = body[start] === OPEN_BRACKET ? cellsEdit(start) : undefined;
        if (!edit) return -1;
        edits.push(edit);
        cells = true;
        return undefined;
      }
      if (key !== 'object' || body[start] !== OPEN_BRACE) return undefined;
      if (!objectEdits(start)) return -1;
      return facts.close + 1;
    });
    return rowClose === undefined || !cells ? -1 : rowClose;
  }

  /** The Cluster cell added to the cells whose `[` is at `open`, where withCluster adds it (api/table.ts); undefined when the bytes do not follow. */
  function cellsEdit(open: number): ByteEdit | undefined {
    let i = skipSpace(body, open + 1);
    if (body[i] === CLOSE_BRACKET) return { start: i, end: i, text: clusterCell };
    if (clusterAt === 0) return { start: i, end: i, text: `${clusterCell},` };
    for (let k = 1; ; k++) {
      const past = skipValue(body, i);
      if (past < 0) return undefined;
      const next = skipSpace(body, past);
      // After the first `clusterAt` cells, or after the last of fewer.
      if (k === clusterAt || body[next] === CLOSE_BRACKET) return { start: past, end: past, text: `,${clusterCell}` };
      if (body[next] !== COMMA) return undefined;
      i = skipSpace(body, next + 1);
    }
  }

  /** The item's edits into `pieces`, in byte order (its annotations may come before its resourceVersion). */
  function take(): void {
    // Insertion sort: an item has two or three edits, and sort() with a comparator costs more.
    for (let i = 1; i < edits.length; i++) {
      const e = edits[i]!;
      let j = i - 1;
      for (; j >= 0 && edits[j]!.start > e.start; j--) edits[j + 1] = edits[j]!;
      edits[j + 1] = e;
    }
    for (const e of edits) {
      pushRange(pieces, copied, e.start);
      if (e.text) pieces.push(e.text);
      copied = e.end;
    }
  }
}
