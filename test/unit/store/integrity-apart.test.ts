import { afterEach, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { verifyStoreApart } from '../../../src/store/integrity-apart.js';
import { storeRootOptions } from '../../../src/store/environment.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A checking process that does `body` (a stand-in for integrity-check-main.js). */
function checker(body: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'flotilla-checker-'));
  dirs.push(dir);
  const script = join(dir, 'check.mjs');
  writeFileSync(script, body);
  return script;
}

describe('the store check in its own process', () => {
  it('passes on the report of a whole store and names the fault of a damaged one', () => {
    expect(verifyStoreApart('/nowhere', checker('process.stdout.write(JSON.stringify({ fault: null }));'))).toBeUndefined();
    expect(verifyStoreApart('/nowhere', checker('process.stdout.write(JSON.stringify({ fault: "3 objects, 2 meta records, 3 index entries" }));'))).toBe('3 objects, 2 meta records, 3 index entries');
  });

  it('a check that crashes reading the store is a fault, and flotilla lives on', () => {
    const fault = verifyStoreApart('/nowhere', checker('process.stderr.write("corrupted double-linked list\\n"); process.kill(process.pid, "SIGABRT");'));
    expect(fault).toBe('reading the store crashed the check (SIGABRT: corrupted double-linked list)');
  });

  it('a check that fails, answers nothing or hangs is a fault', () => {
    expect(verifyStoreApart('/nowhere', checker('console.error("MDB_CORRUPTED"); process.exit(3);'))).toBe('the check of the store failed (exit 3: MDB_CORRUPTED)');
    expect(verifyStoreApart('/nowhere', checker(''))).toBe('the check of the store gave no answer ("")');
    expect(verifyStoreApart('/nowhere', checker('setInterval(() => {}, 1000);'), 1000)).toBe('reading the store took longer than 1 s');
  });
});

describe('the check\'s view of the file', () => {
  // One pass over every page: a fault per page made a cold check of 1M objects take 94 s (4.8 s reading ahead).
  it('reads ahead where flotilla, which inserts all over a file larger than its memory, does not', () => {
    expect(storeRootOptions('/data', true)).toMatchObject({ readOnly: true, noReadAhead: false, useWritemap: false });
    expect(storeRootOptions('/data', false)).toMatchObject({ readOnly: false, noReadAhead: true, useWritemap: true });
  });
});
