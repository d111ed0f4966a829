import { BinaryReader, WireType } from '@bufbuild/protobuf/wire';

/**
 * A Kubernetes protobuf metadata answer (PartialObjectMetadata or PartialObjectMetadataList)
 * decoded field by field, for comparing two answers: each field as [number, value], a nested
 * message decoded likewise, anything else as text (strings, FieldsV1's JSON) or a varint's digits.
 * Only which fields hold messages is known here (k8s.io/apimachinery's generated.proto), so two
 * answers compare equal exactly when their fields and values do, in order.
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
};

function decode(bytes: Uint8Array, message: string): ProtoTree {
  const r = new BinaryReader(bytes);
  const out: ProtoTree = [];
  while (r.pos < r.len) {
    const [no, type] = r.tag();
    if (type === WireType.LengthDelimited) {
      const data = r.bytes();
      const inner = MESSAGES[message]?.[no];
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
export function decodeMetadataAnswer(body: Buffer): ProtoTree {
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
  if (!MESSAGES[kind]) throw new Error(`runtime.Unknown of kind ${JSON.stringify(kind)}`);
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
        const inner = message === 'Unknown' && no === 2 ? kindOf(tree) : MESSAGES[message]?.[no];
        return [no, Array.isArray(v) && inner ? walk(v, inner) : v];
      });
  return walk(tree, 'Unknown');
}

function kindOf(tree: ProtoTree): string {
  const typeMeta = tree.find(([no]) => no === 1)?.[1];
  return Array.isArray(typeMeta) ? String(typeMeta.find(([no]) => no === 2)?.[1] ?? '') : '';
}
