import { describe, expect, it } from 'vitest';
import type { IncomingMessage } from 'node:http';
import { callerView, type CallerViewDeps } from '../../../src/router/reads/caller-view.js';
import { parseReadRequest } from '../../../src/api/list-options.js';
import { FULL_ACCESS, NO_ACCESS, type AccessSet } from '../../../src/api/rbac.js';
import type { CachedResource } from '../../../src/cacher/cache-roles.js';

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
