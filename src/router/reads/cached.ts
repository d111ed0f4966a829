import type { FastifyReply } from 'fastify';
import { Readable } from 'node:stream';
import type { NamespaceForest } from '../../hierarchy/namespace-forest.js';
import { selectsByHierarchy } from '../../view/step-hierarchy.js';
import type { CacheHealth, CachedResource, FleetMembers } from '../../cacher/cache-manager.js';
import { getResponse, listResponse } from '../../mux/reads.js';
import type { WatchHub } from '../../mux/watch-hub.js';
import type { SnapshotRegistry } from '../../mux/snapshots.js';
import { compareMemberRV, decodeGlobalRV } from '../../api/global-rv.js';
import { decodeContinue } from '../../api/continue-token.js';
import { gvrKey } from '../../api/resource-info.js';
import { negotiate } from '../../api/negotiate.js';
import { expired, forbidden, serviceUnavailable, timeout } from '../../api/status.js';
import { parseReadRequest } from '../../api/list-options.js';
import { reviewAttributes, type ReadAuthorizer, type ReadQuestion } from '../../authz/authorizer.js';
import type { ReviewedCaller } from '../../members/access-reviews.js';
import { fieldSelectorName } from '../../api/field-selector.js';
import { firstHitWarning, warningHeader } from '../../api/warning.js';
import type { ViewRequest } from '../../view/view-step.js';
import type { FoundOwner } from '../../view/owner-search.js';
import { searchTermsOf } from '../../view/step-search.js';
import type { OwnerSearch } from '../../view/owner-search.js';
import { NO_ACCESS, type AccessSet } from '../../api/rbac.js';
import type { Store } from '../../store/store.js';
import type { ReadView } from '../../view/read-view.js';
import { VIEW_STEPS, buildReadView } from '../../view/steps.js';
import type { DeletedObject, WriteTracker } from '../../forward/read-your-writes.js';
import type { ForwardDeps } from '../../forward/writes.js';
import type { Callers } from '../callers.js';
import { MAX_TIMER_MS, sendBytes } from '../replies.js';
import type { ReadQuery as Query } from '../../api/list-options.js';
import { cachedScope, type ReadContext, type ReadHandler } from './read-handler.js';
import {
  DEFAULT_MAX_WATCH_BUFFER_MIB,
  DEFAULT_MIN_WATCH_TIMEOUT_SECONDS,
  DEFAULT_WATCH_BOOKMARK_INTERVAL_SECONDS,
  DEFAULT_WATCH_CATCH_UP_STALL_SECONDS,
  READ_YOUR_WRITES_WAIT_MS,
  RESOURCE_VERSION_WAIT_MS,
} from '../../registry/defaults.js';

export interface CachedReadDeps {
  health: CacheHealth;
  store: Store;
  hub: WatchHub;
  snapshots: SnapshotRegistry;
  writes: WriteTracker;
  callers: Callers;
  authorizer: ReadAuthorizer;
  forward: ForwardDeps;
  /** Each member's namespace tree, for hierarchy selectors. */
  hierarchy?: NamespaceForest;
  /** The members as configured now: their labels, for cluster search terms. */
  fleet?: Pick<FleetMembers, 'clusterLabels'>;
  /** Owner search terms' owners and what they own (src/view/owner-predicate.ts); absent: none found. */
  owners?: OwnerSearch;
  /** minTimeoutSeconds: as the apiserver's --min-request-timeout, for watches without timeoutSeconds. */
  watch?: { bookmarkIntervalMs?: number; maxBufferedBytes?: number; minTimeoutSeconds?: number; catchUpStallMs?: number };
}

/**
 * Get, list and watch of a cached resource from the store, through the caller's read view
 * (src/view): the request's options read, the caller authorized, then the answer served.
 */
export function cachedHandler(deps: CachedReadDeps): ReadHandler {
  return { name: 'cached', serves: cachedScope, serve: (read) => serveCached(deps, read) };
}

