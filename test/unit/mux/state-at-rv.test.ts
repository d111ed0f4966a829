import { afterEach, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Store, type Change, type ChangeType } from '../../../src/store/store.js';
import { decodeObject } from '../../../src/ingest/decode.js';
import { encodeObjects, viewObjects } from '../../../src/ingest/batch.js';
import { planPage, type PagePlan } from '../../../src/mux/list-plan.js';
import { listResponse } from '../../../src/mux/reads.js';
import { SnapshotRegistry } from '../../../src/mux/snapshots.js';
import { decodeContinue, type ContinueToken } from '../../../src/api/continue-token.js';
import { StatusError } from '../../../src/api/status.js';
import type { CachedResource } from '../../../src/cacher/cache-roles.js';
import { buildReadView } from '../../../src/view/steps.js';
import type { ReadView } from '../../../src/view/read-view.js';

/**
 * A page of a paged list read where its first page's snapshot is not (another replica's store fed
 * the same changes, or the same store after the snapshot went): the state at the token's RV, from
 * the current store and the event log.
 */
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const pods: CachedResource = {
  info: { group: '', version: 'v1', resource: 'pods', kind: 'Pod', namespaced: true, singularName: 'pod', shortNames: [], categories: [], memberVerbs: [] },
  clusters: ['east', 'west'],
};

function pod(type: ChangeType, cluster: string, namespace: string, name: string, rv: number, labels: Record<string, string>): Change {
  const o = viewObjects(encodeObjects([decodeObject({ metadata: { namespace, name, uid: `${cluster}-${namespace}-${name}`, resourceVersion: String(rv), labels } }, { cluster, apiVersion: 'v1', kind: 'Pod', dropManagedFields: true })]))[0]!;
  return { type, rv: String(rv), ...o };
}

function open(): Store {
  const dir = mkdtempSync(join(tmpdir(), 'flotilla-at-rv-'));
  dirs.push(dir);
  return Store.open(dir);
}

/** Two stores ("replicas") fed the same member changes, and a random writer over both clusters. */
class Fleet {
  readonly stores = [open(), open()];
  readonly rvs: Record<string, number> = { east: 10, west: 500 };
  /** What each member holds now: key namespace/name → labels. */
  readonly objects: Record<string, Map<string, Record<string, string>>> = { east: new Map(), west: new Map() };
  private seed = 7;

  private random(n: number): number {
    this.seed = (this.seed * 1103515245 + 12345) % 2 ** 31;
    return this.seed % n;
  }

  async first(count: number): Promise<void> {
    for (const cluster of ['east', 'west']) {
      const changes: Change[] = [];
      for (let i = 0; i < count; i++) {
        const ns = `ns${i % 3}`;
        const labels = { app: i % 2 ? 'odd' : 'even' };
        this.objects[cluster]!.set(`${ns}/p${i}`, labels);
        changes.push(pod('ADDED', cluster, ns, `p${i}`, this.rvs[cluster]!, labels));
      }
      for (const s of this.stores) await s.commit({ cluster, resource: 'v1/pods' }, changes, { rv: String(this.rvs[cluster]) }, { log: false, logStartRV: String(this.rvs[cluster]) });
    }
  }

  /** One member write: a create, an update (sometimes of its labels) or a delete. */
  async write(): Promise<void> {
    const cluster = this.random(2) ? 'east' : 'west';
    const held = this.objects[cluster]!;
    const rv = ++this.rvs[cluster]!;
    const roll = this.random(3);
    let change: Change;
    if (roll === 0 || held.size === 0) {
      const name = `n${rv}`;
      const ns = `ns${this.random(3)}`;
      held.set(`${ns}/${name}`, { app: 'new' });
      change = pod('ADDED', cluster, ns, name, rv, { app: 'new' });
    } else {
      const [key, labels] = [...held][this.random(held.size)]!;
      const [ns, name] = key.split('/') as [string, string];
      if (roll === 1) {
        const now = this.random(2) ? labels : { app: labels['app'] === 'odd' ? 'even' : 'odd' };
        held.set(key, now);
        change = pod('MODIFIED', cluster, ns, name, rv, now);
      } else {
        held.delete(key);
        change = pod('DELETED', cluster, ns, name, rv, labels);
      }
    }
    for (const s of this.stores) await s.commit({ cluster, resource: 'v1/pods' }, [change], { rv: String(rv) }, { log: true });
  }
}

const metaOf = (page: PagePlan) => JSON.parse(`{${page.listMeta}}`) as { resourceVersion: string; continue?: string; remainingItemCount?: number };
const shown = (page: PagePlan) => page.entries.map((e) => `${e.key}|${e.bytes.toString()}`);

