import { memberRV, oneClusterRV } from '../global-rv.js';
import { editedPieces, joinPieces, type ByteEdit } from '../../util/byte-edits.js';
import { OPEN_BRACE, QUOTE, memberRemoval, memberValueAt, objectMembers, parseSpan, plainObjectMembers, skipString, type JsonMember } from '../../util/json-members.js';
import { CLUSTER_ANNOTATION, clusterAnnotationInMetadata } from './cluster-annotation.js';
import type { AnswerForm, FleetAnswer, FleetCodec, MetadataToFleet, ShownOnlyLabel } from './codec.js';
import { splicedList, type SplicedList } from './spliced-list.js';

/**
 * The fleet codec for a member's JSON bytes, edited in place: the few values flotilla changes
 * are replaced or added, every other byte stays the member's (a parse and re-serialize costs
 * more than the rest of a request's work, and turns an int64 beyond 2^53 into a float). Each
 * function is undefined for bytes it does not follow (keys written with escapes, metadata that is
 * not an object): the caller parses (parsed-json.ts), which gives the same answer.
 */

/**
 * The edits making the metadata object (its `members` and the offset of its `}`) the fleet's:
 * the global RV over the member's, managedFields dropped, the cluster annotation set. `rv`: the
 * member's RV, when a string. Undefined when a key is written with escapes (one could spell
 * resourceVersion) or the annotations do not follow.
 */
export function metadataEdits(buf: Buffer, members: readonly JsonMember[], close: number, to: MetadataToFleet): { edits: ByteEdit[]; rv?: string } | undefined {
  if (members.some((m) => m.key.includes('\\'))) return undefined;
  const edits: ByteEdit[] = [];
  let rvAt: JsonMember | undefined;
  let annAt: JsonMember | undefined;
  for (const m of members) {
    if (m.key === 'resourceVersion') rvAt = m;
    else if (m.key === 'annotations') annAt = m;
  }
  const rv = rvAt && buf[rvAt.start] === QUOTE ? (parseSpan(buf, rvAt.start, rvAt.end) as string) : undefined;
  const managedAt = to.dropManagedFields ? members.findIndex((m) => m.key === 'managedFields') : -1;
  if (managedAt >= 0) edits.push(memberRemoval(members, managedAt));
  let kept = members.length - (managedAt >= 0 ? 1 : 0);
  if (to.annotate) {
    const edit = clusterAnnotationInMetadata(buf, annAt, close, kept, to.cluster, to.entry);
    if (!edit) return undefined;
    edits.push(edit);
    if (!annAt) kept++;
  }
  if (to.everyRV || rv) {
    const text = JSON.stringify(to.globalRV(rv ?? ''));
    if (rvAt) edits.push({ start: rvAt.start, end: rvAt.end, text });
    else edits.push({ start: close, end: close, text: `${kept > 0 ? ',' : ''}"resourceVersion":${text}` });
  }
  return { edits, ...(rv !== undefined ? { rv } : {}) };
}

/**
 * The edits showing the object whose top-level `members` are given as the fleet shows it: the
 * global RV over the member's, the cluster annotation on a named object when `annotate`.
 */
function fleetEdits(body: Buffer, members: JsonMember[], cluster: string, annotate: boolean, dropManagedFields: boolean, globalRV: (rv: string) => string): { edits: ByteEdit[]; rv?: string } | undefined {
  const mdAt = members.find((m) => m.key === 'metadata');
  if (!mdAt) return { edits: [] };
  const md = objectMembers(body, mdAt.start);
  if (!md) return undefined;
  const named = md.members.some((m) => m.key === 'name' && body[m.start] === QUOTE);
  const fleet = metadataEdits(body, md.members, md.close, { cluster, annotate: annotate && named, dropManagedFields, globalRV });
  return fleet && { edits: fleet.edits, ...(fleet.rv ? { rv: fleet.rv } : {}) };
}

/**
 * A member's single object (a get, a write's answer) by splicing its bytes. A controller
 * patching pods fleet-wide sends many whole objects, managed fields included. Undefined for a
 * list or a body it does not follow, which goes through parsedAnswer.
 */
export function splicedAnswer(body: Buffer, cluster: string, form: AnswerForm = {}): FleetAnswer<Buffer> | undefined {
  const top = objectMembers(body, 0);
  if (!top || top.members.some((m) => m.key === 'items' || m.key.includes('\\'))) return undefined;
  const kindAt = top.members.find((m) => m.key === 'kind');
  if ((kindAt && body[kindAt.start] === QUOTE ? parseSpan(body, kindAt.start, kindAt.end) : undefined) === 'Status' || !top.members.some((m) => m.key === 'metadata')) return { body };
  const fleet = fleetEdits(body, top.members, cluster, true, form.dropManagedFields === true, oneClusterRV(cluster));
  if (!fleet) return undefined;
  return { body: joinPieces(editedPieces(fleet.edits, 0, body.length), body), ...(fleet.rv ? { rv: fleet.rv } : {}) };
}

/**
 * A member's watch event line with its object as the fleet shows it, edited in place as
 * splicedAnswer edits an answer: its RV `globalRV` of the member's, the cluster annotation on a
 * named object when `annotate` (EventStamp). Undefined for a line it does not follow.
 */
