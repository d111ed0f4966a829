import { describe, expect, it } from 'vitest';
import { FlushPacer, type PacerClock } from '../../../src/mux/flush-pacer.js';

/** A clock the test moves by hand; scheduled runs fire when it passes their time. */
class ManualClock implements PacerClock {
  t = 1000;
  private timers: { at: number; fn: () => void }[] = [];

  now(): number {
    return this.t;
  }

  after(ms: number, fn: () => void): void {
    this.timers.push({ at: this.t + Math.max(0, ms), fn });
  }

  /** Moves to `to`, running each due timer at its own time, in order. */
  advance(to: number): void {
    for (;;) {
      this.timers.sort((a, b) => a.at - b.at);
      const next = this.timers[0];
      if (!next || next.at > to) break;
      this.timers.shift();
      this.t = next.at;
      next.fn();
    }
    this.t = to;
  }

  get waiting(): number[] {
    return this.timers.map((t) => t.at);
  }
}

describe('FlushPacer', () => {
  it('flushes at once while flushes are cheap, and once per request burst', () => {
    const clock = new ManualClock();
    const flushes: number[] = [];
    const pacer = new FlushPacer(() => flushes.push(clock.t), { spacing: 4, maxDelayMs: 50 }, clock);
    pacer.request();
    pacer.request();
    pacer.request();
    expect(clock.waiting).toEqual([1000]);
    clock.advance(1000);
    expect(flushes).toEqual([1000]);
    clock.advance(1001);
    pacer.request();
    clock.advance(1001);
    expect(flushes).toEqual([1000, 1001]);
  });

  it('pauses after a flush for a multiple of what it took, up to the cap', () => {
    const clock = new ManualClock();
    const flushes: number[] = [];
    let cost = 5;
    const pacer = new FlushPacer(() => {
      flushes.push(clock.t);
      clock.t += cost;
    }, { spacing: 4, maxDelayMs: 50 }, clock);
    pacer.request();
    clock.advance(1000);
    expect(flushes).toEqual([1000]);
    expect(pacer.pauseMs).toBe(20);
    // Requests during the pause wait for its end (it ended at 1005, +20): one flush takes them all.
    clock.advance(1006);
    pacer.request();
    clock.advance(1010);
    pacer.request();
    clock.advance(1024);
    expect(flushes).toEqual([1000]);
    clock.advance(1025);
    expect(flushes).toEqual([1000, 1025]);
    // An expensive flush: the pause is the cap, not 4 × 30 ms, and the loop gets it whole.
    cost = 30;
    pacer.request();
    clock.advance(1100);
    expect(flushes).toEqual([1000, 1025, 1050]);
    expect(pacer.pauseMs).toBe(50);
    pacer.request();
    clock.advance(1129);
    expect(flushes.length).toBe(3);
    clock.advance(1130);
    expect(flushes).toEqual([1000, 1025, 1050, 1130]);
    // After a quiet spell longer than the pause, a request flushes at once.
    cost = 0;
    clock.advance(1500);
    pacer.request();
    clock.advance(1500);
    expect(flushes.at(-1)).toBe(1500);
    expect(pacer.pauseMs).toBe(0);
  });

  it('keeps pacing after a flush that throws', () => {
    const clock = new ManualClock();
    let calls = 0;
    const pacer = new FlushPacer(() => {
      calls++;
      if (calls === 1) throw new Error('boom');
    }, { spacing: 4, maxDelayMs: 50 }, clock);
    pacer.request();
    expect(() => clock.advance(1000)).toThrow('boom');
    pacer.request();
    clock.advance(1000);
    expect(calls).toBe(2);
  });
});
