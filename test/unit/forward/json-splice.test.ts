import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { objectMembers } from '../../../src/util/json-members.js';
import { responseForClient } from '../../../src/forward/translate.js';
import { SplicedListReader, parsedAnswer, splicedAnswer, splicedList, toFleet, type SplicedList } from '../../../src/api/fleet-object/index.js';
import { joinPieces } from '../../../src/util/byte-edits.js';
import { encodeGlobalRV } from '../../../src/api/global-rv.js';

const CLUSTER = 'search.flotilla.io/cluster';

/** The list read as it arrives, in chunks ending at `cuts` (fractions of the body), and as readers of it see it. */
function splicedInChunks(body: Buffer, cluster: string, cuts: readonly number[]): { spliced: SplicedList | undefined; body: Buffer } {
  // Read after every chunk, as if each were a batch.
  const reader = new SplicedListReader(cluster, { scanBatch: 1 });
  let from = 0;
  for (const cut of [...cuts].sort((a, b) => a - b)) {
    const to = Math.floor(cut * body.length);
    if (to > from) reader.push(body.subarray(from, to));
    from = Math.max(from, to);
  }
  reader.push(body.subarray(from));
  return { spliced: reader.end(), body: reader.body };
}

/** What a spliced list shows: its head, count and items' bytes. */
function shown(s: SplicedList | undefined, body: Buffer): unknown {
  return s && { head: s.head, count: s.count, table: s.table, items: joinPieces(s.items, body).toString() };
}

/** Cut points for splicedInChunks: none, a few anywhere, or many (a byte at a time near them). */
const cuts = fc.oneof(fc.constant([]), fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { maxLength: 6 }), fc.constant(Array.from({ length: 400 }, (_, i) => i / 400)));

describe('JSON members read in place', () => {
  it('finds each member’s value bytes, skipping nested strings, escapes and brackets', () => {
    const text = ' { "a" : "x\\"}]{" , "b":{"c":[1,{"d":"}"}]},"e":-1.5e3 ,"f":null,"g":true}';
    const buf = Buffer.from(text);
    const r = objectMembers(buf, 0)!;
    expect(r.members.map((m) => [m.key, buf.toString('utf8', m.start, m.end)])).toEqual([
      ['a', '"x\\"}]{"'],
      ['b', '{"c":[1,{"d":"}"}]}'],
      ['e', '-1.5e3'],
      ['f', 'null'],
      ['g', 'true'],
    ]);
    expect(buf[r.close]).toBe(0x7d);
    expect(r.close).toBe(text.length - 1);
  });

  it('gives up on what is not an object or is cut short', () => {
    for (const bad of ['[1,2]', '{"a":', '{"a":"x', '{"a" 1}', '{"a":1,}', '{"a":{"b":1}', 'null']) {
      expect(objectMembers(Buffer.from(bad), 0), bad).toBeUndefined();
    }
    expect(objectMembers(Buffer.from('{}'), 0)).toEqual({ members: [], close: 1 });
  });
});

/** Objects as members answer writes: metadata of every shape the splice must handle, keys in any order. */
const member = fc.string({ unit: 'binary', maxLength: 12 });
const anyJson = fc.jsonValue({ maxDepth: 3 });
const metadata = fc.record(
  {
    name: fc.oneof(member, fc.integer()),
    resourceVersion: fc.oneof(fc.stringMatching(/^[0-9]{1,8}$/), fc.constant(''), fc.integer()),
    annotations: fc.oneof(
      fc.constant(null),
      fc.dictionary(fc.oneof(member, fc.constant(CLUSTER)), fc.oneof(member, anyJson)),
    ),
    labels: fc.dictionary(member, member),
    managedFields: fc.array(anyJson, { maxLength: 3 }),
  },
  { requiredKeys: [] },
);
const object = fc.record(
  {
    kind: fc.constantFrom('Pod', 'ConfigMap', 'Status', 'Deployment'),
    apiVersion: fc.constant('v1'),
    metadata: fc.oneof({ weight: 8, arbitrary: metadata }, { weight: 1, arbitrary: fc.constant(null) }),
    spec: anyJson,
    status: anyJson,
  },
  { requiredKeys: [] },
);

