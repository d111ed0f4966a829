import type { FastifyPluginAsync, onRequestAsyncHookHandler } from 'fastify';
import type { CacheHealth, FleetMembers } from '../../cacher/cache-roles.js';
import type { ReadAuthorizer } from '../../authz/authorizer.js';
import { forbidden, serviceUnavailable } from '../../api/status.js';
import { isOperator } from '../../authz/operators.js';
import type { Callers } from '../callers.js';
import { sendJson } from '../replies.js';
import { liveStatus } from '../../forward/live/config.js';
import type { LiveReadsConfig, OperatorsConfig } from '../../registry/fleet-config.js';
import type { LiveReadLimits } from '../../forward/live-read-limits.js';
import type { NamespaceForest } from '../../hierarchy/namespace-forest.js';
import type { Exposition } from '../../metrics/metrics.js';
import type { HealthSlis } from '../../metrics/health-slis.js';
import type { StoreHealth } from '../../store/store.js';

/**
 * Each member's heartbeat and each cacher's state at /status, and every series at /metrics (Prometheus). Both name and count
 * what every member holds: a caller gets them only if every member lets it `get` that path, as a
 * member guards its own /metrics (system:monitoring, cluster-admin).
 */
export interface StatusOptions {
  health: CacheHealth;
  metrics: Exposition;
  /** The health checks' SLIs, at /metrics/slis. */
  slis?: HealthSlis;
  fleet: FleetMembers;
  callers: Callers;
  authorizer: ReadAuthorizer;
  /** Which uncached resources are read live (shown as `live`). */
  live?: LiveReadsConfig;
  /** What live reads hold now, of what they may (shown as `live.buffer` and `live.watches`). */
  liveLimits?: LiveReadLimits;
  /** The members' namespace trees: their cycles and missing parents are shown as `hierarchy`. */
  hierarchy?: NamespaceForest;
  /** The store's health (shown as `store`): writes refused on a full volume, a damaged store set aside. */
  store?: { health(): StoreHealth };
  /** The fleet file's `options.operators`, as of now: they read these paths whatever the members say. */
  operators?: () => OperatorsConfig;
}

/** Who may read the fleet's own state: the parts of flotilla the check asks. */
export interface FleetStateReaders {
  fleet: FleetMembers;
  callers: Callers;
  authorizer: ReadAuthorizer;
  /** The fleet file's `options.operators`, as of now: they pass whatever the members say. */
  operators?: () => OperatorsConfig;
}

/**
 * The onRequest check of every path that shows the fleet's own state (`asPath` when given: the
 * status page is read as /status): an operator (`options.operators`) passes; a tenant's caller
 * does not; anyone else needs every member to let it `get` the path, and is told it is flotilla's
 * rights, not theirs (503), when flotilla cannot tell for some member.
 */
export function fleetStateGuard({ fleet, callers, authorizer, operators }: FleetStateReaders, asPath?: string): onRequestAsyncHookHandler {
  return async (req) => {
    const path = asPath ?? req.url.split('?')[0]!;
    const caller = await callers.reader(req.raw);
    if (operators && isOperator(operators(), caller)) return;
    // The fleet's own state names every tenant's: no tenant's to read, whatever its members allow.
    if (callers.tenantSeen(req.raw)) throw forbidden(`forbidden: User "${caller.user}" cannot get path "${path}": it is the fleet's, not a tenant's`);
    const clusters = fleet.clusterNames();
    if (await authorizer.mayGet(caller, clusters, path)) return;
    const undecided = authorizer.undecidable(clusters);
    if (undecided.length > 0) {
      throw serviceUnavailable(`flotilla cannot tell whether every member lets User "${caller.user}" get path "${path}": ${undecided.map((u) => u.reason).join('; ')} (identities in the fleet file's options.operators read it regardless)`);
    }
    throw forbidden(`forbidden: User "${caller.user}" cannot get path "${path}"`);
  };
}

export const statusPlugin: FastifyPluginAsync<StatusOptions> = async (app, { health, metrics, slis, fleet, callers, authorizer, live, liveLimits, hierarchy, store, operators }) => {
  app.addHook('onRequest', fleetStateGuard({ fleet, callers, authorizer, ...(operators ? { operators } : {}) }));
  app.get('/status', async (_req, reply) =>
    sendJson(reply, {
      synced: health.isSynced(),
      // Labels are read from the configuration at each request: a reload shows at once.
      members: health.heartbeats().map((m) => ({ ...m, labels: fleet.clusterLabels(m.cluster) })),
      cachers: health.status(),
      live: live ? liveStatus(live, liveLimits) : { enabled: false, served: 'none', exclude: [] },
      hierarchy: { problems: hierarchy ? hierarchy.problems(fleet.clusterNames()) : [] },
      ...(store ? { store: store.health() } : {}),
    }),
  );
  app.get('/metrics', async (_req, reply) => reply.type(metrics.contentType).send(await metrics.metrics()));
  if (slis) app.get('/metrics/slis', async (_req, reply) => reply.type(slis.contentType).send(await slis.metrics()));
};
