import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { compareMemberRV, decodeGlobalRV, encodeGlobalRV, mergeRVs, oneClusterRV } from '../../../src/api/global-rv.js';
import { decodeContinue, encodeContinue } from '../../../src/api/continue-token.js';

describe('global resourceVersion', () => {
  it('of one cluster is the same token however it is made', () => {
    fc.assert(
      fc.property(fc.oneof(fc.stringMatching(/^[a-z0-9-]{1,20}$/), fc.string()), fc.oneof(fc.stringMatching(/^[0-9]{1,20}$/), fc.string()), (cluster, rv) => {
        expect(oneClusterRV(cluster)(rv)).toBe(encodeGlobalRV({ [cluster]: rv }));
      }),
      // `__proto__` always, which a plain object takes for its prototype.
      { numRuns: 3000, examples: [['__proto__', '0']] },
    );
  });

  it('is unpadded base64url of compact JSON with sorted keys', () => {
    const token = encodeGlobalRV({ west: '88', east: '1042' });
    expect(token).not.toMatch(/[=+/]/);
    expect(Buffer.from(token, 'base64url').toString()).toBe('{"east":"1042","west":"88"}');
    expect(encodeGlobalRV({ east: '1042', west: '88' })).toBe(token);
    expect(decodeGlobalRV(token)).toEqual({ east: '1042', west: '88' });
    expect(decodeGlobalRV(encodeGlobalRV({}))).toEqual({});
  });

  it.each([
    ['a member RV', '12345'],
    ['padding', `${Buffer.from('{"a":"1"}').toString('base64')}=`],
    ['standard base64', Buffer.from('{"a":"1>>"}').toString('base64')],
    ['not JSON', Buffer.from('{nope').toString('base64url')],
    ['a list', Buffer.from('["1"]').toString('base64url')],
    ['a non-digit RV', Buffer.from('{"east":"12a"}').toString('base64url')],
    ['a numeric RV', Buffer.from('{"east":12}').toString('base64url')],
    ['a bad cluster name', Buffer.from('{"East":"1"}').toString('base64url')],
  ])('rejects %s with 400', (_what, token) => {
    expect(() => decodeGlobalRV(token)).toThrow(expect.objectContaining({ code: 400, reason: 'BadRequest' }));
  });

  it('compares and merges member RVs as big integers', () => {
    expect(compareMemberRV('9', '10')).toBe(-1);
    expect(compareMemberRV('18446744073709551615', '18446744073709551614')).toBe(1);
    expect(mergeRVs({ a: '5', b: '9' }, { a: '7', c: '1' })).toEqual({ a: '7', b: '9', c: '1' });
  });
});

describe('continue tokens', () => {
  it('round-trip with and without a snapshot id', () => {
    const rv = encodeGlobalRV({ east: '5' });
    expect(decodeContinue(encodeContinue({ rv, start: 'k\u0000y' }))).toEqual({ rv, start: 'k\u0000y' });
    expect(decodeContinue(encodeContinue({ rv, start: 'k', snap: 's1' }))).toEqual({ rv, start: 'k', snap: 's1' });
  });

  it('rejects a token whose resourceVersion is not one of flotilla’s (it would be echoed)', () => {
    for (const rv of ['x', '12', Buffer.from('{"east":"1x"}').toString('base64url')]) {
      expect(() => decodeContinue(encodeContinue({ rv, start: 'k' })), rv).toThrow(expect.objectContaining({ code: 400 }));
    }
  });

  it('rejects garbage with 400', () => {
    for (const t of ['!!', Buffer.from('{"rv":1,"start":"a"}').toString('base64url'), Buffer.from('null').toString('base64url')]) {
      expect(() => decodeContinue(t)).toThrow(expect.objectContaining({ code: 400 }));
    }
  });
});
