import { BinaryReader, BinaryWriter, WireType } from '@bufbuild/protobuf/wire';
import { PROTOBUF_MAGIC, hasProtobufMagic, protobufBody } from './protobuf-object.js';

/**
 * A Kubernetes list in protobuf: the magic `k8s\0`, then runtime.Unknown {typeMeta 1: {apiVersion
 * 1, kind 2}, raw 2, contentEncoding 3, contentType 4}, raw being the list {metadata 1: ListMeta
 * {selfLink 1, resourceVersion 2, continue 3, remainingItemCount 4}, items 2: repeated object
 * messages}, as every built-in kind's List is. Items are kept as their bytes.
 */

export interface ListMetaFields {
  resourceVersion: string;
  continue?: string;
  remainingItemCount?: number;
}

export interface ProtobufList {
  apiVersion: string;
  kind: string;
  metadata: ListMetaFields;
  items: Uint8Array[];
}

function messageFields(bytes: Uint8Array, each: (no: number, r: BinaryReader, wire: WireType) => void): void {
  const r = new BinaryReader(bytes);
  while (r.pos < r.len) {
    const [no, wire] = r.tag();
    each(no, r, wire);
  }
}

/** The list a protobuf body holds, or undefined for any other body (an object, a Status, bytes that do not parse). */
export function readProtobufList(body: Buffer): ProtobufList | undefined {
  if (!hasProtobufMagic(body)) return undefined;
  try {
    let apiVersion = '';
    let kind = '';
    let raw: Uint8Array | undefined;
    messageFields(body.subarray(PROTOBUF_MAGIC.length), (no, r, wire) => {
      if (no === 1 && wire === WireType.LengthDelimited) {
        messageFields(r.bytes(), (tno, tr, twire) => {
          if (tno === 1 && twire === WireType.LengthDelimited) apiVersion = tr.string();
          else if (tno === 2 && twire === WireType.LengthDelimited) kind = tr.string();
          else tr.skip(twire, tno);
        });
      } else if (no === 2 && wire === WireType.LengthDelimited) raw = r.bytes();
      else r.skip(wire, no);
    });
    if (!kind.endsWith('List') || raw === undefined) return undefined;
    const metadata: ListMetaFields = { resourceVersion: '' };
    const items: Uint8Array[] = [];
    messageFields(raw, (no, r, wire) => {
      if (no === 1 && wire === WireType.LengthDelimited) {
        messageFields(r.bytes(), (mno, mr, mwire) => {
          if (mno === 2 && mwire === WireType.LengthDelimited) metadata.resourceVersion = mr.string();
          else if (mno === 3 && mwire === WireType.LengthDelimited) metadata.continue = mr.string();
          else if (mno === 4 && mwire === WireType.Varint) metadata.remainingItemCount = Number(mr.int64());
          else mr.skip(mwire, mno);
        });
      } else if (no === 2 && wire === WireType.LengthDelimited) items.push(r.bytes());
      else r.skip(wire, no);
    });
    return { apiVersion, kind, metadata, items };
  } catch {
    return undefined;
  }
}

/** The list as a protobuf body, its fields in the order and with the empty strings Go writes. */
export function writeProtobufList(list: ProtobufList): Buffer {
  const raw = new BinaryWriter();
  raw.tag(1, WireType.LengthDelimited).fork();
  raw.tag(1, WireType.LengthDelimited).string('');
  raw.tag(2, WireType.LengthDelimited).string(list.metadata.resourceVersion);
  raw.tag(3, WireType.LengthDelimited).string(list.metadata.continue ?? '');
  if (list.metadata.remainingItemCount !== undefined) raw.tag(4, WireType.Varint).int64(list.metadata.remainingItemCount);
  raw.join();
  for (const item of list.items) raw.tag(2, WireType.LengthDelimited).bytes(item);
  return protobufBody(list.apiVersion, list.kind, raw.finish());
}
