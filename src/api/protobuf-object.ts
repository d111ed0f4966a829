import { BinaryReader, BinaryWriter, WireType } from '@bufbuild/protobuf/wire';

/**
 * The parts of a Kubernetes protobuf body flotilla changes (a resourceVersion, one annotation),
 * edited in the wire format: every other byte of the body stays as the client or member wrote
 * it. A body is the 4-byte magic `k8s\0`, then a runtime.Unknown {typeMeta 1: {apiVersion 1,
 * kind 2}, raw 2: the object}; an object's metadata is its field 1 (ObjectMeta: name 1,
 * resourceVersion 6, deletionTimestamp 9, labels 11 and annotations 12, maps of {key 1, value 2} entries);
 * DeleteOptions carries preconditions at 2 ({resourceVersion 2}). Lists are not edited.
 */
export const PROTOBUF_CONTENT_TYPE = 'application/vnd.kubernetes.protobuf';
/** What every Kubernetes protobuf body begins with. */
export const PROTOBUF_MAGIC = Buffer.from('k8s\0', 'latin1');

const UNKNOWN_TYPE_META = 1;
const UNKNOWN_RAW = 2;
const TYPE_META_API_VERSION = 1;
const TYPE_META_KIND = 2;
const OBJECT_METADATA = 1;
const META_NAME = 1;
const META_GENERATE_NAME = 2;
const META_NAMESPACE = 3;
const META_RESOURCE_VERSION = 6;
const META_DELETION_TIMESTAMP = 9;
const META_LABELS = 11;
const META_ANNOTATIONS = 12;
const META_MANAGED_FIELDS = 17;
const DELETE_OPTIONS_PRECONDITIONS = 2;
const PRECONDITIONS_RESOURCE_VERSION = 2;
const MAP_KEY = 1;
const MAP_VALUE = 2;

/** Whether a body begins with the magic. */
export function hasProtobufMagic(body: Buffer): boolean {
  return body.length >= PROTOBUF_MAGIC.length && body.subarray(0, PROTOBUF_MAGIC.length).equals(PROTOBUF_MAGIC);
}

/**
 * A protobuf body made by flotilla: the magic, then runtime.Unknown {typeMeta 1: {apiVersion 1,
 * kind 2}, raw 2, contentEncoding 3, contentType 4}, the last two empty, as Go writes them.
 */
export function protobufBody(apiVersion: string, kind: string, raw: Uint8Array): Buffer {
  const envelope = new BinaryWriter();
  envelope.tag(UNKNOWN_TYPE_META, WireType.LengthDelimited).fork();
  envelope.tag(TYPE_META_API_VERSION, WireType.LengthDelimited).string(apiVersion);
  envelope.tag(TYPE_META_KIND, WireType.LengthDelimited).string(kind);
  envelope.join();
  envelope.tag(UNKNOWN_RAW, WireType.LengthDelimited).bytes(raw);
  envelope.tag(3, WireType.LengthDelimited).string('');
  envelope.tag(4, WireType.LengthDelimited).string('');
  return Buffer.concat([PROTOBUF_MAGIC, envelope.finish()]);
}

export function isProtobuf(contentType: string | undefined): boolean {
  return (contentType ?? '').split(';')[0]!.trim().toLowerCase() === PROTOBUF_CONTENT_TYPE;
}

/** What an edit may change of an object's metadata. */
export interface MetadataEdit {
  /** The new resourceVersion for the present one (the same string: unchanged). */
  resourceVersion?: (rv: string) => string;
  /** An annotation removed. */
  dropAnnotation?: string;
  /** An annotation set (after any of that key is removed), unless `when` says no. */
  setAnnotation?: { key: string; value: string; when: (meta: ObjectFacts) => boolean };
  /** An annotation whose value `ObjectFacts.annotation` reports. */
  readAnnotation?: string;
  /** managedFields removed. */
  dropManagedFields?: boolean;
  /** Labels removed: those this says so of, given the object's kind. */
  dropLabel?: (key: string, kind: string) => boolean;
  /** The object's own names (a tenant's into the member's): name, generateName, namespace. */
  rename?: (field: 'name' | 'generateName' | 'namespace', value: string) => string;
}

