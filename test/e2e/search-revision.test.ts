import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify as toYaml } from 'yaml';
import type { MemberInfo } from '../fleet/fleet.js';
import { memberJson, memberRequest } from '../fleet/http.js';
import { startFlotillaProcess, type FlotillaProcess } from '../support/flotilla-process.js';
import { openWatch, type WatchEvent } from '../support/watch-client.js';
import { until } from '../support/poll.js';

/**
 * Running watches with search terms follow what decides their selection: members relabelled by a
 * fleet-file reload (a cluster-label term), and the caller's rights on an owner term's owner (the
 * owner is looked up again when RBAC changes). Its own flotilla: the test rewrites its fleet file.
 */
const fleet = inject('fleet');
const [east, west] = fleet.members as [MemberInfo, MemberInfo];
const dir = join(fleet.dir, 'search-revision');
const NS = 'search-revision';
const RBAC = '/apis/rbac.authorization.k8s.io/v1';
const ALICE = fleet.users.find((u) => u.name === 'alice')!.token;
let flotilla: FlotillaProcess;

function fleetFile(eastRegion: string, westRegion: string): string {
  return toYaml({
    clusters: [
      { name: east.name, kubeconfig: east.kubeconfig, labels: { region: eastRegion } },
      { name: west.name, kubeconfig: west.kubeconfig, labels: { region: westRegion } },
    ],
    resources: [
      { version: 'v1', resource: 'configmaps', namespaces: [NS] },
      { version: 'v1', resource: 'secrets', namespaces: [NS] },
    ],
    authentication: { tokenReviewCluster: east.name },
  });
}

async function ok(m: MemberInfo, method: string, path: string, body?: unknown): Promise<void> {
  const res = await memberRequest(m, method, path, body);
  if (res.status >= 300 && !(method === 'POST' && res.status === 409) && !(method === 'DELETE' && res.status === 404)) throw new Error(`${m.name}: ${method} ${path}: ${res.status} ${res.body.slice(0, 300)}`);
}

const events = (w: { events: WatchEvent[] }) => w.events.filter((e) => e.type !== 'BOOKMARK').map((e) => `${e.type} ${e.object.metadata?.annotations?.['search.flotilla.io/cluster']}/${e.object.metadata?.name}`);
const role = (name: string, rules: unknown[]) => ({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: { name, namespace: NS }, rules });
const aliceBinding = (name: string) => ({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name, namespace: NS }, subjects: [{ kind: 'User', name: 'alice', apiGroup: 'rbac.authorization.k8s.io' }], roleRef: { kind: 'Role', name, apiGroup: 'rbac.authorization.k8s.io' } });

beforeAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  for (const m of [east, west]) {
    await ok(m, 'POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
    await ok(m, 'POST', `/api/v1/namespaces/${NS}/configmaps`, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `cm-${m.name}` } });
  }
  // east: a Secret owning two ConfigMaps; alice reads ConfigMaps there, not yet the Secret.
  await ok(east, 'POST', `/api/v1/namespaces/${NS}/secrets`, { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'owner' } });
  const uid = (await memberJson<{ metadata: { uid: string } }>(east, 'GET', `/api/v1/namespaces/${NS}/secrets/owner`)).metadata.uid;
  for (const name of ['child-1', 'child-2']) {
    await ok(east, 'POST', `/api/v1/namespaces/${NS}/configmaps`, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, ownerReferences: [{ apiVersion: 'v1', kind: 'Secret', name: 'owner', uid }] } });
  }
  await ok(east, 'POST', `${RBAC}/namespaces/${NS}/roles`, role('cm-reader', [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'watch'] }]));
  await ok(east, 'POST', `${RBAC}/namespaces/${NS}/rolebindings`, aliceBinding('cm-reader'));
  await ok(east, 'POST', `${RBAC}/namespaces/${NS}/roles`, role('owner-getter', [{ apiGroups: [''], resources: ['secrets'], resourceNames: ['owner'], verbs: ['get'] }]));
  flotilla = await startFlotillaProcess({ fleet, dir, fleetFile: fleetFile('eu', 'us') });
  // Everything cached, alice's rights included.
  await until('flotilla serving alice the ConfigMaps', async () => {
    const r = await memberRequest(flotilla.endpoint, 'GET', `/api/v1/namespaces/${NS}/configmaps`, undefined, { token: ALICE });
    return r.status === 200 && r.body.includes('child-2');
  });
}, 60_000);

afterAll(async () => {
  await flotilla?.stop();
});

describe('a running watch with search terms', () => {
  it('follows a reload that relabels members: a member leaving the selection is DELETED, one joining ADDED', async () => {
    const w = await openWatch(flotilla.endpoint, `/api/v1/namespaces/${NS}/configmaps?watch=1&labelSelector=${encodeURIComponent('cluster.search.flotilla.io/region=eu,search.flotilla.io/name-prefix=cm')}`);
    try {
      await w.until(() => events(w).includes(`ADDED ${east.name}/cm-${east.name}`));
      writeFileSync(flotilla.configPath, fleetFile('us', 'eu'));
      const reloaded = Date.now();
      await w.until(() => events(w).length >= 3, 15_000);
      const ms = Date.now() - reloaded;
      expect(events(w)).toEqual([`ADDED ${east.name}/cm-${east.name}`, `DELETED ${east.name}/cm-${east.name}`, `ADDED ${west.name}/cm-${west.name}`]);
      console.log(`search revision: the watch followed the relabelling ${ms} ms after the fleet file was written`);
    } finally {
      w.close();
      writeFileSync(flotilla.configPath, fleetFile('eu', 'us'));
    }
  }, 30_000);

  it('finds its owner again when the caller may read it: what it owns is ADDED, then DELETED when the right goes', async () => {
    const selector = encodeURIComponent('search.flotilla.io/owner-kind=Secret,search.flotilla.io/owner-name=owner');
    const w = await openWatch({ ...flotilla.endpoint, token: ALICE }, `/api/v1/namespaces/${NS}/configmaps?watch=1&allowWatchBookmarks=true&labelSelector=${selector}`);
    try {
      expect(w.status).toBe(200);
      // An owner alice may not read owns nothing.
      await new Promise((r) => setTimeout(r, 1000));
      expect(events(w)).toEqual([]);
      await ok(east, 'POST', `${RBAC}/namespaces/${NS}/rolebindings`, aliceBinding('owner-getter'));
      await w.until(() => events(w).length >= 2, 15_000);
      expect(events(w).sort()).toEqual([`ADDED ${east.name}/child-1`, `ADDED ${east.name}/child-2`]);
      await ok(east, 'DELETE', `${RBAC}/namespaces/${NS}/rolebindings/owner-getter`);
      await w.until(() => events(w).length >= 4, 15_000);
      expect(events(w).slice(2).sort()).toEqual([`DELETED ${east.name}/child-1`, `DELETED ${east.name}/child-2`]);
    } finally {
      w.close();
      await ok(east, 'DELETE', `${RBAC}/namespaces/${NS}/rolebindings/owner-getter`);
    }
  }, 40_000);
});
