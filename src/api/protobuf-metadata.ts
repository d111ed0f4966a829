import { BinaryWriter, WireType } from '@bufbuild/protobuf/wire';
import { OPEN_BRACE, OPEN_BRACKET, forEachElement, objectMembers, parseSpan, type JsonMember } from '../util/json-members.js';
import { protobufBody } from './protobuf-object.js';

/**
 * PartialObjectMetadata and PartialObjectMetadataList in Kubernetes' protobuf encoding, made from
 * flotilla's JSON answer. client-go's metadata client (metadata informers: the garbage collector,
 * quota, tools that watch everything) asks for these in protobuf first, and a member answers so.
 * The encodings differ in one way a Go client sees: a JSON list's items carry their kind and
 * apiVersion, which client-go keeps as each item's TypeMeta, where a protobuf item has none; an
 * informer's objects (from a watch, whose TypeMeta the decoder clears) then differ from a list's.
 *
 * The wire format (k8s.io/apimachinery's generated.proto): the magic `k8s\0`, then runtime.Unknown
 * {typeMeta 1: {apiVersion 1, kind 2}, raw 2, contentEncoding 3, contentType 4}; raw is
 * PartialObjectMetadata {metadata 1: ObjectMeta} or PartialObjectMetadataList {metadata 1:
 * ListMeta, items 2}. Empty strings and zero numbers Go writes are written too.
 */

const LIST_KIND = 'PartialObjectMetadataList';
const OBJECT_KIND = 'PartialObjectMetadata';
const META_GROUP_VERSION = 'meta.k8s.io/v1';

type Json = Record<string, unknown>;

