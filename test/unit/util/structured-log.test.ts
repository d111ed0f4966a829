import { describe, expect, it } from 'vitest';
import { DeferredLog, RepeatGate, type StructuredLog } from '../../../src/util/structured-log.js';
import { humanLine } from '../../../src/util/human-log.js';

function captured(): { log: StructuredLog; lines: [string, Record<string, unknown>, string][] } {
  const lines: [string, Record<string, unknown>, string][] = [];
  return { lines, log: { info: (f, m) => lines.push(['info', f, m]), warn: (f, m) => lines.push(['warn', f, m]) } };
}

describe('DeferredLog', () => {
  it('keeps lines until a logger is set, up to its bound, then forwards', () => {
    const d = new DeferredLog(2);
    d.info({ a: 1 }, 'one');
    d.warn({ a: 2 }, 'two');
    d.info({ a: 3 }, 'dropped');
    const c = captured();
    d.use(c.log);
    d.info({ a: 4 }, 'after');
    expect(c.lines).toEqual([['info', { a: 1 }, 'one'], ['warn', { a: 2 }, 'two'], ['info', { a: 4 }, 'after']]);
  });
});

describe('RepeatGate', () => {
  it('lets a key through once a window, with how many were held back, and at once after forget', () => {
    let now = 0;
    const gate = new RepeatGate(1000, () => now);
    expect(gate.pass('x')).toEqual({ pass: true, held: 0 });
    expect(gate.pass('x')).toEqual({ pass: false, held: 1 });
    expect(gate.pass('y').pass).toBe(true);
    expect(gate.pass('x')).toEqual({ pass: false, held: 2 });
    now = 1000;
    expect(gate.pass('x')).toEqual({ pass: true, held: 2 });
    gate.forget('x');
    expect(gate.pass('x')).toEqual({ pass: true, held: 0 });
  });
});

describe('humanLine', () => {
  it('writes time, level, message and the other fields; leaves anything not JSON as it is', () => {
    const line = humanLine(JSON.stringify({ level: 40, time: Date.UTC(2026, 0, 1, 12, 0, 1, 5), pid: 1, hostname: 'h', msg: 'member lost', cluster: 'east', error: 'connect refused' }), false);
    expect(line).toBe('12:00:01.005 WARN  member lost  cluster=east error="connect refused"\n');
    expect(humanLine('flotilla: serving', false)).toBe('flotilla: serving');
  });
});
