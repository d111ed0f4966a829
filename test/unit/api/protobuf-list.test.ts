import { describe, expect, it } from 'vitest';
import { readProtobufList, writeProtobufList, type ProtobufList } from '../../../src/api/protobuf-list.js';
import { editProtobufItem } from '../../../src/api/protobuf-object.js';
import { decodeProtobufAnswer, fieldAt } from '../../support/protobuf-tree.js';

const str = (no: number, s: string) => Buffer.concat([Buffer.from([(no << 3) | 2, Buffer.byteLength(s)]), Buffer.from(s)]);
const msg = (no: number, inner: Buffer) => Buffer.concat([Buffer.from([(no << 3) | 2, inner.length]), inner]);
/** A ConfigMap message as a list holds it: metadata {name 1, resourceVersion 6}, data {k: v}. */
const configMap = (name: string, rv: string) => Buffer.concat([msg(1, Buffer.concat([str(1, name), str(6, rv)])), msg(2, Buffer.concat([str(1, 'k'), str(2, 'v')]))]);

describe('protobuf lists', () => {
  const list: ProtobufList = { apiVersion: 'v1', kind: 'ConfigMapList', metadata: { resourceVersion: '17', continue: 'next', remainingItemCount: 3 }, items: [configMap('a', '5'), configMap('b', '6')] };

  it('are read back as written, items byte for byte', () => {
    const read = readProtobufList(writeProtobufList(list))!;
    expect(read.kind).toBe('ConfigMapList');
    expect(read.metadata).toEqual(list.metadata);
    expect(read.items.map((i) => Buffer.from(i))).toEqual(list.items);
  });

  it('are written with the fields Go writes: an empty selfLink and continue, no remainingItemCount unless known', () => {
    const tree = decodeProtobufAnswer(writeProtobufList({ ...list, metadata: { resourceVersion: '17' } }));
    expect(fieldAt(tree, 2, 1)).toEqual([[1, ''], [2, '17'], [3, '']]);
    expect(fieldAt(tree, 3)).toBe('');
    expect(fieldAt(tree, 4)).toBe('');
  });

  it('are told from an object, a Status and bytes that are no protobuf', () => {
    const object = Buffer.concat([Buffer.from('k8s\0', 'latin1'), msg(1, Buffer.concat([str(1, 'v1'), str(2, 'ConfigMap')])), msg(2, configMap('a', '5'))]);
    expect(readProtobufList(object)).toBeUndefined();
    expect(readProtobufList(Buffer.from('{"kind":"ConfigMapList"}'))).toBeUndefined();
    expect(readProtobufList(Buffer.concat([Buffer.from('k8s\0', 'latin1'), Buffer.from([0x0a, 0x40])]))).toBeUndefined();
  });

  it('have their items edited as objects are: the RV, an annotation, every other byte kept', () => {
    const edited = editProtobufItem(configMap('a', '5'), 'ConfigMap', { resourceVersion: (rv) => `g${rv}`, setAnnotation: { key: 'c', value: 'east', when: () => true } });
    const body = Buffer.concat([Buffer.from('k8s\0', 'latin1'), msg(1, Buffer.concat([str(1, 'v1'), str(2, 'ConfigMap')])), msg(2, Buffer.from(edited))]);
    const tree = decodeProtobufAnswer(body);
    expect(fieldAt(tree, 2, 1)).toEqual([[1, 'a'], [6, 'g5'], [12, [[1, 'c'], [2, 'east']]]]);
    expect(fieldAt(tree, 2, 2)).toEqual([[1, 'k'], [2, 'v']]);
  });
});
