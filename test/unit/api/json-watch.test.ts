import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { WatchLines, splitWatchLines, frameWatchEvent } from '../../../src/api/json-watch.js';

const text = (lines: Iterable<Buffer>) => [...lines].map((l) => l.toString('utf8'));

describe('JSON watch lines', () => {
  it('frames an event as one line, the object as given', () => {
    expect(frameWatchEvent('ADDED', '{"kind":"Pod"}').toString()).toBe('{"type":"ADDED","object":{"kind":"Pod"}}\n');
    expect(frameWatchEvent('BOOKMARK', Buffer.from('{}')).toString()).toBe('{"type":"BOOKMARK","object":{}}\n');
  });

  it('splits lines, skipping blank ones, the last one needing no newline', () => {
    expect(text(splitWatchLines(Buffer.from('{"a":1}\n\n \r\n{"b":2}\n{"c":3}')))).toEqual(['{"a":1}', '{"b":2}', '{"c":3}']);
    expect(text(splitWatchLines(Buffer.alloc(0)))).toEqual([]);
  });

  it('gives whole lines together however the stream is cut, keeping a cut character whole', () => {
    fc.assert(fc.property(fc.array(fc.string({ unit: 'grapheme', minLength: 1, maxLength: 20 }), { minLength: 1, maxLength: 10 }), fc.array(fc.integer({ min: 1, max: 30 }), { minLength: 1, maxLength: 20 }), (values, cuts) => {
      const events = values.map((v, i) => frameWatchEvent(i % 2 ? 'MODIFIED' : 'ADDED', JSON.stringify({ v })));
      const stream = Buffer.concat(events);
      const lines = new WatchLines();
      const got: string[] = [];
      let at = 0;
      for (let i = 0; at < stream.length; i++) {
        const size = cuts[i % cuts.length]!;
        const whole = lines.push(stream.subarray(at, at + size));
        // Only whole lines: nothing, or bytes ending in a newline.
        if (whole.length > 0) expect(whole[whole.length - 1]).toBe(0x0a);
        got.push(...text(splitWatchLines(whole)));
        at += size;
      }
      expect(got.map((l) => (JSON.parse(l) as { object: { v: string } }).object.v)).toEqual(values);
    }));
  });

  it('keeps a copy of a line’s start, not the chunk it came in', () => {
    const lines = new WatchLines();
    const chunk = Buffer.from('{"type":"ADDED"}\n{"type":');
    expect(lines.push(chunk).toString()).toBe('{"type":"ADDED"}\n');
    chunk.fill(0x20);
    expect(lines.push(Buffer.from('"DELETED"}\n')).toString()).toBe('{"type":"DELETED"}\n');
  });
});
