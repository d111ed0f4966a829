import { describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Store } from '../../../src/store/store.js';
import { decodeObject, type IngestContext } from '../../../src/ingest/decode.js';
import { encodeObjects, viewObjects } from '../../../src/ingest/batch.js';
import { makePod } from '../../../bench/lib/pods.js';

/**
 * What the integrity check (src/store/integrity.ts) costs at open, for the bench's store sizes:
 * bench pods over two clusters, the open timed with and without the check. A measurement, not a
 * test of behaviour: runs only with FLOTILLA_INTEGRITY_COST=<objects>[,<objects>…].
 */
const sizes = (process.env.FLOTILLA_INTEGRITY_COST ?? '').split(',').filter(Boolean).map(Number);

describe.skipIf(sizes.length === 0)('integrity check cost at open', () => {
  for (const n of sizes) {
    it(`${n} objects`, async () => {
      const dir = mkdtempSync(join(tmpdir(), 'flotilla-integrity-cost-'));
      try {
        const store = Store.open(dir);
        const batch = 5000;
        for (const cluster of ['east', 'west']) {
          const ctx: IngestContext = { cluster, apiVersion: 'v1', kind: 'Pod', dropManagedFields: true };
          for (let from = 0; from < n / 2; from += batch) {
            const raw = Array.from({ length: Math.min(batch, n / 2 - from) }, (_, i) => decodeObject(makePod(from + i, cluster) as never, ctx));
            await store.commit({ cluster, resource: 'v1/pods' }, viewObjects(encodeObjects(raw)).map((o) => ({ type: 'ADDED' as const, rv: '1', ...o })), { rv: from + batch >= n / 2 ? '1' : '' }, { log: false, fresh: true });
          }
        }
        await store.close();
        const timed = (verify: boolean) => {
          const t = process.hrtime.bigint();
          const s = Store.open(dir, { verify });
          const ms = Number(process.hrtime.bigint() - t) / 1e6;
          expect(s.health().rebuilt).toBeUndefined();
          void s.close();
          return ms;
        };
        const runs = [timed(false), timed(true), timed(false), timed(true)];
        console.log(`integrity cost ${n} objects: open without check ${runs[0]!.toFixed(0)}/${runs[2]!.toFixed(0)} ms, with ${runs[1]!.toFixed(0)}/${runs[3]!.toFixed(0)} ms`);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    }, 1_800_000);
  }
});