describe('a page read at its list’s RV from the event log', () => {
  for (const [what, request] of [
    ['every pod', {}],
    ['a namespace', { namespace: 'ns1' }],
    ['a label selector (candidates from the label index)', { labelSelector: 'app=odd' }],
    ['a set-based selector (checked on each object)', { labelSelector: 'app notin (even)' }],
    ['one member', { cluster: 'west' }],
  ] as const) {
    it(`gives the first page's state on another store, whatever changed since (${what})`, async () => {
      const fleet = new Fleet();
      await fleet.first(40);
      const [a, b] = fleet.stores as [Store, Store];
      const registries = [new SnapshotRegistry(a), new SnapshotRegistry(b)];
      const view: ReadView = buildReadView({ resource: pods, watching: false, ...request });
      const plan = (i: number, limit: number, continueToken?: ContinueToken) => planPage(fleet.stores[i]!, { resource: pods, view, limit, snapshots: registries[i]!, caller: 'c', ...(continueToken ? { continueToken } : {}) });
      for (let i = 0; i < 30; i++) await fleet.write();
      // Entries' bytes may be views of shared slabs: read them at once.
      const whole = shown(plan(0, 10_000));
      const first = plan(0, 7);
      const served = shown(first);
      let token = metaOf(first).continue;
      const counts: number[] = [];
      // Pages alternate stores, with member writes between them.
      for (let i = 1; token; i++) {
        for (let w = 0; w < 12; w++) await fleet.write();
        const page = plan(i % 2, 7, decodeContinue(token));
        page.atRV?.done();
        expect(metaOf(page).resourceVersion).toBe(metaOf(first).resourceVersion);
        served.push(...shown(page));
        if (metaOf(page).remainingItemCount !== undefined) counts.push(served.length + metaOf(page).remainingItemCount!);
        token = metaOf(page).continue;
      }
      expect(served).toEqual(whole);
      // remainingItemCount (given without selectors) counts what the list at its RV holds.
      for (const c of counts) expect(c).toBe(served.length);
      for (const r of registries) r.close();
    });
  }

  it('serves Table rows from the meta records the objects had at the RV', async () => {
    const fleet = new Fleet();
    await fleet.first(6);
    const [a, b] = fleet.stores as [Store, Store];
    const view = buildReadView({ resource: pods, watching: false, labelSelector: 'app=odd' });
    const snapshots = [new SnapshotRegistry(a), new SnapshotRegistry(b)];
    const list = (s: number, limit: number, continueToken?: ContinueToken) =>
      JSON.parse((listResponse(fleet.stores[s]!, { resource: pods, view, form: 'table', limit, snapshots: snapshots[s]!, caller: 'c', ...(continueToken ? { continueToken } : {}) }) as Buffer).toString()) as {
        metadata: { continue?: string };
        rows: { object: { metadata: { name: string; resourceVersion: string; labels: Record<string, string> } } }[];
      };
    const first = list(0, 1);
    // Every odd pod of both members changes its label: at the RV they were all still odd.
    for (const cluster of ['east', 'west']) {
      for (const [key, labels] of fleet.objects[cluster]!) {
        if (labels['app'] !== 'odd') continue;
        const [ns, name] = key.split('/') as [string, string];
        const rv = ++fleet.rvs[cluster]!;
        for (const s of fleet.stores) await s.commit({ cluster, resource: 'v1/pods' }, [pod('MODIFIED', cluster, ns, name, rv, { app: 'even' })], { rv: String(rv) }, { log: true });
      }
    }
    const rest = list(1, 100, decodeContinue(first.metadata.continue!));
    expect(first.rows.length + rest.rows.length).toBe(6);
    for (const row of rest.rows) expect(row.object.metadata.labels).toEqual({ app: 'odd' });
    for (const r of snapshots) r.close();
  });

  it('answers 410 with a fresh token when the log no longer reaches back to the RV', async () => {
    const fleet = new Fleet();
    await fleet.first(10);
    const [a, b] = fleet.stores as [Store, Store];
    const view = buildReadView({ resource: pods, watching: false });
    const first = planPage(a, { resource: pods, view, limit: 3, snapshots: new SnapshotRegistry(a), caller: 'c' });
    const token = decodeContinue(metaOf(first).continue!);
    // The other store's log of east starts after the list's RV (its first list came later).
    await b.commit({ cluster: 'east', resource: 'v1/pods' }, [], { rv: '99' }, { log: false, logStartRV: '99' });
    let error: unknown;
    try {
      planPage(b, { resource: pods, view, limit: 3, continueToken: token, snapshots: new SnapshotRegistry(b), caller: 'c' });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(StatusError);
    expect((error as StatusError).code).toBe(410);
    const fresh = decodeContinue((error as StatusError).listMeta!.continue!);
    expect(fresh.start).toBe(token.start);
    expect(fresh.snap).toBeUndefined();
  });
});
