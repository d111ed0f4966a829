import { afterEach, describe, expect, it, vi } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import type { ServerResponse } from 'node:http';
import { Store, type Change, type ChangeType } from '../../../src/store/store.js';
import { decodeObject } from '../../../src/ingest/decode.js';
import { encodeObjects, viewObjects } from '../../../src/ingest/batch.js';
import { WatchHub } from '../../../src/mux/watch-hub.js';
import type { WatchOptions } from '../../../src/mux/watch-options.js';
import { decodeGlobalRV } from '../../../src/api/global-rv.js';
import type { CachedResource } from '../../../src/cacher/cache-roles.js';
import { buildReadView } from '../../../src/view/steps.js';

/**
 * The watch hub on a real store (LMDB in a scratch directory) with in-process clients: each
 * client is a Writable that reads what the hub writes, or stops reading (a slow client), as a
 * socket would. No member and no HTTP server.
 */
const RESOURCE = 'v1/pods';
const pods: CachedResource = {
  info: { group: '', version: 'v1', resource: 'pods', kind: 'Pod', namespaced: true, singularName: 'pod', shortNames: [], categories: [], memberVerbs: [] },
  clusters: ['east', 'west'],
};

interface WatchEvent {
  type: string;
  object: { kind?: string; metadata: { namespace?: string; name?: string; resourceVersion: string; annotations?: Record<string, string> }; code?: number; reason?: string };
}

/** A watch client: parses the lines it reads; a slow one reads nothing until `read()`. */
class Client extends Writable {
  readonly events: WatchEvent[] = [];
  status = 0;
  private text = '';
  private readonly held: (() => void)[] = [];

  constructor(private slow = false) {
    super({ highWaterMark: 16 * 1024 });
  }

  override _write(chunk: Buffer, _enc: BufferEncoding, done: (e?: Error | null) => void): void {
    this.text += chunk.toString('utf8');
    const lines = this.text.split('\n');
    this.text = lines.pop()!;
    for (const l of lines) this.events.push(JSON.parse(l) as WatchEvent);
    if (this.slow) this.held.push(() => done());
    else done();
  }

  /** Starts reading: what waited is taken, and so is everything after. */
  read(): void {
    this.slow = false;
    for (const done of this.held.splice(0)) done();
  }

  writeHead(status: number): this {
    this.status = status;
    return this;
  }

  flushHeaders(): void {}

  get res(): ServerResponse {
    return this as unknown as ServerResponse;
  }
}

/** An event as `TYPE cluster/namespace/name`. */
const label = (e: WatchEvent) => `${e.type} ${e.object.metadata.annotations?.['search.flotilla.io/cluster']}/${e.object.metadata.namespace}/${e.object.metadata.name}`;
/** What a client was told. */
const seen = (c: Client) => c.events.map(label);

function change(cluster: string, type: ChangeType, namespace: string, name: string, rv: string, pad = 0): Change {
  const object = { metadata: { namespace, name, uid: `${cluster}-${namespace}-${name}`, resourceVersion: rv }, spec: { pad: 'x'.repeat(pad) } };
  const o = viewObjects(encodeObjects([decodeObject(object, { cluster, apiVersion: 'v1', kind: 'Pod', dropManagedFields: true })]))[0]!;
  return { type, rv, ...o };
}

const dirs: string[] = [];
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A store whose clusters have each listed (unlogged, the log starting at the list's RV), and a hub on it. */
async function fleet(lists: Record<string, string> = { east: '10', west: '100' }): Promise<{ store: Store; hub: WatchHub; commit: (cluster: string, changes: Change[]) => Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), 'flotilla-watch-'));
  dirs.push(dir);
  const store = Store.open(dir);
  const hub = new WatchHub(store);
  cleanups.push(() => store.close());
  for (const [cluster, rv] of Object.entries(lists)) {
    await store.commit({ cluster, resource: RESOURCE }, [change(cluster, 'ADDED', 'a', 'listed', rv)], { rv }, { log: false, logStartRV: rv });
  }
  const commit = (cluster: string, changes: Change[]) => store.commit({ cluster, resource: RESOURCE }, changes, { rv: changes.at(-1)!.rv }, { log: true });
  return { store, hub, commit };
}

