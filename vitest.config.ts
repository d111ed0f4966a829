import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    exclude: ['node_modules/**', 'dist/**'],
    // The fleet is real: starting apiservers takes seconds, so one fleet serves every test file.
    globalSetup: ['test/fleet/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 240_000,
    fileParallelism: false,
    pool: 'forks',
    // CI reads a plain "N passed, N failed" line from this report (see .ci/run).
    reporters: process.env.FLOTILLA_TEST_REPORT ? ['default', 'json'] : ['default'],
    outputFile: process.env.FLOTILLA_TEST_REPORT ? { json: process.env.FLOTILLA_TEST_REPORT } : undefined,
  },
});
