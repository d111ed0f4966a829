import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startFleet, type Fleet, type MemberInfo } from '../fleet/fleet.js';
import { memberJson, memberRequest } from '../fleet/http.js';
import { startFlotillaProcess, type FlotillaProcess } from '../support/flotilla-process.js';
import { flotillaView, membersView } from '../support/compare.js';
import { openWatch, type OpenWatch, type WatchEvent } from '../support/watch-client.js';
import { decodeGlobalRV } from '../../src/api/global-rv.js';

/**
 * A member whose history is rewritten under flotilla: etcd restored from an older backup (every
 * resourceVersion goes back), and a member replaced by a new cluster under the same name (new
 * uids). Flotilla must notice, list the member again, and serve what the member holds: its
 * objects equal the member's own (uids and resourceVersions), a watcher that stayed open ends
 * with the member's state, /status and a Warning name the member, and the other member is served
 * throughout.
 */
const NS = 'history';
const PATH = `/api/v1/namespaces/${NS}/configmaps`;
const CLUSTER_ANNOTATION = 'search.flotilla.io/cluster';
let fleet: Fleet;
let flotilla: FlotillaProcess;
let north: MemberInfo;
let south: MemberInfo;

interface HistoryStatus {
  cluster: string;
  resource: string;
  historyResets: number;
  lastHistoryReset?: { at: string; reason: string };
  rewriting?: string;
}

async function cachers(): Promise<HistoryStatus[]> {
  const res = await memberRequest(flotilla.endpoint, 'GET', '/status');
  return (JSON.parse(res.body) as { cachers: HistoryStatus[] }).cachers;
}

async function configmapsCacher(cluster: string): Promise<HistoryStatus> {
  return (await cachers()).find((c) => c.cluster === cluster && c.resource === 'v1/configmaps')!;
}

async function put(member: MemberInfo, method: 'POST' | 'PUT' | 'DELETE', name: string, data?: Record<string, string>): Promise<void> {
  const path = method === 'POST' ? PATH : `${PATH}/${name}`;
  const res = await memberRequest(member, method, path, method === 'DELETE' ? undefined : { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: NS }, data: data ?? { v: '1' } });
  expect(res.status, `${method} ${name} on ${member.name}: ${res.body.slice(0, 200)}`).toBeLessThan(300);
}

async function ensureNamespace(member: MemberInfo): Promise<void> {
  const res = await memberRequest(member, 'POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
  expect([201, 409]).toContain(res.status);
}

/** What one member holds, as flotilla must serve it: name@uid@rv, sorted. */
async function memberState(member: MemberInfo): Promise<string[]> {
  return membersView([member], PATH);
}

async function flotillaState(member: MemberInfo): Promise<string[]> {
  return (await flotillaView(flotilla.endpoint, PATH)).filter((k) => k.startsWith(`${member.name}/`));
}

/** Waits until flotilla serves exactly what the member holds, then asserts it. */
async function expectServedAsHeld(member: MemberInfo, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let held = await memberState(member);
  let served = await flotillaState(member);
  while (JSON.stringify(held) !== JSON.stringify(served) && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 250));
    held = await memberState(member);
    served = await flotillaState(member);
  }
  expect(served).toEqual(held);
}

/** The state a watcher ends with, from the events it got: cluster/namespace/name@uid@rv, sorted. */
function watcherState(initial: readonly WatchEvent['object'][], events: readonly WatchEvent[], cluster: string): string[] {
  const state = new Map<string, string>();
  for (const e of [...initial.map((object): WatchEvent => ({ type: 'ADDED', object })), ...events]) {
    if (e.type === 'BOOKMARK' || e.type === 'ERROR') continue;
    const md = e.object.metadata as { name: string; namespace?: string; uid?: string; resourceVersion: string; annotations?: Record<string, string> };
    const c = md.annotations?.[CLUSTER_ANNOTATION];
    if (c !== cluster) continue;
    const key = `${c}/${md.namespace ?? ''}/${md.name}`;
    if (e.type === 'DELETED') state.delete(key);
    else state.set(key, `${key}@${md.uid}@${decodeGlobalRV(md.resourceVersion)[c]}`);
  }
  return [...state.values()].sort();
}

beforeAll(async () => {
  fleet = await startFleet({ names: ['north', 'south'], dir: join(inject('fleet').dir, 'member-history-fleet'), workloads: false });
  [north, south] = fleet.info.members as [MemberInfo, MemberInfo];
  for (const m of [north, south]) {
    await ensureNamespace(m);
    for (let i = 0; i < 20; i++) await put(m, 'POST', `kept-${i}`);
  }
  flotilla = await startFlotillaProcess({
    fleet: fleet.info,
    dir: join(fleet.info.dir, 'flotilla'),
    resources: [{ version: 'v1', resource: 'configmaps' }, { version: 'v1', resource: 'namespaces' }],
    args: ['--log-level=info'],
  });
}, 180_000);

