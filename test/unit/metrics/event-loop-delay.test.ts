import { afterEach, describe, expect, it, vi } from 'vitest';
import fc from 'fast-check';
import { Registry } from 'prom-client';
import { trackEventLoopDelay } from '../../../src/metrics/event-loop-delay.js';
import { histogramQuantile } from '../../../bench/lib/histogram-quantile.js';

afterEach(() => {
  vi.useRealTimers();
});

/** The histogram's buckets as [upper bound, count], read back the way Prometheus would scrape them. */
async function buckets(registry: Registry): Promise<{ buckets: [number, number][]; sum: number; count: number }> {
  const [metric] = await registry.getMetricsAsJSON();
  const values = metric!.values as { metricName?: string; labels: { le?: string | number }; value: number }[];
  const of = (suffix: string) => values.filter((v) => v.metricName === `flotilla_eventloop_delay_seconds${suffix}`);
  return {
    buckets: of('_bucket').map((v) => [v.labels.le === '+Inf' ? Infinity : Number(v.labels.le), v.value]),
    sum: of('_sum')[0]!.value,
    count: of('_count')[0]!.value,
  };
}

describe('flotilla_eventloop_delay_seconds', () => {
  it('observes how late each firing of its timer was, and nothing once stopped', async () => {
    vi.useFakeTimers();
    let t = 0;
    const registry = new Registry();
    const stop = trackEventLoopDelay(registry, { intervalMs: 10, now: () => t });
    // On time.
    t = 10;
    vi.advanceTimersByTime(10);
    // A turn that held the loop: the next firing comes 120 ms after it was due (at 20).
    t = 140;
    vi.advanceTimersByTime(10);
    // 3 ms late.
    t = 153;
    vi.advanceTimersByTime(10);
    const h = await buckets(registry);
    expect(h.count).toBe(3);
    expect(h.sum).toBeCloseTo(0.123, 9);
    const at = (le: number) => h.buckets.find(([b]) => b === le)![1];
    expect(at(0.001)).toBe(1);
    expect(at(0.005)).toBe(2);
    expect(at(0.1)).toBe(2);
    expect(at(0.25)).toBe(3);
    expect(at(Infinity)).toBe(3);
    stop();
    t = 1000;
    vi.advanceTimersByTime(100);
    expect((await buckets(registry)).count).toBe(3);
  });
});

describe('histogramQuantile', () => {
  it('interpolates within the bucket the rank falls in, as Prometheus does', () => {
    const h: [number, number][] = [[0.01, 90], [0.05, 99], [0.1, 100], [Infinity, 100]];
    expect(histogramQuantile(0.99, h)).toBeCloseTo(0.05, 12);
    expect(histogramQuantile(0.5, h)).toBeCloseTo((0.01 * 50) / 90, 12);
    expect(histogramQuantile(0.995, h)).toBeCloseTo(0.075, 12);
    expect(histogramQuantile(0.99, [[0.01, 0], [Infinity, 0]])).toBeNaN();
    // A rank among the samples past the last finite bound answers that bound.
    expect(histogramQuantile(0.99, [[0.01, 50], [Infinity, 100]])).toBe(0.01);
  });

  it('lands in the bucket that holds the true quantile of the samples', () => {
    const bounds = [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, Infinity];
    fc.assert(
      fc.property(fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { minLength: 1, maxLength: 300 }), fc.double({ min: 0.01, max: 0.999, noNaN: true }), (samples, q) => {
        const counts = bounds.map((b): [number, number] => [b, samples.filter((s) => s <= b).length]);
        const sorted = [...samples].sort((a, b) => a - b);
        const truth = sorted[Math.ceil(q * sorted.length) - 1]!;
        const i = bounds.findIndex((b) => truth <= b);
        const lower = i === 0 ? 0 : bounds[i - 1]!;
        const upper = bounds[i] === Infinity ? lower : bounds[i]!;
        const estimate = histogramQuantile(q, counts);
        expect(estimate).toBeGreaterThanOrEqual(lower);
        expect(estimate).toBeLessThanOrEqual(upper);
      }),
    );
  });
});
