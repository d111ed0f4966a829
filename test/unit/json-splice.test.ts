import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { objectMembers } from '../../src/util/json-members.js';
import { parsedAnswer, responseForClient, splicedAnswer } from '../../src/forward/translate.js';
import { encodeGlobalRV } from '../../src/api/global-rv.js';

const CLUSTER = 'search.flotilla.io/cluster';

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
      fc.property(object, fc.constantFrom(0, 2), fc.constantFrom('west', 'east-1'), (doc, indent, cluster) => {
        const body = Buffer.from(JSON.stringify(doc, null, indent));
        const spliced = splicedAnswer(body, cluster);
        const parsed = parsedAnswer(body, cluster);
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
