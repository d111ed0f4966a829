import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { Readable } from 'node:stream';
import type { NamespaceForest } from '../../hierarchy/namespace-forest.js';
import { hierarchySelection, isTreeRequirement, selectsByHierarchy } from '../../view/step-hierarchy.js';
import { NAMESPACES } from '../../hierarchy/namespace-forest.js';
import { formatLabelSelector, parseLabelSelector } from '../../api/label-selector.js';
import type { ResourceTarget } from '../../forward/owner.js';
import { cachedNamespaces, outsideCache, type CacheHealth, type CachedResource, type FleetMembers, type ResourceCatalog } from '../../cacher/cache-manager.js';
import { getResponse, listResponse, type ListOptions } from '../../mux/reads.js';
import type { WatchHub } from '../../mux/watch.js';
import type { SnapshotRegistry } from '../../mux/snapshots.js';
import { compareMemberRV, decodeContinue, decodeGlobalRV } from '../../api/global-rv.js';
import { gvrKey } from '../../api/resource-info.js';
import { negotiate, protobufOnly } from '../../api/negotiate.js';
import { badRequest, expired, forbidden, invalid, timeout } from '../../api/status.js';
import { int64Param, refuseVersionWithContinue, watchRequested } from '../../api/list-options.js';
import { reviewAttributes, type ReadAuthorizer, type ReadQuestion } from '../../authz/authorizer.js';
import { fieldSelectorName } from '../../api/field-selector.js';
import { firstHitWarning, warningHeader } from '../../api/warning.js';
import type { ViewRequest } from '../../view/view-step.js';
import { NO_ACCESS, type AccessSet } from '../../api/rbac.js';
import type { Store } from '../../store/store.js';
import type { ReadView } from '../../view/read-view.js';
import { VIEW_STEPS, buildReadView } from '../../view/steps.js';
import type { DeletedObject, WriteTracker } from '../../forward/read-your-writes.js';
import { forwardRead, type ForwardDeps } from '../../forward/writes.js';
import { liveRead } from '../../forward/live/live-read.js';
import { servedLive, type LiveReadDeps, type LiveReadsConfig } from '../../forward/live/config.js';
import type { LiveReadLimits } from '../../forward/live-read-limits.js';
import type { Callers } from '../callers.js';
import { CLUSTER_PREFIXES, targetOf } from '../target.js';
import { MAX_TIMER_MS, notServed, one, sendBytes, type Query } from '../replies.js';
import type { TenantNames } from '../../tenancy/answers.js';
import {
  DEFAULT_MAX_WATCH_BUFFER_MIB,
  DEFAULT_MIN_WATCH_TIMEOUT_SECONDS,
  DEFAULT_WATCH_BOOKMARK_INTERVAL_SECONDS,
  DEFAULT_WATCH_CATCH_UP_STALL_SECONDS,
  READ_YOUR_WRITES_WAIT_MS,
  RESOURCE_VERSION_WAIT_MS,
} from '../../registry/defaults.js';

/**
 * Cached reads: get, list and watch of every cached resource, through the caller's read view
 * (src/view). A subresource read (status, scale) goes to the owning member.
 */
export interface ReadsOptions {
  fleet: FleetMembers;
  catalog: ResourceCatalog;
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
  /** minTimeoutSeconds: as the apiserver's --min-request-timeout, for watches without timeoutSeconds. */
  /** Uncached resources, read live from the members (src/forward/live-reads.ts); absent: not served. */
  live?: LiveReadsConfig;
  /** What live reads may hold at once: bytes of the members' answers (each read takes a hold), watches. */
  liveLimits?: LiveReadLimits;
  watch?: { bookmarkIntervalMs?: number; maxBufferedBytes?: number; minTimeoutSeconds?: number; catchUpStallMs?: number };
}

