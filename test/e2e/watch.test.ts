import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import type { V1PodList } from '@kubernetes/client-node';
import { memberRequest } from '../fleet/http.js';
import type { MemberInfo } from '../fleet/fleet.js';
import { startFlotillaProcess, type FlotillaProcess } from '../support/flotilla-process.js';
import { openWatch, type OpenWatch, type WatchEvent } from '../support/watch-client.js';
import { until } from '../support/poll.js';
import { kubectlBinary } from '../support/kubectl.js';
import { decodeGlobalRV, encodeGlobalRV } from '../../src/api/global-rv.js';

/**
 * Client watches through flotilla against the real fleet: from a list's RV (nothing missed, nothing
 * repeated), resumed from an event's RV, from the current state, watch-list, bookmarks, selectors,
 * expiry, and kubectl get -w.
 */
const fleet = inject('fleet');
const NS = 'watching';
const PODS = `/api/v1/namespaces/${NS}/pods`;
const CLUSTER = 'search.flotilla.io/cluster';
let flotilla: FlotillaProcess;
const [east, west, north] = [fleet.members[0]!, fleet.members[1]!, fleet.members[2]!];

async function createPod(m: MemberInfo, name: string, labels: Record<string, string> = {}): Promise<void> {
  const res = await memberRequest(m, 'POST', PODS, { apiVersion: 'v1', kind: 'Pod', metadata: { name, labels }, spec: { containers: [{ name: 'c', image: 'example.com/w:1' }] } });
  expect(res.status).toBe(201);
}

async function deletePod(m: MemberInfo, name: string): Promise<void> {
  expect((await memberRequest(m, 'DELETE', `${PODS}/${name}?gracePeriodSeconds=0`)).status).toBe(200);
}

const named = (events: WatchEvent[], name: string) => events.filter((e) => e.object.metadata?.name === name);
const where = (e: WatchEvent) => `${e.type}:${e.object.metadata?.annotations?.[CLUSTER]}/${e.object.metadata?.name}`;

