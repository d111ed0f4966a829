import { describe, expect, it } from 'vitest';
import { countedSelectors, makePod } from '../../../bench/lib/pods.js';
import { matchesLabels, parseLabelSelector } from '../../../src/api/label-selector.js';

// The bench's label-selected figure is "100 of 1M" only if each selector matches what it claims.
describe('bench pods: counted selectors', () => {
  for (const pods of [10_000, 100_000, 1234]) {
    it(`match the pods they say among ${pods} seeded pods`, () => {
      const labels = Array.from({ length: pods }, (_, i) => (makePod(i, 'ns') as { metadata: { labels: Record<string, string> } }).metadata.labels);
      for (const { selector, podsMatched } of countedSelectors(pods)) {
        const sel = parseLabelSelector(selector);
        expect(labels.filter((l) => matchesLabels(sel, l)).length, selector).toBe(podsMatched);
      }
    });
  }
});
