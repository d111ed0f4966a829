import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { objectMembers, parseSpan } from '../../../src/util/json-members.js';

/**
 * The byte walker's two shortcuts must give what JSON.parse gives: a string span read without
 * parsing it, and a key handed out again from the strings already made for earlier keys.
 */
describe('json-members', () => {
  it('reads any value span as JSON.parse does, strings without escapes included', () => {
    const value = fc.oneof(fc.jsonValue(), fc.string({ unit: 'grapheme' }), fc.string({ unit: 'binary' }), fc.constantFrom('', 'é', '\\', '"', 'a\nb', '\u2028'));
    fc.assert(
      fc.property(value, fc.string({ maxLength: 3 }), (v, pad) => {
        const text = JSON.stringify(v);
        if (text === undefined) return;
        // The span sits inside other bytes, as in an object.
        const buf = Buffer.from(`${JSON.stringify(pad)}:${text},`);
        const start = buf.length - Buffer.byteLength(text) - 1;
        expect(parseSpan(buf, start, buf.length - 1)).toStrictEqual(JSON.parse(text));
      }),
      { numRuns: 2000 },
    );
  });

  it('gives each member its own key, however many different keys were seen before', () => {
    // More distinct keys than the walker keeps strings for, so kept strings are met by keys of other bytes.
    const key = fc.oneof(fc.string({ maxLength: 60 }), fc.stringMatching(/^[a-z]{1,8}$/));
    fc.assert(
      fc.property(fc.uniqueArray(key, { minLength: 1, maxLength: 300 }), (keys) => {
        const obj = Object.fromEntries(keys.map((k, i) => [k, i]));
        const buf = Buffer.from(JSON.stringify(obj));
        const found = objectMembers(buf, 0)!.members;
        // Keys are the bytes between their quotes read as latin1, escapes left as written.
        const written = Object.keys(obj).map((k) => Buffer.from(JSON.stringify(k).slice(1, -1)).toString('latin1'));
        expect(found.map((m) => m.key)).toStrictEqual(written);
      }),
      { numRuns: 300 },
    );
  });
});