function watch(hub: WatchHub, client: Client, opts: Partial<WatchOptions> = {}, namespace?: string): Client {
  hub.open(client.res, {
    resource: pods,
    view: buildReadView({ resource: pods, watching: true, ...(namespace !== undefined ? { namespace } : {}) }),
    form: 'object',
    sendInitialEvents: false,
    bookmarks: false,
    timeoutMs: 60_000,
    bookmarkIntervalMs: 60_000,
    maxBufferedBytes: 16 * 1024 * 1024,
    catchUpStallMs: 60_000,
    ...opts,
  });
  cleanups.push(async () => {
    client.destroy();
    await new Promise((r) => setImmediate(r));
  });
  return client;
}

/** Waits (the hub flushes at its own pace) until `check` passes. */
const eventually = (check: () => void) => vi.waitFor(check, { timeout: 5000, interval: 5 });
/** Waits until the client has `n` events. */
const until = (client: Client, n: number) => eventually(() => expect(client.events.length).toBeGreaterThanOrEqual(n));

describe('the watch hub’s fan-out', () => {
  it('tells every watcher each event once, in commit order, in its own form and only of its view', async () => {
    const { hub, commit } = await fleet();
    const first = watch(hub, new Client(), { since: { east: '10', west: '100' } });
    const second = watch(hub, new Client(), { since: { east: '10', west: '100' } });
    const metadata = watch(hub, new Client(), { since: { east: '10', west: '100' }, form: 'metadata' });
    const onlyB = watch(hub, new Client(), { since: { east: '10', west: '100' } }, 'b');
    expect(hub.size).toBe(4);

    await commit('east', [change('east', 'ADDED', 'a', 'p1', '11'), change('east', 'ADDED', 'b', 'p2', '12')]);
    await commit('west', [change('west', 'ADDED', 'b', 'p2', '101')]);
    await commit('east', [change('east', 'MODIFIED', 'a', 'p1', '13'), change('east', 'DELETED', 'b', 'p2', '14')]);
    await until(first, 5);
    await until(second, 5);
    await until(metadata, 5);
    await until(onlyB, 3);

    const all = ['ADDED east/a/p1', 'ADDED east/b/p2', 'ADDED west/b/p2', 'MODIFIED east/a/p1', 'DELETED east/b/p2'];
    expect(seen(first)).toEqual(all);
    expect(second.events).toEqual(first.events);
    expect(first.events.every((e) => e.object.kind === 'Pod')).toBe(true);
    expect(seen(metadata)).toEqual(all);
    expect(metadata.events.every((e) => e.object.kind === 'PartialObjectMetadata')).toBe(true);
    expect(metadata.events.map((e) => e.object.metadata.resourceVersion)).toEqual(first.events.map((e) => e.object.metadata.resourceVersion));
    expect(seen(onlyB)).toEqual(['ADDED east/b/p2', 'ADDED west/b/p2', 'DELETED east/b/p2']);
    // Each event's mark is the fleet at its commit, its own cluster at its own RV.
    expect(first.events.map((e) => decodeGlobalRV(e.object.metadata.resourceVersion))).toEqual([
      { east: '11', west: '100' }, { east: '12', west: '100' }, { east: '12', west: '101' }, { east: '13', west: '101' }, { east: '14', west: '101' },
    ]);
  });

  it('lets a watch resume from any event it was sent and miss or repeat nothing', async () => {
    const { hub, commit } = await fleet();
    const live = watch(hub, new Client(), { since: { east: '10', west: '100' } });
    expect(hub.size).toBe(1);
    // Batches of several events from both clusters, interleaved.
    let east = 10;
    let west = 100;
    for (let round = 0; round < 4; round++) {
      await commit('east', [0, 1, 2].map((i) => change('east', i === 0 ? 'ADDED' : 'MODIFIED', 'a', `e${round}`, String(++east))));
      await commit('west', [0, 1].map((i) => change('west', i === 0 ? 'ADDED' : 'MODIFIED', 'a', `w${round}`, String(++west))));
    }
    await until(live, 20);
    const lines = live.events.map((e) => `${label(e)} ${e.object.metadata.resourceVersion}`);
    expect(lines).toHaveLength(20);

    for (let i = 0; i < live.events.length; i++) {
      const resumed = watch(hub, new Client(), { since: decodeGlobalRV(live.events[i]!.object.metadata.resourceVersion) });
      const rest = lines.slice(i + 1);
      if (rest.length > 0) await until(resumed, rest.length);
      else await new Promise((r) => setTimeout(r, 20));
      expect(resumed.events.map((e) => `${label(e)} ${e.object.metadata.resourceVersion}`), `resumed from event ${i}`).toEqual(rest);
      resumed.destroy();
    }
  });
});

