import type { IncomingMessage } from 'node:http';
import type { NamespaceForest } from '../../hierarchy/namespace-forest.js';
import { selectsByHierarchy } from '../../view/step-hierarchy.js';
import type { CachedResource, FleetMembers } from '../../cacher/cache-roles.js';
import { forbidden, serviceUnavailable } from '../../api/status.js';
import type { ReadRequest } from '../../api/list-options.js';
import { reviewAttributes, type ReadAuthorizer, type ReadQuestion } from '../../authz/authorizer.js';
import type { ReviewedCaller } from '../../members/access-reviews.js';
import { fieldSelectorName } from '../../api/field-selector.js';
import { warningHeader } from '../../api/warning.js';
import { FULL_ACCESS, NO_ACCESS, type AccessSet } from '../../api/rbac.js';
import type { ViewRequest } from '../../view/view-step.js';
import type { FoundOwner, OwnerSearch } from '../../view/owner-search.js';
import { clusterSought, searchTermsOf } from '../../view/step-search.js';
import type { ReadView } from '../../view/read-view.js';
import { VIEW_STEPS, buildReadView } from '../../view/steps.js';
import type { ForwardDeps } from '../../forward/writes.js';
import type { ResourceTarget } from '../../forward/owner.js';
import type { Callers } from '../callers.js';

/**
 * One caller's view of one cached resource, as every read of it begins (cached.ts, and the find
 * across kinds, find.ts): the request's view asked for, the caller's tenant and identity, each
 * addressed member's verdict on the caller (a 403 worded as the apiserver's when no member lets it
 * read, a 503 when flotilla's own rights are what is short), an owner search term's owners the
 * caller may read, the view itself, and the warnings it gives (members refused, namespace trees cut).
 */

export interface CallerViewDeps {
  callers: Callers;
  authorizer: ReadAuthorizer;
  forward: ForwardDeps;
  /** Each member's namespace tree, for hierarchy selectors. */
  hierarchy?: NamespaceForest;
  /** The members as configured now: their labels, for cluster search terms. */
  fleet?: Pick<FleetMembers, 'clusterLabels'>;
  /** Owner search terms' owners and what they own (src/view/owner-predicate.ts); absent: none found. */
  owners?: OwnerSearch;
}

export interface CallerView {
  request: ViewRequest;
  caller: ReviewedCaller;
  question: ReadQuestion;
  /** The resource's clusters the request addresses (one for `/clusters/<name>/`). */
  addressed: readonly string[];
  access: ReadonlyMap<string, AccessSet>;
  view: ReadView;
  warnings: string[];
  /** Whether the caller is a tenant's (its answers' words are the tenant's). */
  tenant: ReturnType<Callers['tenantSeen']>;
  /**
   * The view decided again from what is known now, for a running watch (when members' RBAC or
   * labels change): the caller's access, and an owner term's owners found and checked again.
   */
  revise(current: ReadView): ReadView;
}

export async function callerView(deps: CallerViewDeps, raw: IncomingMessage, resource: CachedResource, target: Pick<ResourceTarget, 'cluster' | 'namespace' | 'name'>, options: ReadRequest): Promise<CallerView> {
  const request: ViewRequest = {
    resource,
    cluster: target.cluster,
    namespace: target.namespace,
    name: target.name,
    watching: options.verb === 'watch',
    labelSelector: options.labelSelector,
    fieldSelector: options.fieldSelector,
    ...(deps.hierarchy ? { hierarchy: deps.hierarchy } : {}),
    ...(options.search ? { search: options.search } : {}),
    ...(deps.fleet ? { clusterLabels: (c: string) => deps.fleet!.clusterLabels(c) } : {}),
    ...(deps.owners ? { owners: deps.owners } : {}),
  };
  const tenant = deps.callers.tenantSeen(raw);
  const tenantNames = tenant ? await deps.forward.tenant?.(raw) : undefined;
  if (tenantNames) request.tenant = tenantNames.naming;
  // Authorization first, as in the apiserver: a caller refused everywhere gets 403 whatever
  // else is wrong with its request (a selector that does not parse, say).
  const caller = await deps.callers.reader(raw);
  const named = target.name ?? fieldSelectorName(request.fieldSelector);
  const question: ReadQuestion = {
    verb: options.verb,
    group: resource.info.group,
    resource: resource.info.resource,
    namespaced: resource.info.namespaced,
    ...(target.namespace !== undefined ? { namespace: target.namespace } : {}),
    ...(named !== undefined ? { name: named } : {}),
  };
  const addressed = target.cluster !== undefined ? resource.clusters.filter((c) => c === target.cluster) : resource.clusters;
  const access = await deps.authorizer.access(caller, addressed, question);
  const allowed = buildReadView({ ...request, access }, AUTHORIZATION_STEPS);
  // A member whose RBAC flotilla cannot read refuses for want of flotilla's rights, not the caller's.
  const undecided = deps.authorizer.undecidable(allowed.denied);
  if (allowed.clusters.length === 0 && undecided.length > 0) throw serviceUnavailable(undecided.map((u) => u.reason).join('; '));
  if (allowed.clusters.length === 0 && allowed.denied.length > 0) throw forbiddenRead(caller.user, question, allowed.denied, target.cluster !== undefined);
  const terms = searchTermsOf(request);
  const owner = deps.owners ? terms?.owner : undefined;
  if (owner) request.ownersFound = await readableOwners(deps.authorizer, caller, deps.owners!.find(owner, allowed.clusters, target.namespace));
  const view = buildReadView({ ...request, access });
  // A member the caller's own cluster terms leave out is not news to it: the warnings name only members the search keeps.
  const sought = (c: string) => clusterSought(terms, request, c);
  const warnings: string[] = [];
  const refused = view.denied.filter((c) => sought(c) && !undecided.some((u) => u.cluster === c));
  if (refused.length > 0 && question.verb !== 'get') {
    warnings.push(warningHeader(`User "${caller.user}" cannot ${question.verb} ${whatOf(question)} in ${refused.length === 1 ? 'cluster' : 'clusters'} ${refused.join(', ')}: nothing of ${refused.length === 1 ? 'it' : 'them'} is shown`));
  }
  for (const u of undecided) if (sought(u.cluster)) warnings.push(warningHeader(`nothing of cluster ${u.cluster} is shown: ${u.reason}`));
  if (deps.hierarchy && selectsByHierarchy(view)) warnings.push(...treeWarnings(deps.hierarchy, view));
  let owners = request.ownersFound;
  const revise = (current: ReadView): ReadView => {
    const now = deps.authorizer.accessNow(caller, addressed, question, accessOf(current, addressed));
    if (!owner) return buildReadView({ ...request, access: now });
    const readable = buildReadView({ ...request, access: now }, AUTHORIZATION_STEPS).clusters;
    owners = readableOwnersNow(deps.authorizer, caller, deps.owners!.find(owner, readable, target.namespace), owners ?? []);
    return buildReadView({ ...request, access: now, ownersFound: owners });
  };
  return { request, caller, question, addressed, access, view, warnings, tenant, revise };
}

