import { describe, expect, it } from 'vitest';
import { ageCell, humanDuration } from '../../../src/table/human-duration.js';

const s = 1000;
const m = 60 * s;
const h = 60 * m;
const d = 24 * h;

describe('humanDuration (the apiserver Age format)', () => {
  it.each([
    [-3 * s, '<invalid>'],
    [-1500, '0s'],
    [0, '0s'],
    [59 * s, '59s'],
    [119 * s, '119s'],
    [2 * m, '2m'],
    [2 * m + 5 * s, '2m5s'],
    [9 * m + 59 * s, '9m59s'],
    [10 * m + 30 * s, '10m'],
    [179 * m, '179m'],
    [3 * h, '3h'],
    [3 * h + 7 * m, '3h7m'],
    [8 * h + 59 * m, '8h'],
    [47 * h, '47h'],
    [2 * d, '2d'],
    [2 * d + 5 * h, '2d5h'],
    [8 * d, '8d'],
    [729 * d, '729d'],
    [730 * d, '2y'],
    [731 * d, '2y1d'],
    [8 * 365 * d, '8y'],
  ])('%d ms → %s', (ms, want) => {
    expect(humanDuration(ms)).toBe(want);
  });

  it('computes Age from a creationTimestamp, and <unknown> without one', () => {
    const now = Date.parse('2026-01-01T01:00:00Z');
    expect(ageCell('2026-01-01T00:00:00Z', now)).toBe('60m');
    expect(ageCell(undefined, now)).toBe('<unknown>');
    expect(ageCell('not a time', now)).toBe('<unknown>');
  });
});
