import type { CachedResource } from '../cacher/cache-manager.js';
import { groupVersion } from '../resources/resource-info.js';

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