export function splicedWatchEvent(line: Buffer, cluster: string, annotate: boolean, globalRV: (memberRV: string) => string): Buffer | undefined {
  const top = plainObjectMembers(line, 0);
  if (!top) return undefined;
  const objectAt = top.members.find((m) => m.key === 'object');
  if (!objectAt || line[objectAt.start] !== OPEN_BRACE) return undefined;
  const object = plainObjectMembers(line, objectAt.start);
  if (!object) return undefined;
  const fleet = fleetEdits(line, object.members, cluster, annotate, false, globalRV);
  return fleet && joinPieces(editedPieces(fleet.edits, 0, line.length), line);
}

/**
 * An object a client sends, as its member must see it, by splicing: the member's RV for the
 * global one, the cluster annotation removed (and `annotations` with it when it held nothing
 * else). The same buffer when it carries nothing of flotilla's; undefined for what it leaves to
 * parsing (keys written with escapes, a shown-only label present).
 */
export function splicedToMember(body: Buffer, cluster: string, shownOnly?: ShownOnlyLabel): Buffer | undefined {
  const top = plainObjectMembers(body, 0);
  if (!top) return undefined;
  const mdAt = top.members.find((m) => m.key === 'metadata');
  if (!mdAt || body[mdAt.start] !== OPEN_BRACE) return body;
  const md = plainObjectMembers(body, mdAt.start);
  if (!md) return undefined;
  const edits: ByteEdit[] = [];
  let labelShownOnly = false;
  const kindAt = top.members.find((m) => m.key === 'kind');
  const kind = kindAt && body[kindAt.start] === QUOTE ? parseSpan(body, kindAt.start, kindAt.end) : undefined;
  md.members.forEach((m, i) => {
    if (m.key === 'resourceVersion' && body[m.start] === QUOTE) {
      const rv = parseSpan(body, m.start, m.end) as string;
      const own = memberRV(rv, cluster);
      if (own !== rv) edits.push({ start: m.start, end: m.end, text: JSON.stringify(own) });
    } else if (m.key === 'annotations' && body[m.start] === OPEN_BRACE) {
      const ann = objectMembers(body, m.start);
      const at = ann?.members.findIndex((a) => a.key === CLUSTER_ANNOTATION) ?? -1;
      if (at < 0) return;
      edits.push(ann!.members.length === 1 ? memberRemoval(md.members, i) : memberRemoval(ann!.members, at));
    } else if (m.key === 'labels' && shownOnly && typeof kind === 'string' && body[m.start] === OPEN_BRACE) {
      const labels = objectMembers(body, m.start)?.members ?? [];
      if (labels.some((l) => shownOnly(parseSpan(body, l.keyStart, skipString(body, l.keyStart)) as string, kind))) labelShownOnly = true;
    }
  });
  if (labelShownOnly) return undefined;
  return edits.length === 0 ? body : joinPieces(editedPieces(edits, 0, body.length), body);
}

const METADATA = Buffer.from('metadata');
const RESOURCE_VERSION = Buffer.from('resourceVersion');

/**
 * Where the string value of the object's `metadata.resourceVersion` lies in `bytes` ([start,
 * end), quotes included), found by walking the object's members and its metadata's, not by
 * searching for the key (a key of a label, an annotation or the spec could hold those bytes, and
 * metadata need not come first). `of`: 'metadata' when `bytes` are the metadata object itself.
 * Undefined when the object has none or the bytes do not follow.
 */
export function resourceVersionSpan(bytes: Buffer, of: 'object' | 'metadata' = 'object'): { start: number; end: number } | undefined {
  const md = of === 'metadata' ? 0 : memberValueAt(bytes, 0, METADATA);
  if (md < 0) return undefined;
  const start = memberValueAt(bytes, md, RESOURCE_VERSION);
  if (start < 0 || bytes[start] !== QUOTE) return undefined;
  const end = skipString(bytes, start);
  return end < 0 ? undefined : { start, end };
}

/** The object with `rv` (a global RV: base64url, nothing to escape) as its metadata.resourceVersion; the same bytes when it has none. */
export function withResourceVersion(bytes: Buffer, rv: string): Buffer {
  const span = resourceVersionSpan(bytes);
  if (!span) return bytes;
  const out = Buffer.allocUnsafe(bytes.length - (span.end - span.start) + rv.length + 2);
  bytes.copy(out, 0, 0, span.start + 1);
  let at = span.start + 1 + out.write(rv, span.start + 1, 'latin1');
  out[at++] = QUOTE;
  bytes.copy(out, at, span.end);
  return out;
}

/** The metadata object's JSON with `rv` as its resourceVersion; the same text when it has none. */
export function metadataWithResourceVersion(json: string, rv: string): string {
  const bytes = Buffer.from(json);
  const span = resourceVersionSpan(bytes, 'metadata');
  if (!span) return json;
  return `${bytes.toString('utf8', 0, span.start + 1)}${rv}${bytes.toString('utf8', span.end - 1)}`;
}

export const splicedJsonCodec: FleetCodec<Buffer, SplicedList> = {
  objectToFleet: splicedAnswer,
  listToFleet: splicedList,
  eventToFleet: (line, cluster, stamp) => splicedWatchEvent(line, cluster, stamp.annotate, stamp.globalRV),
  objectToMember: splicedToMember,
};
