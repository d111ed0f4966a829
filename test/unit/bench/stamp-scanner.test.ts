import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { StampScanner } from '../../../bench/lib/stamp-scanner.js';

const KEY = 'bench.flotilla.io/sent';

/** Watch lines as a server writes them, each with its stamp among other annotations. */
function stream(stamps: number[]): Buffer {
  return Buffer.from(
    stamps
      .map((s, i) => `${JSON.stringify({ type: 'MODIFIED', object: { metadata: { name: `w-${i}`, annotations: { a: `"${KEY}`, [KEY]: s.toFixed(3), z: 'x' } } } })}\n`)
      .join(''),
  );
}

function scanAll(bytes: Buffer, cuts: number[]): number[] {
  const found: number[] = [];
  const scanner = new StampScanner(Buffer.from(`${KEY}":"`), (stamp) => found.push(stamp));
  let at = 0;
  for (const cut of [...cuts.filter((c) => c > 0 && c < bytes.length)].sort((a, b) => a - b).concat(bytes.length)) {
    if (cut > at) scanner.push(bytes.subarray(at, cut), 0);
    at = cut;
  }
  return found;
}

describe('StampScanner (bench watch load)', () => {
  it('finds every stamp once, wherever the chunks are cut', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 2 ** 42 }).map((ms) => ms + 0.125), { minLength: 1, maxLength: 20 }),
        fc.array(fc.nat(), { maxLength: 60 }),
        (stamps, rawCuts) => {
          const bytes = stream(stamps);
          const cuts = rawCuts.map((c) => c % (bytes.length + 1));
          expect(scanAll(bytes, cuts)).toEqual(stamps);
        },
      ),
      { numRuns: 500 },
    );
  });

  it('copes with one-byte chunks', () => {
    const stamps = [1732400000000.5, 1732400000001.25, 7];
    const bytes = stream(stamps);
    expect(scanAll(bytes, Array.from({ length: bytes.length }, (_, i) => i))).toEqual(stamps);
  });
});