const RENAMED: Readonly<Record<number, 'name' | 'generateName' | 'namespace'>> = { [META_NAME]: 'name', [META_GENERATE_NAME]: 'generateName', [META_NAMESPACE]: 'namespace' };

/** What the body said, before the edit. */
export interface ObjectFacts {
  kind: string;
  name?: string;
  resourceVersion?: string;
  deleting: boolean;
  /** The value of `MetadataEdit.readAnnotation`, when the object has it. */
  annotation?: string;
}

export interface EditedBody {
  body: Buffer;
  facts: ObjectFacts;
}

interface Field {
  no: number;
  type: WireType;
  /** The whole field as it was: tag, length and data. */
  whole: Uint8Array;
  /** A length-delimited field's data. */
  data?: Uint8Array;
}

function fields(bytes: Uint8Array): Field[] {
  const r = new BinaryReader(bytes);
  const out: Field[] = [];
  while (r.pos < r.len) {
    const start = r.pos;
    const [no, type] = r.tag();
    if (type === WireType.LengthDelimited) {
      const data = r.bytes();
      out.push({ no, type, whole: bytes.subarray(start, r.pos), data });
    } else {
      r.skip(type, no);
      out.push({ no, type, whole: bytes.subarray(start, r.pos) });
    }
  }
  return out;
}

function text(data: Uint8Array | undefined): string | undefined {
  return data === undefined ? undefined : Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString('utf8');
}

function stringField(no: number, value: string): Uint8Array {
  return new BinaryWriter().tag(no, WireType.LengthDelimited).string(value).finish();
}

function messageField(no: number, data: Uint8Array): Uint8Array {
  return new BinaryWriter().tag(no, WireType.LengthDelimited).bytes(data).finish();
}

function join(parts: readonly Uint8Array[]): Uint8Array {
  return Buffer.concat(parts);
}

/** `fields` with the first of number `no` replaced (or, absent, appended) by `replacement`. */
function replaced(all: readonly Field[], no: number, replacement: Uint8Array): Uint8Array {
  let done = false;
  const parts = all.map((f) => {
    if (f.no !== no || done) return f.whole;
    done = true;
    return replacement;
  });
  if (!done) parts.push(replacement);
  return join(parts);
}

function editMetadata(meta: Uint8Array, kind: string, edit: MetadataEdit): { bytes: Uint8Array; facts: ObjectFacts } {
  const all = fields(meta);
  const facts: ObjectFacts = {
    kind,
    name: text(all.find((f) => f.no === META_NAME)?.data),
    resourceVersion: text(all.find((f) => f.no === META_RESOURCE_VERSION)?.data),
    deleting: all.some((f) => f.no === META_DELETION_TIMESTAMP),
  };
  const parts: Uint8Array[] = [];
  let annotationsAt = -1;
  // An object the annotation is not set on keeps its own of that key, as in JSON.
  const set = edit.setAnnotation && edit.setAnnotation.when(facts) ? edit.setAnnotation : undefined;
  for (const f of all) {
    if (f.no === META_MANAGED_FIELDS && edit.dropManagedFields) continue;
    const renamed = RENAMED[f.no];
    if (renamed !== undefined && f.type === WireType.LengthDelimited && edit.rename) {
      const was = text(f.data)!;
      const now = edit.rename(renamed, was);
      parts.push(now === was ? f.whole : stringField(f.no, now));
      continue;
    }
    if (f.no === META_RESOURCE_VERSION && f.type === WireType.LengthDelimited && edit.resourceVersion) {
      const rv = edit.resourceVersion(text(f.data)!);
      parts.push(rv === facts.resourceVersion ? f.whole : stringField(META_RESOURCE_VERSION, rv));
      continue;
    }
    if (f.no === META_LABELS && f.type === WireType.LengthDelimited && edit.dropLabel) {
      const key = text(fields(f.data!).find((e) => e.no === MAP_KEY)?.data);
      if (key !== undefined && edit.dropLabel(key, kind)) continue;
    }
    if (f.no === META_ANNOTATIONS && f.type === WireType.LengthDelimited) {
      const entry = fields(f.data!);
      const key = text(entry.find((e) => e.no === MAP_KEY)?.data);
      if (key !== undefined && key === edit.readAnnotation) facts.annotation = text(entry.find((e) => e.no === MAP_VALUE)?.data) ?? '';
      if (key === edit.dropAnnotation || key === set?.key) continue;
      annotationsAt = parts.length + 1;
    }
    parts.push(f.whole);
  }
  if (set) {
    const entry = join([stringField(MAP_KEY, set.key), stringField(MAP_VALUE, set.value)]);
    // After the other annotations (or the other fields): map entries may come in any order.
    parts.splice(annotationsAt < 0 ? parts.length : annotationsAt, 0, messageField(META_ANNOTATIONS, entry));
  }
  return { bytes: join(parts), facts };
}

