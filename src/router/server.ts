import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import { gvrKey } from '../api/resource-info.js';
import { LOG_REPEAT_WINDOW_MS } from '../registry/defaults.js';
import { RepeatGate } from '../util/structured-log.js';
import type { CacheHealth, FleetMembers, ResourceCatalog } from '../cacher/cache-roles.js';
import { WatchHub } from '../mux/watch-hub.js';
import { SnapshotRegistry } from '../mux/snapshots.js';
import type { Store } from '../store/store.js';
import { createMetrics, liveReadSeries } from '../metrics/metrics.js';
import { LiveReadLimits } from '../forward/live-read-limits.js';
import type { Authenticator } from '../auth/authenticator.js';
import type { ReadAuthorizer } from '../authz/authorizer.js';
import type { MemberPolicies } from '../authz/member-policies.js';
import { RecentOwners } from '../forward/recent-owners.js';
import { WriteTracker } from '../forward/read-your-writes.js';
import type { LiveReadsConfig, OperatorsConfig } from '../registry/fleet-config.js';
import type { ForwardDeps } from '../forward/writes.js';
import type { TenantNames } from '../tenancy/answers.js';
import { answerClientError, frameworkErrorStatus } from './client-errors.js';
import { Callers } from './callers.js';
import { sendStatus } from './replies.js';
import { errorsPlugin } from './plugins/errors.js';
import { requestStatePlugin } from './plugins/request-state.js';
import { requestTimeoutPlugin } from './plugins/request-timeout.js';
import { protobufAnswersPlugin } from './plugins/protobuf-answers.js';
import { authenticationPlugin } from './plugins/authentication.js';
import { healthPlugin } from './plugins/health.js';
import { createHealthSlis } from '../metrics/health-slis.js';
import { statusPlugin } from './plugins/status.js';
import { uiPlugin } from './plugins/ui.js';
import { discoveryPlugin } from './plugins/discovery.js';
import { readsPlugin, type ReadsOptions } from './plugins/reads.js';
import { NamespaceForest, NAMESPACES } from '../hierarchy/namespace-forest.js';
import { selectsByHierarchy } from '../view/step-hierarchy.js';
import { subresourcesPlugin } from './plugins/subresources.js';
import { writesPlugin } from './plugins/writes.js';
import { selfReviewsPlugin } from './plugins/self-reviews.js';
import { requestLogPlugin } from './plugins/request-log.js';
import type { IncomingMessage } from 'node:http';
import { FleetDiscovery } from '../discovery/fleet-discovery.js';
import { discoveryIndex, type DiscoveryIndex } from '../discovery/tenant-view.js';
import { servedLive } from '../forward/live/config.js';
import { decorateLiveReads } from '../forward/live/reply-state.js';
import { Tenants } from '../tenancy/tenant.js';
import { edgeUrl } from '../api/fleet-path.js';

/**
 * The HTTP surface: Kubernetes URLs in, cached reads out, every error a `Status`. It is a set of
 * fastify plugins, one job each, registered below in the order requests meet them; each is given
 * only the parts of flotilla it uses.
 */
export interface ServerOptions {
  /** The members, the cached resources and the cachers' health (the cache manager plays all three). */
  fleet: FleetMembers;
  catalog: ResourceCatalog;
  health: CacheHealth;
  store: Store;
  watch?: ReadsOptions['watch'];
  /** Always TLS: there is no plain-HTTP flotilla to fall into by leaving this out. */
  https: { key: Buffer; cert: Buffer; ca?: Buffer; requestCert?: boolean; rejectUnauthorized?: boolean };
  /** pino's level, and where its lines go (stdout as JSON when absent). */
  logger?: { level: string; stream?: { write(line: string): void } };
  /** The data directory, whose store's size is a series. */
  dataDir?: string;
  /** Who callers are; without one, every request but the public paths (/healthz, …) is a 401. */
  authenticator?: Authenticator;
  /** What each caller may read, member by member; the policies' changes revise running watches. */
  authorizer: ReadAuthorizer;
  policies: MemberPolicies;
  /** Uncached resources read live from the members; absent: they are not served. */
  liveReads?: LiveReadsConfig;
  /** Whether the cache drops managedFields: write answers then drop them too. */
  dropManagedFields?: boolean;
  /** The configuration's tenants, as of now (hot-reloaded); absent: none. */
  tenants?: () => Tenants;
  /** The configuration's `options.operators`, as of now (hot-reloaded): they always read /status and /metrics. */
  operators?: () => OperatorsConfig;
  /** The configuration's `options.freshReads`, as of now (hot-reloaded). */
  freshReads?: () => boolean;
}

