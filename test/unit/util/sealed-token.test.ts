import { describe, expect, it } from 'vitest';
import { seal, unseal } from '../../../src/util/sealed-token.js';

describe('sealed tokens', () => {
  it('open to what was sealed, and show nothing of it', () => {
    const text = JSON.stringify({ live: { east: 'eyJzdGFydCI6Imdsb2JleC13ZWIvY20ifQ' }, rv: { east: '12' } });
    const token = seal(text);
    expect(unseal(token)).toBe(text);
    expect(token).not.toContain('eyJ');
    expect(Buffer.from(token, 'base64url').toString('latin1')).not.toContain('globex');
  });

  it('do not open when altered, cut short, or not sealed here', () => {
    const token = seal('{"live":{}}');
    const bytes = Buffer.from(token, 'base64url');
    bytes[bytes.length - 1]! ^= 1;
    expect(unseal(bytes.toString('base64url'))).toBeUndefined();
    expect(unseal(token.slice(0, 20))).toBeUndefined();
    expect(unseal(Buffer.from('{"live":{"east":"x"},"rv":{}}').toString('base64url'))).toBeUndefined();
    expect(unseal('not a token!')).toBeUndefined();
  });
});
