import { CLUSTER_ANNOTATION, clusterAnnotationEntry, clusterAnnotationInMetadata } from '../ingest/decode.js';
import { editedPieces, joinPieces, pushRange, type ByteEdit, type Pieces } from '../util/byte-edits.js';
import { decodeGlobalRV, encodeGlobalRV } from '../api/global-rv.js';
import { clusterColumnAt } from '../api/table.js';
import { conflict } from '../api/status.js';
import { CLOSE_BRACKET, COMMA, OPEN_BRACE, OPEN_BRACKET, QUOTE, forEachElement, skipSpace, forEachMember, memberRemoval, objectMembers, parseSpan, skipValue, type JsonMember } from '../util/json-members.js';
import { editProtobufObject, isProtobuf, type MetadataEdit, type ObjectFacts } from '../api/protobuf-object.js';
import { bodyBytes, bodyFormat, parseBody } from '../api/write-body.js';
import { TREE_LABEL_SUFFIX } from '../hierarchy/namespace-tree.js';
import { isJsonObject } from '../util/json-object.js';
import { ItemFacts } from './list-item-facts.js';

/**
 * What flotilla changes in bodies on the way to and from a member: the resourceVersion (global on
 * flotilla's side, the member's own on the member's) and flotilla's cluster annotation (shown to
 * clients, never written to members). Everything else passes unchanged.
 */
type Doc = Record<string, unknown>;


/** A global RV as the member's own RV for `cluster`; a token that is not global passes as it is. */
export function memberRV(rv: string, cluster: string): string {
  if (rv === '' || rv === '0') return rv;
  let rvs: Record<string, string>;
  try {
    rvs = decodeGlobalRV(rv);
  } catch {
    // Not one of ours (a member RV a client got elsewhere): the member judges it.
    return rv;
  }
  const own = rvs[cluster];
  if (own === undefined) {
    throw conflict(`the resourceVersion ${JSON.stringify(rv)} was read from ${Object.keys(rvs).join(', ') || 'no cluster'}, not from cluster ${cluster} that this request goes to; read the object again`);
  }
  return own;
}

/** The member's view of an object a client sends: member RV, no cluster annotation. */
function toMember(o: Doc, cluster: string): boolean {
  const md = o['metadata'];
  if (!isJsonObject(md)) return false;
  let changed = false;
  if (typeof md['resourceVersion'] === 'string') {
    const rv = memberRV(md['resourceVersion'], cluster);
    if (rv !== md['resourceVersion']) {
      md['resourceVersion'] = rv;
      changed = true;
    }
  }
  const ann = md['annotations'];
  if (isJsonObject(ann) && CLUSTER_ANNOTATION in ann) {
    delete ann[CLUSTER_ANNOTATION];
    if (Object.keys(ann).length === 0) delete md['annotations'];
    changed = true;
  }
  const labels = md['labels'];
  if (isJsonObject(labels) && typeof o['kind'] === 'string') {
    for (const key of Object.keys(labels)) {
      if (!isShownOnly(key, o['kind'])) continue;
      delete labels[key];
      changed = true;
    }
  }
  return changed;
}

/**
 * Labels flotilla shows that the member does not hold: a namespace's tree labels (flotilla's
 * hierarchy; a member's HNC sets its own). An update built from what flotilla showed (read,
 * change, write back) must not write them to the member, where they would read as HNC's.
 */
function isShownOnly(key: string, kind: string): boolean {
  return kind === 'Namespace' && key.endsWith(TREE_LABEL_SUFFIX);
}

/**
 * A request body as the member must see it. JSON and apply-YAML bodies are translated (and sent as
 * JSON, which every one of these content types accepts) only when they carry something of
 * flotilla's; otherwise, and for protobuf, the bytes go as they came.
 */
