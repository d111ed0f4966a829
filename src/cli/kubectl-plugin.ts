#!/usr/bin/env node
import { runPlugin } from './plugin.js';

// `kubectl-flotilla` (package.json "bin"): kubectl runs it for `kubectl flotilla …` when it is on PATH.
runPlugin(process.argv.slice(2)).then(
  (code) => process.exit(code ?? 0),
  (e: unknown) => {
    console.error(`kubectl flotilla: ${(e as Error).stack ?? e}`);
    process.exit(1);
  },
);
