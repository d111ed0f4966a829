import { afterEach, describe, expect, it, vi } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KEY_SEP, Store, type Change, type ChangeType } from '../../../src/store/store.js';
import { decodeObject } from '../../../src/ingest/decode.js';
import { encodeObjects, viewObjects } from '../../../src/ingest/batch.js';
import { planPage } from '../../../src/mux/list-plan.js';
import { SnapshotRegistry } from '../../../src/mux/snapshots.js';
import { decodeContinue } from '../../../src/api/continue-token.js';
import type { CachedResource } from '../../../src/cacher/cache-roles.js';
import { buildReadView } from '../../../src/view/steps.js';
import { CREATED_FIELD, createdValue, fieldIndexKey } from '../../../src/store/meta-record.js';

/** The creation-time index: one label-index entry per object, a created-after/before list served from its range. */
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function newDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'flotilla-created-'));
  dirs.push(dir);
  return dir;
}

const PODS = 'v1/pods';
const pods: CachedResource = {
  info: { group: '', version: 'v1', resource: 'pods', kind: 'Pod', namespaced: true, singularName: 'pod', shortNames: [], categories: [], memberVerbs: [] },
  clusters: ['east', 'west'],
};
const CREATED = fieldIndexKey(CREATED_FIELD);
const T0 = Date.parse('2026-11-28T10:00:00Z');
const at = (minute: number) => new Date(T0 + minute * 60_000).toISOString().replace('.000Z', 'Z');

function pod(cluster: string, namespace: string, name: string, created: string, type: ChangeType = 'ADDED', labels: Record<string, string> = {}): Change {
  const metadata = { namespace, name, uid: `${cluster}-${namespace}-${name}`, resourceVersion: '5', creationTimestamp: created, labels };
  const o = viewObjects(encodeObjects([decodeObject({ metadata }, { cluster, apiVersion: 'v1', kind: 'Pod', dropManagedFields: true })]))[0]!;
  return { type, rv: '5', ...o };
}

const names = (keys: Iterable<string>) => [...keys].map((k) => k.split(KEY_SEP).slice(1).join('/'));

/** 2 members × 3 namespaces × 8 pods, created at minutes scattered so time order is not key order. */
async function filled(): Promise<{ store: Store; snapshots: SnapshotRegistry }> {
  const store = Store.open(newDir());
  for (const cluster of ['east', 'west']) {
    const batch: Change[] = [];
    for (const ns of ['a', 'b', 'c']) {
      for (let i = 0; i < 8; i++) {
        const minute = (i * 7 + ns.charCodeAt(0) * 3 + (cluster === 'east' ? 0 : 5)) % 20;
        batch.push(pod(cluster, ns, `p${i}`, at(minute), 'ADDED', { tier: i % 2 === 0 ? 'even' : 'odd' }));
      }
    }
    await store.commit({ cluster, resource: PODS }, batch, { rv: '5' }, { log: false, fresh: true });
  }
  return { store, snapshots: new SnapshotRegistry(store) };
}

/** Every page of a list, following continue tokens from the first page's snapshot. */
function listAll(store: Store, snapshots: SnapshotRegistry, labelSelector: string, limit?: number): string[] {
  const view = buildReadView({ resource: pods, watching: false, labelSelector });
  const out: string[] = [];
  let continueToken;
  for (;;) {
    const page = planPage(store, { resource: pods, view, limit, snapshots, caller: 'c', continueToken });
    out.push(...page.entries.map((e) => e.key));
    const next = /"continue":"([^"]+)"/.exec(page.listMeta)?.[1];
    if (!next) return out;
    continueToken = decodeContinue(next);
    expect(continueToken.snap).toBe(page.snapshotId);
  }
}

const term = (after?: number, before?: number) =>
  [after === undefined ? '' : `search.flotilla.io/created-after=${(T0 + after * 60_000) / 1000}`, before === undefined ? '' : `search.flotilla.io/created-before=${(T0 + before * 60_000) / 1000}`].filter(Boolean).join(',');

