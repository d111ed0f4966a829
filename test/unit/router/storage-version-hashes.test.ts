import { describe, expect, it } from 'vitest';
import { FleetDiscovery } from '../../../src/discovery/fleet-discovery.js';
import type { FleetMembers, ResourceCatalog } from '../../../src/cacher/cache-roles.js';
import type { MemberClient } from '../../../src/members/member-client.js';

/** Members answering their legacy group-version document with these hashes (undefined: the request fails). */
function fleetOf(docs: Record<string, Record<string, string> | undefined>): { fleet: FleetMembers; asked: string[] } {
  const asked: string[] = [];
  const member = (name: string) => ({
    getJson: async (path: string) => {
      asked.push(`${name} ${path}`);
      const hashes = docs[name];
      if (!hashes) throw new Error('unreachable');
      return { resources: [...Object.entries(hashes).map(([n, h]) => ({ name: n, storageVersionHash: h })), { name: 'pods/status' }] };
    },
  }) as unknown as MemberClient;
  return { fleet: { clusterNames: () => Object.keys(docs), member, clusterLabels: () => ({}) }, asked };
}

const catalog: ResourceCatalog = { resource: () => undefined, cachedResources: () => [] };

describe('storage version hashes', () => {
  it('keeps a resource’s hash where every member that gives one agrees, from members that answer', async () => {
    const { fleet, asked } = fleetOf({ east: { pods: 'xPOwRZ+Yhw8=', hpas: 'oQlkt7f5j/A=' }, west: { pods: 'xPOwRZ+Yhw8=', hpas: 'DIFFERENT' }, north: undefined });
    const hashes = await new FleetDiscovery(fleet, catalog, undefined).storageVersionHashes('', 'v1');
    expect([...hashes]).toEqual([['pods', 'xPOwRZ+Yhw8=']]);
    expect(asked.sort()).toEqual(['east /api/v1', 'north /api/v1', 'west /api/v1']);
  });

  it('asks the members once while the answer is fresh', async () => {
    const { fleet, asked } = fleetOf({ east: { deployments: 'h' } });
    const discovery = new FleetDiscovery(fleet, catalog, undefined);
    expect([...(await discovery.storageVersionHashes('apps', 'v1'))]).toEqual([['deployments', 'h']]);
    await discovery.storageVersionHashes('apps', 'v1');
    expect(asked).toEqual(['east /apis/apps/v1']);
  });
});

describe('storage version hashes grown old', () => {
  it('are answered from what was known while the members are asked again', async () => {
    const docs: Record<string, Record<string, string> | undefined> = { east: { pods: 'old' } };
    const { fleet, asked } = fleetOf(docs);
    const discovery = new FleetDiscovery(fleet, catalog, undefined, 0);
    expect([...(await discovery.storageVersionHashes('', 'v1'))]).toEqual([['pods', 'old']]);
    docs['east'] = { pods: 'new' };
    await new Promise((r) => setTimeout(r, 5));
    expect([...(await discovery.storageVersionHashes('', 'v1'))]).toEqual([['pods', 'old']]);
    await new Promise((r) => setTimeout(r, 5));
    expect([...(await discovery.storageVersionHashes('', 'v1'))]).toEqual([['pods', 'new']]);
    expect(asked.length).toBeGreaterThanOrEqual(2);
  });
});
