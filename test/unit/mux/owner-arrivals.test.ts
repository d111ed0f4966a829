import { afterEach, describe, expect, it, vi } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import type { ServerResponse } from 'node:http';
import { Store, type Change } from '../../../src/store/store.js';
import { decodeObject } from '../../../src/ingest/decode.js';
import { encodeObjects, viewObjects } from '../../../src/ingest/batch.js';
import { WatchHub } from '../../../src/mux/watch-hub.js';
import type { CachedResource, ResourceCatalog } from '../../../src/cacher/cache-roles.js';
import { gvrKey } from '../../../src/api/resource-info.js';
import { StoreOwnerSearch } from '../../../src/view/owner-predicate.js';
import { buildReadView } from '../../../src/view/steps.js';

/**
 * A watch with an owner term, on a real store, when an object is cached before its owner (a pod
 * before its ReplicaSet, as two cachers may deliver them): the pod's own event came when no chain
 * reached the Deployment; the ReplicaSet's arrival brings it, once.
 */
const dirs: string[] = [];
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function resource(group: string, resource: string, kind: string): CachedResource {
  const info = { group, version: 'v1', resource, kind, namespaced: true, singularName: kind.toLowerCase(), shortNames: [], categories: [], memberVerbs: [] };
  return { info, clusters: ['east'] };
}
const DEPLOYMENTS = resource('apps', 'deployments', 'Deployment');
const REPLICASETS = resource('apps', 'replicasets', 'ReplicaSet');
const PODS = resource('', 'pods', 'Pod');

type Kinded = { r: CachedResource; name: string; uid: string; owners?: Kinded[] };
let rv = 10;

async function put(store: Store, o: Kinded): Promise<void> {
  const { info } = o.r;
  const ownerReferences = (o.owners ?? []).map((w) => ({ apiVersion: w.r.info.group ? `${w.r.info.group}/v1` : 'v1', kind: w.r.info.kind, name: w.name, uid: w.uid }));
  const at = String(++rv);
  const ctx = { cluster: 'east', apiVersion: info.group ? `${info.group}/v1` : 'v1', kind: info.kind, dropManagedFields: true };
  const enc = viewObjects(encodeObjects([decodeObject({ metadata: { namespace: 'shop', name: o.name, uid: o.uid, resourceVersion: at, ownerReferences } }, ctx)]))[0]!;
  const change: Change = { type: 'ADDED', rv: at, ...enc };
  await store.commit({ cluster: 'east', resource: gvrKey(info) }, [change], { rv: at }, { log: true });
}

class Client extends Writable {
  readonly names: string[] = [];
  private text = '';
  override _write(chunk: Buffer, _enc: BufferEncoding, done: () => void): void {
    const lines = (this.text + chunk.toString('utf8')).split('\n');
    this.text = lines.pop()!;
    for (const l of lines) {
      const e = JSON.parse(l) as { type: string; object: { metadata: { name: string } } };
      this.names.push(`${e.type} ${e.object.metadata.name}`);
    }
    done();
  }
  writeHead(): this {
    return this;
  }
  flushHeaders(): void {}
}

describe('a watch with an owner term', () => {
  it('is sent a pod cached before its ReplicaSet when the ReplicaSet is cached, once, and nothing else', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'flotilla-owner-arrivals-'));
    dirs.push(dir);
    const store = Store.open(dir);
    cleanups.push(() => store.close());
    const catalog: ResourceCatalog = {
      resource: (key) => [DEPLOYMENTS, REPLICASETS, PODS].find((r) => gvrKey(r.info) === key),
      cachedResources: () => [DEPLOYMENTS, REPLICASETS, PODS],
    };
    const search = new StoreOwnerSearch(store, catalog);
    const hub = new WatchHub(store);
    const web: Kinded = { r: DEPLOYMENTS, name: 'web', uid: 'd-web' };
    const other: Kinded = { r: DEPLOYMENTS, name: 'other', uid: 'd-other' };
    await put(store, web);
    await put(store, other);
    // A pod and its ReplicaSet, of another Deployment, both cached: they own something cached, so arrivals are looked at.
    const otherRs: Kinded = { r: REPLICASETS, name: 'other-1', uid: 'rs-other', owners: [other] };
    await put(store, otherRs);
    await put(store, { r: PODS, name: 'other-1-a', uid: 'p-other', owners: [otherRs] });

    const request = { resource: PODS, watching: true, namespace: 'shop', labelSelector: 'search.flotilla.io/owner-kind=Deployment,search.flotilla.io/owner-name=web', owners: search };
    const view = buildReadView({ ...request, ownersFound: search.find({ kind: 'Deployment', name: 'web' }, ['east'], 'shop') });
    const client = new Client();
    hub.open(client as unknown as ServerResponse, {
      resource: PODS, view, form: 'object', sendInitialEvents: false, bookmarks: false, since: store.latestRVs(gvrKey(PODS.info)),
      timeoutMs: 60_000, bookmarkIntervalMs: 60_000, maxBufferedBytes: 1 << 24, catchUpStallMs: 60_000,
    });
    cleanups.push(() => void client.destroy());

    const rs: Kinded = { r: REPLICASETS, name: 'web-1', uid: 'rs-web', owners: [web] };
    await put(store, { r: PODS, name: 'web-1-a', uid: 'p-a', owners: [rs] });
    await new Promise((r) => setTimeout(r, 50));
    // Its ReplicaSet not cached: not known to be web's.
    expect(client.names).toEqual([]);
    await put(store, rs);
    await vi.waitFor(() => expect(client.names).toEqual(['ADDED web-1-a']), { timeout: 2000, interval: 5 });
    // A pod made after its ReplicaSet comes by its own event; an unrelated owner's arrival brings nothing.
    await put(store, { r: PODS, name: 'web-1-b', uid: 'p-b', owners: [rs] });
    await put(store, { r: REPLICASETS, name: 'other-2', uid: 'rs-other-2', owners: [other] });
    await put(store, { r: PODS, name: 'other-2-a', uid: 'p-other-2', owners: [{ r: REPLICASETS, name: 'other-2', uid: 'rs-other-2' }] });
    // A pod shown already (through web-1) is not sent again when its second owner, also web's, is cached.
    const second: Kinded = { r: REPLICASETS, name: 'web-2', uid: 'rs-web-2', owners: [web] };
    await put(store, { r: PODS, name: 'web-1-c', uid: 'p-c', owners: [rs, second] });
    await put(store, second);
    await vi.waitFor(() => expect(client.names).toHaveLength(3), { timeout: 2000, interval: 5 });
    await new Promise((r) => setTimeout(r, 50));
    expect(client.names).toEqual(['ADDED web-1-a', 'ADDED web-1-b', 'ADDED web-1-c']);
  });
});