function isJson(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function str(v: unknown): string {
  return typeof v === 'string' ? v : '';
}

/** Seconds since the epoch of an RFC 3339 time, as metav1.Time writes it (no nanoseconds). */
function seconds(v: unknown): number | undefined {
  if (typeof v !== 'string') return undefined;
  const ms = Date.parse(v);
  return Number.isNaN(ms) ? undefined : Math.floor(ms / 1000);
}

function writeString(w: BinaryWriter, no: number, v: string): void {
  w.tag(no, WireType.LengthDelimited).string(v);
}

/** A metav1.Time; a missing one as Go's zero time. */
function writeTime(w: BinaryWriter, no: number, s: number | undefined): void {
  w.tag(no, WireType.LengthDelimited).fork();
  w.tag(1, WireType.Varint).int64(s ?? -62135596800);
  w.tag(2, WireType.Varint).int32(0);
  w.join();
}

function writeMap(w: BinaryWriter, no: number, m: unknown): void {
  if (!isJson(m)) return;
  for (const key of Object.keys(m).sort()) {
    w.tag(no, WireType.LengthDelimited).fork();
    writeString(w, 1, key);
    writeString(w, 2, str(m[key]));
    w.join();
  }
}

function writeOwner(w: BinaryWriter, o: Json): void {
  writeString(w, 1, str(o['kind']));
  writeString(w, 3, str(o['name']));
  writeString(w, 4, str(o['uid']));
  writeString(w, 5, str(o['apiVersion']));
  if (typeof o['controller'] === 'boolean') w.tag(6, WireType.Varint).bool(o['controller']);
  if (typeof o['blockOwnerDeletion'] === 'boolean') w.tag(7, WireType.Varint).bool(o['blockOwnerDeletion']);
}

/** A managedFields entry; `fieldsV1` is the member's JSON of its field set, kept byte for byte (FieldsV1.Raw). */
function writeManagedFields(w: BinaryWriter, e: Json, fieldsV1: Uint8Array | undefined): void {
  writeString(w, 1, str(e['manager']));
  writeString(w, 2, str(e['operation']));
  writeString(w, 3, str(e['apiVersion']));
  if (e['time'] !== undefined && e['time'] !== null) writeTime(w, 4, seconds(e['time']));
  writeString(w, 6, str(e['fieldsType']));
  if (fieldsV1) {
    w.tag(7, WireType.LengthDelimited).fork();
    w.tag(1, WireType.LengthDelimited).bytes(fieldsV1);
    w.join();
  }
  writeString(w, 8, str(e['subresource']));
}

function member(members: readonly JsonMember[], key: string): JsonMember | undefined {
  let found: JsonMember | undefined;
  // A parser keeps the last of a repeated key.
  for (const m of members) if (m.key === key) found = m;
  return found;
}

/** Each managedFields entry's `fieldsV1` bytes, in order (undefined where an entry has none). */
function fieldSets(json: Buffer, metadata: JsonMember[]): (Uint8Array | undefined)[] {
  const managed = member(metadata, 'managedFields');
  const out: (Uint8Array | undefined)[] = [];
  if (!managed || json[managed.start] !== OPEN_BRACKET) return out;
  forEachElement(json, managed.start, (at) => {
    const entry = json[at] === OPEN_BRACE ? objectMembers(json, at) : undefined;
    const set = entry && member(entry.members, 'fieldsV1');
    out.push(set && json[set.start] === OPEN_BRACE ? json.subarray(set.start, set.end) : undefined);
    return entry ? entry.close + 1 : undefined;
  });
  return out;
}

/** An object's metadata, parsed, and its members' offsets (for the field sets' bytes). */
interface ReadMetadata {
  md: Json;
  members: JsonMember[];
}

function readMetadata(json: Buffer, object: number): ReadMetadata | undefined {
  const top = objectMembers(json, object);
  const at = top && member(top.members, 'metadata');
  if (!at || json[at.start] !== OPEN_BRACE) return undefined;
  const found = objectMembers(json, at.start);
  const md = found ? parseSpan(json, at.start, at.end) : undefined;
  return found && isJson(md) ? { md, members: found.members } : undefined;
}

/** ObjectMeta. */
function writeObjectMeta(w: BinaryWriter, json: Buffer, { md, members }: ReadMetadata): void {
  writeString(w, 1, str(md['name']));
  writeString(w, 2, str(md['generateName']));
  writeString(w, 3, str(md['namespace']));
  writeString(w, 4, str(md['selfLink']));
  writeString(w, 5, str(md['uid']));
  writeString(w, 6, str(md['resourceVersion']));
  w.tag(7, WireType.Varint).int64(typeof md['generation'] === 'number' ? md['generation'] : 0);
  writeTime(w, 8, seconds(md['creationTimestamp']));
  if (typeof md['deletionTimestamp'] === 'string') writeTime(w, 9, seconds(md['deletionTimestamp']));
  if (typeof md['deletionGracePeriodSeconds'] === 'number') w.tag(10, WireType.Varint).int64(md['deletionGracePeriodSeconds']);
  writeMap(w, 11, md['labels']);
  writeMap(w, 12, md['annotations']);
  for (const o of Array.isArray(md['ownerReferences']) ? md['ownerReferences'] : []) {
    if (!isJson(o)) continue;
    w.tag(13, WireType.LengthDelimited).fork();
    writeOwner(w, o);
    w.join();
  }
  for (const f of Array.isArray(md['finalizers']) ? md['finalizers'] : []) writeString(w, 14, str(f));
  const managed = Array.isArray(md['managedFields']) ? md['managedFields'] : [];
  const sets = managed.length > 0 ? fieldSets(json, members) : [];
  managed.forEach((e, i) => {
    if (!isJson(e)) return;
    w.tag(17, WireType.LengthDelimited).fork();
    writeManagedFields(w, e, sets[i]);
    w.join();
  });
}

/** PartialObjectMetadata {metadata 1} of the object whose `{` is at `at`; false when it has no metadata object. */
function writePartialObject(w: BinaryWriter, json: Buffer, at: number): boolean {
  const read = json[at] === OPEN_BRACE ? readMetadata(json, at) : undefined;
  if (!read) return false;
  w.tag(1, WireType.LengthDelimited).fork();
  writeObjectMeta(w, json, read);
  w.join();
  return true;
}

function writeListMeta(w: BinaryWriter, meta: unknown): void {
  const m = isJson(meta) ? meta : {};
  w.tag(1, WireType.LengthDelimited).fork();
  writeString(w, 1, str(m['selfLink']));
  writeString(w, 2, str(m['resourceVersion']));
  writeString(w, 3, str(m['continue']));
  if (typeof m['remainingItemCount'] === 'number') w.tag(4, WireType.Varint).int64(m['remainingItemCount']);
  w.join();
}

/**
 * A JSON PartialObjectMetadata or PartialObjectMetadataList answer in protobuf (`list`: which of
 * the two); undefined for any other body (a Status, another kind, bytes it does not follow),
 * which is sent as it is.
 */
export function metadataAsProtobuf(json: Buffer): { body: Buffer; list: boolean } | undefined {
  const top = objectMembers(json, 0);
  if (!top) return undefined;
  const kindAt = member(top.members, 'kind');
  const kind = kindAt ? parseSpan(json, kindAt.start, kindAt.end) : undefined;
  if (kind !== OBJECT_KIND && kind !== LIST_KIND) return undefined;
  const raw = new BinaryWriter();
  if (kind === OBJECT_KIND) {
    if (!writePartialObject(raw, json, 0)) return undefined;
  } else {
    const meta = member(top.members, 'metadata');
    writeListMeta(raw, meta ? parseSpan(json, meta.start, meta.end) : undefined);
    const items = member(top.members, 'items');
    if (items && json[items.start] === OPEN_BRACKET) {
      let followed = true;
      const close = forEachElement(json, items.start, (at) => {
        // writePartialObject writes nothing for an item it refuses: the fork stays balanced.
        raw.tag(2, WireType.LengthDelimited).fork();
        followed &&= writePartialObject(raw, json, at);
        raw.join();
        return undefined;
      });
      if (!followed || close === undefined) return undefined;
    }
  }
  return { body: protobufBody(META_GROUP_VERSION, kind, raw.finish()), list: kind === LIST_KIND };
}