describe('a slow watcher', () => {
  it('is ended once its unread live bytes pass the bound, and the others hear everything', async () => {
    const { hub, commit } = await fleet();
    const fast = watch(hub, new Client(), { since: { east: '10', west: '100' }, maxBufferedBytes: 8 * 1024 });
    const slow = watch(hub, new Client(true), { since: { east: '10', west: '100' }, maxBufferedBytes: 8 * 1024 });
    expect(hub.size).toBe(2);

    for (let i = 0; i < 20; i++) {
      await commit('east', [change('east', 'ADDED', 'a', `p${i}`, String(11 + i), 1024)]);
      // Spaced out as a member's events come, so that the hub flushes more than once.
      await new Promise((r) => setTimeout(r, 2));
    }
    await until(fast, 20);
    expect(seen(fast)).toEqual(Array.from({ length: 20 }, (_, i) => `ADDED east/a/p${i}`));
    await eventually(() => expect(slow.destroyed).toBe(true));
    expect(hub.stats().evicted).toBe(1);
    expect(hub.size).toBe(1);
    // What the slow one took before it was ended is the start of the same stream.
    expect(slow.events).toEqual(fast.events.slice(0, slow.events.length));
  });

  it('that takes nothing of its catch-up is ended after catchUpStallMs', async () => {
    const { hub, commit } = await fleet();
    // Logged events enough for a catch-up of several 64 KB writes.
    for (let i = 0; i < 10; i++) await commit('east', Array.from({ length: 20 }, (_, j) => change('east', 'ADDED', 'a', `p${i}-${j}`, String(11 + i * 20 + j), 1024)));
    const stalled = watch(hub, new Client(true), { since: { east: '10', west: '100' }, catchUpStallMs: 50 });
    await eventually(() => expect(stalled.destroyed).toBe(true));
    expect(hub.stats().evicted).toBe(1);
    expect(hub.size).toBe(0);
  });
});

