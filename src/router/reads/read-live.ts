import type { FastifyReply, FastifyRequest } from 'fastify';
import { cachedNamespaces, type FleetMembers, type ResourceCatalog } from '../../cacher/cache-manager.js';
import { NAMESPACES, type NamespaceForest } from '../../hierarchy/namespace-forest.js';
import { hierarchySelection, isTreeRequirement } from '../../view/step-hierarchy.js';
import { buildReadView } from '../../view/steps.js';
import { formatLabelSelector, parseLabelSelector } from '../../api/label-selector.js';
import type { ResourceTarget } from '../../forward/owner.js';
import type { ForwardDeps } from '../../forward/writes.js';
import { liveRead } from '../../forward/live/live-read.js';
import type { LiveReadDeps } from '../../forward/live/config.js';
import type { LiveReadsConfig } from '../../registry/fleet-config.js';
import type { LiveReadLimits } from '../../forward/live-read-limits.js';
import type { Store } from '../../store/store.js';
import type { TenantNames } from '../../tenancy/answers.js';
import { one, type ReadQuery as Query } from '../../api/list-options.js';

export interface LiveReaderDeps {
  fleet: FleetMembers;
  catalog: ResourceCatalog;
  store: Store;
  forward: ForwardDeps;
  config: LiveReadsConfig;
  hierarchy?: NamespaceForest;
  liveLimits?: LiveReadLimits;
}

/** A read asked of the members (src/forward/live/); `clusters`: those a cached resource comes from. */
export type LiveReader = (req: FastifyRequest, reply: FastifyReply, target: ResourceTarget, clusters?: readonly string[]) => Promise<FastifyReply>;

/** How every live read is asked: with a hold on the answer bytes, and the request's edits. */
export function liveReader(deps: LiveReaderDeps): LiveReader {
  const { fleet, catalog, store } = deps;
  const namespacesOf = (cluster: string) => cachedNamespaces(catalog, store, cluster);
  return async (req, reply, target, clusters) => {
    const hold = deps.liveLimits?.hold();
    // 'close' comes once the answer is written, or the connection is gone: either way the bytes are free.
    if (hold) reply.raw.once('close', () => hold.release());
    const edits = await liveEdits(deps, req, target);
    return liveRead(req, reply, { fleet, config: deps.config, callerHeaders: deps.forward.callerHeaders, namespacesOf, ...edits, ...(hold ? { hold } : {}) }, target, clusters);
  };
}

/**
 * What a live read's answers are edited by: a tenant's names, and a selection by the namespace
 * tree (the members get the rest of the selector). The tree is the cached namespaces': without
 * them, none.
 */
async function liveEdits(deps: LiveReaderDeps, req: FastifyRequest, target: ResourceTarget): Promise<{ tenant?: TenantNames; treeSelection?: LiveReadDeps['treeSelection'] }> {
  const tenant = await deps.forward.tenant?.(req.raw);
  const selector = one(req.query as Query, 'labelSelector');
  const wanted = selector && deps.hierarchy && deps.catalog.resource(NAMESPACES) ? parseLabelSelector(selector) : [];
  const tree = wanted.filter((r) => isTreeRequirement(r.key));
  let treeSelection: LiveReadDeps['treeSelection'];
  if (tree.length > 0) {
    const clusters = target.cluster !== undefined ? [target.cluster] : deps.fleet.clusterNames();
    const view = buildReadView({
      resource: { info: { group: target.group, resource: target.resource, kind: '', namespaced: true }, clusters },
      watching: false,
      labelSelector: formatLabelSelector(tree),
      hierarchy: deps.hierarchy!,
    }, [hierarchySelection]);
    treeSelection = {
      rest: formatLabelSelector(wanted.filter((r) => !isTreeRequirement(r.key))),
      selects: (cluster, namespace) => view.admits({ cluster, namespace, name: '' }, () => undefined),
    };
  }
  return { ...(tenant ? { tenant } : {}), ...(treeSelection ? { treeSelection } : {}) };
}