async function serveCached(deps: CachedReadDeps, { req, reply, target, resource: cached }: ReadContext): Promise<FastifyReply> {
  const { health, store, hub, snapshots, writes, callers, authorizer } = deps;
  const resource = cached!;
  const options = parseReadRequest(req.query as Query, target.name !== undefined);
  const watching = options.verb === 'watch';
  // Decoded up front: a token that does not decode is a 400, for lists and watches alike.
  const since = options.resourceVersion && options.resourceVersion !== '0' ? decodeGlobalRV(options.resourceVersion) : undefined;
  const request: ViewRequest = {
    resource,
    cluster: target.cluster,
    namespace: target.namespace,
    name: target.name,
    watching,
    labelSelector: options.labelSelector,
    fieldSelector: options.fieldSelector,
    ...(deps.hierarchy ? { hierarchy: deps.hierarchy } : {}),
    ...(options.search ? { search: options.search } : {}),
    ...(deps.fleet ? { clusterLabels: (c: string) => deps.fleet!.clusterLabels(c) } : {}),
    ...(deps.owners ? { owners: deps.owners } : {}),
  };
  const tenant = callers.tenantSeen(req.raw);
  const tenantNames = tenant ? await deps.forward.tenant?.(req.raw) : undefined;
  if (tenantNames) request.tenant = tenantNames.naming;
  // Authorization first, as in the apiserver: a caller refused everywhere gets 403 whatever
  // else is wrong with its request (a selector that does not parse, say).
  const caller = await callers.reader(req.raw);
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
  const access = await authorizer.access(caller, addressed, question);
  const allowed = buildReadView({ ...request, access }, AUTHORIZATION_STEPS);
  // A member whose RBAC flotilla cannot read refuses for want of flotilla's rights, not the caller's.
  const undecided = authorizer.undecidable(allowed.denied);
  if (allowed.clusters.length === 0 && undecided.length > 0) throw serviceUnavailable(undecided.map((u) => u.reason).join('; '));
  if (allowed.clusters.length === 0 && allowed.denied.length > 0) throw forbiddenRead(caller.user, question, allowed.denied, target.cluster !== undefined);
  if (deps.owners) {
    const owner = searchTermsOf(request)?.owner;
    if (owner) request.ownersFound = await readableOwners(authorizer, caller, deps.owners.find(owner, allowed.clusters, target.namespace));
  }
  const view = buildReadView({ ...request, access });
  const warnings: string[] = [];
  const refused = view.denied.filter((c) => !undecided.some((u) => u.cluster === c));
  if (refused.length > 0 && question.verb !== 'get') {
    warnings.push(warningHeader(`User "${caller.user}" cannot ${question.verb} ${whatOf(question)} in ${refused.length === 1 ? 'cluster' : 'clusters'} ${refused.join(', ')}: nothing of ${refused.length === 1 ? 'it' : 'them'} is shown`));
  }
  for (const u of undecided) warnings.push(warningHeader(`nothing of cluster ${u.cluster} is shown: ${u.reason}`));
  if (deps.hierarchy && selectsByHierarchy(view)) warnings.push(...treeWarnings(deps.hierarchy, view));
  if (watching) {
    // Everything that can refuse the watch does so before the response is taken over.
    const form = negotiate(req.headers.accept, { list: false, watchable: true });
    // A watch selecting by the namespace tree, resumed from before namespaces moved, is
    // replayed as it was selected then, and then told what entered and left its selection.
    let opened = view;
    if (since && deps.hierarchy && selectsByHierarchy(view)) {
      const forest = deps.hierarchy;
      const then = buildReadView({ ...request, access, hierarchy: { tree: (c) => forest.treeAt(c, since[c] ?? '') ?? treeForgotten() } });
      if (then.key !== view.key) opened = then;
    }
    const reached = since ? await awaitResourceVersion(health, store, resource, opened, since, false, target.cluster) : undefined;
    const from = reached ? await resumeBeforeLogStart(health, store, resource, reached) : undefined;
    warnings.push(...staleWarnings(health, gvrKey(resource.info), view));
    reply.hijack();
    // Written with the watch's own headers.
    // Written past fastify's onSend (which rewords a tenant's other answers): reworded here.
    if (warnings.length) reply.raw.setHeader('warning', tenant ? warnings.map((w) => tenant.tenantText(w)) : warnings);
    const minWatchTimeout = deps.watch?.minTimeoutSeconds ?? DEFAULT_MIN_WATCH_TIMEOUT_SECONDS;
    hub.open(reply.raw, {
      resource,
      view: opened,
      reviseOnceLive: opened !== view,
      form,
      includeObject: options.includeObject,
      since: from,
      sendInitialEvents: options.sendInitialEvents,
      bookmarks: options.allowWatchBookmarks,
      // Like the apiserver: the client's timeout, else a random one from the minimum to twice it,
      // so that the watches of a fleet of clients do not all end (and relist) at once.
      // 0 is the default, as in the apiserver; past what a timer holds (24.8 days) is that long.
      timeoutMs: Math.min(MAX_TIMER_MS, (options.timeoutSeconds ?? minWatchTimeout * (1 + Math.random())) * 1000),
      bookmarkIntervalMs: deps.watch?.bookmarkIntervalMs ?? DEFAULT_WATCH_BOOKMARK_INTERVAL_SECONDS * 1000,
      maxBufferedBytes: deps.watch?.maxBufferedBytes ?? DEFAULT_MAX_WATCH_BUFFER_MIB * 1024 * 1024,
      catchUpStallMs: deps.watch?.catchUpStallMs ?? DEFAULT_WATCH_CATCH_UP_STALL_SECONDS * 1000,
      // When a member's RBAC changes, what the caller may see is decided again.
      revise: (current) => buildReadView({ ...request, access: authorizer.accessNow(caller, addressed, question, accessOf(current, addressed)) }),
    });
    return reply;
  }
  const key = gvrKey(resource.info);
  warnings.push(...staleWarnings(health, key, view));
  if (warnings.length) reply.header('warning', warnings);
  // Read-your-writes: a caller's read waits (briefly) for the cache to hold the caller's last write.
  const writer = callers.key(req.raw);
  const written = since ? undefined : writes.pending(writer, key);
  if (written) await store.waitFor(key, written, READ_YOUR_WRITES_WAIT_MS);
  const deleted = since ? undefined : writes.deleted(writer, key);
  if (deleted) {
    const held = (d: DeletedObject) => store.lookup(key, d.namespace, d.name, d.cluster).length > 0;
    await store.waitUntil(key, () => !deleted.some(held), READ_YOUR_WRITES_WAIT_MS);
    for (const d of deleted) if (!held(d)) writes.forgetDeleted(writer, key, d);
  }
  if (target.name !== undefined) {
    const form = negotiate(req.headers.accept, { list: false });
    const got = getResponse(store, { resource, view }, target.namespace ?? '', target.name, form, options.includeObject);
    if (got.alsoIn.length > 0) {
      // A first-hit get says which copy it is and how to read another; a write to the name stays 409.
      reply.header('warning', [...warnings, firstHitWarning(`${whatOf(question)} "${target.name}"`, [got.cluster, ...got.alsoIn])]);
    }
    return sendBytes(reply, got.body);
  }
  const form = negotiate(req.headers.accept, { list: true });
  if (since && !options.continue) await awaitResourceVersion(health, store, resource, view, since, options.resourceVersionMatch === 'Exact', target.cluster);
  const continueToken = options.continue ? decodeContinue(options.continue) : undefined;
  // A page whose snapshot is not here (another replica began the list) is read at the list's RV: once the store has reached it.
  if (continueToken && !snapshots.holds(continueToken.snap)) await awaitResourceVersion(health, store, resource, view, decodeGlobalRV(continueToken.rv), false, target.cluster);
  const body = listResponse(store, {
    resource,
    view,
    form,
    includeObject: options.includeObject,
    limit: options.limit,
    continueToken,
    snapshots,
    caller: writer,
  });
  if (Buffer.isBuffer(body)) return sendBytes(reply, body);
  // A large list streams; the client going away ends it and frees its snapshot.
  const stream = Readable.from(body.chunks, { objectMode: false, highWaterMark: 1 });
  stream.once('close', body.done);
  return reply.type('application/json').send(stream);
}

