import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { BinaryReader, BinaryWriter, WireType } from '@bufbuild/protobuf/wire';
import {
  CLUSTER_ANNOTATION,
  mergeParsedLists,
  mergeSplicedLists,
  parsedJsonCodec,
  protobufCodec,
  splicedJsonCodec,
  withResourceVersion,
  metadataWithResourceVersion,
  type EventStamp,
} from '../../../src/api/fleet-object/index.js';
import { encodeGlobalRV } from '../../../src/api/global-rv.js';
import { joinPieces } from '../../../src/util/byte-edits.js';
import { writeProtobufList } from '../../../src/api/protobuf-list.js';

/**
 * The fleet-object codec's encodings agree: on random members' objects, lists and watch events,
 * the spliced JSON codec (byte edits) gives what the parsed JSON codec (records) gives, and the
 * protobuf codec the same metadata; fleet → member → fleet is the identity.
 */
type Doc = Record<string, unknown>;
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- assertions reach into arbitrary JSON
type Json = any;

const clusterName = fc.stringMatching(/^[a-z0-9]([-a-z0-9]{0,8}[a-z0-9])?$/);
const memberRV = fc.stringMatching(/^[1-9][0-9]{0,12}$/);
/** Keys as Kubernetes writes them (annotation and label keys included): no escapes, so the splice follows every object. */
const key = fc.stringMatching(/^[a-z0-9]([-a-z0-9./]{0,20}[a-z0-9])?$/);
const text = fc.string({ maxLength: 16 });
const annotations = fc.oneof(
  fc.constant(undefined),
  fc.dictionary(key, text, { minKeys: 1, maxKeys: 4 }),
  fc.dictionary(key, text, { minKeys: 0, maxKeys: 3 }).map((d) => ({ ...d, [CLUSTER_ANNOTATION]: 'elsewhere' })),
);
/** Metadata in any member order, with or without each member. */
const metadata = fc.record(
  {
    name: key,
    namespace: key,
    uid: fc.uuid(),
    resourceVersion: memberRV,
    labels: fc.dictionary(key, text, { maxKeys: 3 }),
    annotations,
    managedFields: fc.array(fc.jsonValue({ maxDepth: 2 }), { maxLength: 2 }),
  },
  { requiredKeys: [] },
).chain((md) => fc.shuffledSubarray(Object.keys(md), { minLength: Object.keys(md).length }).map((order) => Object.fromEntries(order.filter((k) => md[k as keyof typeof md] !== undefined).map((k) => [k, md[k as keyof typeof md]]))));
const namedMetadata = metadata.map((md) => ({ name: 'obj', ...md }));
const object = (md: fc.Arbitrary<Doc>) => fc.record({ kind: fc.constantFrom('Pod', 'ConfigMap', 'Secret'), apiVersion: fc.constant('v1'), metadata: md, data: fc.dictionary(key, fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 }) });

const json = (b: Buffer): Json => JSON.parse(b.toString('utf8'));
const clone = <T>(v: T): T => JSON.parse(JSON.stringify(v)) as T;