/** A view's access per addressed cluster, as the authorization step left it (what a revision keeps for members it cannot ask now). */
function accessOf(view: ReadView, clusters: readonly string[]): ReadonlyMap<string, AccessSet> {
  return new Map(clusters.map((c) => [c, view.access?.get(c) ?? NO_ACCESS]));
}

/**
 * The owners an owner search term names that the caller may get, each asked of its own member:
 * one it may not read is as if not found, so the answer never tells that it exists.
 */
async function readableOwners(authorizer: ReadAuthorizer, caller: ReviewedCaller, found: readonly FoundOwner[]): Promise<FoundOwner[]> {
  const verdicts = await Promise.all(found.map(async (f) => mayGet((await authorizer.access(caller, [f.cluster], ownerQuestion(f))).get(f.cluster), f)));
  return found.filter((_, i) => verdicts[i]);
}

/**
 * readableOwners from what is known now, without waiting (a running watch's revision): a member
 * that decides for itself and has no verdict at hand keeps its last one, `before`'s.
 */
function readableOwnersNow(authorizer: ReadAuthorizer, caller: ReviewedCaller, found: readonly FoundOwner[], before: readonly FoundOwner[]): FoundOwner[] {
  return found.filter((f) => {
    const was = before.some((b) => b.cluster === f.cluster && b.owner === f.owner);
    return mayGet(authorizer.accessNow(caller, [f.cluster], ownerQuestion(f), new Map([[f.cluster, was ? FULL_ACCESS : NO_ACCESS]])).get(f.cluster), f);
  });
}

function ownerQuestion(f: FoundOwner): ReadQuestion {
  return { verb: 'get', group: f.group, resource: f.resource, namespaced: f.namespaced, ...(f.namespace ? { namespace: f.namespace } : {}), name: f.name };
}

function mayGet(a: AccessSet | undefined, f: FoundOwner): boolean {
  return a !== undefined && (a.everywhere || a.namespaces.has(f.namespace));
}

/** The steps up to the caller's authorization: what decides a 403 before the request's own narrowing is read. */
const AUTHORIZATION_STEPS = VIEW_STEPS.slice(0, VIEW_STEPS.findIndex((s) => s.name === 'authorization') + 1);

export function whatOf(q: ReadQuestion): string {
  return q.group ? `${q.resource}.${q.group}` : q.resource;
}

/**
 * 403 worded as the apiserver words it (`pods is forbidden: User "alice" cannot list resource
 * "pods" in API group "" at the cluster scope`), naming the members that refused when the request
 * was fleet-wide. As the apiserver's, it names the object whenever the request names one (a get, or
 * a list or watch with a `metadata.name` field selector), and its scope is the namespace the
 * authorizer was asked about (a namespace's own, for a get of a namespace).
 */
function forbiddenRead(user: string, q: ReadQuestion, denied: readonly string[], addressed: boolean): Error {
  const { namespace } = reviewAttributes(q);
  const scope = namespace !== undefined ? `in the namespace "${namespace}"` : 'at the cluster scope';
  const subject = q.name !== undefined ? `${whatOf(q)} "${q.name}"` : whatOf(q);
  const where = addressed ? '' : ` (in any of the clusters ${denied.join(', ')})`;
  return forbidden(`${subject} is forbidden: User "${user}" cannot ${q.verb} resource "${q.resource}" in API group "${q.group}" ${scope}${where}`, {
    ...(q.name !== undefined ? { name: q.name } : {}),
    ...(q.group ? { group: q.group } : {}),
    kind: q.resource,
  });
}

/**
 * Where a tree the selection read was cut (a cycle, a parent that does not exist), said of the
 * namespaces the caller may read only (and without naming the parent, which it may not).
 */
function treeWarnings(forest: NamespaceForest, view: ReadView): string[] {
  return forest
    .problems(view.clusters)
    .filter((p) => view.clustersIn(p.namespace).includes(p.cluster))
    .map((p) => warningHeader(`cluster ${p.cluster}: namespace ${p.namespace} is cut from its parent (${p.problem === 'cycle' ? 'its parents form a cycle' : 'the parent does not exist'}); hierarchy selectors treat it as a root`));
}
