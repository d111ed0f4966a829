import type { V1APIResourceList } from '@kubernetes/client-node';
import type { MemberClient } from '../members/member-client.js';

/** What flotilla knows about one cached resource, learned from a member's discovery. */
export interface ResourceInfo {
  group: string;
  version: string;
  resource: string;
  kind: string;
  namespaced: boolean;
  singularName: string;
  shortNames: string[];
  categories: string[];
  /** The member's verbs; flotilla advertises the subset it serves. */
  memberVerbs: string[];
}

export interface GroupVersionResource {
  group: string;
  version: string;
  resource: string;
}

/** `v1/pods`, `apps/v1/deployments`: the resource's path fragment, also its key in the store. */
export function gvrKey(r: GroupVersionResource): string {
  return r.group ? `${r.group}/${r.version}/${r.resource}` : `${r.version}/${r.resource}`;
}

export function groupVersion(r: { group: string; version: string }): string {
  return r.group ? `${r.group}/${r.version}` : r.version;
}

/** The URL prefix of the resource's collection on a member or on flotilla. */
export function apiPrefix(r: { group: string; version: string }): string {
  return r.group ? `/apis/${r.group}/${r.version}` : `/api/${r.version}`;
}

export function collectionPath(r: GroupVersionResource & { namespaced?: boolean }, namespace?: string): string {
  const ns = namespace ? `/namespaces/${encodeURIComponent(namespace)}` : '';
  return `${apiPrefix(r)}${ns}/${r.resource}`;
}

export class ResourceNotServedError extends Error {}

export async function discoverResource(member: MemberClient, gvr: GroupVersionResource, signal?: AbortSignal): Promise<ResourceInfo> {
  const list = await member.getJson<V1APIResourceList>(apiPrefix(gvr), signal);
  const entry = list.resources.find((r) => r.name === gvr.resource);
  if (!entry) {
    throw new ResourceNotServedError(`${member.cluster} does not serve ${gvrKey(gvr)}`);
  }
  return {
    ...gvr,
    kind: entry.kind,
    namespaced: entry.namespaced,
    singularName: entry.singularName || entry.kind.toLowerCase(),
    shortNames: entry.shortNames ?? [],
    categories: entry.categories ?? [],
    memberVerbs: entry.verbs,
  };
}