beforeAll(async () => {
  for (const m of fleet.members) {
    expect([201, 409]).toContain((await memberRequest(m, 'POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } })).status);
    for (let i = 0; i < 100 && (await memberRequest(m, 'GET', `/api/v1/namespaces/${NS}/serviceaccounts/default`)).status !== 200; i++) {
      await new Promise((r) => setTimeout(r, 100));
    }
    await createPod(m, `base-${m.name}`, { role: 'base' });
  }
  flotilla = await startFlotillaProcess({ fleet, dir: join(fleet.dir, 'flotilla-watch'), options: { watchBookmarkIntervalSeconds: 1 } });
});

afterAll(async () => {
  await flotilla?.stop();
});

describe('watch from a list', () => {
  it('delivers exactly the changes after the list RV, from every member, and resumes from any event', async () => {
    const list = JSON.parse((await memberRequest(flotilla.endpoint, 'GET', PODS)).body) as V1PodList;
    const w = await openWatch(flotilla.endpoint, `${PODS}?watch=1&resourceVersion=${list.metadata!.resourceVersion}`);
    expect(w.status).toBe(200);
    await createPod(east, 'new-east');
    await createPod(north, 'new-north');
    await w.until((ev) => named(ev, 'new-east').length > 0 && named(ev, 'new-north').length > 0);
    // Nothing that was in the list comes again: every event is newer, in its own cluster, than the
    // list (base pods may still change: kwok moves them to Running, which is a real MODIFIED).
    const listed = decodeGlobalRV(list.metadata!.resourceVersion!);
    for (const e of w.events) {
      const cluster = e.object.metadata!.annotations![CLUSTER]!;
      expect(BigInt(decodeGlobalRV(e.object.metadata!.resourceVersion!)[cluster]!)).toBeGreaterThan(BigInt(listed[cluster]!));
    }
    expect(w.events.filter((e) => e.object.metadata?.name?.startsWith('base-') && e.type === 'ADDED')).toEqual([]);
    expect(named(w.events, 'new-east')[0]).toMatchObject({ type: 'ADDED', object: { kind: 'Pod', metadata: { annotations: { [CLUSTER]: 'east' } } } });
    // Every event carries a mark covering all three members.
    const lastRV = w.events[w.events.length - 1]!.object.metadata!.resourceVersion!;
    expect(Object.keys(decodeGlobalRV(lastRV)).sort()).toEqual(['east', 'north', 'west']);
    w.close();

    await deletePod(east, 'new-east');
    await createPod(west, 'new-west');
    const resumed = await openWatch(flotilla.endpoint, `${PODS}?watch=1&resourceVersion=${lastRV}`);
    await resumed.until((ev) => named(ev, 'new-west').some((e) => e.type === 'ADDED') && named(ev, 'new-east').some((e) => e.type === 'DELETED'));
    // What was delivered before the resume point is not delivered again.
    const resumedFrom = decodeGlobalRV(lastRV);
    for (const e of resumed.events) {
      const cluster = e.object.metadata!.annotations![CLUSTER]!;
      expect(BigInt(decodeGlobalRV(e.object.metadata!.resourceVersion!)[cluster]!)).toBeGreaterThan(BigInt(resumedFrom[cluster]!));
    }
    expect(named(resumed.events, 'new-east').map((e) => e.type)).not.toContain('ADDED');
    resumed.close();
  });

  it('starts from the current state without an RV, then follows', async () => {
    const w = await openWatch(flotilla.endpoint, `${PODS}?watch=1`);
    await w.until((ev) => ev.filter((e) => e.type === 'ADDED').length >= 3);
    const initial = w.events.map(where);
    expect(initial).toEqual(expect.arrayContaining(['ADDED:east/base-east', 'ADDED:west/base-west', 'ADDED:north/base-north']));
    await createPod(west, 'later-west');
    await w.until((ev) => named(ev, 'later-west').length > 0);
    w.close();
  });

  it('serves watch-list: initial ADDED events, the initial-events-end bookmark, then live events', async () => {
    const w = await openWatch(flotilla.endpoint, `${PODS}?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true`);
    await w.until((ev) => ev.some((e) => e.type === 'BOOKMARK' && e.object.metadata?.annotations?.['k8s.io/initial-events-end'] === 'true'));
    const end = w.events.findIndex((e) => e.type === 'BOOKMARK');
    const before = w.events.slice(0, end);
    expect(before.every((e) => e.type === 'ADDED')).toBe(true);
    const list = JSON.parse((await memberRequest(flotilla.endpoint, 'GET', PODS)).body) as V1PodList;
    expect(before.map((e) => e.object.metadata!.name).sort()).toEqual(list.items.map((p) => p.metadata!.name).sort());
    expect(w.events[end]!.object).toMatchObject({ kind: 'Pod', apiVersion: 'v1' });
    await createPod(north, 'after-list');
    await w.until((ev) => named(ev, 'after-list').length > 0);
    w.close();
  });

  it('the initial-events-end bookmark has the member’s shape in every form (object, metadata, Table)', async () => {
    const WATCH_LIST = '?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true';
    const shape = (o: WatchEvent['object']) => {
      const rows = o['rows'] as { cells: unknown[]; object: WatchEvent['object'] }[] | undefined;
      // RVs and cell values differ by design (global RV, a Cluster column); kinds and layout may not.
      return {
        kind: o.kind,
        apiVersion: o['apiVersion'],
        annotations: o.metadata?.annotations,
        rows: rows?.map((r) => ({ cells: Array.isArray(r.cells), object: { kind: r.object.kind, apiVersion: r.object['apiVersion'], annotations: r.object.metadata?.annotations } })),
      };
    };
    const member = fleet.members[0]!;
    for (const [accept, ns] of [
      ['application/json', 'default'],
      ['application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1', 'default'],
      ['application/json;as=Table;g=meta.k8s.io;v=v1', 'default'],
    ] as const) {
      const bookmarks: unknown[] = [];
      for (const ep of [member, flotilla.endpoint]) {
        const prefix = ep === member ? '' : `/clusters/${member.name}`;
        const w = await openWatch(ep, `${prefix}/api/v1/namespaces/${ns}/pods${WATCH_LIST}`, accept);
        const events = await w.until((ev) => ev.some((e) => e.type === 'BOOKMARK'));
        w.close();
        bookmarks.push(shape(events.find((e) => e.type === 'BOOKMARK')!.object));
      }
      expect(bookmarks[1], accept).toEqual(bookmarks[0]);
    }
  });

  it('sends bookmarks with a current mark when asked', async () => {
    const w = await openWatch(flotilla.endpoint, `${PODS}?watch=1&allowWatchBookmarks=true&resourceVersion=${encodeGlobalRV({})}`);
    const events = await w.until((ev) => ev.some((e) => e.type === 'BOOKMARK'), 5000);
    const bookmark = events.find((e) => e.type === 'BOOKMARK')!;
    expect(Object.keys(decodeGlobalRV(bookmark.object.metadata!.resourceVersion!)).sort()).toEqual(['east', 'north', 'west']);
    w.close();
  });
});

describe('a selector watch follows objects into and out of its selection', () => {
  it('relabelled blue→red→blue→red: the same ADDED/DELETED as the member’s own watch, live and resumed from the log', async () => {
    const name = 'chameleon';
    await createPod(east, name, { team: 'blue' });
    const podPath = `${PODS}/${name}`;
    await until('the pod running and cached', async () => {
      const direct = JSON.parse((await memberRequest(east, 'GET', podPath)).body) as { status?: { phase?: string } };
      return direct.status?.phase === 'Running' && (await memberRequest(flotilla.endpoint, 'GET', `/clusters/east${podPath}`)).status === 200;
    });
    const selector = `labelSelector=${encodeURIComponent('team=blue')}`;
    const memberRV = (JSON.parse((await memberRequest(east, 'GET', `${PODS}?${selector}`)).body) as V1PodList).metadata!.resourceVersion!;
    const fleetRV = (JSON.parse((await memberRequest(flotilla.endpoint, 'GET', `/clusters/east${PODS}?${selector}`)).body) as V1PodList).metadata!.resourceVersion!;
    const direct = await openWatch(east, `${PODS}?watch=1&${selector}&resourceVersion=${memberRV}`);
    const through = await openWatch(flotilla.endpoint, `/clusters/east${PODS}?watch=1&${selector}&resourceVersion=${fleetRV}`);
    const types = (w: OpenWatch) => named(w.events, name).map((e) => e.type);
    for (const [i, team] of ['red', 'blue', 'red'].entries()) {
      expect((await memberRequest(east, 'PATCH', podPath, { metadata: { labels: { team } } }, { contentType: 'application/merge-patch+json' })).status).toBe(200);
      // One change at a time, each seen by the member's watch before the next.
      await direct.until(() => types(direct).length > i);
    }
    const expected = ['DELETED', 'ADDED', 'DELETED'];
    await direct.until(() => types(direct).length >= 3);
    await through.until(() => types(through).length >= 3);
    expect(types(direct)).toEqual(expected);
    expect(types(through)).toEqual(expected);
    // A DELETED for leaving the selection carries the state the watch last saw (still blue), at
    // the change's RV, as the member's does.
    expect(named(direct.events, name)[0]!.object.metadata).toMatchObject({ labels: { team: 'blue' } });
    expect(named(through.events, name)[0]!.object.metadata).toMatchObject({ labels: { team: 'blue' } });
    const leftAt = named(direct.events, name)[0]!.object.metadata!.resourceVersion!;
    expect(decodeGlobalRV(named(through.events, name)[0]!.object.metadata!.resourceVersion!)['east']).toBe(leftAt);
    direct.close();
    through.close();
    // Resumed from before the relabels, the watch replays them from flotilla's event log.
    const resumed = await openWatch(flotilla.endpoint, `/clusters/east${PODS}?watch=1&${selector}&resourceVersion=${fleetRV}`);
    await resumed.until(() => types(resumed).length >= 3);
    await new Promise((r) => setTimeout(r, 500));
    expect(types(resumed)).toEqual(expected);
    resumed.close();
    await deletePod(east, name);
  });
});

describe('a member-addressed read view names only that member', () => {
  const clustersOf = (rv: string) => Object.keys(decodeGlobalRV(rv)).sort();
  it('lists, continue tokens, watch events and bookmarks carry resourceVersions of the addressed member alone', async () => {
    const list = JSON.parse((await memberRequest(flotilla.endpoint, 'GET', `/clusters/west${PODS}`)).body) as V1PodList;
    expect(clustersOf(list.metadata!.resourceVersion!)).toEqual(['west']);
    const fleetWide = JSON.parse((await memberRequest(flotilla.endpoint, 'GET', PODS)).body) as V1PodList;
    expect(clustersOf(fleetWide.metadata!.resourceVersion!)).toEqual(['east', 'north', 'west']);
    await createPod(west, 'paged-west');
    await until('both west pods cached', async () => ((JSON.parse((await memberRequest(flotilla.endpoint, 'GET', `/clusters/west${PODS}`)).body) as V1PodList).items.length >= 2));
    const page = JSON.parse((await memberRequest(flotilla.endpoint, 'GET', `/clusters/west${PODS}?limit=1`)).body) as V1PodList;
    const token = JSON.parse(Buffer.from((page.metadata as { continue: string }).continue, 'base64url').toString()) as { rv: string };
    expect(clustersOf(token.rv)).toEqual(['west']);

    const w = await openWatch(flotilla.endpoint, `/clusters/west${PODS}?watch=1&allowWatchBookmarks=true&resourceVersion=${list.metadata!.resourceVersion}`);
    await w.until((ev) => named(ev, 'paged-west').length > 0 && ev.some((e) => e.type === 'BOOKMARK'), 5000);
    for (const e of w.events) expect(clustersOf(e.object.metadata!.resourceVersion!), e.type).toEqual(['west']);
    w.close();
    // A watch-list's initial events and its end bookmark too.
    const wl = await openWatch(flotilla.endpoint, `/clusters/west${PODS}?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true`);
    await wl.until((ev) => ev.some((e) => e.type === 'BOOKMARK'), 5000);
    for (const e of wl.events) expect(clustersOf(e.object.metadata!.resourceVersion!), e.type).toEqual(['west']);
    wl.close();
    await deletePod(west, 'paged-west');
  });

  it('an unfiltered page counts what remains; a label-selected one does not', async () => {
    const plain = JSON.parse((await memberRequest(flotilla.endpoint, 'GET', `${PODS}?limit=1`)).body) as V1PodList;
    expect(plain.metadata!.remainingItemCount).toBeGreaterThanOrEqual(2);
    const selected = JSON.parse((await memberRequest(flotilla.endpoint, 'GET', `${PODS}?limit=1&labelSelector=role%3Dbase`)).body) as V1PodList;
    expect((selected.metadata as { continue?: string }).continue).toBeTruthy();
    expect(selected.metadata!.remainingItemCount).toBeUndefined();
  });
});

describe('watch filters and limits', () => {
  it('honours label selectors, namespaces and the /clusters/ prefix', async () => {
    // In this test's namespace: other files' pods (client-go's team=blue churn) live in the same fleet.
    const labelled = await openWatch(flotilla.endpoint, `${PODS}?watch=1&labelSelector=${encodeURIComponent('team in (blue)')}`);
    const westOnly = await openWatch(flotilla.endpoint, `/clusters/west${PODS}?watch=1`);
    await createPod(east, 'blue-east', { team: 'blue' });
    await createPod(west, 'red-west', { team: 'red' });
    await labelled.until((ev) => named(ev, 'blue-east').length > 0);
    await westOnly.until((ev) => named(ev, 'red-west').length > 0);
    expect(labelled.events.every((e) => e.object.metadata?.name === 'blue-east')).toBe(true);
    expect(westOnly.events.every((e) => e.object.metadata?.annotations?.[CLUSTER] === 'west')).toBe(true);
    labelled.close();
    westOnly.close();
  });

  it('ends the stream at timeoutSeconds', async () => {
    const started = Date.now();
    const w = await openWatch(flotilla.endpoint, `${PODS}?watch=1&timeoutSeconds=1&resourceVersion=${encodeGlobalRV({})}`);
    await w.ended;
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
  });

  it('answers an RV older than the event log with an Expired ERROR event', async () => {
    const w = await openWatch(flotilla.endpoint, `${PODS}?watch=1&resourceVersion=${encodeGlobalRV({ east: '1', west: '1', north: '1' })}`);
    await w.ended;
    expect(w.events).toHaveLength(1);
    expect(w.events[0]).toMatchObject({ type: 'ERROR', object: { kind: 'Status', code: 410, reason: 'Expired' } });
  });

  it('rejects a garbage RV with 400 and invalid option combinations with 422', async () => {
    expect((await memberRequest(flotilla.endpoint, 'GET', `${PODS}?watch=1&resourceVersion=12345`)).status).toBe(400);
    const noMatch = await memberRequest(flotilla.endpoint, 'GET', `${PODS}?watch=1&sendInitialEvents=true&allowWatchBookmarks=true`);
    expect(noMatch.status).toBe(422);
    expect(JSON.parse(noMatch.body)).toMatchObject({ kind: 'Status', reason: 'Invalid', code: 422 });
    expect((await memberRequest(flotilla.endpoint, 'GET', `${PODS}?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan`)).status).toBe(422);
    expect((await memberRequest(flotilla.endpoint, 'GET', `${PODS}?resourceVersionMatch=NotOlderThan`)).status).toBe(422);
    expect((await memberRequest(flotilla.endpoint, 'GET', `${PODS}?resourceVersion=0&resourceVersionMatch=Exact`)).status).toBe(422);
  });
});

describe('kubectl get --watch', () => {
  it('prints rows for changes in any member as they happen', async () => {
    // -v=6: kubectl logs each request as its answer starts, so the test knows when its watch is open.
    const child = spawn(kubectlBinary(), ['--kubeconfig', flotilla.kubeconfig, 'get', 'pods', '-n', NS, '--watch-only', '-v=6'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let log = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (log += d.toString()));
    try {
      // Made once the watch is open: a pod made before it (while the list before it is confirmed fresh) is in that list, which --watch-only does not print.
      const opened = Date.now() + 15_000;
      while (!/watch=true[^\n]*200 OK/.test(log) && Date.now() < opened) await new Promise((r) => setTimeout(r, 50));
      expect(log, 'kubectl opened its watch').toMatch(/watch=true[^\n]*200 OK/);
      await createPod(north, 'kubectl-sees-me');
      const deadline = Date.now() + 10_000;
      while (!out.includes('kubectl-sees-me') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      const row = out.split('\n').find((l) => l.includes('kubectl-sees-me'));
      expect(row?.split(/\s+/).slice(0, 2)).toEqual(['kubectl-sees-me', 'north']);
    } finally {
      child.kill('SIGTERM');
    }
  });
});
