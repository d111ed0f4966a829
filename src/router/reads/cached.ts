import type { FastifyReply } from 'fastify';
import { Readable } from 'node:stream';
import { selectsByHierarchy } from '../../view/step-hierarchy.js';
import type { CacheHealth, CachedResource, StaleCluster } from '../../cacher/cache-roles.js';
import { getResponse, listResponse } from '../../mux/reads.js';
import type { WatchHub } from '../../mux/watch-hub.js';
import type { SnapshotRegistry } from '../../mux/snapshots.js';
import { compareMemberRV, decodeGlobalRV } from '../../api/global-rv.js';
import { decodeContinue } from '../../api/continue-token.js';
import { groupVersion, gvrKey } from '../../api/resource-info.js';
import { negotiate, prefersProtobuf } from '../../api/negotiate.js';
import { protobufTypeOf } from '../../api/protobuf-transcode.js';
import { expired, timeout } from '../../api/status.js';
import { parseReadRequest } from '../../api/list-options.js';
import { firstHitWarning, warningHeader } from '../../api/warning.js';
import type { Store } from '../../store/store.js';
import type { ReadView } from '../../view/read-view.js';
import { buildReadView } from '../../view/steps.js';
import type { DeletedObject, WriteTracker } from '../../forward/read-your-writes.js';
import { MAX_TIMER_MS, sendBytes } from '../replies.js';
import { stateOf } from '../request-state.js';
import type { ReadQuery as Query, ReadRequest } from '../../api/list-options.js';
import { cachedScope, type ReadContext, type ReadHandler } from './read-handler.js';
import { callerView, whatOf, type CallerViewDeps } from './caller-view.js';
import {
  DEFAULT_MAX_WATCH_BUFFER_MIB,
  DEFAULT_MIN_WATCH_TIMEOUT_SECONDS,
  DEFAULT_WATCH_BOOKMARK_INTERVAL_SECONDS,
  DEFAULT_WATCH_CATCH_UP_STALL_SECONDS,
  DEFAULT_FRESH_READS,
  FRESH_READ_CONFIRM_MS,
  READ_YOUR_WRITES_WAIT_MS,
  RESOURCE_VERSION_WAIT_MS,
} from '../../registry/defaults.js';

export interface CachedReadDeps extends CallerViewDeps {
  health: CacheHealth;
  store: Store;
  hub: WatchHub;
  snapshots: SnapshotRegistry;
  writes: WriteTracker;
  /** minTimeoutSeconds: as the apiserver's --min-request-timeout, for watches without timeoutSeconds. */
  watch?: { bookmarkIntervalMs?: number; maxBufferedBytes?: number; minTimeoutSeconds?: number; catchUpStallMs?: number };
  /** The configuration's `options.freshReads`, as of now (hot-reloaded): reads with resourceVersion unset confirm with their members first. */
  freshReads?: () => boolean;
}

/**
 * Get, list and watch of a cached resource from the store, through the caller's read view
 * (src/view): the request's options read, the caller authorized, then the answer served.
 */
export function cachedHandler(deps: CachedReadDeps): ReadHandler {
  return { name: 'cached', serves: cachedScope, serve: (read) => serveCached(deps, read) };
}

async function serveCached(deps: CachedReadDeps, { req, reply, target, resource: cached }: ReadContext): Promise<FastifyReply> {
  const { health, store, hub, snapshots, writes, callers } = deps;
  const resource = cached!;
  const options = parseReadRequest(req.query as Query, target.name !== undefined);
  const watching = options.verb === 'watch';
  // Decoded up front: a token that does not decode is a 400, for lists and watches alike.
  const since = options.resourceVersion && options.resourceVersion !== '0' ? decodeGlobalRV(options.resourceVersion) : undefined;
  const { request, question, access, view, warnings, tenant, revise } = await callerView(deps, req.raw, resource, target, options);
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
    const unconfirmed = await confirmFresh(deps, req.raw, resource, view, options);
    warnings.push(...staleWarnings(health, gvrKey(resource.info), view, unconfirmed));
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
      protobuf: form === 'object' && prefersProtobuf(req.headers.accept) && protobufTypeOf(groupVersion(resource.info), resource.info.kind) !== undefined,
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
      // When a member's RBAC or labels change, what the caller may see is decided again.
      revise,
    });
    return reply;
  }
  const key = gvrKey(resource.info);
  const unconfirmed = await confirmFresh(deps, req.raw, resource, view, options);
  warnings.push(...staleWarnings(health, key, view, unconfirmed));
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
 * A fresh read (docs/fresh-reads.md): a list or get with resourceVersion unset or "", or a watch
 * that sends its initial events from there, first has each member its view shows confirm that the
 * cache holds the member's latest writes (cacher/fresh-reads.ts), unless the configuration serves
 * such reads as the cache stands. Only the view's members are asked, with flotilla's own
 * credentials; those that did not confirm are returned for the read's Warning.
 */
async function confirmFresh(deps: CachedReadDeps, raw: ReadContext['req']['raw'], resource: CachedResource, view: ReadView, options: ReadRequest): Promise<StaleCluster[]> {
  const fresh = options.resourceVersion === '' && !options.continue && (options.verb !== 'watch' || options.sendInitialEvents);
  if (!fresh || !(deps.freshReads?.() ?? DEFAULT_FRESH_READS) || view.clusters.length === 0) return [];
  const started = performance.now();
  const unconfirmed = await deps.health.confirmFresh(gvrKey(resource.info), view.clusters, FRESH_READ_CONFIRM_MS);
  stateOf(raw).freshReadMs = Math.round((performance.now() - started) * 10) / 10;
  return unconfirmed.map((u) => ({ cluster: u.cluster, unconfirmed: u.reason }));
}

/**
 * A member that is down, or silent (its apiserver not answering), or that did not confirm a fresh
 * read in time, does not fail a read: its cached state is served, with a warning naming it; only
 * clusters the caller's view shows.
 */
function staleWarnings(health: CacheHealth, resource: string, view: ReadView, unconfirmed: readonly StaleCluster[] = []): string[] {
  const stale = health.staleClusters(resource);
  return [...stale, ...unconfirmed.filter((u) => !stale.some((s) => s.cluster === u.cluster))]
    .filter((s) => view.showsCluster(s.cluster))
    .map((s) => warningHeader(s.unconfirmed !== undefined
      ? `cluster ${s.cluster} ${s.unconfirmed.slice(0, 200)}; serving its cached state as flotilla last saw it, which may miss its latest writes`
      : s.rewritten !== undefined
      ? `cluster ${s.cluster} is being listed again: ${s.rewritten.slice(0, 200)}; serving its state as flotilla last saw it until then`
      : s.silentForMs !== undefined
      ? `cluster ${s.cluster} has not answered for ${(s.silentForMs / 1000).toFixed(1)} s; serving its cached state as flotilla last saw it${s.error ? ` (${s.error.slice(0, 200)})` : ''}`
      : `cluster ${s.cluster} is not reachable; serving its cached state${s.since ? ` as of ${s.since}` : ''} (${(s.error ?? '').slice(0, 200)})`));
}

function treeForgotten(): never {
  throw expired('too old resource version: the namespace tree has changed too often since (hierarchy selector); list again');
}