describe('answers spliced in place', () => {
  it('agree with parsing and re-serializing, for any object and key order', () => {
    fc.assert(
      fc.property(object, fc.constantFrom(0, 2), fc.constantFrom('west', 'east-1'), fc.boolean(), (doc, indent, cluster, dropManagedFields) => {
        const body = Buffer.from(JSON.stringify(doc, null, indent));
        const spliced = splicedAnswer(body, cluster, { dropManagedFields });
        const parsed = parsedAnswer(body, cluster, { dropManagedFields });
        // Only a body it does not follow falls back: metadata that is not an object, or a key it
        // looks among that is written with escapes (it could spell resourceVersion).
        const escaped = (o: unknown) => typeof o === 'object' && o !== null && Object.keys(o).some((k) => JSON.stringify(k).includes('\\'));
        const md = doc.metadata as { annotations?: unknown } | null | undefined;
        if (md !== null && !escaped(doc) && !escaped(md) && !escaped(md?.annotations)) expect(spliced).toBeDefined();
        if (!spliced) return;
        expect(JSON.parse(spliced.body.toString())).toEqual(JSON.parse(parsed.body.toString()));
        expect(spliced.rv).toBe(parsed.rv);
      }),
      { numRuns: 2000 },
    );
  });

  it('keeps every byte it does not change, and lists still go through parsing', () => {
    const body = Buffer.from('{"kind":"Pod","metadata":{"name":"p","resourceVersion":"42","labels":{"a":"b"}},"spec":{"x":"y"}}');
    const a = responseForClient(body, 'application/json', 'west');
    expect(a.rv).toBe('42');
    expect(a.body.toString()).toBe(
      `{"kind":"Pod","metadata":{"name":"p","resourceVersion":${JSON.stringify(encodeGlobalRV({ west: '42' }))},"labels":{"a":"b"},"annotations":{"${CLUSTER}":"west"}},"spec":{"x":"y"}}`,
    );
    const list = Buffer.from(JSON.stringify({ kind: 'PodList', metadata: { resourceVersion: '5' }, items: [{ metadata: { name: 'a', resourceVersion: '3' } }] }));
    expect(splicedAnswer(list, 'west')).toBeUndefined();
    expect(JSON.parse(responseForClient(list, 'application/json', 'west').body.toString()).items[0].metadata.annotations).toEqual({ [CLUSTER]: 'west' });
  });
});

/** A list item as a live read shows it when parsed (forward/live/member-answers.ts merged): the list's kind where it has none, then toFleet. */
/** An item as flotilla shows it: toFleet's edits, its kind and apiVersion (or their absence) the member's. */
function shownItem(item: unknown, cluster: string): unknown {
  if (typeof item !== 'object' || item === null || Array.isArray(item)) return item;
  toFleet(item as Record<string, unknown>, cluster);
  return item;
}

