import { BinaryWriter, WireType } from '@bufbuild/protobuf/wire';
import { SCHEMA_JSON } from './protobuf-schema.generated.js';
import { protobufBody } from './protobuf-object.js';
import { goDurationNanos } from './go-duration.js';
import { OPEN_BRACKET, forEachElement, objectMembers, parseSpan, skipValue, type JsonMember } from '../util/json-members.js';

/**
 * A built-in kind's JSON in Kubernetes' protobuf encoding, byte for byte as the apiserver writes
 * the same object (its Go types' generated marshallers): fields in number order, every field Go
 * holds by value written even when empty, pointers only when set, map entries sorted by key. The
 * schema is read from those Go types' struct tags (scripts/protobuf-schema); JSON fields it does
 * not name are dropped, as a Go client of that release drops them.
 */

type ValueKind = 'string' | 'bool' | 'int' | 'int32' | 'int64' | 'uint32' | 'uint64' | 'float32' | 'float64' | 'bytes' | 'msg' | 'time' | 'microtime' | 'duration' | 'raw' | 'quantity' | 'intorstring';

interface Field {
  /** The JSON member; '' for a wrapped list's items (the value itself); '-' for none. */
  json: string;
  no: number;
  kind: ValueKind | 'map';
  /** A message's type. */
  type: number;
  /** A map's value kind and type (keys are strings). */
  mapValue?: { kind: ValueKind; type: number };
  ptr: boolean;
  repeated: boolean;
  /** A struct JSON flattens into its parent (`json:",inline"`). */
  inline: boolean;
}

interface Schema {
  types: Field[][];
  kinds: Map<string, number>;
}

type Json = Record<string, unknown>;
type RawField = [string, number, ValueKind | 'map', number | [string, ValueKind, number | null] | null, string];

let schema: Schema | undefined;

function loadSchema(): Schema {
  const raw = JSON.parse(SCHEMA_JSON) as { types: RawField[][]; kinds: Record<string, number> };
  const types = raw.types.map((fields) =>
    fields.map(([json, no, kind, ref, flags]): Field => {
      const set = new Set(flags.split(' '));
      const mapValue = kind === 'map' && Array.isArray(ref) ? { kind: ref[1], type: ref[2] ?? -1 } : undefined;
      return { json, no, kind, type: typeof ref === 'number' ? ref : -1, mapValue, ptr: set.has('ptr'), repeated: set.has('rep'), inline: set.has('inline') };
    }),
  );
  return { types, kinds: new Map(Object.entries(raw.kinds)) };
}

/** The schema's type of a kind (`apiVersion` as a body names it), or undefined when it has none (a custom resource). */
export function protobufTypeOf(apiVersion: string, kind: string): number | undefined {
  schema ??= loadSchema();
  return schema.kinds.get(`${apiVersion}/${kind}`);
}

function isJson(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

const ZERO_TIME_SECONDS = -62135596800;

/** Seconds and nanoseconds of an RFC 3339 time; undefined for Go's zero time (null). */
function timeOf(v: unknown): [number, number] | undefined {
  if (typeof v !== 'string') return undefined;
  const ms = Date.parse(v);
  if (Number.isNaN(ms)) return undefined;
  const seconds = Math.floor(ms / 1000);
  if (seconds === ZERO_TIME_SECONDS) return undefined;
  const fraction = /\.(\d+)/.exec(v)?.[1] ?? '';
  return [seconds, fraction ? Number(fraction.padEnd(9, '0').slice(0, 9)) : 0];
}

/** A field's value written with its tag. */
function writeValue(w: BinaryWriter, s: Schema, no: number, kind: ValueKind, type: number, v: unknown): void {
  switch (kind) {
    case 'string':
      w.tag(no, WireType.LengthDelimited).string(typeof v === 'string' ? v : '');
      return;
    case 'bool':
      w.tag(no, WireType.Varint).bool(v === true);
      return;
    case 'int':
    case 'int32':
      w.tag(no, WireType.Varint).int32(typeof v === 'number' ? v : 0);
      return;
    case 'int64':
      w.tag(no, WireType.Varint).int64(typeof v === 'number' ? v : 0);
      return;
    case 'uint32':
      w.tag(no, WireType.Varint).uint32(typeof v === 'number' ? v : 0);
      return;
    case 'uint64':
      w.tag(no, WireType.Varint).uint64(typeof v === 'number' ? v : 0);
      return;
    case 'float64':
      w.tag(no, WireType.Bit64).double(typeof v === 'number' ? v : 0);
      return;
    case 'float32':
      w.tag(no, WireType.Bit32).float(typeof v === 'number' ? v : 0);
      return;
    case 'bytes':
      w.tag(no, WireType.LengthDelimited).bytes(typeof v === 'string' ? Buffer.from(v, 'base64') : new Uint8Array());
      return;
    case 'msg':
      w.tag(no, WireType.LengthDelimited).fork();
      writeMessage(w, s, type, v);
      w.join();
      return;
    case 'time':
    case 'microtime': {
      w.tag(no, WireType.LengthDelimited).fork();
      const t = timeOf(v);
      // Go writes its zero time as an empty message.
      if (t) w.tag(1, WireType.Varint).int64(t[0]).tag(2, WireType.Varint).int32(kind === 'time' ? 0 : t[1]);
      w.join();
      return;
    }
    case 'duration':
      w.tag(no, WireType.LengthDelimited).fork().tag(1, WireType.Varint).int64(goDurationNanos(v)).join();
      return;
    case 'raw':
      w.tag(no, WireType.LengthDelimited).fork();
      // RawExtension and FieldsV1 hold the JSON as it came; null holds nothing.
      if (v !== undefined && v !== null) w.tag(1, WireType.LengthDelimited).bytes(Buffer.from(JSON.stringify(v)));
      w.join();
      return;
    case 'quantity':
      w.tag(no, WireType.LengthDelimited).fork().tag(1, WireType.LengthDelimited).string(typeof v === 'string' ? v : typeof v === 'number' ? String(v) : '0').join();
      return;
    case 'intorstring': {
      const isString = typeof v === 'string';
      w.tag(no, WireType.LengthDelimited).fork();
      w.tag(1, WireType.Varint).int64(isString ? 1 : 0);
      w.tag(2, WireType.Varint).int32(typeof v === 'number' ? v : 0);
      w.tag(3, WireType.LengthDelimited).string(isString ? v : '');
      w.join();
      return;
    }
  }
}

function writeField(w: BinaryWriter, s: Schema, f: Field, o: Json, self: unknown): void {
  if (f.inline) {
    w.tag(f.no, WireType.LengthDelimited).fork();
    writeMessage(w, s, f.type, o);
    w.join();
    return;
  }
  const v = f.json === '' ? self : f.json === '-' ? undefined : o[f.json];
  if (f.kind === 'map') {
    if (!isJson(v)) return;
    const value = f.mapValue!;
    for (const key of Object.keys(v).sort()) {
      const item = v[key];
      // Go writes a nil byte slice's entry without its value.
      w.tag(f.no, WireType.LengthDelimited).fork().tag(1, WireType.LengthDelimited).string(key);
      if (value.kind !== 'bytes' || typeof item === 'string') writeValue(w, s, 2, value.kind, value.type, item);
      w.join();
    }
    return;
  }
  if (f.repeated) {
    if (!Array.isArray(v) || v.length === 0) return;
    for (const item of v) writeValue(w, s, f.no, f.kind, f.type, item);
    return;
  }
  if ((v === undefined || v === null) && (f.ptr || f.kind === 'bytes')) return;
  writeValue(w, s, f.no, f.kind, f.type, v);
}

function writeMessage(w: BinaryWriter, s: Schema, type: number, v: unknown): void {
  const o = isJson(v) ? v : {};
  for (const f of s.types[type]!) writeField(w, s, f, o, v);
}

/** An object or list of a built-in kind, parsed, as its protobuf message (without the envelope). */
export function encodeMessage(type: number, object: unknown): Uint8Array {
  schema ??= loadSchema();
  const w = new BinaryWriter();
  writeMessage(w, schema, type, object);
  return w.finish();
}

/**
 * A JSON body (an object or a list) in protobuf, with the `k8s\0` envelope naming its kind, as a
 * member answers it; undefined when its kind has no protobuf encoding (a custom resource, a
 * Table) or the bytes do not follow. A list is read an item at a time, never parsed whole.
 */
export function jsonAsProtobuf(json: Buffer | string): Buffer | undefined {
  const steps = transcode(typeof json === 'string' ? Buffer.from(json) : json);
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
  }
}

