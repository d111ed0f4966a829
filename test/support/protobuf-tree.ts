import { BinaryReader, WireType } from '@bufbuild/protobuf/wire';

/**
 * A Kubernetes protobuf answer (an object or list of any built-in kind, PartialObjectMetadata(List),
 * a Status) decoded field by field, for comparing two answers: each field as [number, value], a nested
 * message decoded likewise, anything else as text (strings, FieldsV1's JSON) or a varint's digits.
 * Only which fields hold messages is known here (k8s.io/apimachinery's and k8s.io/api's
 * generated.proto), so two answers compare equal exactly when their fields and values do, in order.
 */
export type ProtoTree = [number, string | ProtoTree][];

/** Which fields of which message hold messages. */
const MESSAGES: Record<string, Record<number, string>> = {
  TypeMeta: {},
  PartialObjectMetadataList: { 1: 'ListMeta', 2: 'PartialObjectMetadata' },
  PartialObjectMetadata: { 1: 'ObjectMeta' },
  ListMeta: {},
  ObjectMeta: { 8: 'Time', 9: 'Time', 11: 'Entry', 12: 'Entry', 13: 'OwnerReference', 17: 'ManagedFieldsEntry' },
  Time: {},
  Entry: {},
  OwnerReference: {},
  ManagedFieldsEntry: { 4: 'Time', 7: 'FieldsV1' },
  FieldsV1: {},
  ConfigMap: { 1: 'ObjectMeta', 2: 'Entry', 3: 'Entry' },
  ConfigMapList: { 1: 'ListMeta', 2: 'ConfigMap' },
  Secret: { 1: 'ObjectMeta', 2: 'Entry', 4: 'Entry' },
  SecretList: { 1: 'ListMeta', 2: 'Secret' },
  // Spec and status compare as their bytes.
  Node: { 1: 'ObjectMeta' },
  NodeList: { 1: 'ListMeta', 2: 'Node' },
  Pod: { 1: 'ObjectMeta' },
  PodList: { 1: 'ListMeta', 2: 'Pod' },
  Status: { 1: 'ListMeta', 5: 'StatusDetails' },
  StatusDetails: { 4: 'StatusCause' },
  StatusCause: {},
};

/** A message's fields that hold messages; any other kind as objects are (metadata 1, the rest as bytes), its List as lists are. */
function messageFields(message: string): Record<number, string> {
  return MESSAGES[message] ?? (message.endsWith('List') ? { 1: 'ListMeta', 2: message.slice(0, -4) } : { 1: 'ObjectMeta' });
}

function decode(bytes: Uint8Array, message: string): ProtoTree {
  const r = new BinaryReader(bytes);
  const out: ProtoTree = [];
  while (r.pos < r.len) {
    const [no, type] = r.tag();
    if (type === WireType.LengthDelimited) {
      const data = r.bytes();
      const inner = messageFields(message)[no];
      out.push([no, inner ? decode(data, inner) : Buffer.from(data).toString('utf8')]);
    } else if (type === WireType.Varint) {
      out.push([no, r.int64().toString()]);
    } else {
      throw new Error(`field ${no} of ${message}: wire type ${type} is not expected here`);
    }
  }
  return out;
}

/**
 * The answer decoded: the magic `k8s\0`, then runtime.Unknown {typeMeta 1, raw 2, contentEncoding
 * 3, contentType 4}, its raw object decoded as the kind its typeMeta names.
 */
export function decodeProtobufAnswer(body: Buffer): ProtoTree {
  if (body.subarray(0, 4).toString('latin1') !== 'k8s\0') throw new Error(`not a Kubernetes protobuf body: ${body.subarray(0, 60).toString()}`);
  const r = new BinaryReader(body.subarray(4));
  const fields: [number, Uint8Array][] = [];
  while (r.pos < r.len) {
    const [no, type] = r.tag();
    if (type !== WireType.LengthDelimited) throw new Error(`runtime.Unknown field ${no}: wire type ${type}`);
    fields.push([no, r.bytes()]);
  }
  const typeMeta = decode(fields.find(([no]) => no === 1)?.[1] ?? new Uint8Array(), 'TypeMeta');
  const kind = String(typeMeta.find(([no]) => no === 2)?.[1] ?? '');
  if (!kind) throw new Error("runtime.Unknown without a kind");
  return fields.map(([no, data]) => [no, no === 1 ? typeMeta : no === 2 ? decode(data, kind) : Buffer.from(data).toString('utf8')]);
}

