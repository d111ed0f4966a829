import { afterEach, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Store, type Change } from '../../../src/store/store.js';
import { decodeObject } from '../../../src/ingest/decode.js';
import { CLUSTER_ANNOTATION } from '../../../src/api/fleet-object/index.js';
import { encodeObjects, viewObjects } from '../../../src/ingest/batch.js';
import { listResponse, type ListBody } from '../../../src/mux/reads.js';
import { SnapshotRegistry } from '../../../src/mux/snapshots.js';
import type { CachedResource } from '../../../src/cacher/cache-roles.js';
import { buildReadView } from '../../../src/view/steps.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const pods: CachedResource = {
  info: { group: '', version: 'v1', resource: 'pods', kind: 'Pod', namespaced: true, singularName: 'pod', shortNames: [], categories: [], memberVerbs: [] },
  clusters: ['east'],
};

function pod(name: string, rv: string, cluster = 'east'): Change {
  const o = viewObjects(encodeObjects([decodeObject({ metadata: { namespace: 'ns', name, uid: name, resourceVersion: rv }, spec: { pad: 'x'.repeat(300) } }, { cluster, apiVersion: 'v1', kind: 'Pod', dropManagedFields: true })]))[0]!;
  return { type: 'ADDED', rv, ...o };
}

function text(body: ListBody): { chunks: number; json: { items: { metadata: { name: string } }[] } } {
  if (Buffer.isBuffer(body)) return { chunks: 1, json: JSON.parse(body.toString()) };
  const parts = [...body.chunks];
  return { chunks: parts.length, json: JSON.parse(Buffer.concat(parts).toString()) };
}

describe('unpaged lists', () => {
  it('are one buffer when small and stream in chunks from one snapshot when large', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'flotilla-list-'));
    dirs.push(dir);
    const store = Store.open(dir);
    const snapshots = new SnapshotRegistry(store);
    await store.commit({ cluster: 'east', resource: 'v1/pods' }, [pod('p-0', '1')], { rv: '1' }, { log: false });
    const opts = { resource: pods, view: buildReadView({ resource: pods, watching: false }), form: 'object' as const, snapshots, caller: 'test' };
    expect(Buffer.isBuffer(listResponse(store, opts))).toBe(true);

    const many = Array.from({ length: 3000 }, (_, i) => pod(`p-${String(i + 1).padStart(4, '0')}`, String(i + 2)));
    await store.commit({ cluster: 'east', resource: 'v1/pods' }, many, { rv: '3001' }, { log: false });
    const body = listResponse(store, opts);
    expect(Buffer.isBuffer(body)).toBe(false);
    const streamed = body as Exclude<ListBody, Buffer>;
    const it = streamed.chunks[Symbol.iterator]();
    const first = it.next().value as Buffer;
    // A commit while the client reads does not show up in (or tear) the list being served.
    await store.commit({ cluster: 'east', resource: 'v1/pods' }, [pod('p-9999', '4000'), { ...pod('p-0', '4001'), type: 'DELETED' }], { rv: '4001' }, { log: false });
    const rest: Buffer[] = [];
    for (let r = it.next(); !r.done; r = it.next()) rest.push(r.value);
    const json = JSON.parse(Buffer.concat([first, ...rest]).toString()) as { items: { metadata: { name: string } }[] };
    expect(rest.length).toBeGreaterThan(1);
    expect(json.items).toHaveLength(3001);
    expect(json.items[0]!.metadata.name).toBe('p-0');
    expect(json.items.some((i) => i.metadata.name === 'p-9999')).toBe(false);
    // The next list sees the commit.
    expect(text(listResponse(store, opts)).json.items).toHaveLength(3001);
    expect(text(listResponse(store, opts)).json.items.some((i) => i.metadata.name === 'p-9999')).toBe(true);
    snapshots.close();
    await store.close();
  });

  it('hold the objects of the clusters the resource is cached for, as a configuration change replaces them', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'flotilla-list-'));
    dirs.push(dir);
    const store = Store.open(dir);
    const snapshots = new SnapshotRegistry(store);
    // Enough objects to stream in several chunks, each object's bytes read through the store's slabs.
    for (const cluster of ['east', 'west']) {
      const objects = Array.from({ length: 1500 }, (_, i) => pod(`${cluster}-${String(i).padStart(4, '0')}`, String(i + 1), cluster));
      await store.commit({ cluster, resource: 'v1/pods' }, objects, { rv: '1500' }, { log: false });
    }
    const resource: CachedResource = { ...pods, clusters: ['east'] };
    const listed = () => {
      const items = text(listResponse(store, { resource, view: buildReadView({ resource, watching: false }), form: 'object', snapshots, caller: 'test' })).json.items as { metadata: { name: string; annotations: Record<string, string> } }[];
      const perCluster: Record<string, number> = {};
      for (const i of items) {
        const cluster = i.metadata.annotations[CLUSTER_ANNOTATION]!;
        // Every object's bytes are its own: its name starts with its cluster's.
        expect(i.metadata.name.startsWith(`${cluster}-`)).toBe(true);
        perCluster[cluster] = (perCluster[cluster] ?? 0) + 1;
      }
      return perCluster;
    };
    expect(listed()).toEqual({ east: 1500 });
    resource.clusters = ['east', 'west'];
    expect(listed()).toEqual({ east: 1500, west: 1500 });
    resource.clusters = ['west'];
    expect(listed()).toEqual({ west: 1500 });
    snapshots.close();
    await store.close();
  });
});
