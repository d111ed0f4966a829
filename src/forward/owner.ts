import type { IncomingMessage } from 'node:http';
import { outsideCache, type FleetMembers, type ResourceCatalog } from '../cacher/cache-roles.js';
import type { ClusterAccess, ReadQuestion } from '../authz/authorizer.js';
import { findOne } from '../mux/reads.js';
import { buildReadView } from '../view/steps.js';
import { canonicalPath, type RequestTarget } from '../api/request-info.js';
import { gvrKey } from '../api/resource-info.js';
import type { Store } from '../store/store.js';
import { StatusError, badRequest, heldBySeveral, notFound, unknownCluster } from '../api/status.js';
import { asCaller, askMembers } from './member-fan-out.js';
import { MEMBER_FAN_OUT, MEMBER_READ_TIMEOUT_MS } from '../registry/defaults.js';
import type { ObjectRef, RecentOwners } from './recent-owners.js';

export type ResourceTarget = Extract<RequestTarget, { type: 'resource' }>;

export interface OwnerLookup {
  fleet: FleetMembers;
  catalog: ResourceCatalog;
  /** Where the caller may get the object (src/authz): the lookup sees only those copies. */
  getAccess?: (req: IncomingMessage, question: ReadQuestion, clusters: readonly string[]) => Promise<ClusterAccess>;
  /** The caller's Impersonate-* headers: with them, members are asked for what the cache lacks. */
  callerHeaders?: (req: IncomingMessage) => Promise<Record<string, string | string[]>>;
  /** Where the caller's objects were lately created or found (src/forward/recent-owners.ts). */
  recent?: { owners: RecentOwners; callerKey(req: IncomingMessage): string };
}

/**
 * The member a request about one named object goes to: the `/clusters/<name>/` it addressed, else
 * the one member whose cached copy holds the object (409 naming the clusters when several do).
 * Only copies the caller may get count: whether a copy it may not see exists must not change the
 * answer. What the cache does not hold (a create it has not seen yet, a resource or namespace it
 * does not cache) goes where the caller lately created or found it, else to the one member that
 * answers the caller's get of it, the members asked as the caller: 404 when none does, 409 when
 * several do. A fleet of one member needs no lookup.
 */
export async function owningCluster(where: OwnerLookup, store: Store, target: ResourceTarget, req: IncomingMessage): Promise<string> {
  if (target.cluster !== undefined) {
    checkAddressedCluster(where.fleet, target);
    return target.cluster;
  }
  const resource = where.catalog.resource(gvrKey(target));
  const clusters = where.fleet.clusterNames();
  if (target.name === undefined) {
    if (clusters.length === 1) return clusters[0]!;
    const what = target.group ? `${target.resource}.${target.group}` : target.resource;
    throw badRequest(`flotilla cannot tell which cluster owns this ${what} request (no object name); address one cluster with the /clusters/<name>/ path prefix, one of: ${clusters.join(', ')}`);
  }
  let missing: StatusError | undefined;
  if (resource && !outsideCache(resource, target)) {
    const question: ReadQuestion = {
      verb: 'get', group: resource.info.group, resource: resource.info.resource, namespaced: resource.info.namespaced,
      ...(target.namespace !== undefined ? { namespace: target.namespace } : {}), name: target.name,
    };
    const access = where.getAccess ? await where.getAccess(req, question, resource.clusters) : undefined;
    const view = buildReadView({ resource, namespace: target.namespace, name: target.name, watching: false, ...(access ? { access } : {}) });
    try {
      return findOne(store, { resource, view }, target.namespace ?? '', target.name).cluster;
    } catch (e) {
      if (!(e instanceof StatusError) || e.code !== 404) throw e;
      missing = e;
    }
  }
  const ref: ObjectRef = { resource: gvrKey(target), ...(target.namespace !== undefined ? { namespace: target.namespace } : {}), name: target.name };
  const caller = where.recent?.callerKey(req);
  const remembered = caller !== undefined ? where.recent!.owners.owner(caller, ref) : undefined;
  if (remembered !== undefined && clusters.includes(remembered)) return remembered;
  if (clusters.length === 1) return clusters[0]!;
  if (!where.callerHeaders) throw missing ?? notFound({ group: target.group, resource: target.resource }, target.name);
  const holders = await membersHolding(where, req, target, clusters);
  if (holders.length === 1) {
    if (caller !== undefined) where.recent!.owners.remember(caller, ref, holders[0]!);
    return holders[0]!;
  }
  if (holders.length > 1) throw heldBySeveral(target, target.namespace, target.name, holders);
  throw missing ?? notFound({ group: target.group, resource: target.resource }, target.name);
}

/** The members that answer the caller's get of the object (asked as the caller, MEMBER_FAN_OUT at once, each for MEMBER_READ_TIMEOUT_MS). */
async function membersHolding(where: OwnerLookup, req: IncomingMessage, target: ResourceTarget, clusters: readonly string[]): Promise<string[]> {
  const headers = asCaller(await where.callerHeaders!(req), req.headers['user-agent'], { accept: 'application/json' });
  const path = canonicalPath({ ...target, cluster: undefined, subresource: undefined });
  const answers = await askMembers(where.fleet, clusters, { concurrency: MEMBER_FAN_OUT, timeoutMs: MEMBER_READ_TIMEOUT_MS }, (cluster) => ({ cluster, path, headers }));
  return answers.filter((a) => a.status === 200).map((a) => a.cluster);
}

/** 404 for a `/clusters/<name>/` prefix naming no member of the fleet. */
export function checkAddressedCluster(fleet: FleetMembers, target: { cluster?: string }): void {
  if (target.cluster !== undefined && !fleet.clusterNames().includes(target.cluster)) throw unknownCluster(target.cluster);
}
