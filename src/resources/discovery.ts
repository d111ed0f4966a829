import type { V1APIResourceList } from '@kubernetes/client-node';
import type { MemberClient } from '../members/member-client.js';
import { apiPrefix, gvrKey, type GroupVersionResource, type ResourceInfo } from '../api/resource-info.js';
import { learnBookmarkTemplate } from './bookmark-template.js';
import { learnListItemKinds } from './list-item-kinds.js';

/** What a member's discovery says of one resource: flotilla caches only what it serves. */
export class ResourceNotServedError extends Error {}

export async function discoverResource(member: MemberClient, gvr: GroupVersionResource, signal?: AbortSignal): Promise<ResourceInfo> {
  const list = await member.getJson<V1APIResourceList>(apiPrefix(gvr), signal);
  const entry = list.resources.find((r) => r.name === gvr.resource);
  if (!entry) {
    throw new ResourceNotServedError(`${member.cluster} does not serve ${gvrKey(gvr)}`);
  }
  const info: ResourceInfo = {
    ...gvr,
    kind: entry.kind,
    namespaced: entry.namespaced,
    singularName: entry.singularName || entry.kind.toLowerCase(),
    shortNames: entry.shortNames ?? [],
    categories: entry.categories ?? [],
    memberVerbs: entry.verbs,
  };
  const [bookmark, listItemKinds] = await Promise.all([
    entry.verbs.includes('watch') ? learnBookmarkTemplate(member, info, signal) : undefined,
    entry.verbs.includes('list') ? learnListItemKinds(member, info, signal) : undefined,
  ]);
  return { ...info, ...(bookmark ? { bookmark } : {}), ...(listItemKinds !== undefined ? { listItemKinds } : {}) };
}

/** Aggregated discovery (apidiscovery.k8s.io/v2), as a member publishes it for `/api` and `/apis`. */
export interface DiscoveryKind {
  group: string;
  version: string;
  kind: string;
}
export interface DiscoverySubresource {
  subresource: string;
  responseKind?: DiscoveryKind;
  acceptedTypes?: DiscoveryKind[];
  verbs: string[];
}
export interface DiscoveryResource {
  resource: string;
  responseKind?: DiscoveryKind;
  scope: 'Namespaced' | 'Cluster';
  singularResource: string;
  verbs: string[];
  shortNames?: string[];
  categories?: string[];
  subresources?: DiscoverySubresource[];
}
export interface DiscoveryVersion {
  version: string;
  resources: DiscoveryResource[];
  freshness?: string;
}
export interface DiscoveryGroup {
  /** No name for the legacy group (`/api`). */
  metadata: { name?: string };
  versions: DiscoveryVersion[];
}
export interface DiscoveryDocuments {
  /** `/api`: the legacy group (named ''). */
  legacy: DiscoveryGroup[];
  /** `/apis`: every named group, in the member's order (the preferred version first). */
  groups: DiscoveryGroup[];
}

const AGGREGATED_ACCEPT = 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList';

/** A member's whole discovery in two requests (flotilla's own identity: discovery is not filtered). */
export async function memberDiscovery(member: MemberClient, signal?: AbortSignal): Promise<DiscoveryDocuments> {
  const one = async (path: string): Promise<DiscoveryGroup[]> => {
    const res = await member.fetch({ path, headers: { accept: AGGREGATED_ACCEPT }, signal });
    const text = res.body.toString('utf8');
    if (res.status !== 200) throw new Error(`${member.cluster} answered ${path} with ${res.status}: ${text.slice(0, 200)}`);
    const doc = JSON.parse(text) as { kind?: string; items?: DiscoveryGroup[] };
    if (doc.kind !== 'APIGroupDiscoveryList' || !Array.isArray(doc.items)) throw new Error(`${member.cluster} has no aggregated discovery at ${path}`);
    return doc.items;
  };
  const [legacy, groups] = await Promise.all([one('/api'), one('/apis')]);
  return { legacy, groups };
}

/**
 * A member's storageVersionHash for each resource of a group-version, from its legacy document
 * (`/api/v1`, `/apis/<group>/<version>`): aggregated discovery carries none. Resources without one
 * (subresources, kinds not stored) are left out.
 */
export async function memberStorageVersionHashes(member: MemberClient, group: string, version: string, signal?: AbortSignal): Promise<Map<string, string>> {
  const list = await member.getJson<{ resources?: { name?: unknown; storageVersionHash?: unknown }[] }>(apiPrefix({ group, version }), signal);
  const out = new Map<string, string>();
  for (const r of list.resources ?? []) {
    if (typeof r.name === 'string' && typeof r.storageVersionHash === 'string' && r.storageVersionHash) out.set(r.name, r.storageVersionHash);
  }
  return out;
}
