import type { FastifyReply, FastifyRequest } from 'fastify';
import { cachedNamespaces, type FleetMembers, type ResourceCatalog } from '../../cacher/cache-roles.js';
import { NAMESPACES, type NamespaceForest } from '../../hierarchy/namespace-forest.js';
import { hierarchySelection, isTreeRequirement } from '../../view/step-hierarchy.js';
import { searchSelection, searchTermsOf } from '../../view/step-search.js';
import type { ViewRequest } from '../../view/view-step.js';
import { OWNER_KIND_TERM, OWNER_NAME_TERM, OWNER_UID_TERM, SEARCH_PREFIX, isSearchKey } from '../../api/search-terms.js';
import { badRequest } from '../../api/status.js';
import { buildReadView } from '../../view/steps.js';
import { formatLabelSelector, parseLabelSelector } from '../../api/label-selector.js';
import type { ResourceTarget } from '../../forward/owner.js';
import type { ForwardDeps } from '../../forward/writes.js';
import { liveRead } from '../../forward/live/live-read.js';
import type { LiveSelection } from '../../forward/live/config.js';
import type { LiveReadsConfig } from '../../registry/fleet-config.js';
import type { LiveReadLimits } from '../../forward/live-read-limits.js';
import type { Store } from '../../store/store.js';
import type { TenantNames } from '../../tenancy/answers.js';
import { parseReadRequest, type ReadQuery as Query } from '../../api/list-options.js';

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
    const edits = await liveEdits(deps, req, target, clusters);
    return liveRead(req, reply, { fleet, config: deps.config, callerHeaders: deps.forward.callerHeaders, namespacesOf, ...edits, ...(hold ? { hold } : {}) }, target, clusters);
  };
}

/**
 * What a live read's answers are edited by: a tenant's names, and flotilla's own selection (the
 * read view's hierarchy and search steps; the members get the rest of the selector). The tree is
 * the cached namespaces': without them, none. Owner search reads the cache's owner index: 400
 * for a resource read live.
 */
async function liveEdits(deps: LiveReaderDeps, req: FastifyRequest, target: ResourceTarget, fleetClusters: readonly string[] | undefined): Promise<{ tenant?: TenantNames; selection?: LiveSelection }> {
  const tenant = await deps.forward.tenant?.(req.raw);
  const query = req.query as Query;
  const read = parseReadRequest(query, target.name !== undefined);
  const trees = deps.hierarchy && deps.catalog.resource(NAMESPACES) ? deps.hierarchy : undefined;
  // A selector with nothing of flotilla's in it is the members' to read (and refuse) alone.
  const ours = read.labelSelector !== undefined && (trees !== undefined || read.labelSelector.includes(SEARCH_PREFIX));
  const wanted = ours ? parseLabelSelector(read.labelSelector!) : [];
  const flotillas = (key: string) => isSearchKey(key) || (trees !== undefined && isTreeRequirement(key));
  if (!read.search && !wanted.some((r) => flotillas(r.key))) return tenant ? { tenant } : {};
  const clusters = target.cluster !== undefined ? [target.cluster] : fleetClusters ?? deps.fleet.clusterNames();
  const named = tenant?.resource(target.group, target.resource);
  const request: ViewRequest = {
    resource: { info: { group: target.group, resource: target.resource, kind: '', namespaced: named?.namespaced ?? true }, clusters },
    watching: read.verb === 'watch',
    ...(target.name !== undefined ? { name: target.name } : {}),
    ...(read.labelSelector !== undefined ? { labelSelector: read.labelSelector } : {}),
    ...(read.search ? { search: read.search } : {}),
    ...(trees ? { hierarchy: trees } : {}),
    ...(tenant ? { tenant: tenant.naming } : {}),
    clusterLabels: (c: string) => deps.fleet.clusterLabels(c),
  };
  if (searchTermsOf(request)?.owner) throw badRequest(`owner search terms (${OWNER_UID_TERM}, ${OWNER_KIND_TERM}, ${OWNER_NAME_TERM}) are served for cached resources only: ${target.group ? `${target.resource}.${target.group}` : target.resource} is read live from the members`);
  const view = buildReadView(request, LIVE_SELECTION_STEPS);
  const selection: LiveSelection = {
    rest: ours ? formatLabelSelector(wanted.filter((r) => !flotillas(r.key))) : read.labelSelector ?? '',
    showsCluster: (c) => view.showsCluster(c),
    admits: (o) => view.admits(o, () => (o.created !== undefined ? { created: o.created } : {})),
  };
  return { ...(tenant ? { tenant } : {}), selection };
}

/** The view steps a live read's answers are selected by; the members decide the rest (authorization, labels, fields). */
const LIVE_SELECTION_STEPS = [hierarchySelection, searchSelection];
