import { describe, expect, it } from 'vitest';
import { storedTypeMeta, withoutTypeMeta, type ItemBytes } from '../../../src/mux/item-type-meta.js';
import type { CutBytes } from '../../../src/util/byte-edits.js';

/** The bytes an item stands for, however it is held. */
function bytesOf(item: ItemBytes): string {
  if (Buffer.isBuffer(item)) return item.toString();
  if (Array.isArray(item)) return Buffer.concat(item as Buffer[]).toString();
  const cut = item as CutBytes;
  return Buffer.concat([cut.src.subarray(0, cut.from), cut.src.subarray(cut.to)]).toString();
}

describe('list items without their kind', () => {
  const typeMeta = storedTypeMeta('ConfigMap', 'v1');
  const stored = Buffer.from('{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a","namespace":"acme-shop"},"data":{"k":"v"}}');

  it('cuts the kind and apiVersion a stored object starts with', () => {
    expect(typeMeta.toString()).toBe('{"kind":"ConfigMap","apiVersion":"v1",');
    expect(bytesOf(withoutTypeMeta(stored, typeMeta))).toBe('{"metadata":{"name":"a","namespace":"acme-shop"},"data":{"k":"v"}}');
  });

  it('keeps a tenant cut and a presentation in pieces', () => {
    const at = stored.indexOf('acme-');
    const tenantCut: CutBytes = { src: stored, from: at, to: at + 'acme-'.length };
    expect(bytesOf(withoutTypeMeta(tenantCut, typeMeta))).toBe('{"metadata":{"name":"a","namespace":"shop"},"data":{"k":"v"}}');
    const pieces = [stored.subarray(0, at), stored.subarray(at + 'acme-'.length)];
    expect(bytesOf(withoutTypeMeta(pieces, typeMeta))).toBe('{"metadata":{"name":"a","namespace":"shop"},"data":{"k":"v"}}');
  });

  it('leaves bytes that do not start with the kind as they are', () => {
    const other = Buffer.from('{"kind":"Secret","apiVersion":"v1","metadata":{"name":"a"}}');
    expect(withoutTypeMeta(other, typeMeta)).toBe(other);
    const empty = Buffer.alloc(0);
    expect(withoutTypeMeta(empty, typeMeta)).toBe(empty);
    expect(bytesOf(withoutTypeMeta([other], typeMeta))).toBe(other.toString());
  });
});