/**
 * A list or watch from a given RV, one rule for both: a cluster the view does not show (the
 * fleet changed since the RV was read) is 410 Expired, so the client relists; "not older than"
 * waits (RESOURCE_VERSION_WAIT_MS) for cachers behind it (asking their members whether anything
 * happened up to it: another replica may have issued an RV of a quiet resource that this one's
 * cachers never saw in a bookmark), then answers 504
 * ResourceVersionTooLarge with Retry-After, as the apiserver's watch cache does; "Exact" can
 * only be served for the current state (old snapshots are not kept): older is 410 Expired.
 * Returns the RV's clusters that concern this request (all of them, or the addressed member's).
 */
async function awaitResourceVersion(health: CacheHealth, store: Store, cached: CachedResource, view: ReadView, since: Record<string, string>, exact: boolean, only?: string): Promise<Record<string, string>> {
  const resource = gvrKey(cached.info);
  const wanted = Object.fromEntries(Object.entries(since).filter(([c]) => only === undefined || c === only));
  // Not named: the view may hide a cluster the resource is cached from.
  if (Object.keys(wanted).some((c) => !view.showsCluster(c))) throw expired('too old resource version: it names clusters this resource is no longer served from');
  if (!(await health.reachResourceVersion(resource, wanted, RESOURCE_VERSION_WAIT_MS))) {
    const latest = store.latestRVs(resource);
    const behind = Object.entries(wanted).filter(([c, rv]) => latest[c] === undefined || compareMemberRV(latest[c]!, rv) < 0).map(([c]) => c);
    throw timeout(`Too large resource version: the cache of ${behind.join(', ')} has not reached the requested resource version yet`, [{ reason: 'ResourceVersionTooLarge', message: 'Too large resource version' }], 1);
  }
  if (exact) {
    const latest = store.latestRVs(resource);
    const older = Object.entries(wanted).filter(([c, rv]) => latest[c] !== undefined && compareMemberRV(latest[c]!, rv) > 0);
    if (older.length > 0) throw expired(`too old resource version: flotilla serves Exact lists only at the current resource version (${older.map(([c]) => c).join(', ')} moved on)`);
  }
  return wanted;
}