describe('list answers spliced in place', () => {
  // Items as members list them: built-in kinds without kind and apiVersion, custom ones with both.
  const item = fc.oneof(object.map(({ kind: _k, apiVersion: _a, ...rest }) => rest), object, fc.constant(null));
  const list = fc.record({
    kind: fc.constantFrom('ConfigMapList', 'PodList', 'List', 'PartialObjectMetadataList'),
    apiVersion: fc.constantFrom('v1', 'meta.k8s.io/v1'),
    metadata: fc.record({ resourceVersion: fc.stringMatching(/^[0-9]{1,8}$/), continue: fc.string() }, { requiredKeys: ['resourceVersion'] }),
    items: fc.array(item, { maxLength: 6 }),
  });

  it('agree with parsing each item and re-serializing it, for any list', () => {
    fc.assert(
      fc.property(list, fc.constantFrom(0, 2), fc.constantFrom('west', 'east-1'), fc.boolean(), cuts, (doc, indent, cluster, sortedKeys, at) => {
        // Custom resources' lists come with their keys sorted (items before kind), built-in ones not.
        const ordered = sortedKeys ? { apiVersion: doc.apiVersion, items: doc.items, kind: doc.kind, metadata: doc.metadata } : doc;
        const body = Buffer.from(JSON.stringify(ordered, null, indent));
        const spliced = splicedList(body, cluster);
        // Read as it arrives, in any chunks: the same list.
        const chunked = splicedInChunks(body, cluster, at);
        expect(shown(chunked.spliced, chunked.body)).toEqual(shown(spliced, body));
        const expected = (JSON.parse(body.toString()) as typeof doc).items.map((i) => shownItem(i, cluster));
        // Only what it does not follow falls back: metadata that is not an object, a key it looks
        // among written with escapes.
        const escaped = (o: unknown) => typeof o === 'object' && o !== null && Object.keys(o).some((k) => JSON.stringify(k).includes('\\'));
        const follows = doc.items.every((i) => {
          if (i === null) return true;
          const md = (i as { metadata?: { annotations?: unknown } | null }).metadata;
          return md !== null && !escaped(i) && !escaped(md) && !escaped(md?.annotations);
        });
        if (follows) expect(spliced).toBeDefined();
        if (!spliced) return;
        expect(spliced.head).toEqual({ kind: doc.kind, apiVersion: doc.apiVersion, metadata: doc.metadata });
        expect(spliced.count).toBe(doc.items.length);
        expect(JSON.parse(`[${joinPieces(spliced.items, body).toString()}]`)).toEqual(expected);
      }),
      { numRuns: 2000 },
    );
  });

  it('agree with parsing each row of a Table, for any Table', () => {
    const row = fc.record({ cells: fc.array(anyJson, { maxLength: 4 }), object: fc.oneof(object, fc.constant(null)) }, { requiredKeys: ['cells'] });
    const table = fc.record({
      kind: fc.constant('Table'),
      apiVersion: fc.constant('meta.k8s.io/v1'),
      metadata: fc.record({ resourceVersion: fc.stringMatching(/^[0-9]{1,8}$/) }),
      columnDefinitions: fc.array(fc.record({ name: member, type: fc.constantFrom('string', 'integer'), format: fc.constantFrom('', 'name'), priority: fc.constantFrom(0, 1) }), { maxLength: 3 }),
      rows: fc.array(row, { maxLength: 5 }),
    });
    fc.assert(
      fc.property(table, fc.constantFrom(0, 2), fc.constantFrom('west', 'east-1'), cuts, (doc, indent, cluster, at) => {
        const body = Buffer.from(JSON.stringify(doc, null, indent));
        const spliced = splicedList(body, cluster);
        const chunked = splicedInChunks(body, cluster, at);
        expect(shown(chunked.spliced, chunked.body)).toEqual(shown(spliced, body));
        const expected = (JSON.parse(body.toString()) as typeof doc).rows.map((r) => {
          if (r.object) toFleet(r.object as Record<string, unknown>, cluster);
          // The cluster right after the name column shown by default (else first), or last of fewer cells.
          const name = doc.columnDefinitions.findIndex((c) => c.format === 'name' && c.priority === 0);
          const at = Math.min(name + 1, r.cells.length);
          return { ...r, cells: [...r.cells.slice(0, at), cluster, ...r.cells.slice(at)] };
        });
        const escaped = (o: unknown) => typeof o === 'object' && o !== null && Object.keys(o).some((k) => JSON.stringify(k).includes('\\'));
        const follows = doc.rows.every((r) => {
          const md = (r.object as { metadata?: { annotations?: unknown } | null } | null)?.metadata;
          return !r.object || (md !== null && !escaped(r.object) && !escaped(md) && !escaped(md?.annotations));
        });
        if (follows) expect(spliced).toBeDefined();
        if (!spliced) return;
        expect(spliced.table).toBe(true);
        expect(spliced.head).toEqual({ kind: 'Table', apiVersion: doc.apiVersion, metadata: doc.metadata, columnDefinitions: doc.columnDefinitions });
        expect(spliced.count).toBe(doc.rows.length);
        expect(JSON.parse(`[${joinPieces(spliced.items, body).toString()}]`)).toEqual(expected);
      }),
      { numRuns: 1000 },
    );
  });

  it('reads a member’s list of built-in objects; leaves what it cannot follow to parsing', () => {
    const body = Buffer.from(JSON.stringify({ kind: 'ConfigMapList', apiVersion: 'v1', metadata: { resourceVersion: '9' }, items: [{ metadata: { name: 'a', namespace: 'n', resourceVersion: '3', annotations: { x: 'y' } }, data: { k: 'v' } }, { metadata: { name: 'b', resourceVersion: '4' } }] }));
    const s = splicedList(body, 'west')!;
    expect(s.count).toBe(2);
    expect(joinPieces(s.items, body).toString()).toBe(
      `{"metadata":{"name":"a","namespace":"n","resourceVersion":${JSON.stringify(encodeGlobalRV({ west: '3' }))},"annotations":{"x":"y","${CLUSTER}":"west"}},"data":{"k":"v"}},` +
        `{"metadata":{"name":"b","resourceVersion":${JSON.stringify(encodeGlobalRV({ west: '4' }))},"annotations":{"${CLUSTER}":"west"}}}`,
    );
    expect(splicedList(Buffer.from('{"kind":"ConfigMapList","apiVersion":"v1","metadata":{},"items":[]}'), 'west')).toEqual({ head: { kind: 'ConfigMapList', apiVersion: 'v1', metadata: {} }, items: [], count: 0 });
    for (const bad of [
      '{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{},"columnDefinitions":[],"rows":[null]}',
      '{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{},"columnDefinitions":[],"rows":[{"object":{}}]}',
      '{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{},"columnDefinitions":[],"rows":[{"cells":{}}]}',
      '{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{},"columnDefinitions":[]}',
      '{"kind":"ConfigMapList","apiVersion":"v1","metadata":{},"items":[{"metadata":{"name":"a"}}],"items":[]}',
      '{"apiVersion":"v1","items":[{"metadata":{"name":"a"}}],"rows":[],"items":[],"kind":"ConfigMapList"}',
      '{"kind":"ConfigMapList","apiVersion":"v1","metadata":{},"items":[{"metadata":{"name":"a","resourceVersio\\u006e":"1"}}]}',
      '{"kind":"ConfigMapList","apiVersion":"v1","metadata":{},"items":[{"metadata":"x"}]}',
      // Keys that parse as the ones it looks for, spelled with escapes, at each level.
      '{"kind":"ConfigMapList","apiVersion":"v1","metadata":{},"items":[{"met\\u0061data":{"name":"a","resourceVersion":"1"}}]}',
      '{"kind":"ConfigMapList","apiVersion":"v1","metadata":{},"items":[{"k\\u0069nd":"Status","metadata":{"name":"a"}}]}',
      '{"kind":"ConfigMapList","apiVersion":"v1","metadata":{},"items":[{"metadata":{"name":"a","\\u0061nnotations":{"x":"y"}}}]}',
    ]) {
      expect(splicedList(Buffer.from(bad), 'west'), bad).toBeUndefined();
      expect(splicedInChunks(Buffer.from(bad), 'west', Array.from({ length: bad.length }, (_, i) => i / bad.length)).spliced, bad).toBeUndefined();
    }
    expect(splicedList(Buffer.from('{"items":[{"metadata":{"name":"a"}}],"kind":"ConfigMapList"}'), 'west')?.count).toBe(1);
    expect(splicedList(Buffer.from('{"items":[],"kind":"Table"}'), 'west')).toBeUndefined();
    expect(splicedList(Buffer.from('{"rows":[{"cells":[1]}],"kind":"Table"}'), 'west')?.count).toBe(1);
    // Rows before their columns: placed by the columns all the same (after the name column).
    const rowsFirst = Buffer.from('{"kind":"Table","rows":[{"cells":["a",1]}],"columnDefinitions":[{"name":"Name","format":"name","priority":0},{"name":"N"}]}');
    expect(JSON.parse(`[${joinPieces(splicedList(rowsFirst, 'west')!.items, rowsFirst).toString()}]`)).toEqual([{ cells: ['a', 'west', 1] }]);
    expect(splicedList(Buffer.from('{"items":[{"metadata":{"name":"a"}}]}'), 'west')).toBeUndefined();
    expect(splicedList(Buffer.from('{"kind":"ConfigMapList","items":[]} x'), 'west')).toBeUndefined();
    // Cut short: no list, however it arrived.
    const cut = body.subarray(0, body.length - 1);
    expect(splicedList(cut, 'west')).toBeUndefined();
    expect(splicedInChunks(cut, 'west', [0.5]).spliced).toBeUndefined();
  });

  it('splices a list’s items while the rest is still arriving', () => {
    const items = Array.from({ length: 2000 }, (_, i) => ({ metadata: { name: `cm-${i}`, namespace: 'n', resourceVersion: String(i + 1) }, data: { k: 'v'.repeat(100) } }));
    const body = Buffer.from(JSON.stringify({ kind: 'ConfigMapList', apiVersion: 'v1', metadata: { resourceVersion: '9' }, items }));
    const reader = new SplicedListReader('west');
    const half = Math.floor(body.length / 2);
    // In the ~2 KB chunks a member writes.
    for (let at = 0; at < half; at += 2048) reader.push(body.subarray(at, Math.min(at + 2048, half)));
    expect(reader.itemsSoFar).toBeGreaterThan(800);
    reader.push(body.subarray(half));
    const list = reader.end()!;
    expect(list.count).toBe(2000);
    expect(shown(list, reader.body)).toEqual(shown(splicedList(body, 'west'), body));
  });
});
