import { afterEach, describe, expect, it } from 'vitest';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DAMAGE_MARKER, Store, type Change } from '../../../src/store/store.js';
import { decodeObject, type IngestContext } from '../../../src/ingest/decode.js';
import { encodeObjects, viewObjects } from '../../../src/ingest/batch.js';
import { damageObjectPages } from '../../support/store-damage.js';

const dirs: string[] = [];
function dataDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'flotilla-integrity-'));
  dirs.push(dir);
  return dir;
}
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function objects(cluster: string, n: number): Change[] {
  const ctx: IngestContext = { cluster, apiVersion: 'v1', kind: 'ConfigMap', dropManagedFields: true };
  const raw = Array.from({ length: n }, (_, i) => decodeObject({ metadata: { namespace: `ns-${i % 7}`, name: `cm-${i}`, uid: `${cluster}-${i}`, resourceVersion: String(i + 1) }, data: { k: 'v' } }, ctx));
  return viewObjects(encodeObjects(raw)).map((o) => ({ type: 'ADDED', rv: '5000', ...o }));
}

const scope = (cluster: string) => ({ cluster, resource: 'v1/configmaps' });

async function filledStore(dir: string, perCluster: number): Promise<void> {
  const store = Store.open(dir);
  for (const c of ['east', 'west']) await store.commit(scope(c), objects(c, perCluster), { rv: '5000' }, { log: false, fresh: true });
  await store.close();
}

describe('Store integrity at open', () => {
  it('a whole store opens as it was, and is not set aside', async () => {
    const dir = dataDir();
    await filledStore(dir, 3000);
    const store = Store.open(dir);
    expect(store.health()).toEqual({ writable: true });
    expect([...store.entries('v1/configmaps')]).toHaveLength(6000);
    expect(store.syncState(scope('east'))?.rv).toBe('5000');
    await store.close();
    expect(readdirSync(dir).filter((f) => f.startsWith('corrupt-'))).toEqual([]);
  });

  for (const kind of ['count', 'bytes'] as const) {
    it(`a store whose object pages were damaged (${kind}) is set aside and started empty, never served`, async () => {
      const dir = dataDir();
      await filledStore(dir, 3000);
      expect(damageObjectPages(join(dir, 'data.mdb'), '"uid":"', { kind, pages: 3 })).toBe(3);
      // Without the check (what flotilla did before), the damage is served as if it were the members' state.
      const unchecked = Store.open(dir, { verify: false });
      let served: number | string;
      try {
        served = [...unchecked.entries('v1/configmaps')].filter((e) => e.bytes[0] === 0x7b).length;
      } catch (e) {
        served = (e as Error).message;
      }
      expect(unchecked.syncState(scope('east'))?.rv).toBe('5000');
      await unchecked.close();
      expect(served).not.toBe(6000);

      const store = Store.open(dir);
      const health = store.health();
      expect(health.writable).toBe(true);
      expect(health.rebuilt?.fault).toBeTruthy();
      expect(health.rebuilt?.keptAt).toMatch(/corrupt-/);
      // Empty: no object, no sync record, so the cachers list from the members again.
      expect([...store.entries('v1/configmaps')]).toEqual([]);
      expect(store.syncState(scope('east'))).toBeUndefined();
      await store.commit(scope('east'), objects('east', 10), { rv: '6000' }, { log: false, fresh: true });
      await store.close();
      // The damaged files are kept for inspection; the rebuilt store opens clean and whole.
      expect(existsSync(join(health.rebuilt!.keptAt, 'data.mdb'))).toBe(true);
      const again = Store.open(dir);
      expect(again.health().rebuilt).toBeUndefined();
      expect([...again.entries('v1/configmaps')]).toHaveLength(10);
      await again.close();
    });
  }

  it('a store marked damaged while serving is set aside at the next open, keeping one copy only', async () => {
    const dir = dataDir();
    await filledStore(dir, 10);
    writeFileSync(join(dir, DAMAGE_MARKER), 'MDB_CORRUPTED: Located page was wrong type\n');
    const first = Store.open(dir);
    expect(first.health().rebuilt?.fault).toMatch(/damaged while serving: MDB_CORRUPTED/);
    await first.commit(scope('east'), objects('east', 10), { rv: '1' }, { log: false, fresh: true });
    await first.close();
    writeFileSync(join(dir, DAMAGE_MARKER), 'MDB_PAGE_NOTFOUND\n');
    await new Promise((r) => setTimeout(r, 5));
    const second = Store.open(dir);
    expect(second.health().rebuilt?.fault).toMatch(/MDB_PAGE_NOTFOUND/);
    await second.close();
    expect(readdirSync(dir).filter((f) => f.startsWith('corrupt-'))).toHaveLength(1);
    expect(existsSync(join(dir, DAMAGE_MARKER))).toBe(false);
  });
});