describe('catch-up from an earlier resourceVersion', () => {
  it('replays exactly the logged events after the RV it names per cluster, then goes live', async () => {
    const { hub, commit } = await fleet();
    await commit('east', [change('east', 'ADDED', 'a', 'x', '11')]);
    await commit('west', [change('west', 'ADDED', 'a', 'y', '101')]);
    await commit('east', [change('east', 'MODIFIED', 'a', 'x', '12')]);
    await commit('west', [change('west', 'MODIFIED', 'a', 'y', '102')]);
    await commit('east', [change('east', 'DELETED', 'a', 'x', '13')]);

    // east at 12, west at 100: the log is read from west's 101 on, and east's 12, which the
    // client has, is not sent again.
    const client = watch(hub, new Client(), { since: { east: '12', west: '100' } });
    await until(client, 3);
    expect(seen(client)).toEqual(['ADDED west/a/y', 'MODIFIED west/a/y', 'DELETED east/a/x']);
    expect(client.events.map((e) => decodeGlobalRV(e.object.metadata.resourceVersion))).toEqual([{ east: '12', west: '101' }, { east: '12', west: '102' }, { east: '13', west: '102' }]);

    await commit('west', [change('west', 'DELETED', 'a', 'y', '103')]);
    await until(client, 4);
    expect(seen(client)).toEqual(['ADDED west/a/y', 'MODIFIED west/a/y', 'DELETED east/a/x', 'DELETED west/a/y']);
    expect(decodeGlobalRV(client.events[3]!.object.metadata.resourceVersion)).toEqual({ east: '13', west: '103' });
  });

  it('answers an RV from before a cluster’s log starts with one 410 ERROR and ends the watch', async () => {
    const { hub, commit } = await fleet();
    await commit('east', [change('east', 'ADDED', 'a', 'x', '11')]);
    const client = watch(hub, new Client(), { since: { east: '9', west: '100' } });
    await eventually(() => expect(client.writableEnded).toBe(true));
    expect(client.events).toHaveLength(1);
    expect(client.events[0]).toMatchObject({ type: 'ERROR', object: { kind: 'Status', code: 410, reason: 'Expired' } });
    expect(hub.size).toBe(0);
  });

  it('of a client reading slowly keeps the batches committed meanwhile and sends each once, after the catch-up', async () => {
    const { hub, commit } = await fleet();
    const logged: string[] = [];
    for (let i = 0; i < 10; i++) {
      const batch = Array.from({ length: 20 }, (_, j) => change('east', 'ADDED', 'a', `p${i}-${j}`, String(11 + i * 20 + j), 1024));
      await commit('east', batch);
      logged.push(...batch.map((c) => `ADDED east/a/${c.name}`));
    }
    const client = watch(hub, new Client(true), { since: { east: '10', west: '100' } });
    await eventually(() => expect(client.events.length).toBeGreaterThan(0));
    // The catch-up waits for the client; live batches come meanwhile.
    await commit('west', [change('west', 'ADDED', 'b', 'late-1', '101')]);
    await commit('east', [change('east', 'MODIFIED', 'a', 'p0-0', '300')]);
    expect(client.events.length).toBeLessThan(logged.length);
    client.read();
    await until(client, logged.length + 2);
    await new Promise((r) => setTimeout(r, 50));
    expect(seen(client)).toEqual([...logged, 'ADDED west/b/late-1', 'MODIFIED east/a/p0-0']);
  });
});