export function requestBodyForMember(body: Buffer | undefined, contentType: string | undefined, cluster: string): Buffer | undefined {
  if (!body || body.length === 0) return body;
  if (isProtobuf(contentType)) {
    // client-go sends built-in kinds so: an update carries the global RV it read from flotilla.
    return editProtobufObject(body, { resourceVersion: (rv) => memberRV(rv, cluster), dropAnnotation: CLUSTER_ANNOTATION, dropLabel: isShownOnly })?.body ?? body;
  }
  const format = bodyFormat(contentType);
  if (!format) return body;
  const text = body.toString('utf8');
  // Cheap test first: most bodies (annotate, label, scale patches) carry neither.
  if (!text.includes('resourceVersion') && !text.includes(CLUSTER_ANNOTATION) && !text.includes(TREE_LABEL_SUFFIX)) return body;
  const doc = parseBody(text, format);
  let changed = false;
  if (Array.isArray(doc)) {
    // JSON patch: an operation may set or test metadata.resourceVersion.
    for (const op of doc) {
      if (isJsonObject(op) && op['path'] === '/metadata/resourceVersion' && typeof op['value'] === 'string') {
        const rv = memberRV(op['value'], cluster);
        if (rv !== op['value']) {
          op['value'] = rv;
          changed = true;
        }
      }
    }
  } else if (isJsonObject(doc)) {
    changed = toMember(doc, cluster);
    // DeleteOptions: a resourceVersion precondition read from flotilla is a global RV too.
    const pre = doc['preconditions'];
    if (isJsonObject(pre) && typeof pre['resourceVersion'] === 'string') {
      const rv = memberRV(pre['resourceVersion'], cluster);
      if (rv !== pre['resourceVersion']) {
        pre['resourceVersion'] = rv;
        changed = true;
      }
    }
    if (Array.isArray(doc['items'])) for (const item of doc['items']) if (isJsonObject(item) && toMember(item, cluster)) changed = true;
  }
  return changed ? bodyBytes(doc) : body;
}

/** A member's object as flotilla shows it: global RV, cluster annotation. Status bodies stay as they are. */
export function toFleet(o: Doc, cluster: string): void {
  const md = o['metadata'];
  if (!isJsonObject(md)) return;
  if (typeof md['resourceVersion'] === 'string' && md['resourceVersion'] !== '') {
    md['resourceVersion'] = encodeGlobalRV({ [cluster]: md['resourceVersion'] });
  }
  if (o['kind'] !== 'Status' && typeof md['name'] === 'string') {
    md['annotations'] = { ...(isJsonObject(md['annotations']) ? md['annotations'] : {}), [CLUSTER_ANNOTATION]: cluster };
  }
}

export interface MemberAnswer {
  /** The body to send the client. */
  body: Buffer;
  /** The member's own RV of the written object, when the answer carried one. */
  rv?: string;
  /** What a protobuf answer said of its object (JSON answers are read where needed). */
  facts?: ObjectFacts;
}

/** How answers are shown: `dropManagedFields` as the cache shows objects (options.dropManagedFields). */
export interface AnswerForm {
  dropManagedFields?: boolean;
}

/**
 * A member's JSON or protobuf answer with RVs made global, and without managedFields when the
 * cache drops them (a watched object then equals the write answer that made it); other content
 * types pass unchanged.
 */
export function responseForClient(body: Buffer, contentType: string | undefined, cluster: string, form: AnswerForm = {}): MemberAnswer {
  if (isProtobuf(contentType)) return protobufAnswer(body, cluster, form);
  if (!(contentType ?? '').toLowerCase().startsWith('application/json') || body.length === 0) return { body };
  return splicedAnswer(body, cluster, form) ?? parsedAnswer(body, cluster, form);
}

/**
 * The edit toFleet makes, for a member's protobuf object (an answer, or a list's item): the
 * global RV of the member's, the cluster annotation on a named object that is not a Status.
 */
