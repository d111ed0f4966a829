import { afterEach, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Store, objectKey, type Change } from '../../../src/store/store.js';
import { decodeObject } from '../../../src/ingest/decode.js';
import { encodeObjects, viewObjects } from '../../../src/ingest/batch.js';
import { listResponse, type ListBody } from '../../../src/mux/reads.js';
import { SnapshotRegistry } from '../../../src/mux/snapshots.js';
import { decodeContinue } from '../../../src/api/continue-token.js';
import type { AccessSet } from '../../../src/api/rbac.js';
import type { CachedResource } from '../../../src/cacher/cache-roles.js';
import { buildReadView } from '../../../src/view/steps.js';

/**
 * Lists of a caller whose members grant different namespaces: a namespace granted by a few
 * members is read from their own index ranges and merged, one granted by many from its range.
 * Either way the list is what the view admits, in store key order, paged or not.
 */
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const CLUSTERS = Array.from({ length: 10 }, (_, i) => `c${i}`);
const NAMESPACES = ['a', 'b', 'c', 'd'];
const pods: CachedResource = {
  info: { group: '', version: 'v1', resource: 'pods', kind: 'Pod', namespaced: true, singularName: 'pod', shortNames: [], categories: [], memberVerbs: [] },
  clusters: CLUSTERS,
};

function pod(cluster: string, namespace: string, name: string): Change {
  const o = viewObjects(encodeObjects([decodeObject({ metadata: { namespace, name, uid: `${cluster}-${namespace}-${name}`, resourceVersion: '2' } }, { cluster, apiVersion: 'v1', kind: 'Pod', dropManagedFields: true })]))[0]!;
  return { type: 'ADDED', rv: '2', ...o };
}

const some = (...namespaces: string[]): AccessSet => ({ everywhere: false, namespaces: new Set(namespaces) });

type Item = { metadata: { namespace: string; name: string; annotations: Record<string, string> } };
const itemsOf = (body: ListBody): { items: Item[]; metadata: { continue?: string } } =>
  JSON.parse((Buffer.isBuffer(body) ? body : Buffer.concat([...body.chunks])).toString()) as { items: Item[]; metadata: { continue?: string } };
const keyOf = (i: Item) => objectKey('v1/pods', i.metadata.namespace, i.metadata.name, i.metadata.annotations['search.flotilla.io/cluster']!);

describe('lists of members granting different namespaces', () => {
  it('show what the view admits, in key order, whether a namespace is read by member or by range, paged or not', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'flotilla-ranges-'));
    dirs.push(dir);
    const store = Store.open(dir);
    const snapshots = new SnapshotRegistry(store);
    try {
      // Every member holds the same names, so members' copies sit side by side in key order.
      for (const c of CLUSTERS) await store.commit({ cluster: c, resource: 'v1/pods' }, NAMESPACES.flatMap((ns) => ['p1', 'p2', 'p3'].map((n) => pod(c, ns, n))), { rv: '2' }, { log: false, fresh: true });
      // a: one member grants it (its own range); b: two (merged); c: six (the namespace's range); d: nobody.
      const grants: Record<string, string[]> = { a: ['c3'], b: ['c1', 'c7'], c: ['c0', 'c2', 'c4', 'c5', 'c6', 'c8'] };
      const access = new Map(CLUSTERS.map((c) => [c, some(...Object.keys(grants).filter((ns) => grants[ns]!.includes(c)))]));
      const view = buildReadView({ resource: pods, watching: false, access });
      const expected = Object.entries(grants).flatMap(([ns, cs]) => cs.flatMap((c) => ['p1', 'p2', 'p3'].map((n) => objectKey('v1/pods', ns, n, c)))).sort();

      const whole = itemsOf(listResponse(store, { resource: pods, view, form: 'object', snapshots, caller: 't' }));
      expect(whole.items.map(keyOf)).toEqual(expected);

      // Pages of 4 end inside a merged namespace and between one member's copies of a name.
      const paged: string[] = [];
      let token: string | undefined;
      do {
        const page = itemsOf(listResponse(store, { resource: pods, view, form: 'object', snapshots, caller: 't', limit: 4, ...(token ? { continueToken: decodeContinue(token) } : {}) }));
        paged.push(...page.items.map(keyOf));
        token = page.metadata.continue;
      } while (token);
      expect(paged).toEqual(expected);
    } finally {
      snapshots.close();
      await store.close();
    }
  });
});
