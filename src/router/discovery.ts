import type { CachedResource, FleetMembers, ResourceCatalog } from '../cacher/cache-manager.js';
import { SELF_REVIEWS, type FleetNames } from '../tenancy/request-names.js';
import type { KindLookup } from '../tenancy/object-names.js';
import type { Tenant } from '../tenancy/tenant.js';
import type { NamedResource } from '../tenancy/answers.js';
import { memberDiscovery, memberStorageVersionHashes, type DiscoveryDocuments, type DiscoveryGroup, type DiscoveryResource, type DiscoverySubresource, type DiscoveryVersion } from '../resources/discovery.js';
import { FLEET_DISCOVERY_TIMEOUT_MS, FLEET_DISCOVERY_TTL_MS } from '../registry/defaults.js';

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
function nameOf(g: DiscoveryGroup): string {
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

const READ_VERBS = new Set(['get', 'list', 'watch']);

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

export function legacyVersions(docs: FleetDocuments, serverAddress: string): object {
  const versions = docs.legacy.flatMap((g) => g.versions.map((v) => v.version));
  return {
    kind: 'APIVersions',
    versions: versions.length ? versions : ['v1'],
    serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress }],
  };
}

function apiGroup(g: DiscoveryGroup): object {
  const vs = g.versions.map((v) => ({ groupVersion: `${nameOf(g)}/${v.version}`, version: v.version }));
  return { name: nameOf(g), versions: vs, preferredVersion: vs[0] };
}

export function groupList(docs: FleetDocuments): object {
  return { kind: 'APIGroupList', apiVersion: 'v1', groups: docs.groups.map(apiGroup) };
}

export function group(docs: FleetDocuments, name: string): object | undefined {
  const g = docs.groups.find((x) => nameOf(x) === name);
  return g ? { kind: 'APIGroup', apiVersion: 'v1', ...apiGroup(g) } : undefined;
}

function groupVersionOf(docs: FleetDocuments, grp: string, version: string): DiscoveryVersion | undefined {
  return (grp === '' ? docs.legacy : docs.groups).find((x) => nameOf(x) === grp)?.versions.find((x) => x.version === version);
}

/** Whether the fleet serves a group-version (its legacy document exists). */
export function servesGroupVersion(docs: FleetDocuments, grp: string, version: string): boolean {
  return groupVersionOf(docs, grp, version) !== undefined;
}

/**
 * A legacy APIResourceList, each resource followed by its subresources (`pods/log`), as the
 * apiserver lists them; `hashes`: resources' storageVersionHash (FleetDiscovery).
 */
