import type { V1APIResourceList } from '@kubernetes/client-node';
import type { MemberClient } from '../members/member-client.js';
import { apiPrefix, gvrKey, type GroupVersionResource, type ResourceInfo } from '../api/resource-info.js';
import { learnBookmarkTemplate } from './bookmark-template.js';

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
  const bookmark = entry.verbs.includes('watch') ? await learnBookmarkTemplate(member, info, signal) : undefined;
  return bookmark ? { ...info, bookmark } : info;
}