export function buildServer(opts: ServerOptions): FastifyInstance {
  const app = Fastify({
    logger: opts.logger ?? { level: 'warn' },
    // Fastify's two lines a request give way to the request log's one (plugins/request-log.ts).
    logController: new LogController({ disableRequestLogging: true }),
    // Without a Host header Node's server would answer a bare 400 itself; flotilla answers a Status.
    https: { ...opts.https, requireHostHeader: false },
    // Kubernetes names and selectors can be long; the default 100-char parameter cap is too tight.
    // Paths are read like the apiserver reads them (request-info.ts): empty segments do not count.
    routerOptions: { maxParamLength: 2048, ignoreTrailingSlash: true, ignoreDuplicateSlashes: true },
    // Every failure is a Status, also those found before a route is: by the HTTP parser, the router.
    clientErrorHandler: answerClientError,
    // One canonical URL before routing, which everything after reads; through a hub (aggregated
    // mode) the fleet API lives under FLEET_PATH, taken off here too.
    rewriteUrl: (req) => edgeUrl(req.url ?? '/'),
    frameworkErrors: (err, _req, reply) => void sendStatus(reply, frameworkErrorStatus(err)),
  }) as unknown as FastifyInstance;
  const { fleet, catalog, health, store } = opts;
  const hub = new WatchHub(store);
  const { registry: metrics, exposition, http, stop: stopMetrics } = createMetrics(() => health.status(), () => hub.stats(), { heartbeats: () => health.heartbeats(), freshReads: () => health.freshReadStats(), ...(opts.dataDir !== undefined ? { dataDir: opts.dataDir } : {}) });
  logEvictions(hub, app.log);
  const slis = createHealthSlis();
  const snapshots = new SnapshotRegistry(store);
  const stopRevising = opts.policies.onChange(() => hub.reviseViews());
  // Members relabelled by a reload: watches choosing members by label get what entered and left their selection.
  const stopRelabelling = fleet.onLabelsChange?.(() => hub.reviseViews((view) => view.selectsByClusterLabels));
  const hierarchy = new NamespaceForest(store);
  // A namespace moved: watches selecting by the tree get what entered and left their selection.
  // Namespaces whose tree labels changed are MODIFIED for those who watch namespaces.
  const stopFollowing = hierarchy.onChange((relabelled) => {
    hub.reviseViews(selectsByHierarchy);
    hub.announce(NAMESPACES, relabelled);
  });
  // Open watches would hold a graceful close forever: end them first; clients re-watch elsewhere.
  app.addHook('preClose', async () => hub.closeAll());
  app.addHook('onClose', async () => {
    stopRevising();
    stopRelabelling?.();
    stopFollowing();
    hierarchy.close();
    snapshots.close();
    stopMetrics();
  });
  const live = opts.liveReads;
  const liveLimits = live ? new LiveReadLimits(live.maxBufferMiB * 1024 * 1024, live.maxWatches) : undefined;
  if (liveLimits) liveReadSeries(metrics, () => liveLimits.stats());
  const discovery = new FleetDiscovery(fleet, catalog, (group, resource) => live !== undefined && servedLive(live, group, resource));
  const noTenants = new Tenants([]);
  const tenants = opts.tenants ?? (() => noTenants);
  // The fleet's names as discovery has them, indexed once a second at most (tenants' requests ask per request).
  let indexed: { at: number; index: Promise<DiscoveryIndex> } | undefined;
  const fleetIndex = (): Promise<DiscoveryIndex> => {
    if (!indexed || Date.now() - indexed.at > 1000) indexed = { at: Date.now(), index: discovery.documents().then(discoveryIndex) };
    return indexed.index;
  };
  const callers = new Callers(fleet, opts.authenticator, { tenants, names: fleetIndex });
  // How a tenant's names are rewritten, for writes, live and cached reads alike: against the fleet's discovery.
  const tenantNames = async (req: IncomingMessage): Promise<TenantNames | undefined> => {
    const tenant = callers.tenantSeen(req);
    if (!tenant) return undefined;
    const index = await fleetIndex();
    return { naming: { tenant, kinds: index.kind, memberGroups: index.hasGroup }, resource: (g, r) => index.resource(g, r) };
  };
  const tenantOf = (req: IncomingMessage) => callers.tenantSeen(req);
  const writes = new WriteTracker();
  const forward: ForwardDeps = {
    fleet,
    catalog,
    store,
    writes,
    callerHeaders: (req) => callers.headersFor(req),
    callerKey: (req) => callers.key(req),
    getAccess: async (req, question, clusters) => opts.authorizer.access(await callers.reader(req), clusters, question),
    recent: { owners: new RecentOwners(), callerKey: (req) => callers.key(req) },
    answerForm: { dropManagedFields: opts.dropManagedFields === true },
    tenant: tenantNames,
  };

  void app.register(requestLogPlugin, { http });
  void app.register(requestStatePlugin);
  decorateLiveReads(app);
  void app.register(errorsPlugin, { fleet });
  void app.register(requestTimeoutPlugin);
  void app.register(authenticationPlugin, { callers });
  void app.register(protobufAnswersPlugin);
  void app.register(healthPlugin, { health, slis, store });
  const operators = opts.operators ? { operators: opts.operators } : {};
  void app.register(statusPlugin, { health, metrics: exposition, slis, fleet, callers, authorizer: opts.authorizer, live: opts.liveReads, liveLimits, hierarchy, store, ...operators });
  void app.register(uiPlugin, { fleet, callers, authorizer: opts.authorizer, ...operators });
  void app.register(discoveryPlugin, { fleet, discovery, tenantOf, frontProxied: (req) => callers.frontProxied(req) });
  void app.register(readsPlugin, { fleet, catalog, health, store, hub, snapshots, writes, callers, authorizer: opts.authorizer, forward, hierarchy, live: opts.liveReads, liveLimits, watch: opts.watch, ...(opts.freshReads ? { freshReads: opts.freshReads } : {}) });
  void app.register(subresourcesPlugin, { fleet, catalog, store, callerHeaders: forward.callerHeaders, enterTenant: (req) => callers.tenantOf(req), getAccess: forward.getAccess, recent: forward.recent, metrics });
  void app.register(selfReviewsPlugin, { fleet, callers, authorizer: opts.authorizer });
  void app.register(writesPlugin, { fleet, forward });
  return app;
}

/**
 * A slow watcher evicted, at warn: the resource, what it had left unread and the bound. Once a
 * window with how many more: a burst of evictions is one event to an operator.
 */
function logEvictions(hub: WatchHub, log: FastifyBaseLogger): void {
  const gate = new RepeatGate(LOG_REPEAT_WINDOW_MS);
  hub.evicted = (w) => {
    const resource = gvrKey(w.opts.resource.info);
    const { pass, held } = gate.pass(resource);
    if (!pass) return;
    log.warn(
      { event: 'watcher-evicted', resource, unreadBytes: w.res.writableLength + w.queuedBytes, maxBufferedBytes: w.opts.maxBufferedBytes, ...(held ? { repeats: held } : {}) },
      'slow watcher evicted: its client read less than the watch buffer allows (options.maxWatchBufferMiB); it watches again from its last resourceVersion',
    );
  };
}
