import { openStoreDatabases, openStoreRoot } from './environment.js';
import { verifyStore } from './integrity.js';
import type { CheckReport } from './integrity-apart.js';

/**
 * The checking process of integrity-apart.ts: opens the store at the path it is given read-only,
 * runs the check and prints its report. Whatever reading a damaged page does happens here.
 */
const path = process.argv[2];
if (!path) {
  process.stderr.write('usage: integrity-check-main <data dir>\n');
  process.exit(2);
}
const root = openStoreRoot(path, { readOnly: true });
const report: CheckReport = { fault: verifyStore(openStoreDatabases(root)) ?? null };
process.stdout.write(JSON.stringify(report));
await root.close();
