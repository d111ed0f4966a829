import { describe, expect, it } from 'vitest';
import { BinaryReader, BinaryWriter, WireType } from '@bufbuild/protobuf/wire';
import { editProtobufObject } from '../../../src/api/protobuf-object.js';
import { requestBodyForMember, responseForClient } from '../../../src/forward/translate.js';
import { decodeGlobalRV, encodeGlobalRV } from '../../../src/api/global-rv.js';
import { StatusError } from '../../../src/api/status.js';

/**
 * Kubernetes protobuf bodies as client-go and the apiserver write them (k8s\0, runtime.Unknown
 * {typeMeta, raw}), built here field by field, and read back the same way.
 */
const CLUSTER = 'search.flotilla.io/cluster';
const PROTOBUF = 'application/vnd.kubernetes.protobuf';

type Value = string | Uint8Array | Message | number;
type Message = [number, Value][];

function encode(m: Message): Uint8Array {
  const w = new BinaryWriter();
  for (const [no, v] of m) {
    if (typeof v === 'number') w.tag(no, WireType.Varint).int64(v);
    else if (typeof v === 'string') w.tag(no, WireType.LengthDelimited).string(v);
    else if (v instanceof Uint8Array) w.tag(no, WireType.LengthDelimited).bytes(v);
    else w.tag(no, WireType.LengthDelimited).bytes(encode(v));
  }
  return w.finish();
}

function body(kind: string, object: Message): Buffer {
  return Buffer.concat([Buffer.from('k8s\0', 'latin1'), encode([[1, [[1, 'v1'], [2, kind]]], [2, encode(object)], [3, ''], [4, '']])]);
}

/** Field number → values (length-delimited ones as bytes), in order. */
function read(bytes: Uint8Array): [number, Uint8Array | bigint | string][] {
  const r = new BinaryReader(bytes);
  const out: [number, Uint8Array | bigint | string][] = [];
  while (r.pos < r.len) {
    const [no, type] = r.tag();
    out.push([no, type === WireType.LengthDelimited ? r.bytes() : r.int64()]);
  }
  return out;
}
const str = (b: Uint8Array | bigint | string | undefined) => Buffer.from(b as Uint8Array).toString('utf8');
const field = (m: ReturnType<typeof read>, no: number) => m.filter(([n]) => n === no).map(([, v]) => v);

/** The object of a body, and its metadata: name, RV, annotations (in order), other fields. */
function parts(b: Buffer) {
  const unknown = read(b.subarray(4));
  const object = read(field(unknown, 2)[0] as Uint8Array);
  const meta = read(field(object, 1)[0] as Uint8Array);
  const annotations = field(meta, 12).map((e) => read(e as Uint8Array)).map((e) => [str(field(e, 1)[0]), str(field(e, 2)[0])]);
  return { unknown, object, meta, annotations, rv: field(meta, 6).map(str)[0], rest: object.filter(([n]) => n !== 1) };
}

const DATA: Message = [[1, 'k'], [2, 'v'.repeat(300)]];
function configMap(rv: string, annotations: [string, string][]): Message {
  return [
    [1, [[1, 'cm'], [3, 'ns'], [5, 'uid-1'], [6, rv], [7, 3], [11, [[1, 'app'], [2, 'web']]], ...annotations.map(([k, v]): [number, Message] => [12, [[1, k], [2, v]]])]],
    [2, DATA],
  ];
}