export const readsPlugin: FastifyPluginAsync<ReadsOptions> = async (app, opts) => {
  const { fleet, catalog, health, store, hub, snapshots, writes, callers, authorizer } = opts;
  const minWatchTimeout = opts.watch?.minTimeoutSeconds ?? DEFAULT_MIN_WATCH_TIMEOUT_SECONDS;

  /**
   * A list or watch from a given RV, one rule for both: a cluster the view does not show (the
   * fleet changed since the RV was read) is 410 Expired, so the client relists; "not older than"
   * waits (RESOURCE_VERSION_WAIT_MS) for cachers behind it, then answers 504
   * ResourceVersionTooLarge with Retry-After, as the apiserver's watch cache does; "Exact" can
   * only be served for the current state (old snapshots are not kept): older is 410 Expired.
   * Returns the RV's clusters that concern this request (all of them, or the addressed member's).
   */
  async function awaitResourceVersion(cached: CachedResource, view: ReadView, since: Record<string, string>, exact: boolean, only?: string): Promise<Record<string, string>> {
    const resource = gvrKey(cached.info);
    const wanted = Object.fromEntries(Object.entries(since).filter(([c]) => only === undefined || c === only));
    // Not named: the view may hide a cluster the resource is cached from.
    if (Object.keys(wanted).some((c) => !view.showsCluster(c))) throw expired('too old resource version: it names clusters this resource is no longer served from');
    if (!(await store.waitFor(resource, wanted, RESOURCE_VERSION_WAIT_MS))) {
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
   * A member that is down, or silent (its apiserver not answering), does not fail a read: its
   * cached state is served, with a warning naming it; only clusters the caller's view shows.
   */
  function staleWarnings(resource: string, view: ReadView): string[] {
    return health
      .staleClusters(resource)
      .filter((s) => view.showsCluster(s.cluster))
      .map((s) => warningHeader(s.silentForMs !== undefined
        ? `cluster ${s.cluster} has not answered for ${(s.silentForMs / 1000).toFixed(1)} s; serving its cached state as flotilla last saw it${s.error ? ` (${s.error.slice(0, 200)})` : ''}`
        : `cluster ${s.cluster} is not reachable; serving its cached state${s.since ? ` as of ${s.since}` : ''} (${(s.error ?? '').slice(0, 200)})`));
  }

  /**
   * What a live read's answers are edited by: a tenant's names, and a selection by the namespace
   * tree (the members get the rest of the selector). The tree is the cached namespaces': without
   * them, none.
   */
  async function liveEdits(req: FastifyRequest, target: ResourceTarget): Promise<{ tenant?: TenantNames; treeSelection?: LiveReadDeps['treeSelection'] }> {
    const tenant = await opts.forward.tenant?.(req.raw);
    const selector = one(req.query as Query, 'labelSelector');
    const wanted = selector && opts.hierarchy && catalog.resource(NAMESPACES) ? parseLabelSelector(selector) : [];
    const tree = wanted.filter((r) => isTreeRequirement(r.key));
    let treeSelection: LiveReadDeps['treeSelection'];
    if (tree.length > 0) {
      const clusters = target.cluster !== undefined ? [target.cluster] : fleet.clusterNames();
      const view = buildReadView({
        resource: { info: { group: target.group, resource: target.resource, kind: '', namespaced: true }, clusters },
        watching: false,
        labelSelector: formatLabelSelector(tree),
        hierarchy: opts.hierarchy!,
      }, [hierarchySelection]);
      treeSelection = {
        rest: formatLabelSelector(wanted.filter((r) => !isTreeRequirement(r.key))),
        selects: (cluster, namespace) => view.admits({ cluster, namespace, name: '' }, () => undefined),
      };
    }
    return { ...(tenant ? { tenant } : {}), ...(treeSelection ? { treeSelection } : {}) };
  }

  /** The read asked of the members (forward/live-reads.ts); `clusters`: those a cached resource comes from. */
  async function readLive(req: FastifyRequest, reply: FastifyReply, live: LiveReadsConfig, target: ResourceTarget, clusters?: readonly string[]): Promise<FastifyReply> {
    const hold = opts.liveLimits?.hold();
    // 'close' comes once the answer is written, or the connection is gone: either way the bytes are free.
    if (hold) reply.raw.once('close', () => hold.release());
    const namespacesOf = (cluster: string) => cachedNamespaces(catalog, store, cluster);
    return liveRead(req, reply, { fleet, config: live, callerHeaders: opts.forward.callerHeaders, namespacesOf, ...(await liveEdits(req, target)), ...(hold ? { hold } : {}) }, target, clusters);
  }

  async function read(req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    const target = targetOf(req.raw, fleet);
    if (target.type !== 'resource') throw notServed();
    const resource = catalog.resource(gvrKey(target));
    const live = opts.live;
    if (!resource) {
      if (live) return readLive(req, reply, live, target);
      throw notServed();
    }
    // What the cache does not hold of a resource it caches in part (some namespaces, some
    // clusters) is the member's to answer, as for a resource not cached at all.
    if (live && servedLive(live, target.group, target.resource) && outsideCache(resource, target)) {
      return readLive(req, reply, live, target, resource.clusters);
    }
    if (target.namespace !== undefined && !resource.info.namespaced) throw notServed();
    if (target.subresource) {
      if (target.name === undefined) throw notServed();
      return forwardRead(req, reply, opts.forward, target);
    }
    const q = req.query as Query;
    const watching = watchRequested(one(q, 'watch'));
    // A client that takes protobuf alone: the cache holds JSON, so the members answer, in
    // protobuf, as for a resource not cached.
    if (live && servedLive(live, target.group, target.resource) && protobufOnly(req.headers.accept, { list: !watching && target.name === undefined })) {
      return readLive(req, reply, live, target, resource.clusters);
    }
    const includeObject = one(q, 'includeObject');
    if (includeObject !== undefined && !['Metadata', 'Object', 'None'].includes(includeObject)) {
      throw badRequest(`unrecognized includeObject value: "${includeObject}"`);
    }
    const rvParam = one(q, 'resourceVersion') ?? '';
    const rvMatch = one(q, 'resourceVersionMatch');
    const sendInitialEvents = one(q, 'sendInitialEvents');
    validateListOptions({ watching, rv: rvParam, rvMatch, sendInitialEvents, bookmarks: one(q, 'allowWatchBookmarks') === 'true' });
    // Decoded up front: a token that does not decode is a 400, for lists and watches alike.
    const since = rvParam && rvParam !== '0' ? decodeGlobalRV(rvParam) : undefined;
    const request: ViewRequest = {
      resource,
      cluster: target.cluster,
      namespace: target.namespace,
      name: target.name,
      watching,
      labelSelector: one(q, 'labelSelector'),
      fieldSelector: one(q, 'fieldSelector'),
      ...(opts.hierarchy ? { hierarchy: opts.hierarchy } : {}),
    };
    const tenant = callers.tenantSeen(req.raw);
    const tenantNames = tenant ? await opts.forward.tenant?.(req.raw) : undefined;
    if (tenantNames) request.tenant = tenantNames.naming;
    // Authorization first, as in the apiserver: a caller refused everywhere gets 403 whatever
    // else is wrong with its request (a selector that does not parse, say).
    const caller = await callers.reader(req.raw);
    const named = target.name ?? fieldSelectorName(request.fieldSelector);
    const question: ReadQuestion = {
      verb: watching ? 'watch' : target.name !== undefined ? 'get' : 'list',
      group: resource.info.group,
      resource: resource.info.resource,
      namespaced: resource.info.namespaced,
      ...(target.namespace !== undefined ? { namespace: target.namespace } : {}),
      ...(named !== undefined ? { name: named } : {}),
    };
    const addressed = target.cluster !== undefined ? resource.clusters.filter((c) => c === target.cluster) : resource.clusters;
    const access = await authorizer.access(caller, addressed, question);
    const allowed = buildReadView({ ...request, access }, AUTHORIZATION_STEPS);
    if (allowed.clusters.length === 0 && allowed.denied.length > 0) throw forbiddenRead(caller.user, question, allowed.denied, target.cluster !== undefined);
    const view = buildReadView({ ...request, access });
    const warnings: string[] = [];
    if (view.denied.length > 0 && question.verb !== 'get') {
      warnings.push(warningHeader(`User "${caller.user}" cannot ${question.verb} ${whatOf(question)} in ${view.denied.length === 1 ? 'cluster' : 'clusters'} ${view.denied.join(', ')}: nothing of ${view.denied.length === 1 ? 'it' : 'them'} is shown`));
    }
    if (opts.hierarchy && selectsByHierarchy(view)) warnings.push(...treeWarnings(opts.hierarchy, view));
    if (watching) {
      const timeoutSeconds = int64Param('timeoutSeconds', one(q, 'timeoutSeconds'));
      // Everything that can refuse the watch does so before the response is taken over.
      const form = negotiate(req.headers.accept, { list: false });
      // A watch selecting by the namespace tree, resumed from before namespaces moved, is
      // replayed as it was selected then, and then told what entered and left its selection.
      let opened = view;
      if (since && opts.hierarchy && selectsByHierarchy(view)) {
        const forest = opts.hierarchy;
        const then = buildReadView({ ...request, access, hierarchy: { tree: (c) => forest.treeAt(c, since[c] ?? '') ?? treeForgotten() } });
        if (then.key !== view.key) opened = then;
      }
      const from = since ? await awaitResourceVersion(resource, opened, since, false, target.cluster) : undefined;
      warnings.push(...staleWarnings(gvrKey(resource.info), view));
      reply.hijack();
      // Written with the watch's own headers.
      // Written past fastify's onSend (which rewords a tenant's other answers): reworded here.
      if (warnings.length) reply.raw.setHeader('warning', tenant ? warnings.map((w) => tenant.tenantText(w)) : warnings);
      hub.open(reply.raw, {
        resource,
        view: opened,
        reviseOnceLive: opened !== view,
        form,
        includeObject: includeObject as ListOptions['includeObject'],
        since: from,
        sendInitialEvents: sendInitialEvents === 'true',
        bookmarks: one(q, 'allowWatchBookmarks') === 'true',
        // Like the apiserver: the client's timeout, else a random one from the minimum to twice it,
        // so that the watches of a fleet of clients do not all end (and relist) at once.
        // 0 is the default, as in the apiserver; past what a timer holds (24.8 days) is that long.
        timeoutMs: Math.min(MAX_TIMER_MS, (timeoutSeconds ? timeoutSeconds : minWatchTimeout * (1 + Math.random())) * 1000),
        bookmarkIntervalMs: opts.watch?.bookmarkIntervalMs ?? DEFAULT_WATCH_BOOKMARK_INTERVAL_SECONDS * 1000,
        maxBufferedBytes: opts.watch?.maxBufferedBytes ?? DEFAULT_MAX_WATCH_BUFFER_MIB * 1024 * 1024,
        catchUpStallMs: opts.watch?.catchUpStallMs ?? DEFAULT_WATCH_CATCH_UP_STALL_SECONDS * 1000,
        // When a member's RBAC changes, what the caller may see is decided again.
        revise: (current) => buildReadView({ ...request, access: authorizer.accessNow(caller, addressed, question, accessOf(current, addressed)) }),
      });
      return reply;
    }
    const key = gvrKey(resource.info);
    warnings.push(...staleWarnings(key, view));
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
      const got = getResponse(store, { resource, view }, target.namespace ?? '', target.name, form, includeObject as ListOptions['includeObject']);
      if (got.alsoIn.length > 0) {
        // A first-hit get says which copy it is and how to read another; a write to the name stays 409.
        reply.header('warning', [...warnings, firstHitWarning(`${whatOf(question)} "${target.name}"`, [got.cluster, ...got.alsoIn])]);
      }
      return sendBytes(reply, got.body);
    }
    const form = negotiate(req.headers.accept, { list: true });
    if (since && !one(q, 'continue')) await awaitResourceVersion(resource, view, since, rvMatch === 'Exact', target.cluster);
    const limit = int64Param('limit', one(q, 'limit'));
    const continueText = one(q, 'continue');
    const continueToken = continueText ? decodeContinue(continueText) : undefined;
    if (continueToken) refuseVersionWithContinue(rvParam);
    const body = listResponse(store, {
      resource,
      view,
      form,
      includeObject: includeObject as ListOptions['includeObject'],
      limit: limit || undefined,
      continueToken,
      snapshots,
      caller: callers.key(req.raw),
    });
    if (Buffer.isBuffer(body)) return sendBytes(reply, body);
    // A large list streams; the client going away ends it and frees its snapshot.
    const stream = Readable.from(body.chunks, { objectMode: false, highWaterMark: 1 });
    stream.once('close', body.done);
    return reply.type('application/json').send(stream);
  }

  for (const p of CLUSTER_PREFIXES) {
    app.get(`${p}/api/:version/*`, read);
    app.get(`${p}/apis/:group/:version/*`, read);
  }
};

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

/** The apiserver's rules for combining resourceVersion, resourceVersionMatch and watch-list. */
function validateListOptions(o: { watching: boolean; rv: string; rvMatch?: string; sendInitialEvents?: string; bookmarks: boolean }): void {
  const causes: { field: string; message: string }[] = [];
  if (o.rvMatch !== undefined && o.rvMatch !== 'NotOlderThan' && o.rvMatch !== 'Exact') {
    causes.push({ field: 'resourceVersionMatch', message: `unsupported value "${o.rvMatch}": supported values: "Exact", "NotOlderThan"` });
  }
  if (o.sendInitialEvents !== undefined) {
    if (!o.watching) causes.push({ field: 'sendInitialEvents', message: 'sendInitialEvents is forbidden for list' });
    if (o.rvMatch !== 'NotOlderThan') causes.push({ field: 'resourceVersionMatch', message: "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan" });
    if (o.watching && !o.bookmarks) causes.push({ field: 'allowWatchBookmarks', message: 'sendInitialEvents requires setting allowWatchBookmarks to true' });
  } else if (o.rvMatch !== undefined) {
    if (o.watching) causes.push({ field: 'resourceVersionMatch', message: 'resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided' });
    else if (!o.rv) causes.push({ field: 'resourceVersionMatch', message: 'resourceVersionMatch is forbidden unless resourceVersion is provided' });
    else if (o.rvMatch === 'Exact' && o.rv === '0') causes.push({ field: 'resourceVersionMatch', message: 'resourceVersionMatch "exact" is forbidden for resourceVersion "0"' });
  }
  if (causes.length) throw invalid(`ListOptions.meta.k8s.io "" is invalid: ${causes.map((c) => `${c.field}: ${c.message}`).join(', ')}`, causes.map((c) => ({ reason: 'FieldValueInvalid', ...c })));
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
