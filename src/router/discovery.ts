import type { CachedResource } from '../cacher/cache-manager.js';
import { groupVersion } from '../api/resource-info.js';

/**
 * Discovery as the apiserver publishes it, listing only what flotilla serves: the cached
 * resources, with the verbs flotilla answers for them.
 */
export const SERVED_VERBS = ['get', 'list', 'watch'];

export function legacyVersions(serverAddress: string): object {
  return {
    kind: 'APIVersions',
    versions: ['v1'],
    serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress }],
  };
}

function groupsOf(resources: CachedResource[]): Map<string, string[]> {
  const groups = new Map<string, string[]>();
  for (const r of resources) {
    if (!r.info.group) continue;
    const versions = groups.get(r.info.group) ?? [];
    if (!versions.includes(r.info.version)) versions.push(r.info.version);
    groups.set(r.info.group, versions);
  }
  return groups;
}

function apiGroup(name: string, versions: string[]): object {
  const vs = versions.map((v) => ({ groupVersion: `${name}/${v}`, version: v }));
  return { name, versions: vs, preferredVersion: vs[0] };
}

export function groupList(resources: CachedResource[]): object {
  const groups = [...groupsOf(resources)].sort(([a], [b]) => a.localeCompare(b)).map(([name, versions]) => apiGroup(name, versions));
  return { kind: 'APIGroupList', apiVersion: 'v1', groups };
}

export function group(resources: CachedResource[], name: string): object | undefined {
  const versions = groupsOf(resources).get(name);
  return versions ? { kind: 'APIGroup', apiVersion: 'v1', ...apiGroup(name, versions) } : undefined;
}

export function resourceList(resources: CachedResource[], grp: string, version: string): object | undefined {
  const matching = resources.filter((r) => r.info.group === grp && r.info.version === version);
  if (matching.length === 0 && grp !== '') return undefined;
  if (grp === '' && version !== 'v1') return undefined;
  return {
    kind: 'APIResourceList',
    apiVersion: 'v1',
    groupVersion: groupVersion({ group: grp, version }),
    resources: matching.map((r) => ({
      name: r.info.resource,
      singularName: r.info.singularName,
      namespaced: r.info.namespaced,
      kind: r.info.kind,
      verbs: SERVED_VERBS.filter((v) => r.info.memberVerbs.includes(v)),
      ...(r.info.shortNames.length ? { shortNames: r.info.shortNames } : {}),
      ...(r.info.categories.length ? { categories: r.info.categories } : {}),
    })),
  };
}

/** Aggregated discovery (apidiscovery.k8s.io/v2): every group, version and resource in one document. */
export const AGGREGATED_DISCOVERY_V2 = 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList';

export function wantsAggregated(accept: string | undefined): boolean {
  // The first acceptable entry decides, as in negotiation: clients list v2 before plain JSON.
  for (const part of (accept ?? '').split(',')) {
    const p = part.replace(/\s+/g, '');
    if (p.startsWith('application/json') && p.includes('g=apidiscovery.k8s.io') && p.includes('v=v2') && !p.includes('v=v2beta1') && p.includes('as=APIGroupDiscoveryList')) return true;
    if (p === 'application/json' || p.startsWith('application/json;') && !p.includes('as=') || p === '*/*') return false;
  }
  return false;
}

export function aggregatedDiscovery(resources: CachedResource[], legacy: boolean): object {
  const groups = new Map<string, Map<string, CachedResource[]>>();
  for (const r of resources) {
    if ((r.info.group === '') !== legacy) continue;
    const versions = groups.get(r.info.group) ?? new Map<string, CachedResource[]>();
    versions.set(r.info.version, [...(versions.get(r.info.version) ?? []), r]);
    groups.set(r.info.group, versions);
  }
  if (legacy && groups.size === 0) groups.set('', new Map([['v1', []]]));
  return {
    kind: 'APIGroupDiscoveryList',
    apiVersion: 'apidiscovery.k8s.io/v2',
    metadata: {},
    items: [...groups].sort(([a], [b]) => a.localeCompare(b)).map(([name, versions]) => ({
      metadata: { name },
      versions: [...versions].map(([version, rs]) => ({
        version,
        resources: rs.map((r) => ({
          resource: r.info.resource,
          responseKind: { group: r.info.group, version: r.info.version, kind: r.info.kind },
          scope: r.info.namespaced ? 'Namespaced' : 'Cluster',
          singularResource: r.info.singularName,
          verbs: SERVED_VERBS.filter((v) => r.info.memberVerbs.includes(v)),
          ...(r.info.shortNames.length ? { shortNames: r.info.shortNames } : {}),
          ...(r.info.categories.length ? { categories: r.info.categories } : {}),
        })),
        freshness: 'Current',
      })),
    })),
  };
}