describe('view revision', () => {
  const viewOf = (namespace: string) => buildReadView({ resource: pods, watching: true, namespace });

  it('tells a watcher whose view is decided again what it gained as ADDED and lost as DELETED, then follows the new view', async () => {
    const { hub, commit } = await fleet();
    await commit('east', [change('east', 'ADDED', 'a', 'x', '11'), change('east', 'ADDED', 'b', 'y', '12')]);
    const client = watch(hub, new Client(), { since: { east: '12', west: '100' }, revise: () => viewOf('b') }, 'a');
    const fixed = watch(hub, new Client(), { since: { east: '12', west: '100' } }, 'a');
    hub.reviseViews();
    await until(client, 4);
    // Key order: cluster by cluster, namespace by namespace.
    expect(seen(client)).toEqual(['DELETED east/a/listed', 'DELETED east/a/x', 'ADDED east/b/y', 'DELETED west/a/listed']);
    // An ADDED carries the object's own RV for its cluster, as an initial event does.
    expect(decodeGlobalRV(client.events[2]!.object.metadata.resourceVersion)).toEqual({ east: '12', west: '100' });

    await commit('east', [change('east', 'MODIFIED', 'a', 'x', '13'), change('east', 'MODIFIED', 'b', 'y', '14')]);
    await until(client, 5);
    await until(fixed, 1);
    await new Promise((r) => setTimeout(r, 20));
    expect(seen(client).slice(4)).toEqual(['MODIFIED east/b/y']);
    // A watch without `revise` keeps its view.
    expect(seen(fixed)).toEqual(['MODIFIED east/a/x']);
  });

  it('revises only the views picked, and a view decided the same way tells nothing', async () => {
    const { hub } = await fleet();
    const picked = watch(hub, new Client(), { since: { east: '10', west: '100' }, revise: () => viewOf('b') }, 'a');
    const other = watch(hub, new Client(), { since: { east: '10', west: '100' }, revise: () => viewOf('b') }, 'c');
    const same = watch(hub, new Client(), { since: { east: '10', west: '100' }, revise: (v) => v }, 'a');
    hub.reviseViews((view) => view.namespaces?.includes('a') === true);
    await until(picked, 2);
    await new Promise((r) => setTimeout(r, 20));
    expect(seen(picked)).toEqual(['DELETED east/a/listed', 'DELETED west/a/listed']);
    expect(other.events).toEqual([]);
    expect(same.events).toEqual([]);
  });

  it('of watches choosing members by label, when members are relabelled: what left is DELETED, what joined ADDED', async () => {
    const { hub } = await fleet();
    const labels: Record<string, Record<string, string>> = { east: { region: 'eu' }, west: { region: 'us' } };
    const request = (labelSelector: string) => ({ resource: pods, watching: true, labelSelector, clusterLabels: (c: string) => labels[c] ?? {} });
    // As the router builds it (cached.ts): the request's view decided again, labels as they are now.
    const byLabel = request('cluster.search.flotilla.io/region=eu');
    const byName = request('search.flotilla.io/cluster=east');
    let byNameRevised = 0;
    const eu = watch(hub, new Client(), { since: { east: '10', west: '100' }, view: buildReadView(byLabel), revise: () => buildReadView(byLabel) });
    const east = watch(hub, new Client(), { since: { east: '10', west: '100' }, view: buildReadView(byName), revise: () => (byNameRevised++, buildReadView(byName)) });
    labels.east = { region: 'us' };
    labels.west = { region: 'eu' };
    // The trigger a reload pulls (server.ts, on the fleet's onLabelsChange).
    hub.reviseViews((view) => view.selectsByClusterLabels);
    await until(eu, 2);
    await new Promise((r) => setTimeout(r, 20));
    expect(seen(eu)).toEqual(['DELETED east/a/listed', 'ADDED west/a/listed']);
    expect(east.events).toEqual([]);
    expect(byNameRevised).toBe(0);
  });

  it('of a watch resumed with the view of its time comes once it is caught up, after the replay', async () => {
    const { hub, commit } = await fleet();
    await commit('east', [change('east', 'ADDED', 'a', 'x', '11')]);
    const client = watch(hub, new Client(), { since: { east: '10', west: '100' }, reviseOnceLive: true, revise: () => viewOf('b') }, 'a');
    await until(client, 4);
    expect(seen(client)).toEqual(['ADDED east/a/x', 'DELETED east/a/listed', 'DELETED east/a/x', 'DELETED west/a/listed']);
  });

  it('announces objects shown otherwise though stored alike as MODIFIED to the watchers that show them', async () => {
    const { hub, commit } = await fleet();
    await commit('east', [change('east', 'ADDED', '', 'n1', '11')]);
    const all = watch(hub, new Client(), { since: { east: '11', west: '100' } });
    const other = watch(hub, new Client(), { since: { east: '11', west: '100' } }, 'b');
    hub.announce(RESOURCE, new Map([['east', ['n1', 'gone']]]));
    await until(all, 1);
    await new Promise((r) => setTimeout(r, 20));
    expect(all.events.map((e) => `${e.type} ${e.object.metadata.name}`)).toEqual(['MODIFIED n1']);
    expect(decodeGlobalRV(all.events[0]!.object.metadata.resourceVersion)).toEqual({ east: '11', west: '100' });
    expect(other.events).toEqual([]);
  });
});