/** An object message's fields with its metadata edited; undefined when it has none. */
function editedObject(object: readonly Field[], kind: string, edit: MetadataEdit): { bytes: Uint8Array; facts: ObjectFacts } | undefined {
  const meta = object.find((f) => f.no === OBJECT_METADATA && f.type === WireType.LengthDelimited)?.data;
  if (meta === undefined) return undefined;
  const m = editMetadata(meta, kind, edit);
  return { bytes: replaced(object, OBJECT_METADATA, messageField(OBJECT_METADATA, m.bytes)), facts: m.facts };
}

/**
 * A list item (an object message without the magic and envelope a body has) with its metadata
 * edited, as editProtobufObject edits a body's object; the item as it was when it has no
 * metadata. Throws on bytes that do not parse.
 */
export function editProtobufItem(item: Uint8Array, kind: string, edit: MetadataEdit): Uint8Array {
  return editedObject(fields(item), kind, edit)?.bytes ?? item;
}

/**
 * The body with its object's metadata edited, or undefined when it is not a protobuf object flotilla
 * edits (no magic, a list, a body that does not parse: it then goes as it came, and the member
 * judges it).
 */
export function editProtobufObject(body: Buffer, given: MetadataEdit): EditedBody | undefined {
  if (!hasProtobufMagic(body)) return undefined;
  // What the edit itself throws (a resourceVersion read from another cluster: 409) is the answer;
  // what parsing throws means a body flotilla leaves alone.
  let refused: { error: unknown } | undefined;
  const translate = given.resourceVersion;
  const edit: MetadataEdit = {
    ...given,
    ...(translate ? {
      resourceVersion: (rv: string) => {
        try {
          return translate(rv);
        } catch (error) {
          refused = { error };
          throw error;
        }
      },
    } : {}),
  };
  try {
    const unknown = fields(body.subarray(PROTOBUF_MAGIC.length));
    const typeMeta = unknown.find((f) => f.no === UNKNOWN_TYPE_META)?.data;
    const kind = typeMeta ? text(fields(typeMeta).find((f) => f.no === TYPE_META_KIND)?.data) ?? '' : '';
    const raw = unknown.find((f) => f.no === UNKNOWN_RAW)?.data;
    if (raw === undefined || kind.endsWith('List')) return undefined;
    const object = fields(raw);
    let edited: Uint8Array;
    let facts: ObjectFacts;
    if (kind === 'DeleteOptions') {
      const pre = object.find((f) => f.no === DELETE_OPTIONS_PRECONDITIONS)?.data;
      const preFields = pre ? fields(pre) : [];
      const rv = text(preFields.find((f) => f.no === PRECONDITIONS_RESOURCE_VERSION)?.data);
      facts = { kind, deleting: false, ...(rv !== undefined ? { resourceVersion: rv } : {}) };
      if (rv === undefined || !edit.resourceVersion) return { body, facts };
      const next = edit.resourceVersion(rv);
      if (next === rv) return { body, facts };
      edited = replaced(object, DELETE_OPTIONS_PRECONDITIONS, messageField(DELETE_OPTIONS_PRECONDITIONS, replaced(preFields, PRECONDITIONS_RESOURCE_VERSION, stringField(PRECONDITIONS_RESOURCE_VERSION, next))));
    } else {
      const m = editedObject(object, kind, edit);
      if (!m) return { body, facts: { kind, deleting: false } };
      facts = m.facts;
      edited = m.bytes;
    }
    return { body: Buffer.concat([PROTOBUF_MAGIC, replaced(unknown, UNKNOWN_RAW, messageField(UNKNOWN_RAW, edited))]), facts };
  } catch {
    if (refused) throw refused.error;
    return undefined;
  }
}