export function protobufToFleet(cluster: string, form: AnswerForm = {}): MetadataEdit {
  return {
    dropManagedFields: form.dropManagedFields === true,
    resourceVersion: (rv) => (rv === '' ? rv : encodeGlobalRV({ [cluster]: rv })),
    setAnnotation: { key: CLUSTER_ANNOTATION, value: cluster, when: (o) => o.kind !== 'Status' && o.name !== undefined && o.name !== '' },
  };
}

/** A protobuf object's answer as toFleet makes a JSON one: global RV, cluster annotation. */
function protobufAnswer(body: Buffer, cluster: string, form: AnswerForm): MemberAnswer {
  const edited = editProtobufObject(body, protobufToFleet(cluster, form));
  if (!edited) return { body };
  const rv = edited.facts.kind !== 'Status' ? edited.facts.resourceVersion : undefined;
  return { body: edited.body, facts: edited.facts, ...(rv ? { rv } : {}) };
}

/** The same by parsing: lists, bodies the splice does not follow, and the reference it must agree with. */
export function parsedAnswer(body: Buffer, cluster: string, form: AnswerForm = {}): MemberAnswer {
  let doc: unknown;
  try {
    doc = JSON.parse(body.toString('utf8'));
  } catch {
    return { body };
  }
  if (!isJsonObject(doc) || doc['kind'] === 'Status') return { body };
  const md = doc['metadata'];
  const rv = isJsonObject(md) && typeof md['resourceVersion'] === 'string' ? md['resourceVersion'] : undefined;
  const show = (o: Doc) => {
    toFleet(o, cluster);
    if (form.dropManagedFields && isJsonObject(o['metadata'])) delete o['metadata']['managedFields'];
  };
  show(doc);
  if (Array.isArray(doc['items'])) for (const item of doc['items']) if (isJsonObject(item)) show(item);
  return { body: Buffer.from(JSON.stringify(doc)), ...(rv ? { rv } : {}) };
}

/**
 * The same for a single object, by splicing its bytes: the global RV over the member's, the
 * cluster annotation into `metadata.annotations`. A write's answer is a whole object (managed
 * fields included), and a controller patching pods fleet-wide sends many: parsing and
 * re-serializing each cost more than the rest of flotilla's work on the request. Undefined for
 * anything else (a list, a body it cannot follow), which goes through parsedAnswer.
 */
export function splicedAnswer(body: Buffer, cluster: string, form: AnswerForm = {}): MemberAnswer | undefined {
  const top = objectMembers(body, 0);
  if (!top || top.members.some((m) => m.key === 'items' || m.key.includes('\\'))) return undefined;
  const kindAt = top.members.find((m) => m.key === 'kind');
  if ((kindAt && body[kindAt.start] === QUOTE ? parseSpan(body, kindAt.start, kindAt.end) : undefined) === 'Status' || !top.members.some((m) => m.key === 'metadata')) return { body };
  const fleet = fleetEdits(body, top.members, cluster, true, form.dropManagedFields === true);
  if (!fleet) return undefined;
  return { body: joinPieces(editedPieces(fleet.edits, 0, body.length), body), ...(fleet.rv ? { rv: fleet.rv } : {}) };
}

/**
 * A member's watch event line with its object as flotilla shows it, edited in place as
 * splicedAnswer edits an answer: the object's RV replaced by `globalRV` of it, the cluster
 * annotation added when `annotate`. Every other byte stays the member's (a parse and re-serialize
 * would turn an int64 beyond 2^53 into a float). Undefined for a line it does not follow.
 */
export function splicedWatchEvent(line: Buffer, cluster: string, annotate: boolean, globalRV: (memberRV: string) => string): Buffer | undefined {
  const top = objectMembers(line, 0);
  if (!top || top.members.some((m) => m.key.includes('\\'))) return undefined;
  const objectAt = top.members.find((m) => m.key === 'object');
  if (!objectAt || line[objectAt.start] !== OPEN_BRACE) return undefined;
  const object = objectMembers(line, objectAt.start);
  if (!object || object.members.some((m) => m.key.includes('\\'))) return undefined;
  const fleet = fleetEdits(line, object.members, cluster, annotate, false, globalRV);
  return fleet && joinPieces(editedPieces(fleet.edits, 0, line.length), line);
}

