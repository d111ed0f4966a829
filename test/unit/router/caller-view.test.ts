import { describe, expect, it } from 'vitest';
import type { IncomingMessage } from 'node:http';
import { callerView, type CallerViewDeps } from '../../../src/router/reads/caller-view.js';
import { parseReadRequest } from '../../../src/api/list-options.js';
import { FULL_ACCESS, NO_ACCESS, type AccessSet } from '../../../src/api/rbac.js';
import type { CachedResource } from '../../../src/cacher/cache-roles.js';
import type { FoundOwner, OwnerRef } from '../../../src/view/owner-search.js';
import type { ReadView } from '../../../src/view/read-view.js';

/**
 * The warnings of a caller's view: members the caller may not read (or flotilla cannot decide
 * for) are named only when the search's own cluster terms keep them.
 */
const PODS: CachedResource = {
  info: { group: '', version: 'v1', resource: 'pods', kind: 'Pod', namespaced: true, singularName: 'pod', shortNames: [], categories: [], memberVerbs: [] },
  clusters: ['east', 'west', 'north'],
};
const LABELS: Record<string, Record<string, string>> = { east: { region: 'eu' }, west: { region: 'us' }, north: { region: 'us' } };

function deps(access: Record<string, AccessSet>, undecidable: string[] = []): CallerViewDeps {
  return {
    callers: { tenantSeen: () => undefined, reader: async () => ({ user: 'alice', groups: [] }) } as unknown as CallerViewDeps['callers'],
    authorizer: {
      access: async (_c: unknown, clusters: readonly string[]) => new Map(clusters.map((c) => [c, access[c] ?? NO_ACCESS])),
      undecidable: (clusters: readonly string[]) => clusters.filter((c) => undecidable.includes(c)).map((cluster) => ({ cluster, reason: `flotilla may not list roles in ${cluster}` })),
    } as unknown as CallerViewDeps['authorizer'],
    forward: {} as CallerViewDeps['forward'],
    fleet: { clusterLabels: (c) => LABELS[c] ?? {} },
  };
}

async function warningsOf(d: CallerViewDeps, query: Record<string, string>): Promise<string[]> {
  const view = await callerView(d, {} as IncomingMessage, PODS, {}, parseReadRequest(query, false));
  return view.warnings;
}

describe('callerView warnings', () => {
  it('names a member the caller may not read when the search keeps it', async () => {
    const w = await warningsOf(deps({ east: FULL_ACCESS }), { labelSelector: 'cluster.search.flotilla.io/region=us' });
    expect(w).toHaveLength(1);
    expect(w[0]).toContain('clusters west, north');
  });

  it('leaves out members the cluster terms exclude, by label and by name', async () => {
    expect(await warningsOf(deps({ east: FULL_ACCESS }), { labelSelector: 'cluster.search.flotilla.io/region=eu' })).toEqual([]);
    expect(await warningsOf(deps({ east: FULL_ACCESS }), { labelSelector: 'search.flotilla.io/cluster=east' })).toEqual([]);
    const one = await warningsOf(deps({ east: FULL_ACCESS }), { 'search.flotilla.io/cluster': 'west', labelSelector: 'cluster.search.flotilla.io/region=us' });
    expect(one).toHaveLength(1);
    expect(one[0]).toContain('cluster west:');
    expect(one[0]).not.toContain('north');
  });

  it('names a member flotilla cannot decide for only when the search keeps it', async () => {
    const d = deps({ east: FULL_ACCESS }, ['west']);
    expect(await warningsOf(d, { labelSelector: 'cluster.search.flotilla.io/region=eu' })).toEqual([]);
    const kept = await warningsOf(d, { labelSelector: 'cluster.search.flotilla.io/region in (eu,us)' });
    expect(kept.some((x) => x.includes('nothing of cluster west is shown'))).toBe(true);
  });
});

describe('callerView revision of an owner term', () => {
  it('finds the owners again and asks again whether the caller may read them', async () => {
    const owner: FoundOwner = { cluster: 'east', namespace: 'shop', group: 'apps', resource: 'deployments', namespaced: true, name: 'web', owner: 'apps/Deployment/u1' };
    let granted = false;
    let finds = 0;
    const verdict = (clusters: readonly string[], q: { resource: string }) => new Map(clusters.map((c) => [c, q.resource === 'pods' || granted ? FULL_ACCESS : NO_ACCESS]));
    const d: CallerViewDeps = {
      ...deps({}),
      authorizer: {
        access: async (_c: unknown, clusters: readonly string[], q: { resource: string }) => verdict(clusters, q),
        accessNow: (_c: unknown, clusters: readonly string[], q: { resource: string }) => verdict(clusters, q),
        undecidable: () => [],
      } as unknown as CallerViewDeps['authorizer'],
      owners: {
        find: (_o: OwnerRef, clusters: readonly string[]) => (finds++, clusters.includes('east') ? [owner] : []),
        ownedBy: (found: readonly FoundOwner[]) => ({ name: `owned-by:${found.map((f) => f.owner).join(',')}`, needsMeta: false, test: () => true }),
      },
    };
    const query = { labelSelector: 'search.flotilla.io/owner-kind=Deployment,search.flotilla.io/owner-name=web' };
    const cv = await callerView(d, {} as IncomingMessage, PODS, { namespace: 'shop' }, parseReadRequest(query, false));
    const ownerPredicate = (v: ReadView) => v.predicates.map((p) => p.name).find((n) => n.startsWith('search:owner') || n.startsWith('owned-by'));
    // Not readable at first: as if not found.
    expect(ownerPredicate(cv.view)).toBe('search:owner-not-found');
    granted = true;
    const found = cv.revise(cv.view);
    expect(ownerPredicate(found)).toBe('owned-by:apps/Deployment/u1');
    expect(found.key).not.toBe(cv.view.key);
    granted = false;
    expect(ownerPredicate(cv.revise(found))).toBe('search:owner-not-found');
    expect(finds).toBe(3);
  });
});
