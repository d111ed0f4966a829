import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { join } from 'node:path';
import { startFleet, type Fleet, type MemberInfo } from '../fleet/fleet.js';
import { memberRequest } from '../fleet/http.js';
import { cacherStatus, expectConverged, inParallel } from '../support/compare.js';
import { startFlotillaProcess, waitReady, type FlotillaProcess } from '../support/flotilla-process.js';

/**
 * The 410 path for real: a member whose apiserver serves watches straight from etcd
 * (`--watch-cache=false`), and an etcd compaction while flotilla is down, so the RV flotilla
 * stored is gone when it comes back. It must relist and reconcile: objects deleted meanwhile
 * disappear, new ones appear, changed ones change.
 */
const NS = 'expiry';
const PATH = `/api/v1/namespaces/${NS}/configmaps`;
let fleet: Fleet;
let member: MemberInfo;
const running: FlotillaProcess[] = [];

async function etcd(path: string, body: object): Promise<{ header: { revision: string } }> {
  const res = await fetch(`${fleet.info.etcdEndpoint}${path}`, { method: 'POST', body: JSON.stringify(body) });
  if (!res.ok) throw new Error(`etcd ${path}: ${res.status} ${await res.text()}`);
  return (await res.json()) as { header: { revision: string } };
}

async function ok(method: string, path: string, body?: unknown): Promise<void> {
  const res = await memberRequest(member, method, path, body);
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${res.body.slice(0, 200)}`);
}

const cm = (name: string, value: string) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data: { value } });

beforeAll(async () => {
  fleet = await startFleet({
    names: ['solo'],
    dir: join(inject('fleet').dir, 'expiry-fleet'),
    workloads: false,
    apiserverArgs: ['--watch-cache=false'],
  });
  member = fleet.info.members[0]!;
  await ok('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
  await inParallel(Array.from({ length: 60 }, (_, i) => `cm-${i}`), 16, (n) => ok('POST', PATH, cm(n, 'v0')));
});

afterAll(async () => {
  await Promise.all(running.map((f) => f.stop()));
  await fleet?.stop();
});

describe('expired resourceVersion (410)', () => {
  it('relists and reconciles when the stored RV was compacted away while flotilla was down', async () => {
    const dir = join(fleet.info.dir, 'flotilla');
    const resources = [{ version: 'v1', resource: 'configmaps' }];
    const first = await startFlotillaProcess({ fleet: fleet.info, dir, resources });
    running.push(first);
    await expectConverged(first.endpoint, [member], PATH);
    await first.stop();

    await inParallel(Array.from({ length: 20 }, (_, i) => `cm-${i}`), 8, (n) => ok('DELETE', `${PATH}/${n}`));
    await inParallel(Array.from({ length: 10 }, (_, i) => `cm-${20 + i}`), 8, (n) => ok('PUT', `${PATH}/${n}`, cm(n, 'v1')));
    await inParallel(Array.from({ length: 15 }, (_, i) => `new-${i}`), 8, (n) => ok('POST', PATH, cm(n, 'v0')));
    const { header } = await etcd('/v3/kv/range', { key: Buffer.from('/').toString('base64') });
    await etcd('/v3/kv/compaction', { revision: header.revision, physical: true });

    // A watch from the RV flotilla stored is now refused by the member itself.
    const direct = await memberRequest(member, 'GET', `${PATH}?watch=1&resourceVersion=2&timeoutSeconds=1`);
    expect(direct.body).toContain('"code":410');
    const second = await startFlotillaProcess({ fleet: fleet.info, dir, resources });
    running.push(second);
    const view = await expectConverged(second.endpoint, [member], PATH);
    expect(view.filter((v) => v.includes('/cm-')).length).toBe(40);
    expect(view.filter((v) => v.includes('/new-')).length).toBe(15);
    const [status] = await cacherStatus(second.endpoint);
    // The warm start watched from the stored RV (watch 1), got 410, listed once, watched again.
    expect(status!.relists).toBe(1);
    expect(status!.watches).toBeGreaterThanOrEqual(2);
  });

  it('a first list whose continue token expires starts over as a relist: objects deleted meanwhile do not stay', async () => {
    // Listed first (namespaces sort before the others), one object per page: the list is long
    // enough to delete and compact in its middle.
    const ns = 'aaa-restart';
    const path = `/api/v1/namespaces/${ns}/configmaps`;
    await ok('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
    await inParallel(Array.from({ length: 200 }, (_, i) => `cm-${String(i).padStart(3, '0')}`), 16, (n) => ok('POST', path, cm(n, 'v0')));
    const f = await startFlotillaProcess({
      fleet: fleet.info,
      dir: join(fleet.info.dir, 'flotilla-restart'),
      resources: [{ version: 'v1', resource: 'configmaps' }],
      options: { listPageSize: 1, maxInflightListPages: 1 },
      waitReady: false,
    });
    running.push(f);
    // Once the first list has written the first ten, delete them and compact etcd: the next
    // page's continue token points at a compacted revision and the member answers 410.
    for (;;) {
      const [s] = await cacherStatus(f.endpoint);
      if (s && s.objects >= 10) {
        expect(s.synced).toBe(false);
        break;
      }
      await new Promise((r) => setTimeout(r, 5));
    }
    await inParallel(Array.from({ length: 10 }, (_, i) => `cm-${String(i).padStart(3, '0')}`), 10, (n) => ok('DELETE', `${path}/${n}`));
    const { header } = await etcd('/v3/kv/range', { key: Buffer.from('/').toString('base64') });
    await etcd('/v3/kv/compaction', { revision: header.revision, physical: true });
    const view = await expectConverged(f.endpoint, [member], path, 60_000);
    expect(view).toHaveLength(190);
    const [status] = await cacherStatus(f.endpoint);
    expect(status!.synced).toBe(true);
    expect(status!.relists).toBe(1);
  });

  it('a first sync of many clusters ends while the member compacts faster than the whole sync takes', async () => {
    // The one member under 16 cluster names, one page slot, one object a page: each list is 100
    // pages, the sync 16 of them. The member compacts as kube-apiserver's compactor does, every
    // tick to the revision of the tick before (here every 1.5 s, not 5 minutes): a continue token
    // lives 1.5 to 3 s. One list takes less; the whole sync takes more, so lists advanced in turn
    // would each span it, lose their tokens, start over, and never end.
    const ns = 'compacting';
    await ok('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
    await inParallel(Array.from({ length: 100 }, (_, i) => `cm-${String(i).padStart(3, '0')}`), 16, (n) => ok('POST', `/api/v1/namespaces/${ns}/configmaps`, cm(n, 'v0')));
    const { header: h0 } = await etcd('/v3/kv/range', { key: Buffer.from('/').toString('base64'), count_only: true });
    let previous = h0.revision;
    let compactions = 0;
    let stopped = false;
    const compactor = (async () => {
      while (!stopped) {
        await new Promise((r) => setTimeout(r, 1500));
        const { header } = await etcd('/v3/kv/put', { key: Buffer.from('/flotilla-test/compactor').toString('base64'), value: Buffer.from(String(compactions)).toString('base64') });
        await etcd('/v3/kv/compaction', { revision: previous, physical: false }).catch(() => undefined);
        previous = header.revision;
        compactions++;
      }
    })();
    try {
      const members = Array.from({ length: 16 }, (_, i) => ({ ...member, name: `alias-${String(i).padStart(2, '0')}` }));
      const f = await startFlotillaProcess({
        fleet: fleet.info,
        members,
        dir: join(fleet.info.dir, 'flotilla-compacting'),
        resources: [{ version: 'v1', resource: 'configmaps', namespaces: [ns] }],
        options: { listPageSize: 1, maxInflightListPages: 1 },
        waitReady: false,
      });
      running.push(f);
      const started = compactions;
      await waitReady(f.endpoint, f.proc, 90_000);
      // The member did compact under the sync, more than once.
      expect(compactions - started).toBeGreaterThanOrEqual(2);
      const statuses = await cacherStatus(f.endpoint);
      expect(statuses.map((c) => c.cluster).sort()).toEqual(members.map((m) => m.name));
      expect(statuses.every((c) => c.synced)).toBe(true);
      const view = await expectConverged(f.endpoint, members, `/api/v1/namespaces/${ns}/configmaps`, 30_000);
      expect(view).toHaveLength(16 * 100);
    } finally {
      stopped = true;
      await compactor;
    }
  }, 150_000);
});