afterAll(async () => {
  await flotilla?.stop();
  await fleet?.stop();
});

describe('a member whose history is rewritten', () => {
  it('etcd restored from an older backup: resourceVersions go back, flotilla lists again and serves what the member holds', async () => {
    const list = await memberJson<{ metadata: { resourceVersion: string }; items: WatchEvent['object'][] }>(flotilla.endpoint, 'GET', PATH);
    let watch: OpenWatch | undefined = await openWatch(flotilla.endpoint, `${PATH}?watch=1&allowWatchBookmarks=true&resourceVersion=${encodeURIComponent(list.metadata.resourceVersion)}`);
    try {
      const backup = await fleet.backupEtcd();
      // After the backup: objects the restore takes away, changes it undoes, deletions it brings back.
      for (let i = 0; i < 10; i++) await put(north, 'POST', `lost-${i}`);
      for (let i = 0; i < 5; i++) await put(north, 'PUT', `kept-${i}`, { v: 'changed' });
      for (let i = 15; i < 20; i++) await put(north, 'DELETE', `kept-${i}`);
      await expectServedAsHeld(north, 30_000);
      const resetsBefore = (await configmapsCacher('north')).historyResets;

      await fleet.restoreEtcd(backup);
      // Written after the restore, at resourceVersions flotilla has already seen once.
      for (let i = 0; i < 5; i++) await put(north, 'POST', `after-${i}`);
      await put(north, 'PUT', 'kept-7', { v: 'after-restore' });

      await expectServedAsHeld(north, 60_000);
      await expectServedAsHeld(south, 10_000);
      const status = await configmapsCacher('north');
      expect(status.historyResets).toBeGreaterThan(resetsBefore);
      expect(status.lastHistoryReset?.reason).toMatch(/went back/);
      expect(status.rewriting).toBeUndefined();
      // A get of an object the member no longer holds is 404, as the member says.
      expect((await memberRequest(flotilla.endpoint, 'GET', `/clusters/north${PATH}/lost-0`)).status).toBe(404);
      expect((await memberRequest(north, 'GET', `${PATH}/lost-0`)).status).toBe(404);
      // The watcher that stayed open through it all ends with the member's state.
      const held = await memberState(north);
      await watch.until((events) => JSON.stringify(watcherState(list.items, events, 'north')) === JSON.stringify(held), 30_000).catch(() => undefined);
      expect(watcherState(list.items, watch.events, 'north')).toEqual(held);
      expect(readFileSync(join(fleet.info.dir, 'flotilla', 'flotilla.log'), 'utf8')).toMatch(/member history rewritten/);
    } finally {
      watch?.close();
      watch = undefined;
    }
  }, 240_000);

  it('a member replaced by a new cluster under the same name: its old objects go, the new ones are served, the other member throughout', async () => {
    const before = await memberJson<{ metadata: { uid: string } }>(south, 'GET', '/api/v1/namespaces/kube-system');
    let northFailures = 0;
    let probing = true;
    const probe = (async () => {
      while (probing) {
        const res = await memberRequest(flotilla.endpoint, 'GET', `/clusters/north${PATH}/kept-10`, undefined, { timeoutMs: 10_000 }).catch(() => undefined);
        if (res?.status !== 200) northFailures++;
        await new Promise((r) => setTimeout(r, 250));
      }
    })();
    try {
      await fleet.replaceMember('south');
      const after = await memberJson<{ metadata: { uid: string } }>(south, 'GET', '/api/v1/namespaces/kube-system');
      expect(after.metadata.uid).not.toBe(before.metadata.uid);
      await ensureNamespace(south);
      for (let i = 0; i < 3; i++) await put(south, 'POST', `new-${i}`);
      await expectServedAsHeld(south, 90_000);
      // Found by its identity (its history may also have been relisted on a 410 first).
      const deadline = Date.now() + 60_000;
      while (!(await configmapsCacher('south')).lastHistoryReset?.reason.includes('new cluster') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 500));
      expect((await configmapsCacher('south')).lastHistoryReset?.reason).toMatch(/new cluster/);
      await expectServedAsHeld(south, 30_000);
      await expectServedAsHeld(north, 10_000);
    } finally {
      probing = false;
      await probe;
    }
    expect(northFailures).toBe(0);
  }, 240_000);
});