/**
 * The edits toFleet makes, as byte edits of the object whose top-level `members` are given: the
 * global RV over the member's, the cluster annotation into `metadata.annotations` (`annotate`:
 * the object is not a Status).
 * Undefined when the metadata is not an object or a key among those looked at is written with
 * escapes (it could spell resourceVersion): the caller parses instead.
 */
function fleetEdits(body: Buffer, members: JsonMember[], cluster: string, annotate: boolean, dropManaged = false, globalRV: (memberRV: string) => string = (rv) => encodeGlobalRV({ [cluster]: rv })): { edits: ByteEdit[]; rv?: string } | undefined {
  const mdAt = members.find((m) => m.key === 'metadata');
  if (!mdAt) return { edits: [] };
  const md = objectMembers(body, mdAt.start);
  if (!md || md.members.some((m) => m.key.includes('\\'))) return undefined;
  const edits: ByteEdit[] = [];
  let rvAt: JsonMember | undefined;
  let annAt: JsonMember | undefined;
  let named = false;
  for (const m of md.members) {
    if (m.key === 'resourceVersion') rvAt = m;
    else if (m.key === 'annotations') annAt = m;
    else if (m.key === 'name') named = body[m.start] === QUOTE;
  }
  const rv = rvAt && body[rvAt.start] === QUOTE ? (parseSpan(body, rvAt.start, rvAt.end) as string) : undefined;
  if (rv) edits.push({ ...rvAt!, text: JSON.stringify(globalRV(rv)) });
  const managedAt = dropManaged ? md.members.findIndex((m) => m.key === 'managedFields') : -1;
  if (managedAt >= 0) edits.push(memberRemoval(md.members, managedAt));
  const kept = md.members.length - (managedAt >= 0 ? 1 : 0);
  if (named && annotate) {
    const edit = clusterAnnotationInMetadata(body, annAt, md.close, kept, cluster);
    if (!edit) return undefined;
    edits.push(edit);
  }
  return { edits, ...(rv ? { rv } : {}) };
}

/** A member's JSON list read in place: its own members but items, parsed, and its items' bytes as flotilla shows them. */
export interface SplicedList {
  /** The list's members other than `items` or `rows` (kind, apiVersion, metadata, a Table's columnDefinitions). */
  head: Record<string, unknown>;
  /**
   * The items' bytes between the list's `[` and `]`, edited as toFleet edits each item; of a
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
 * A member's list with each item shown as flotilla shows it (toFleet; an item keeps its kind and
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

/** Merges the JSON list answers of a deletecollection fanned out to several members. */
export function mergeListAnswers(answers: { cluster: string; body: Buffer }[], form: AnswerForm = {}): Buffer {
  let head: Doc | undefined;
  const items: unknown[] = [];
  const rvs: Record<string, string> = {};
  for (const a of answers) {
    const doc = JSON.parse(a.body.toString('utf8')) as Doc;
    if (doc['kind'] === 'Status') continue;
    head ??= doc;
    const md = doc['metadata'];
    if (isJsonObject(md) && typeof md['resourceVersion'] === 'string' && md['resourceVersion'] !== '') rvs[a.cluster] = md['resourceVersion'];
    if (Array.isArray(doc['items'])) {
      for (const item of doc['items']) {
        if (isJsonObject(item)) {
          toFleet(item, a.cluster);
          if (form.dropManagedFields && isJsonObject(item['metadata'])) delete item['metadata']['managedFields'];
        }
        items.push(item);
      }
    }
  }
  if (!head) return answers[0]?.body ?? Buffer.from('{}');
  return Buffer.from(JSON.stringify({ ...head, metadata: { resourceVersion: encodeGlobalRV(rvs) }, items }));
}
