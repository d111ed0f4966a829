import { afterEach, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Store, type Change } from '../../../src/store/store.js';
import { decodeObject } from '../../../src/ingest/decode.js';
import { encodeObjects, viewObjects } from '../../../src/ingest/batch.js';
import { planPage, viewRanges } from '../../../src/mux/list-plan.js';
import { SnapshotRegistry } from '../../../src/mux/snapshots.js';
import { decodeGlobalRV } from '../../../src/api/global-rv.js';
import { decodeContinue } from '../../../src/api/continue-token.js';
import type { CachedResource } from '../../../src/cacher/cache-roles.js';
import { buildReadView } from '../../../src/view/steps.js';

/** A list's plan before any byte is framed: which objects a page holds and what its metadata says. */
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const pods: CachedResource = {
  info: { group: '', version: 'v1', resource: 'pods', kind: 'Pod', namespaced: true, singularName: 'pod', shortNames: [], categories: [], memberVerbs: [] },
  clusters: ['east', 'west'],
};

function pod(cluster: string, namespace: string, name: string, labels: Record<string, string> = {}): Change {
  const o = viewObjects(encodeObjects([decodeObject({ metadata: { namespace, name, uid: `${cluster}-${namespace}-${name}`, resourceVersion: '5', labels } }, { cluster, apiVersion: 'v1', kind: 'Pod', dropManagedFields: true })]))[0]!;
  return { type: 'ADDED', rv: '5', ...o };
}

async function stored(): Promise<{ store: Store; snapshots: SnapshotRegistry }> {
  const dir = mkdtempSync(join(tmpdir(), 'flotilla-plan-'));
  dirs.push(dir);
  const store = Store.open(dir);
  for (const cluster of ['east', 'west']) {
    await store.commit({ cluster, resource: 'v1/pods' }, ['a', 'b'].flatMap((ns) => [1, 2, 3].map((i) => pod(cluster, ns, `p${i}`, { app: i === 2 ? 'two' : 'other' }))), { rv: '5' }, { log: false });
  }
  return { store, snapshots: new SnapshotRegistry(store) };
}

const keys = (plan: { entries: { key: string }[] }) => plan.entries.map((e) => e.key);

describe('list planning', () => {
  it('reads a view through its ranges: one member’s own index, a namespace set as one range each', () => {
    expect(viewRanges(buildReadView({ resource: pods, watching: false }))).toEqual([{ cluster: undefined }]);
    expect(viewRanges(buildReadView({ resource: pods, watching: false, namespace: 'a', cluster: 'east' }))).toEqual([{ cluster: 'east', namespace: 'a' }]);
  });

  it('pages in key order under one snapshot, the continue token and remaining count naming what follows', async () => {
    const { store, snapshots } = await stored();
    const view = buildReadView({ resource: pods, watching: false });
    const first = planPage(store, { resource: pods, view, limit: 5, snapshots, caller: 'c' });
    expect(first.entries).toHaveLength(5);
    expect(first.last).toBe(false);
    const meta = JSON.parse(`{${first.listMeta}}`) as { resourceVersion: string; continue: string; remainingItemCount: number };
    expect(decodeGlobalRV(meta.resourceVersion)).toEqual({ east: '5', west: '5' });
    expect(meta.remainingItemCount).toBe(7);
    const token = decodeContinue(meta.continue);
    expect(token.snap).toBe(first.snapshotId);

    const rest = planPage(store, { resource: pods, view, limit: 100, continueToken: token, snapshots, caller: 'c' });
    expect(rest.last).toBe(true);
    expect(rest.listMeta).toBe(`"resourceVersion":${JSON.stringify(meta.resourceVersion)}`);
    expect([...keys(first), ...keys(rest)]).toEqual(keys(planPage(store, { resource: pods, view, limit: 100, snapshots, caller: 'c' })));
    expect(new Set([...keys(first), ...keys(rest)]).size).toBe(12);
  });

  it('takes a selected list’s candidates from the label index and counts nothing it would hide', async () => {
    const { store, snapshots } = await stored();
    const view = buildReadView({ resource: pods, watching: false, labelSelector: 'app=two' });
    const page = planPage(store, { resource: pods, view, limit: 1, snapshots, caller: 'c' });
    expect(page.entries.map((e) => e.name)).toEqual(['p2']);
    expect(page.listMeta).not.toContain('remainingItemCount');
    const token = decodeContinue((JSON.parse(`{${page.listMeta}}`) as { continue: string }).continue);
    const rest = planPage(store, { resource: pods, view, limit: 10, continueToken: token, snapshots, caller: 'c' });
    expect(rest.entries.map((e) => `${e.cluster}/${e.name}`)).toHaveLength(3);
  });

  it('reads a page whose snapshot is gone at the token’s RV, from the event log', async () => {
    const { store, snapshots } = await stored();
    const view = buildReadView({ resource: pods, watching: false });
    const whole = keys(planPage(store, { resource: pods, view, limit: 100, snapshots, caller: 'c' }));
    const first = planPage(store, { resource: pods, view, limit: 2, snapshots, caller: 'c' });
    const token = decodeContinue((JSON.parse(`{${first.listMeta}}`) as { continue: string }).continue);
    snapshots.release(first.snapshotId!);
    // Created after the list's RV: not in its pages.
    await store.commit({ cluster: 'west', resource: 'v1/pods' }, [{ ...pod('west', 'b', 'p9'), rv: '6' }], { rv: '6' }, { log: true });
    const rest = planPage(store, { resource: pods, view, limit: 100, continueToken: token, snapshots, caller: 'c' });
    rest.atRV?.done();
    expect([...keys(first), ...keys(rest)]).toEqual(whole);
  });
});