describe('creation-time index', () => {
  it('enters each object’s creation time, removes it with the object, and keeps it through a restart', async () => {
    const dir = newDir();
    const scope = { cluster: 'east', resource: PODS };
    const store = Store.open(dir);
    await store.commit(scope, [pod('east', 'a', 'x', at(3)), pod('east', 'a', 'y', at(1)), pod('east', 'b', 'z', at(3))], { rv: '5' }, { log: false, fresh: true });
    expect(names(store.keysInRange(PODS, CREATED, at(0), undefined))).toEqual(['a/y/east', 'a/x/east', 'b/z/east']);
    // from inclusive, to exclusive.
    expect(names(store.keysInRange(PODS, CREATED, at(3), at(4)))).toEqual(['a/x/east', 'b/z/east']);
    expect(names(store.keysInRange(PODS, CREATED, at(1), at(3)))).toEqual(['a/y/east']);
    await store.commit(scope, [pod('east', 'a', 'x', at(3), 'MODIFIED', { changed: 'yes' }), pod('east', 'a', 'y', at(1), 'DELETED')], { rv: '6' }, { log: true });
    expect(names(store.keysInRange(PODS, CREATED, undefined, undefined))).toEqual(['a/x/east', 'b/z/east']);
    await store.close();
    const again = Store.open(dir);
    expect(again.health().rebuilt).toBeFalsy();
    expect(names(again.keysInRange(PODS, CREATED, undefined, at(10)))).toEqual(['a/x/east', 'b/z/east']);
    await again.commit(scope, [pod('east', 'b', 'z', at(3), 'DELETED')], { rv: '7' }, { log: true });
    expect(names(again.keysInRange(PODS, CREATED, undefined, undefined))).toEqual(['a/x/east']);
    await again.close();
  });

  it('enters a creation time not written as the apiserver writes it at its whole second, rounded up as bounds are', () => {
    expect(createdValue('2026-11-28T10:00:00Z')).toBe('2026-11-28T10:00:00Z');
    expect(createdValue('2026-11-28T11:00:00+01:00')).toBe('2026-11-28T10:00:00Z');
    expect(createdValue('2026-11-28T10:00:00.250Z')).toBe('2026-11-28T10:00:01Z');
    expect(createdValue('yesterday')).toBeUndefined();
  });

  it('lists created-after (at or after) and created-before (strictly before) as a scan would, in key order, paged from one snapshot', async () => {
    const { store, snapshots } = await filled();
    const all = listAll(store, snapshots, '');
    // The scan's answer, from every object's own creation time.
    const minute = (k: string) => (Date.parse(store.metaAt(k)!.created!) - T0) / 60_000;
    const bounds: [number | undefined, number | undefined][] = [[3, 9], [0, 20], [5, undefined], [undefined, 7], [9, 9], [19, 20], [4, 5]];
    for (const [after, before] of bounds) {
      const expected = all.filter((k) => (after === undefined || minute(k) >= after) && (before === undefined || minute(k) < before));
      expect(listAll(store, snapshots, term(after, before)), `after ${after} before ${before}`).toEqual(expected);
      for (const limit of [1, 4, 7]) expect(listAll(store, snapshots, term(after, before), limit), `limit ${limit}`).toEqual(expected);
    }
    expect(listAll(store, snapshots, term(3, 9)).length).toBeGreaterThan(0);
  });

  it('reads the range, not the kind, and lets a smaller label lookup drive with the range checked per object', async () => {
    const { store, snapshots } = await filled();
    const entries = vi.spyOn(store, 'entries');
    const ranged = vi.spyOn(store, 'keysInRange');
    const got = listAll(store, snapshots, term(4, 6));
    expect(entries).not.toHaveBeenCalled();
    expect(ranged).toHaveBeenCalled();
    expect(got.every((k) => [4, 5].includes((Date.parse(store.metaAt(k)!.created!) - T0) / 60_000))).toBe(true);
    const withLabel = listAll(store, snapshots, `tier=even,${term(0, 10)}`);
    expect(withLabel).toEqual(listAll(store, snapshots, term(0, 10)).filter((k) => store.metaAt(k)!.labels?.tier === 'even'));
    expect(entries).not.toHaveBeenCalled();
  });
});
