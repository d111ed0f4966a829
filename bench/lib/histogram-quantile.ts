/**
 * The q-quantile (0 < q < 1) of a cumulative histogram, as Prometheus' histogram_quantile reads
 * it: linear within the bucket the rank falls in. `buckets` are [upper bound, count ≤ bound] in
 * increasing order, the last bound Infinity; a rank in the +Inf bucket answers the highest finite
 * bound. NaN when nothing was observed.
 */
export function histogramQuantile(q: number, buckets: readonly (readonly [number, number])[]): number {
  const total = buckets.at(-1)?.[1] ?? 0;
  if (total === 0) return NaN;
  const rank = q * total;
  let lowerBound = 0;
  let lowerCount = 0;
  for (const [bound, count] of buckets) {
    if (count >= rank) {
      if (bound === Infinity) return lowerBound;
      if (count === lowerCount) return bound;
      return lowerBound + ((bound - lowerBound) * (rank - lowerCount)) / (count - lowerCount);
    }
    lowerBound = bound;
    lowerCount = count;
  }
  return lowerBound;
}
