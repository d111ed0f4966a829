import { defineConfig } from 'vitest/config';

// Unit tests only: no fleet. `npm test` runs everything through vitest.config.ts.
export default defineConfig({
  test: {
    include: ['test/unit/**/*.test.ts'],
    exclude: ['node_modules/**', 'dist/**'],
  },
});