/**
 * A watch resumed from a member RV older than where this replica's event log of that member starts
 * (another replica, whose own sync started earlier, issued it): the member is asked what happened
 * in between. Nothing: the state at the log's start is the state at the client's RV, and the
 * watch resumes from there. Otherwise (events, which are not replayed from the member here; the
 * member no longer holds them; not known) the catch-up's 410 ERROR event, and the client relists.
 */
async function resumeBeforeLogStart(health: CacheHealth, store: Store, cached: CachedResource, since: Record<string, string>): Promise<Record<string, string>> {
  const resource = gvrKey(cached.info);
  const start = store.logStart(resource);
  const resumed = { ...since };
  const before = Object.entries(since).filter(([cluster, rv]) => start[cluster] !== undefined && compareMemberRV(rv, start[cluster]!) < 0);
  const answers = await Promise.all(before.map(([cluster, rv]) => health.memberQuietBetween(resource, cluster, rv, start[cluster]!)));
  // Only a quiet gap moves the client's RV to the log's start; otherwise the catch-up answers the
  // watch with its 410 ERROR event, as the apiserver's watch cache does (an event, not an HTTP 410).
  before.forEach(([cluster], i) => {
    if (answers[i] === 'quiet') resumed[cluster] = start[cluster]!;
  });
  return resumed;
}

/**
 * A member that is down, or silent (its apiserver not answering), does not fail a read: its
 * cached state is served, with a warning naming it; only clusters the caller's view shows.
 */
function staleWarnings(health: CacheHealth, resource: string, view: ReadView): string[] {
  return health
    .staleClusters(resource)
    .filter((s) => view.showsCluster(s.cluster))
    .map((s) => warningHeader(s.rewritten !== undefined
      ? `cluster ${s.cluster} is being listed again: ${s.rewritten.slice(0, 200)}; serving its state as flotilla last saw it until then`
      : s.silentForMs !== undefined
      ? `cluster ${s.cluster} has not answered for ${(s.silentForMs / 1000).toFixed(1)} s; serving its cached state as flotilla last saw it${s.error ? ` (${s.error.slice(0, 200)})` : ''}`
      : `cluster ${s.cluster} is not reachable; serving its cached state${s.since ? ` as of ${s.since}` : ''} (${(s.error ?? '').slice(0, 200)})`));
}

/**
 * The owners an owner search term names that the caller may get, each asked of its own member:
 * one it may not read is as if not found, so the answer never tells that it exists.
 */
async function readableOwners(authorizer: ReadAuthorizer, caller: ReviewedCaller, found: readonly FoundOwner[]): Promise<FoundOwner[]> {
  const verdicts = await Promise.all(found.map(async (f) => {
    const question: ReadQuestion = { verb: 'get', group: f.group, resource: f.resource, namespaced: f.namespaced, ...(f.namespace ? { namespace: f.namespace } : {}), name: f.name };
    const a = (await authorizer.access(caller, [f.cluster], question)).get(f.cluster);
    return a !== undefined && (a.everywhere || a.namespaces.has(f.namespace));
  }));
  return found.filter((_, i) => verdicts[i]);
}

/** The steps up to the caller's authorization: what decides a 403 before the request's own narrowing is read. */
const AUTHORIZATION_STEPS = VIEW_STEPS.slice(0, VIEW_STEPS.findIndex((s) => s.name === 'authorization') + 1);

function whatOf(q: ReadQuestion): string {
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

/** A view's access per addressed cluster, as the authorization step left it (what a revision keeps for members it cannot ask now). */
function accessOf(view: ReadView, clusters: readonly string[]): ReadonlyMap<string, AccessSet> {
  return new Map(clusters.map((c) => [c, view.access?.get(c) ?? NO_ACCESS]));
}

function treeForgotten(): never {
  throw expired('too old resource version: the namespace tree has changed too often since (hierarchy selector); list again');
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
