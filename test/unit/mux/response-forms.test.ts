import { describe, expect, it } from 'vitest';
import type { TableColumn } from '../../../src/api/table.js';
import type { MetaRecord } from '../../../src/store/meta-record.js';
import { encodeColumnDefinitions, encodePartialMetadata, tableLayout, openTable, encodeTableRow, TABLE_CLOSING } from '../../../src/mux/response-forms.js';

/**
 * The one encoder of each response form, as lists, gets and watches use it: a Table row, a
 * PartialObjectMetadata, the Table around rows.
 */
const columns: TableColumn[] = [
  { name: 'Name', type: 'string', format: 'name', description: '', priority: 0 },
  { name: 'Ready', type: 'string', format: '', description: '', priority: 0 },
  { name: 'Age', type: 'string', format: '', description: '', priority: 0 },
];
const metadata = '{"name":"p1","namespace":"a","resourceVersion":"ZXhhbXBsZQ"}';
const object = Buffer.from(`{"kind":"Pod","apiVersion":"v1","metadata":${metadata},"spec":{}}`);
const meta: MetaRecord = {
  uid: 'u1', rv: '7', created: '2026-11-29T00:00:00Z', cells: ['p1', '1/1', '5m'],
  metadataSpan: [object.indexOf('"metadata":') + 11, Buffer.byteLength(metadata)],
};
const now = Date.parse('2026-11-29T00:10:00Z');
const layout = tableLayout(columns);
const row = (includeObject: 'Object' | 'Metadata' | 'None' | undefined, mark?: string) =>
  JSON.parse(encodeTableRow(layout, includeObject, 'east', 'p1', object, meta, now, mark)) as { cells: unknown[]; object: { kind?: string; metadata?: { resourceVersion?: string } } | null };

describe('response forms', () => {
  it('writes a Table row: the member’s cells, Age reprinted, the Cluster cell after the name', () => {
    expect(row(undefined).cells).toEqual(['p1', 'east', '1/1', '10m']);
  });

  it('gives the row the object includeObject asks for: its PartialObjectMetadata by default, the object, or null', () => {
    expect(row(undefined).object).toEqual({ kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: JSON.parse(metadata) });
    expect(row('Metadata').object).toEqual(row(undefined).object);
    expect(row('Object').object).toEqual(JSON.parse(object.toString()));
    expect(row('None').object).toBeNull();
  });

  it('stamps a watch event’s mark on the row object, whichever includeObject asks for', () => {
    expect(row('Object', 'bWFyaw').object!.metadata!.resourceVersion).toBe('bWFyaw');
    expect(row(undefined, 'bWFyaw').object!.metadata!.resourceVersion).toBe('bWFyaw');
    expect(row('Object').object!.metadata!.resourceVersion).toBe('ZXhhbXBsZQ');
  });

  it('names a row’s cells Name and Age when the member sent none', () => {
    const bare = encodeTableRow(tableLayout([columns[0]!, columns[2]!]), 'None', 'west', 'p1', object, { ...meta, cells: undefined }, now);
    expect(JSON.parse(bare)).toEqual({ cells: ['p1', 'west', '10m'], object: null });
  });

  it('writes a PartialObjectMetadata from the metadata span, at a mark when given', () => {
    expect(JSON.parse(encodePartialMetadata(object, meta))).toEqual({ kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: JSON.parse(metadata) });
    expect(JSON.parse(encodePartialMetadata(object, meta, 'bWFyaw')).metadata.resourceVersion).toBe('bWFyaw');
    expect(JSON.parse(encodePartialMetadata(object, undefined)).metadata).toEqual({});
  });

  it('frames a Table with the Cluster column among the definitions', () => {
    const table = JSON.parse(`${openTable('"resourceVersion":"1"', encodeColumnDefinitions(columns))}${encodeTableRow(layout, 'None', 'east', 'p1', object, meta, now)}${TABLE_CLOSING}`);
    expect(table.columnDefinitions.map((c: TableColumn) => c.name)).toEqual(['Name', 'Cluster', 'Ready', 'Age']);
    expect(table.metadata).toEqual({ resourceVersion: '1' });
    expect(table.rows).toHaveLength(1);
  });
});
