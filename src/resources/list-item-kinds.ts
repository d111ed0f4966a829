import type { MemberClient } from '../members/member-client.js';
import { collectionPath, type ResourceInfo } from '../api/resource-info.js';

// Matches no object: the list is empty and comes from the member's watch cache.
const NOTHING = 'search.flotilla.io/none,!search.flotilla.io/none';
const PROTOBUF = 'application/vnd.kubernetes.protobuf';

/**
 * Learns whether a member's JSON list of a resource gives each item its kind and apiVersion. A
 * kind compiled into the apiserver is listed from typed objects, whose items carry neither; a
 * custom resource is listed from unstructured objects, whose items carry both. The same split
 * decides whether the member can answer in protobuf (custom resources cannot), and asking that
 * needs no object to exist: an empty list offered protobuf first says which it is by its content
 * type. Undefined when the member does not answer the list (flotilla then shows items as stored,
 * with their kind).
 */
export async function learnListItemKinds(member: MemberClient, info: ResourceInfo, signal?: AbortSignal): Promise<boolean | undefined> {
  const query = new URLSearchParams({ labelSelector: NOTHING, resourceVersion: '0', limit: '1' });
  try {
    const res = await member.send({ path: `${collectionPath(info)}?${query}`, headers: { accept: `${PROTOBUF}, application/json;q=0.9` }, signal });
    res.resume();
    if (res.statusCode !== 200) return undefined;
    const type = (res.headers['content-type'] ?? '').toLowerCase();
    if (type.startsWith(PROTOBUF)) return false;
    if (type.startsWith('application/json')) return true;
    return undefined;
  } catch {
    return undefined;
  }
}