/**
 * What may differ between a member's answer and flotilla's: resourceVersions (ListMeta 2,
 * ObjectMeta 6), a list's continue token (ListMeta 3), and flotilla's cluster annotation (an
 * ObjectMeta 12 entry), all dropped.
 */
export function withoutFlotillaFields(tree: ProtoTree, clusterAnnotation: string): ProtoTree {
  const walk = (t: ProtoTree, message: string): ProtoTree =>
    t
      .filter(([no, v]) => {
        if (message === 'ListMeta') return no !== 2 && no !== 3;
        if (message === 'ObjectMeta' && no === 6) return false;
        if (message === 'ObjectMeta' && no === 12 && Array.isArray(v)) return v.find(([k]) => k === 1)?.[1] !== clusterAnnotation;
        return true;
      })
      .map(([no, v]) => {
        const inner = message === 'Unknown' && no === 2 ? kindOf(tree) : messageFields(message)[no];
        return [no, Array.isArray(v) && inner ? walk(v, inner) : v];
      });
  return walk(tree, 'Unknown');
}

function kindOf(tree: ProtoTree): string {
  const typeMeta = tree.find(([no]) => no === 1)?.[1];
  return Array.isArray(typeMeta) ? String(typeMeta.find(([no]) => no === 2)?.[1] ?? '') : '';
}

/**
 * A protobuf watch stream's events: frames of a 4-byte big-endian length and a WatchEvent {type 1,
 * object 2: RawExtension {raw 1: a whole answer}}, each object decoded as decodeProtobufAnswer does.
 * Throws on bytes that are not whole frames.
 */
export function decodeWatchStream(stream: Buffer): { type: string; object: ProtoTree }[] {
  const events: { type: string; object: ProtoTree }[] = [];
  for (let at = 0; at < stream.length;) {
    if (at + 4 > stream.length) throw new Error(`a frame length cut short at byte ${at}`);
    const end = at + 4 + stream.readUInt32BE(at);
    if (end > stream.length) throw new Error(`a frame cut short at byte ${at}`);
    const r = new BinaryReader(stream.subarray(at + 4, end));
    let type = '';
    let object: ProtoTree | undefined;
    while (r.pos < r.len) {
      const [no, wire] = r.tag();
      if (wire !== WireType.LengthDelimited) throw new Error(`WatchEvent field ${no}: wire type ${wire}`);
      const data = r.bytes();
      if (no === 1) type = Buffer.from(data).toString('utf8');
      else if (no === 2) {
        const ext = new BinaryReader(data);
        const [extNo] = ext.tag();
        if (extNo !== 1) throw new Error(`RawExtension field ${extNo}`);
        object = decodeProtobufAnswer(Buffer.from(ext.bytes()));
      }
    }
    if (!object) throw new Error(`a ${type} event without an object`);
    events.push({ type, object });
    at = end;
  }
  return events;
}

/** The value of field `path[0]`, then of its field `path[1]`, …: text, or undefined. */
export function fieldAt(tree: ProtoTree, ...path: number[]): string | ProtoTree | undefined {
  let at: string | ProtoTree | undefined = tree;
  for (const no of path) at = Array.isArray(at) ? at.find(([n]) => n === no)?.[1] : undefined;
  return at;
}

/** A list answer's items (Unknown raw 2, the list's items 2), each decoded. */
export function listItems(tree: ProtoTree): ProtoTree[] {
  const raw = fieldAt(tree, 2);
  return Array.isArray(raw) ? raw.filter(([no]) => no === 2).map(([, item]) => item as ProtoTree) : [];
}

/** An object answer's metadata.annotations[key] (Unknown raw 2, ObjectMeta 1, annotations 12). */
export function annotationOf(tree: ProtoTree, key: string): string | undefined {
  const meta = fieldAt(tree, 2, 1);
  if (!Array.isArray(meta)) return undefined;
  const entry = meta.find(([no, v]) => no === 12 && Array.isArray(v) && v.find(([k]) => k === 1)?.[1] === key)?.[1];
  const value = Array.isArray(entry) ? entry.find(([k]) => k === 2)?.[1] : undefined;
  return typeof value === 'string' ? value : undefined;
}
