import { defineConfig } from 'vitest/config';

// Unit tests only (`npm run test:unit`): no fleet, no build. `npm test` runs everything, these
// included, through vitest.config.ts.
export default defineConfig({
  test: {
    include: ['test/unit/**/*.test.ts'],
    exclude: ['node_modules/**', 'dist/**'],
    // As in vitest.config.ts, so that a test passes or fails alike in both runs (the property
    // tests take a few seconds on a busy machine, past vitest's default of 5).
    testTimeout: 60_000,
  },
});