describe('fleet-object codec: spliced and parsed JSON agree', () => {
  it('on objects, member to fleet (managedFields kept or dropped)', () => {
    fc.assert(fc.property(object(metadata), clusterName, fc.boolean(), (o, cluster, dropManagedFields) => {
      const bytes = Buffer.from(JSON.stringify(o));
      const spliced = splicedJsonCodec.objectToFleet(bytes, cluster, { dropManagedFields })!;
      const parsed = parsedJsonCodec.objectToFleet(clone(o), cluster, { dropManagedFields })!;
      expect(spliced).toBeDefined();
      expect(json(spliced.body)).toEqual(parsed.body);
      expect(spliced.rv).toEqual(parsed.rv);
      const md = parsed.body['metadata'] as Json;
      if (typeof o.metadata['name'] === 'string') expect(md.annotations[CLUSTER_ANNOTATION]).toBe(cluster);
      if (o.metadata['resourceVersion']) expect(md.resourceVersion).toBe(encodeGlobalRV({ [cluster]: o.metadata['resourceVersion'] as string }));
    }), { numRuns: 300 });
  });

  it('on lists and Tables, and one merger serves both', () => {
    const columns = [{ name: 'Name', type: 'string', format: 'name', description: '', priority: 0 }, { name: 'Age', type: 'string', format: '', description: '', priority: 0 }];
    const memberList = fc.record({ cluster: clusterName, rv: memberRV, table: fc.boolean(), items: fc.array(object(metadata), { maxLength: 4 }) });
    fc.assert(fc.property(fc.array(memberList, { minLength: 1, maxLength: 3 }), fc.boolean(), (lists, table) => {
      const docs = lists.map((l) => (table
        ? { kind: 'Table', apiVersion: 'meta.k8s.io/v1', metadata: { resourceVersion: l.rv }, columnDefinitions: columns, rows: l.items.map((o) => ({ cells: [o.metadata['name'] ?? '', '1d'], object: o })) }
        : { kind: 'ConfigMapList', apiVersion: 'v1', metadata: { resourceVersion: l.rv }, items: l.items }));
      const spliced = docs.map((d, i) => ({ list: splicedJsonCodec.listToFleet(Buffer.from(JSON.stringify(d)), lists[i]!.cluster)!, body: Buffer.from(JSON.stringify(d)) }));
      for (const [i, s] of spliced.entries()) {
        expect(s.list).toBeDefined();
        const parsed = parsedJsonCodec.listToFleet(clone(docs[i]!) as Doc, lists[i]!.cluster)!;
        expect(JSON.parse(`[${joinPieces(s.list.items, s.body).toString('utf8')}]`)).toEqual(parsed[table ? 'rows' : 'items']);
      }
      const metadata = { resourceVersion: encodeGlobalRV(Object.fromEntries(lists.map((l) => [l.cluster, l.rv]))) };
      const bytes = mergeSplicedLists(spliced, spliced[0]!.list.head, metadata);
      expect(json(bytes)).toEqual(mergeParsedLists(docs.map((d, i) => ({ cluster: lists[i]!.cluster, doc: clone(d) as Doc })), metadata));
    }), { numRuns: 200 });
  });

  it('on watch events, each stamped with the global RV of its moment', () => {
    const event = fc.record({ type: fc.constantFrom('ADDED', 'MODIFIED', 'DELETED', 'BOOKMARK'), object: object(namedMetadata) });
    fc.assert(fc.property(event, clusterName, memberRV, (e, cluster, other) => {
      const stamp: EventStamp = { annotate: e.type !== 'BOOKMARK', globalRV: (rv) => encodeGlobalRV({ [cluster]: rv, zz: other }) };
      const spliced = splicedJsonCodec.eventToFleet(Buffer.from(JSON.stringify(e)), cluster, stamp)!;
      expect(spliced).toBeDefined();
      expect(json(spliced)).toEqual(parsedJsonCodec.eventToFleet(clone(e) as Doc, cluster, stamp));
    }), { numRuns: 300 });
  });

  it('fleet to member undoes member to fleet', () => {
    // An object a member holds has no cluster annotation, and no empty annotations (toMember drops those it empties).
    const held = object(metadata).filter((o) => {
      const ann = o.metadata['annotations'] as Doc | undefined;
      return ann === undefined || (Object.keys(ann).length > 0 && !(CLUSTER_ANNOTATION in ann));
    });
    fc.assert(fc.property(held.map(clone), clusterName, (o, cluster) => {
      const fleet = splicedJsonCodec.objectToFleet(Buffer.from(JSON.stringify(o)), cluster)!.body;
      const spliced = splicedJsonCodec.objectToMember(fleet, cluster)!;
      const parsed = parsedJsonCodec.objectToMember(json(fleet) as Doc, cluster)!;
      expect(json(spliced)).toEqual(o);
      expect(parsed).toEqual(o);
      expect(json(splicedJsonCodec.objectToFleet(spliced, cluster)!.body)).toEqual(json(fleet));
    }), { numRuns: 300 });
  });
});

/** Protobuf ObjectMeta and bodies built field by field, as client-go writes them. */
type Field = [number, string | Uint8Array];
function encode(fields: Field[]): Uint8Array {
  const w = new BinaryWriter();
  for (const [no, v] of fields) {
    if (typeof v === 'string') w.tag(no, WireType.LengthDelimited).string(v);
    else w.tag(no, WireType.LengthDelimited).bytes(v);
  }
  return w.finish();
}
function decode(bytes: Uint8Array): [number, Uint8Array][] {
  const r = new BinaryReader(bytes);
  const out: [number, Uint8Array][] = [];
  while (r.pos < r.len) {
    const [no, type] = r.tag();
    if (type === WireType.LengthDelimited) out.push([no, r.bytes()]);
    else r.skip(type, no);
  }
  return out;
}
const str = (b: Uint8Array) => Buffer.from(b).toString('utf8');

