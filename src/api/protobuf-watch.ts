import { BinaryReader, BinaryWriter, WireType } from '@bufbuild/protobuf/wire';
import { jsonAsProtobuf } from './protobuf-transcode.js';

/**
 * A watch in Kubernetes' protobuf encoding: each event a frame of a 4-byte big-endian length and
 * a metav1.WatchEvent {type 1: string, object 2: RawExtension {raw 1: bytes}}, written without the
 * `k8s\0` magic (the stream serializer); the object's raw bytes are a whole protobuf body, with
 * its magic and runtime.Unknown envelope (api/protobuf-object.ts edits those).
 */
export const PROTOBUF_WATCH_CONTENT_TYPE = 'application/vnd.kubernetes.protobuf;stream=watch';

const EVENT_TYPE = 1;
const EVENT_OBJECT = 2;
const RAW_EXTENSION_RAW = 1;
const LENGTH_BYTES = 4;
/** A member's frame longer than this is taken for a broken stream (an object is at most ~1.5 MB in etcd). */
const MAX_FRAME_BYTES = 64 * 1024 * 1024;

/** The frames of a length-delimited stream as its chunks arrive. */
export class WatchFrames {
  private pending: Buffer[] = [];
  private pendingBytes = 0;

  /** The frames this chunk completes; throws on a frame length past any object's. */
  push(chunk: Buffer): Buffer[] {
    this.pending.push(chunk);
    this.pendingBytes += chunk.length;
    const frames: Buffer[] = [];
    while (this.pendingBytes >= LENGTH_BYTES) {
      const head = this.pending[0]!.length >= LENGTH_BYTES ? this.pending[0]! : Buffer.concat(this.pending);
      const length = head.readUInt32BE(0);
      if (length > MAX_FRAME_BYTES) throw new Error(`a watch frame of ${length} bytes`);
      if (this.pendingBytes < LENGTH_BYTES + length) break;
      const all = this.pending.length === 1 ? this.pending[0]! : Buffer.concat(this.pending);
      frames.push(all.subarray(LENGTH_BYTES, LENGTH_BYTES + length));
      const rest = all.subarray(LENGTH_BYTES + length);
      this.pending = rest.length > 0 ? [rest] : [];
      this.pendingBytes = rest.length;
    }
    return frames;
  }
}

export interface ProtobufWatchEvent {
  type: string;
  /** The object's whole protobuf body. */
  object: Buffer;
}

/** A frame's event, or undefined for one that is not a WatchEvent with an object. */
export function readWatchEvent(frame: Buffer): ProtobufWatchEvent | undefined {
  try {
    const r = new BinaryReader(frame);
    let type: string | undefined;
    let object: Buffer | undefined;
    while (r.pos < r.len) {
      const [no, wire] = r.tag();
      if (no === EVENT_TYPE && wire === WireType.LengthDelimited) type = r.string();
      else if (no === EVENT_OBJECT && wire === WireType.LengthDelimited) {
        const ext = new BinaryReader(r.bytes());
        while (ext.pos < ext.len) {
          const [extNo, extWire] = ext.tag();
          if (extNo === RAW_EXTENSION_RAW && extWire === WireType.LengthDelimited) {
            const raw = ext.bytes();
            object = Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength);
          } else ext.skip(extWire, extNo);
        }
      } else r.skip(wire, no);
    }
    return type !== undefined && object !== undefined ? { type, object } : undefined;
  } catch {
    return undefined;
  }
}

/** The event as a frame: length, then the WatchEvent. */
export function watchEventFrame(event: ProtobufWatchEvent): Buffer {
  const w = new BinaryWriter();
  w.tag(EVENT_TYPE, WireType.LengthDelimited).string(event.type);
  w.tag(EVENT_OBJECT, WireType.LengthDelimited).fork();
  w.tag(RAW_EXTENSION_RAW, WireType.LengthDelimited).bytes(event.object);
  w.join();
  return lengthPrefixed(w.finish());
}

/** A frame as it goes on the wire. */
export function lengthPrefixed(frame: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(LENGTH_BYTES + frame.length);
  out.writeUInt32BE(frame.length, 0);
  out.set(frame, LENGTH_BYTES);
  return out;
}

/** A JSON watch event's object as a protobuf frame; undefined when its kind has no protobuf encoding. */
export function protobufWatchFrame(type: string, object: Buffer | string): Buffer | undefined {
  const body = jsonAsProtobuf(object);
  return body && watchEventFrame({ type, object: body });
}
