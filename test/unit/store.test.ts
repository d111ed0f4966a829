import { afterEach, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Store } from '../../src/store/store.js';
import { decodeObject, type IngestContext } from '../../src/ingest/decode.js';
import { encodeObjects, viewObjects } from '../../src/ingest/batch.js';

const dirs: string[] = [];
function openStore(): { store: Store; dir: string } {
  const dir = mkdtempSync(join(tmpdir(), 'flotilla-store-'));
  dirs.push(dir);
  return { store: Store.open(dir), dir };
}
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const obj = (cluster: string, namespace: string, name: string, rv: string) => {
  const ctx: IngestContext = { cluster, apiVersion: 'v1', kind: 'Pod', dropManagedFields: true };
  // Through the same encoding the ingest workers use.
  return viewObjects(encodeObjects([decodeObject({ metadata: { namespace, name, uid: `${cluster}-${name}`, resourceVersion: rv } }, ctx)]))[0]!;
};

describe('Store', () => {
  it('lists a resource in namespace/name/cluster order, by namespace, and by cluster', async () => {
    const { store } = openStore();
    await store.commit({ cluster: 'west', resource: 'v1/pods' }, [obj('west', 'b', 'p', '1'), obj('west', 'a', 'z', '2')], [], { rv: '2' });
    await store.commit({ cluster: 'east', resource: 'v1/pods' }, [obj('east', 'b', 'p', '5')], [], { rv: '5' });
    await store.commit({ cluster: 'east', resource: 'v1/configmaps' }, [obj('east', 'a', 'cm', '6')], [], { rv: '6' });
    const all = [...store.entries('v1/pods')].map((e) => `${e.namespace}/${e.name}@${e.cluster}`);
    expect(all).toEqual(['a/z@west', 'b/p@east', 'b/p@west']);
    expect([...store.entries('v1/pods', { namespace: 'b' })].map((e) => e.cluster)).toEqual(['east', 'west']);
    expect([...store.entries('v1/pods', { cluster: 'west' })].map((e) => e.name)).toEqual(['z', 'p']);
    expect(store.lookup('v1/pods', 'b', 'p').map((e) => e.cluster)).toEqual(['east', 'west']);
    expect(store.lookup('v1/pods', 'b', 'p', 'west')).toHaveLength(1);
    expect(store.syncStates('v1/pods').map((s) => [s.cluster, s.sync.rv])).toEqual([['east', '5'], ['west', '2']]);
    await store.close();
  });

  it('deletes, reconciles per scope, and keeps everything across a reopen', async () => {
    const { store, dir } = openStore();
    const scope = { cluster: 'east', resource: 'v1/pods', namespace: 'a' };
    await store.commit(scope, [obj('east', 'a', 'x', '1'), obj('east', 'a', 'y', '2')], [], { rv: '2' });
    await store.commit({ cluster: 'east', resource: 'v1/pods', namespace: 'b' }, [obj('east', 'b', 'x', '3')], [], { rv: '3' });
    await store.commit(scope, [], [{ namespace: 'a', name: 'x' }], { rv: '4' });
    expect(store.refsOf(scope)).toEqual([{ namespace: 'a', name: 'y' }]);
    expect(store.refsOf({ cluster: 'east', resource: 'v1/pods' })).toHaveLength(2);
    await store.close();
    const again = Store.open(dir);
    expect(again.syncState(scope)).toEqual({ rv: '4' });
    const y = again.lookup('v1/pods', 'a', 'y')[0]!;
    expect(JSON.parse(y.bytes.toString()).metadata.uid).toBe('east-y');
    expect(again.metaOf('v1/pods', y)).toMatchObject({ uid: 'east-y', rv: '2' });
    await again.close();
  });
});