export function resourceList(docs: FleetDocuments, grp: string, version: string, hashes?: ReadonlyMap<string, string>): object | undefined {
  const v = groupVersionOf(docs, grp, version);
  if (!v) return undefined;
  // A resource answering in another group/version (a subresource's Scale, say) names it, as the apiserver does.
  const gvk = (k: { group: string; version: string; kind: string } | undefined) => ({
    ...(k && (k.group !== grp || k.version !== version) ? { group: k.group, version: k.version } : {}),
    kind: k?.kind ?? '',
  });
  return {
    kind: 'APIResourceList',
    apiVersion: 'v1',
    groupVersion: grp ? `${grp}/${version}` : version,
    resources: v.resources.flatMap((r) => [
      {
        name: r.resource,
        singularName: r.singularResource,
        namespaced: r.scope === 'Namespaced',
        ...gvk(r.responseKind),
        verbs: r.verbs,
        ...(r.shortNames?.length ? { shortNames: r.shortNames } : {}),
        ...(r.categories?.length ? { categories: r.categories } : {}),
        ...(hashes?.has(r.resource) ? { storageVersionHash: hashes.get(r.resource) } : {}),
      },
      ...(r.subresources ?? []).map((s) => ({
        name: `${r.resource}/${s.subresource}`,
        singularName: '',
        namespaced: r.scope === 'Namespaced',
        ...gvk(s.responseKind),
        verbs: s.verbs,
      })),
    ]),
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

export function aggregatedDiscovery(docs: FleetDocuments, legacy: boolean): object {
  return { kind: 'APIGroupDiscoveryList', apiVersion: 'apidiscovery.k8s.io/v2', metadata: {}, items: legacy ? docs.legacy : docs.groups };
}

/**
 * The members' discovery, kept per member: learned on first use and after a configuration reload
 * (a changed member list) before answering, then refreshed in the background when older than
 * `ttlMs`, so a CRD added on a member shows within seconds. A member that does not answer keeps
 * its last known discovery; one never heard from adds nothing.
 */
export class FleetDiscovery {
  private readonly known = new Map<string, DiscoveryDocuments>();
  /** Per group-version (`group/version`), the storage version hashes the members agree on, and when. */
  private readonly hashes = new Map<string, { at: number; hashes: Promise<ReadonlyMap<string, string>> }>();
  private fleetKey: string | undefined;
  private at = 0;
  private refreshing: Promise<void> | undefined;

  constructor(
    private readonly fleet: FleetMembers,
    private readonly catalog: ResourceCatalog,
    /** Which uncached resources flotilla reads live (absent: every one). */
    private readonly readable: ((group: string, resource: string) => boolean) | undefined,
    private readonly ttlMs = FLEET_DISCOVERY_TTL_MS,
    private readonly timeoutMs = FLEET_DISCOVERY_TIMEOUT_MS,
  ) {}

  async documents(): Promise<FleetDocuments> {
    const names = this.fleet.clusterNames();
    const key = names.join('\n');
    if (key !== this.fleetKey) await this.refresh(key);
    else if (Date.now() - this.at > this.ttlMs) void this.refresh(key);
    const members = names.flatMap((n) => this.known.get(n) ?? []);
    return fleetDocuments(members, this.catalog.cachedResources(), this.readable);
  }

  /**
   * Each resource's storageVersionHash in a group-version's legacy document: the members' own
   * (asked of each, kept as long as the fleet's documents), where every member that gives one
   * gives the same. Members that store a kind in different versions disagree, and the resource
   * then has none: a storage version migrator reads the members themselves.
   */
  storageVersionHashes(group: string, version: string): Promise<ReadonlyMap<string, string>> {
    const key = `${group}/${version}`;
    const known = this.hashes.get(key);
    if (known && Date.now() - known.at <= this.ttlMs) return known.hashes;
    const asked = this.agreedHashes(group, version);
    if (!known) {
      this.hashes.set(key, { at: Date.now(), hashes: asked });
      return asked;
    }
    // Stale: answered from what was known while the members are asked again, as documents() does.
    known.at = Date.now();
    void asked.then((hashes) => this.hashes.set(key, { at: Date.now(), hashes: Promise.resolve(hashes) }));
    return known.hashes;
  }

  private async agreedHashes(group: string, version: string): Promise<ReadonlyMap<string, string>> {
    const perMember = await Promise.all(this.fleet.clusterNames().map(async (name) => {
      const member = this.fleet.member(name);
      return member ? memberStorageVersionHashes(member, group, version, AbortSignal.timeout(this.timeoutMs)).catch(() => undefined) : undefined;
    }));
    const agreed = new Map<string, string>();
    const disagreed = new Set<string>();
    for (const answer of perMember) {
      for (const [resource, hash] of answer ?? []) {
        const prior = agreed.get(resource);
        if (prior !== undefined && prior !== hash) disagreed.add(resource);
        agreed.set(resource, hash);
      }
    }
    for (const resource of disagreed) agreed.delete(resource);
    return agreed;
  }

  private refresh(key: string): Promise<void> {
    this.refreshing ??= (async () => {
      const names = this.fleet.clusterNames();
      await Promise.all(names.map(async (name) => {
        const member = this.fleet.member(name);
        if (!member) return;
        try {
          this.known.set(name, await memberDiscovery(member, AbortSignal.timeout(this.timeoutMs)));
        } catch {
          // keeps what it knew
        }
      }));
      for (const name of [...this.known.keys()]) if (!names.includes(name)) this.known.delete(name);
      this.fleetKey = key;
      this.at = Date.now();
    })().finally(() => (this.refreshing = undefined));
    return this.refreshing;
  }
}

/**
 * What a tenant's request and objects are rewritten against (src/tenancy): which groups the fleet
 * serves, each resource's scope, and which resource a kind is.
 */
export interface DiscoveryIndex extends FleetNames {
  kind: KindLookup;
  resource(group: string, resource: string): NamedResource | undefined;
}

export function discoveryIndex(docs: FleetDocuments): DiscoveryIndex {
  const groups = new Set<string>();
  const scopes = new Map<string, boolean>();
  const kinds = new Map<string, { resource: string; namespaced: boolean }>();
  const resources = new Map<string, NamedResource>();
  for (const g of [...docs.legacy, ...docs.groups]) {
    const group = nameOf(g);
    groups.add(group);
    for (const v of g.versions) {
      for (const r of v.resources) {
        const namespaced = r.scope === 'Namespaced';
        if (!scopes.has(`${group}/${r.resource}`)) scopes.set(`${group}/${r.resource}`, namespaced);
        if (r.responseKind?.kind && !resources.has(`${group}/${r.resource}`)) resources.set(`${group}/${r.resource}`, { group, resource: r.resource, kind: r.responseKind.kind, namespaced });
        if (r.responseKind?.kind && !kinds.has(`${group}/${r.responseKind.kind}`)) kinds.set(`${group}/${r.responseKind.kind}`, { resource: r.resource, namespaced });
      }
    }
  }
  return {
    hasGroup: (group) => groups.has(group),
    namespaced: (group, resource) => scopes.get(`${group}/${resource}`),
    kind: (group, kind) => kinds.get(`${group}/${kind}`),
    resource: (group, resource) => resources.get(`${group}/${resource}`),
  };
}

/**
 * Discovery as a tenant sees it: another tenant's CRD groups are gone, its own are named without
 * its id (and hide a group of that name it would otherwise see), hidden cluster-scoped resources
 * are gone, and shared ones have only the read verbs.
 */
export function tenantDocuments(docs: FleetDocuments, tenant: Tenant): FleetDocuments {
  const own = new Set(docs.groups.map(nameOf).filter((g) => g.startsWith(`${tenant.id}.`)));
  const view = (groups: DiscoveryGroup[]): DiscoveryGroup[] => groups.flatMap((g) => {
    const member = nameOf(g);
    const shown = tenant.tenantGroup(member);
    if (shown === undefined || (shown === member && own.has(`${tenant.id}.${member}`))) return [];
    const versions = g.versions.map((v) => ({
      ...v,
      resources: v.resources.flatMap((r) => {
        // Reviews of the caller itself are everyone's.
        const policy = SELF_REVIEWS.has(r.resource) ? 'namespaced' : tenant.policy(member, r.resource, r.scope === 'Namespaced');
        if (policy === 'hidden') return [];
        const kind = r.responseKind ? { responseKind: { ...r.responseKind, group: shown } } : {};
        return [{ ...r, ...kind, ...(policy === 'shared' ? { verbs: r.verbs.filter((verb) => READ_VERBS.has(verb)) } : {}) }];
      }),
    })).filter((v) => v.resources.length > 0);
    return versions.length > 0 || member === '' ? [{ ...g, metadata: member ? { name: shown } : {}, versions }] : [];
  });
  return { legacy: view(docs.legacy), groups: view(docs.groups) };
}
