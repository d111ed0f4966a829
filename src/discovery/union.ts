import type { CachedResource } from '../cacher/cache-roles.js';
import type { DiscoveryDocuments, DiscoveryGroup, DiscoveryResource, DiscoverySubresource, DiscoveryVersion } from '../resources/discovery.js';

/**
 * Fleet-wide discovery: the union of the members' own (aggregated) discovery, learned from them
 * and kept a short while (src/resources/discovery.ts fetches it). Every group, version, resource
 * and subresource any member serves is listed, with the union of the members' verbs, short names
 * and categories; where members disagree on a resource's kind, scope or singular name, the first
 * member in configuration order that serves it wins. The legacy documents (`/api`, `/api/v1`,
 * `/apis`, `/apis/<group>[/<version>]`) are derived from the same union, as client-go derives
 * them from aggregated discovery. Before any member has answered (all of them down at start), the
 * cached resources are listed with the verbs flotilla answers from its cache.
 */

/** The verbs a cached resource is listed with: what the cache answers. */
export const SERVED_VERBS = ['get', 'list', 'watch'];

export interface FleetDocuments {
  legacy: DiscoveryGroup[];
  groups: DiscoveryGroup[];
}

function unionStrings(a: string[] | undefined, b: string[] | undefined): string[] | undefined {
  if (!a?.length) return b?.length ? [...b] : undefined;
  const out = [...a];
  for (const s of b ?? []) if (!out.includes(s)) out.push(s);
  return out;
}

function unionSubresources(a: DiscoverySubresource[] | undefined, b: DiscoverySubresource[] | undefined): DiscoverySubresource[] | undefined {
  if (!b?.length) return a;
  const out = [...(a ?? [])];
  for (const s of b) {
    const i = out.findIndex((x) => x.subresource === s.subresource);
    if (i < 0) out.push(s);
    else out[i] = { ...out[i]!, verbs: unionStrings(out[i]!.verbs, s.verbs) ?? [] };
  }
  return out;
}

/** One resource as several members publish it: the first one's kind and scope, every one's verbs. */
function unionResource(first: DiscoveryResource, other: DiscoveryResource): DiscoveryResource {
  const shortNames = unionStrings(first.shortNames, other.shortNames);
  const categories = unionStrings(first.categories, other.categories);
  const subresources = unionSubresources(first.subresources, other.subresources);
  return {
    ...first,
    verbs: unionStrings(first.verbs, other.verbs) ?? [],
    ...(shortNames ? { shortNames } : {}),
    ...(categories ? { categories } : {}),
    ...(subresources ? { subresources } : {}),
  };
}

function unionVersion(first: DiscoveryVersion, other: DiscoveryVersion): DiscoveryVersion {
  const resources = [...first.resources];
  for (const r of other.resources) {
    const i = resources.findIndex((x) => x.resource === r.resource);
    if (i < 0) resources.push(r);
    else resources[i] = unionResource(resources[i]!, r);
  }
  return { ...first, resources };
}

/** A group's name; the legacy group has none in aggregated discovery (its metadata is empty). */
export function nameOf(g: DiscoveryGroup): string {
  return g.metadata?.name ?? '';
}

/** The union of several members' group lists, in the first member's order, then each newcomer's. */
export function unionGroups(lists: DiscoveryGroup[][]): DiscoveryGroup[] {
  const out: DiscoveryGroup[] = [];
  for (const list of lists) {
    for (const g of list) {
      const i = out.findIndex((x) => nameOf(x) === nameOf(g));
      if (i < 0) {
        out.push({ metadata: g.metadata, versions: g.versions.map((v) => ({ ...v, resources: [...v.resources] })) });
        continue;
      }
      const versions = [...out[i]!.versions];
      for (const v of g.versions) {
        const j = versions.findIndex((x) => x.version === v.version);
        if (j < 0) versions.push(v);
        else versions[j] = unionVersion(versions[j]!, v);
      }
      out[i] = { ...out[i]!, versions };
    }
  }
  return out;
}

/** The cached resources as aggregated discovery, with the verbs the cache answers. */
export function cachedGroups(resources: CachedResource[], legacy: boolean): DiscoveryGroup[] {
  const groups = new Map<string, Map<string, CachedResource[]>>();
  for (const r of resources) {
    if ((r.info.group === '') !== legacy) continue;
    const versions = groups.get(r.info.group) ?? new Map<string, CachedResource[]>();
    versions.set(r.info.version, [...(versions.get(r.info.version) ?? []), r]);
    groups.set(r.info.group, versions);
  }
  if (legacy && groups.size === 0) groups.set('', new Map([['v1', []]]));
  return [...groups].sort(([a], [b]) => a.localeCompare(b)).map(([name, versions]) => ({
    metadata: name ? { name } : {},
    versions: [...versions].map(([version, rs]) => ({
      version,
      resources: rs.map((r) => ({
        resource: r.info.resource,
        responseKind: { group: r.info.group, version: r.info.version, kind: r.info.kind },
        scope: r.info.namespaced ? 'Namespaced' as const : 'Cluster' as const,
        singularResource: r.info.singularName,
        verbs: SERVED_VERBS.filter((v) => r.info.memberVerbs.includes(v)),
        ...(r.info.shortNames.length ? { shortNames: r.info.shortNames } : {}),
        ...(r.info.categories.length ? { categories: r.info.categories } : {}),
      })),
      freshness: 'Current',
    })),
  }));
}

export const READ_VERBS = new Set(['get', 'list', 'watch']);

/**
 * Without the read verbs, the resources flotilla cannot read: neither cached nor read live (live
 * reads off, or the resource excluded from them). Writes are forwarded whatever the resource.
 */
function withoutUnreadable(groups: DiscoveryGroup[], readable: (group: string, resource: string) => boolean): DiscoveryGroup[] {
  return groups.map((g) => ({
    ...g,
    versions: g.versions.map((v) => ({
      ...v,
      resources: v.resources.map((r) => (readable(nameOf(g), r.resource) ? r : { ...r, verbs: r.verbs.filter((verb) => !READ_VERBS.has(verb)) })),
    })),
  }));
}

/**
 * The members' discovery, unioned, then the cached resources no member listed (members down).
 * `readable` (absent: every resource) says which uncached resources flotilla reads live.
 */
export function fleetDocuments(members: DiscoveryDocuments[], cached: CachedResource[], readable?: (group: string, resource: string) => boolean): FleetDocuments {
  const isCached = (group: string, resource: string) => cached.some((r) => r.info.group === group && r.info.resource === resource);
  const filter = (groups: DiscoveryGroup[]) => (readable ? withoutUnreadable(groups, (g, r) => isCached(g, r) || readable(g, r)) : groups);
  return {
    legacy: unionGroups([filter(unionGroups(members.map((m) => m.legacy))), cachedGroups(cached, true)]),
    groups: unionGroups([filter(unionGroups(members.map((m) => m.groups))), cachedGroups(cached, false)]),
  };
}