/** The metadata fields both encodings carry (name 1, namespace 3, uid 5, resourceVersion 6, labels 11, annotations 12). */
function protobufItem(md: Doc): Uint8Array {
  const meta: Field[] = [];
  const mapEntries = (no: number, m: unknown) => Object.entries((m ?? {}) as Record<string, string>).forEach(([k, v]) => meta.push([no, encode([[1, k], [2, v]])]));
  for (const [k, v] of Object.entries(md)) {
    if (k === 'name') meta.push([1, v as string]);
    else if (k === 'namespace') meta.push([3, v as string]);
    else if (k === 'uid') meta.push([5, v as string]);
    else if (k === 'resourceVersion') meta.push([6, v as string]);
    else if (k === 'labels') mapEntries(11, v);
    else if (k === 'annotations') mapEntries(12, v);
  }
  return encode([[1, encode(meta)], [2, encode([[1, 'data']])]]);
}
function protobufBody(kind: string, md: Doc): Buffer {
  return Buffer.concat([Buffer.from('k8s\0', 'latin1'), encode([[1, encode([[1, 'v1'], [2, kind]])], [2, protobufItem(md)], [3, ''], [4, '']])]);
}
/** The metadata of an object message, as JSON would show it. */
function metadataOf(item: Uint8Array): Doc {
  const meta = decode(decode(item).find(([no]) => no === 1)![1]);
  const out: Doc = {};
  const mapOf = (no: number) => {
    const entries = meta.filter(([n]) => n === no).map(([, e]) => decode(e)).map((e) => [str(e.find(([n]) => n === 1)![1]), str(e.find(([n]) => n === 2)?.[1] ?? new Uint8Array())]);
    return entries.length > 0 ? Object.fromEntries(entries) : undefined;
  };
  for (const [no, v] of meta) {
    if (no === 1) out['name'] = str(v);
    if (no === 3) out['namespace'] = str(v);
    if (no === 5) out['uid'] = str(v);
    if (no === 6) out['resourceVersion'] = str(v);
  }
  const labels = mapOf(11);
  const ann = mapOf(12);
  if (labels) out['labels'] = labels;
  if (ann) out['annotations'] = ann;
  return out;
}
const itemOfBody = (b: Buffer) => decode(b.subarray(4)).find(([no]) => no === 2)![1];
/** Metadata as protobuf can carry it: no managedFields, maps without empty ones. */
function comparable(md: Doc): Doc {
  const out: Doc = {};
  for (const k of ['name', 'namespace', 'uid', 'resourceVersion', 'labels', 'annotations']) {
    const v = md[k];
    if (v === undefined || (typeof v === 'object' && v !== null && Object.keys(v).length === 0)) continue;
    out[k] = v;
  }
  return out;
}

describe('fleet-object codec: protobuf agrees with JSON', () => {
  const pbMetadata = metadata.map((md) => {
    const { managedFields: _m, ...rest } = md as Doc;
    return rest;
  });

  it('on objects, lists and the way back', () => {
    fc.assert(fc.property(pbMetadata, clusterName, (md, cluster) => {
      const parsed = parsedJsonCodec.objectToFleet(clone({ kind: 'ConfigMap', metadata: md }), cluster)!.body['metadata'] as Doc;
      const answer = protobufCodec.objectToFleet(protobufBody('ConfigMap', md), cluster)!;
      expect(comparable(metadataOf(itemOfBody(answer.body)))).toEqual(comparable(parsed));
      const list = protobufCodec.listToFleet(writeProtobufList({ kind: 'ConfigMapList', apiVersion: 'v1', metadata: { resourceVersion: '1' }, items: [protobufItem(md)] }), cluster)!;
      expect(comparable(metadataOf(list.items[0]!))).toEqual(comparable(parsed));
      const back = protobufCodec.objectToMember(answer.body, cluster)!;
      expect(comparable(metadataOf(itemOfBody(back)))).toEqual(comparable(parsedJsonCodec.objectToMember({ kind: 'ConfigMap', metadata: clone(parsed) }, cluster)!['metadata'] as Doc));
    }), { numRuns: 200 });
  });
});

describe('the watch RV edit', () => {
  it('edits metadata.resourceVersion wherever it is, not a key of the same bytes elsewhere', () => {
    const mark = encodeGlobalRV({ east: '9', west: '3' });
    fc.assert(fc.property(object(metadata), fc.boolean(), (o, specFirst) => {
      // A spec key or label spelled resourceVersion, before metadata or before its own resourceVersion.
      const decoy = { resourceVersion: 'decoy' };
      const { labels: _own, ...rest } = o.metadata;
      const md = { labels: decoy, ...rest };
      const shown = specFirst ? { spec: decoy, ...o, metadata: md } : { ...o, metadata: md };
      const edited = json(withResourceVersion(Buffer.from(JSON.stringify(shown)), mark));
      expect(edited.metadata.resourceVersion).toBe(o.metadata['resourceVersion'] === undefined ? undefined : mark);
      expect(edited.metadata.labels).toEqual(decoy);
      if (specFirst) expect(edited.spec).toEqual(decoy);
      expect(JSON.parse(metadataWithResourceVersion(JSON.stringify(md), mark)).resourceVersion).toBe(o.metadata['resourceVersion'] === undefined ? undefined : mark);
    }), { numRuns: 200 });
  });
});
