#!/usr/bin/env node
import { runFlotilla } from './cli/flotilla.js';

// The `flotilla` binary (package.json "bin"): the command line is src/cli's; serving keeps the process.
runFlotilla(process.argv.slice(2)).then(
  (code) => {
    if (code !== undefined) process.exit(code);
  },
  (e: unknown) => {
    console.error(`flotilla: ${(e as Error).stack ?? e}`);
    process.exit(1);
  },
);
