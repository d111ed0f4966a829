/** Delivery latencies in 0.1 ms buckets up to 10 s: percentiles without keeping every sample. */
export class LatencyHistogram {
  private readonly buckets = new Uint32Array(100_001);
  count = 0;

  add(ms: number): void {
    this.buckets[Math.min(this.buckets.length - 1, Math.max(0, Math.round(ms * 10)))]!++;
    this.count++;
  }

  /**
   * NaN when nothing arrived: no latency is not a latency of zero. Infinity when the percentile
   * falls in the last bucket, which holds everything from 10 s on: the latency is not known, and
   * two such percentiles must not compare as equal.
   */
  percentile(p: number): number {
    if (this.count === 0) return NaN;
    let need = Math.ceil((this.count * p) / 100);
    const last = this.buckets.length - 1;
    for (let i = 0; i < this.buckets.length; i++) {
      need -= this.buckets[i]!;
      if (need <= 0) return i === last ? Infinity : i / 10;
    }
    return NaN;
  }

  /** The non-empty buckets as [index, count] pairs: small enough to send between processes. */
  toSparse(): [number, number][] {
    const out: [number, number][] = [];
    for (let i = 0; i < this.buckets.length; i++) if (this.buckets[i]) out.push([i, this.buckets[i]!]);
    return out;
  }

  addSparse(pairs: [number, number][]): void {
    for (const [i, n] of pairs) {
      this.buckets[i]! += n;
      this.count += n;
    }
  }
}

/** Wall-clock milliseconds with sub-millisecond precision, comparable between processes. */
export const epochMs = (): number => performance.timeOrigin + performance.now();
