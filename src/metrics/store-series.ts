import { statSync } from 'node:fs';
import { join } from 'node:path';
import { Gauge, type Registry } from 'prom-client';

/**
 * `flotilla_store_bytes`: the disk the cache's LMDB file takes in the data directory. The file is
 * mapped sparse (its size is the map's), so what counts is the blocks written, read at scrape time.
 */
export function storeSeries(registry: Registry, dataDir: string): void {
  const file = join(dataDir, 'data.mdb');
  new Gauge({
    name: 'flotilla_store_bytes',
    help: "Bytes of disk the cache's store (data.mdb in the data directory) takes.",
    registers: [registry],
    collect() {
      try {
        this.set(statSync(file).blocks * 512);
      } catch {
        // Not there (yet, or set aside for a rebuild): no sample rather than a wrong one.
        this.reset();
      }
    },
  });
}
