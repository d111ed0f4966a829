import { describe, expect, it } from 'vitest';
import { labelSelectorFromObject, matchesLabels, parseLabelSelector } from '../../../src/api/label-selector.js';
import { matchesFields, parseFieldSelector, validateFieldSelector } from '../../../src/api/field-selector.js';

describe('label selectors', () => {
  it('parses the full syntax', () => {
    expect(parseLabelSelector('a=b, c==d,e!=f,g in (h, i),j notin (k),l,!m,n>3,o<4')).toEqual([
      { key: 'a', operator: 'Equals', values: ['b'] },
      { key: 'c', operator: 'Equals', values: ['d'] },
      { key: 'e', operator: 'NotEquals', values: ['f'] },
      { key: 'g', operator: 'In', values: ['h', 'i'] },
      { key: 'j', operator: 'NotIn', values: ['k'] },
      { key: 'l', operator: 'Exists', values: [] },
      { key: 'm', operator: 'DoesNotExist', values: [] },
      { key: 'n', operator: 'GreaterThan', values: ['3'] },
      { key: 'o', operator: 'LessThan', values: ['4'] },
    ]);
    expect(parseLabelSelector('example.com/team=blue')).toEqual([{ key: 'example.com/team', operator: 'Equals', values: ['blue'] }]);
    expect(parseLabelSelector('')).toEqual([]);
    expect(parseLabelSelector('a=')).toEqual([{ key: 'a', operator: 'Equals', values: [''] }]);
  });

  it.each(['a in (b', 'a in ()', '=b', 'a=b,', 'a b', '!a=b', 'Bad_Key_/x=1', 'a=-bad-', `a=${'x'.repeat(64)}`, 'n>x'])('rejects %j with 400', (s) => {
    expect(() => parseLabelSelector(s)).toThrow(expect.objectContaining({ code: 400 }));
  });

  it('matches like Kubernetes, including != and notin on objects without the key', () => {
    const m = (s: string, labels?: Record<string, string>) => matchesLabels(parseLabelSelector(s), labels);
    expect(m('a=b', { a: 'b' })).toBe(true);
    expect(m('a=b', { a: 'c' })).toBe(false);
    expect(m('a!=b', {})).toBe(true);
    expect(m('a notin (b)', undefined)).toBe(true);
    expect(m('a in (b,c)', { a: 'c' })).toBe(true);
    expect(m('a', { a: '' })).toBe(true);
    expect(m('!a', { a: '' })).toBe(false);
    expect(m('n>3', { n: '4' })).toBe(true);
    expect(m('n<3', { n: '4' })).toBe(false);
    expect(m('a=b,c', { a: 'b' })).toBe(false);
  });

  it('reads a metav1.LabelSelector object', () => {
    const sel = labelSelectorFromObject({ matchLabels: { region: 'eu' }, matchExpressions: [{ key: 'tier', operator: 'NotIn', values: ['dev'] }] });
    expect(matchesLabels(sel, { region: 'eu' })).toBe(true);
    expect(matchesLabels(sel, { region: 'eu', tier: 'dev' })).toBe(false);
  });
});

describe('field selectors', () => {
  it('parses operators and escapes', () => {
    expect(parseFieldSelector('status.phase=Running,spec.nodeName!=n1,metadata.name==a\\,b')).toEqual([
      { field: 'status.phase', operator: 'Equals', value: 'Running' },
      { field: 'spec.nodeName', operator: 'NotEquals', value: 'n1' },
      { field: 'metadata.name', operator: 'Equals', value: 'a,b' },
    ]);
  });

  it('rejects broken terms and unsupported fields with 400', () => {
    expect(() => parseFieldSelector('justakey')).toThrow(expect.objectContaining({ code: 400 }));
    expect(() => parseFieldSelector('a=b\\q')).toThrow(expect.objectContaining({ code: 400 }));
    expect(() => validateFieldSelector(parseFieldSelector('spec.bogus=1'), new Set(['metadata.name']))).toThrow('field label not supported: spec.bogus');
  });

  it('matches', () => {
    const sel = parseFieldSelector('status.phase=Running,metadata.name!=x');
    expect(matchesFields(sel, { 'status.phase': 'Running', 'metadata.name': 'y' })).toBe(true);
    expect(matchesFields(sel, { 'status.phase': 'Running', 'metadata.name': 'x' })).toBe(false);
  });
});
