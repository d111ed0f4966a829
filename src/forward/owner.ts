import type { IncomingMessage } from 'node:http';
import type { FleetMembers, ResourceCatalog } from '../cacher/cache-manager.js';
import type { ClusterAccess, ReadQuestion } from '../authz/authorizer.js';
import { findOne } from '../mux/reads.js';
import { buildReadView } from '../view/steps.js';
import type { RequestTarget } from '../api/request-info.js';
import { gvrKey } from '../api/resource-info.js';
import type { Store } from '../store/store.js';
import { badRequest, unknownCluster } from '../api/status.js';

export type ResourceTarget = Extract<RequestTarget, { type: 'resource' }>;

export interface OwnerLookup {
  fleet: FleetMembers;
  catalog: ResourceCatalog;
  /** Where the caller may get the object (src/authz): the lookup sees only those copies. */
  getAccess?: (req: IncomingMessage, question: ReadQuestion, clusters: readonly string[]) => Promise<ClusterAccess>;
}

/**
 * The member a request about one named object goes to: the `/clusters/<name>/` it addressed, else
 * the one member whose cached copy holds the object (404 when none does, 409 naming the clusters
 * when several do). Only copies the caller may get count: whether a copy it may not see exists
 * must not change the answer. A resource flotilla does not cache can only be reached through one
 * member's prefix, unless the fleet has a single member.
 */
export async function owningCluster(where: OwnerLookup, store: Store, target: ResourceTarget, req: IncomingMessage): Promise<string> {
  if (target.cluster !== undefined) {
    checkAddressedCluster(where.fleet, target);
    return target.cluster;
  }
  const resource = where.catalog.resource(gvrKey(target));
  if (resource && target.name !== undefined) {
    const question: ReadQuestion = {
      verb: 'get', group: resource.info.group, resource: resource.info.resource, namespaced: resource.info.namespaced,
      ...(target.namespace !== undefined ? { namespace: target.namespace } : {}), name: target.name,
    };
    const access = where.getAccess ? await where.getAccess(req, question, resource.clusters) : undefined;
    const view = buildReadView({ resource, namespace: target.namespace, name: target.name, watching: false, ...(access ? { access } : {}) });
    return findOne(store, { resource, view }, target.namespace ?? '', target.name).cluster;
  }
  const clusters = where.fleet.clusterNames();
  if (clusters.length === 1) return clusters[0]!;
  const what = target.group ? `${target.resource}.${target.group}` : target.resource;
  throw badRequest(
    `flotilla cannot tell which cluster owns this ${what} request (${resource ? 'no object name' : 'the resource is not cached'}); ` +
      `address one cluster with the /clusters/<name>/ path prefix, one of: ${clusters.join(', ')}`,
  );
}

/** 404 for a `/clusters/<name>/` prefix naming no member of the fleet. */
export function checkAddressedCluster(fleet: FleetMembers, target: { cluster?: string }): void {
  if (target.cluster !== undefined && !fleet.clusterNames().includes(target.cluster)) throw unknownCluster(target.cluster);
}