/** How long a list's transcoding holds the event loop before it lets other work in. */
const TURN_MS = 10;

/**
 * jsonAsProtobuf for an answer, which may be a list of 100k objects (~50 µs each): other requests
 * and watches get the event loop every TURN_MS.
 */
export async function jsonAsProtobufInTurns(json: Buffer, turnMs = TURN_MS): Promise<Buffer | undefined> {
  const steps = transcode(json);
  let turnStart = performance.now();
  for (let i = 1; ; i++) {
    const step = steps.next();
    if (step.done) return step.value;
    if (i % 32 === 0 && performance.now() - turnStart >= turnMs) {
      await new Promise((resolve) => setImmediate(resolve));
      turnStart = performance.now();
    }
  }
}

/** The transcoding, one list item a step. */
function* transcode(bytes: Buffer): Generator<void, Buffer | undefined> {
  try {
    const top = objectMembers(bytes, 0);
    if (!top) return undefined;
    const value = (key: string) => {
      let found: JsonMember | undefined;
      // A parser keeps the last of a repeated key.
      for (const m of top.members) if (m.key === key) found = m;
      return found && parseSpan(bytes, found.start, found.end);
    };
    const kind = value('kind');
    const apiVersion = value('apiVersion');
    if (typeof kind !== 'string' || typeof apiVersion !== 'string') return undefined;
    const type = protobufTypeOf(apiVersion, kind);
    if (type === undefined) return undefined;
    const fields = schema!.types[type]!;
    const items = fields.find((f) => f.json === 'items');
    if (!kind.endsWith('List') || items?.kind !== 'msg' || !items.repeated) return protobufBody(apiVersion, kind, encodeMessage(type, parseSpan(bytes, 0, top.close + 1)));
    const w = new BinaryWriter();
    for (const f of fields) {
      if (f !== items) {
        writeField(w, schema!, f, { [f.json]: value(f.json) }, undefined);
        continue;
      }
      const spans = itemSpans(bytes, top.members.findLast((m) => m.key === 'items'));
      if (!spans) return undefined;
      for (let i = 0; i < spans.length; i += 2) {
        writeValue(w, schema!, f.no, 'msg', f.type, parseSpan(bytes, spans[i]!, spans[i + 1]!));
        yield;
      }
    }
    return protobufBody(apiVersion, kind, w.finish());
  } catch {
    return undefined;
  }
}

/** Where a list's items start and end, in pairs; undefined when the bytes do not follow. */
function itemSpans(bytes: Buffer, at: JsonMember | undefined): number[] | undefined {
  const spans: number[] = [];
  if (!at || bytes[at.start] !== OPEN_BRACKET) return spans;
  const close = forEachElement(bytes, at.start, (start) => {
    const end = skipValue(bytes, start);
    if (end >= 0) spans.push(start, end);
    return end;
  });
  return close === undefined ? undefined : spans;
}