describe('protobuf bodies on the way to a member', () => {
  it('an update read from flotilla: the member’s RV, no cluster annotation, every other byte as sent', () => {
    const sent = body('ConfigMap', configMap(encodeGlobalRV({ east: '42', west: '7' }), [['a', '1'], [CLUSTER, 'east'], ['z', '2']]));
    const out = requestBodyForMember(sent, PROTOBUF, 'east')!;
    const p = parts(out);
    expect(p.rv).toBe('42');
    expect(p.annotations).toEqual([['a', '1'], ['z', '2']]);
    expect(p.rest).toEqual(parts(sent).rest);
    expect(field(p.meta, 7)).toEqual([3n]);
    expect(str(field(p.meta, 5)[0])).toBe('uid-1');
    expect(field(p.unknown, 1)).toEqual(field(parts(sent).unknown, 1));
  });

  it('a namespace read from flotilla and written back: its tree labels stay behind, in protobuf and JSON', () => {
    const TREE = 'team-a.tree.hnc.x-k8s.io/depth';
    const ns = (labels: [string, string][]): Message => [[1, [[1, 'a-1'], [6, encodeGlobalRV({ east: '42' })], ...labels.map(([k, v]): [number, Message] => [11, [[1, k], [2, v]]])]]];
    const out = parts(requestBodyForMember(body('Namespace', ns([['app', 'web'], [TREE, '1'], ['a-1.tree.hnc.x-k8s.io/depth', '0']])), PROTOBUF, 'east')!);
    expect(field(out.meta, 11).map((e) => read(e as Uint8Array)).map((e) => str(field(e, 1)[0]))).toEqual(['app']);
    // A label so named on another kind is the user's own.
    const pod = parts(requestBodyForMember(body('Pod', ns([[TREE, '1']])), PROTOBUF, 'east')!);
    expect(field(pod.meta, 11)).toHaveLength(1);
    const json = requestBodyForMember(Buffer.from(JSON.stringify({ kind: 'Namespace', apiVersion: 'v1', metadata: { name: 'a-1', labels: { app: 'web', [TREE]: '1' } } })), 'application/json', 'east')!;
    expect(JSON.parse(json.toString()).metadata.labels).toEqual({ app: 'web' });
  });

  it('an RV read from another cluster is the 409 a JSON body gets', () => {
    const sent = body('ConfigMap', configMap(encodeGlobalRV({ west: '7' }), []));
    expect(() => requestBodyForMember(sent, PROTOBUF, 'east')).toThrow(StatusError);
    try {
      requestBodyForMember(sent, PROTOBUF, 'east');
    } catch (e) {
      expect((e as StatusError).code).toBe(409);
    }
  });

  it('a body with nothing of flotilla’s goes byte for byte; a create without an RV too', () => {
    const plain = body('ConfigMap', configMap('42', [['a', '1']]));
    expect(requestBodyForMember(plain, PROTOBUF, 'east')!.equals(plain)).toBe(true);
    const create = body('Pod', [[1, [[1, 'p']]], [2, [[1, 'spec']]]]);
    expect(requestBodyForMember(create, PROTOBUF, 'east')!.equals(create)).toBe(true);
  });

  it('DeleteOptions: a resourceVersion precondition is the member’s', () => {
    const sent = body('DeleteOptions', [[1, 0], [2, [[1, 'uid-1'], [2, encodeGlobalRV({ east: '42' })]]], [4, 'Background']]);
    const out = read(read(requestBodyForMember(sent, PROTOBUF, 'east')!.subarray(4)).find(([n]) => n === 2)![1] as Uint8Array);
    const pre = read(field(out, 2)[0] as Uint8Array);
    expect(str(field(pre, 2)[0])).toBe('42');
    expect(str(field(pre, 1)[0])).toBe('uid-1');
    expect(str(field(out, 4)[0])).toBe('Background');
  });

  it('lists, other content and bodies that do not parse go as they came', () => {
    const list = body('ConfigMapList', [[1, [[2, '5']]], [2, configMap('5', [])]]);
    expect(requestBodyForMember(list, PROTOBUF, 'east')!.equals(list)).toBe(true);
    const broken = Buffer.concat([Buffer.from('k8s\0', 'latin1'), Buffer.from([0x0a, 0xff, 0xff, 0x01])]);
    expect(requestBodyForMember(broken, PROTOBUF, 'east')!.equals(broken)).toBe(true);
    expect(editProtobufObject(Buffer.from('{"kind":"ConfigMap"}'), {})).toBeUndefined();
  });
});

describe('protobuf answers on the way to the client', () => {
  it('a written object: the global RV and the cluster annotation, as a JSON answer gets', () => {
    const answer = responseForClient(body('ConfigMap', configMap('43', [['a', '1']])), PROTOBUF, 'east');
    const p = parts(answer.body);
    expect(decodeGlobalRV(p.rv!)).toEqual({ east: '43' });
    expect(p.annotations).toEqual([['a', '1'], [CLUSTER, 'east']]);
    expect(answer.rv).toBe('43');
    expect(answer.facts).toMatchObject({ kind: 'ConfigMap', name: 'cm', deleting: false });
    expect(p.rest.map(([n, v]) => [n, Buffer.from(v as Uint8Array).toString('hex')])).toEqual([[2, Buffer.from(encode(DATA)).toString('hex')]]);
  });

  it('an object without annotations gets the map; one being deleted says so', () => {
    const answer = responseForClient(body('Pod', [[1, [[1, 'p'], [6, '9'], [9, [[1, 5]]]]]]), PROTOBUF, 'west');
    expect(parts(answer.body).annotations).toEqual([[CLUSTER, 'west']]);
    expect(answer.facts!.deleting).toBe(true);
  });

  it('a Status is not annotated', () => {
    const answer = responseForClient(body('Status', [[1, [[2, '']]], [2, 'Success']]), PROTOBUF, 'east');
    expect(answer.facts!.kind).toBe('Status');
    expect(answer.rv).toBeUndefined();
  });
});
