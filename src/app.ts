import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Authenticator, parseTokenFile } from './auth/authenticator.js';
import type { AddressInfo } from 'node:net';
import { CacheManager } from './cacher/cache-manager.js';
import { cachedNamespaces } from './cacher/cache-roles.js';
import { ReadAuthorizer } from './authz/authorizer.js';
import { MemberPolicies } from './authz/member-policies.js';
import { AccessReviews } from './members/access-reviews.js';
import { authenticationProblem } from './registry/authentication-required.js';
import { ConfigError } from './registry/config.js';
import type { FleetConfig } from './registry/fleet-config.js';
import type { MemberClient } from './members/member-client.js';
import { hubAuthentication, type HubAuthentication } from './auth/hub-authentication.js';
import { RequestHeaderAuthenticator, certificatesOf, type RequestHeaderConfig } from './auth/request-header.js';
import { fileConfigSource, type ConfigSource } from './registry/watch.js';
import { buildServer } from './router/server.js';
import { Store, ensureDataDir, isStoreCorruption, type StoreHealth } from './store/store.js';
import { Tenants } from './tenancy/tenant.js';
import { MemberPolicyApplier } from './tenancy/member-policy-apply.js';
import { selfSignedServingPair, servingNames } from './tls/serving-pair.js';
import { DEFERRED_LOG_LINES, READ_ACCESS_VERDICT_TTL_MS } from './registry/defaults.js';
import { DeferredLog, type StructuredLog } from './util/structured-log.js';
import { humanLogStream } from './util/human-log.js';

/** Wires the parts together: store, cachers, HTTP server, and config reloads. */
export interface FlotillaOptions {
  config: FleetConfig;
  /** When set, the file is watched and every valid change is applied without a restart. */
  configPath?: string;
  /** A source of changes other than a file (a Fleet object on a hub, src/hub); replaces `configPath`. */
  configSource?: ConfigSource;
  dataDir: string;
  port: number;
  host: string;
  /**
   * The serving pair. Without `key` and `cert`, a self-signed pair kept in `<dataDir>/tls/` (made
   * at first start): flotilla never serves plain HTTP. With `ca`, client certificates signed by it
   * authenticate callers (user = CN, groups = O).
   */
  https?: { key?: Buffer; cert?: Buffer; ca?: Buffer };
  logLevel?: string;
  log?: (line: string) => void;
  /**
   * The hub cluster of aggregated mode: it reviews bearer tokens (unless the fleet file names a
   * member to), and its `extension-apiserver-authentication` ConfigMap says whose client
   * certificates name users and which front proxy may name them in request headers.
   */
  hub?: MemberClient;
  /** The front proxy's settings given by flags; they win over the hub's ConfigMap. */
  requestHeader?: RequestHeaderConfig;
  /** Keep each tenant's member-side policy applied on every member (tenancy/member-policy-apply.ts). */
  applyTenantPolicy?: boolean;
  /**
   * LMDB reported the store damaged while serving: it is marked for a rebuild at the next start,
   * and this is called so the process can stop and be started again (main.ts exits).
   */
  onStoreDamaged?: (reason: string) => void;
}

export interface Flotilla {
  url: string;
  /** The self-signed certificate served when no pair was given, and why it was made now (undefined: kept). */
  selfSigned?: { certFile: string; made?: string };
  manager: CacheManager;
  stop(): Promise<void>;
}



export async function startFlotilla(opts: FlotillaOptions): Promise<Flotilla> {
  const log = opts.log ?? ((l: string) => console.log(l));
  // Reloads can come before the server (and its logger) exists: kept until then.
  const reloads = new DeferredLog(DEFERRED_LOG_LINES);
  // Before anything is opened or listened on: a flotilla nobody can authenticate to never serves.
  const source = opts.configSource ?? (opts.configPath ? fileConfigSource(opts.configPath) : undefined);
  const configFile = source?.name ?? 'fleet configuration';
  const hub = opts.hub;
  let hubAuth: HubAuthentication = {};
  try {
    hubAuth = hub ? await hubAuthentication(hub) : {};
  } catch (e) {
    throw new ConfigError(`hub: ${(e as Error).message}`);
  }
  const requestHeaderConfig = opts.requestHeader ?? hubAuth.requestHeader;
  // Client certificates name users when signed by our CA or the hub's; the front proxy's CA names none.
  const userCAs = [opts.https?.ca, hubAuth.clientCA].filter((b): b is Buffer => b !== undefined);
  const credentials = { clientCertificates: userCAs.length > 0, hub: hub !== undefined };
  const problem = authenticationProblem(opts.config, configFile, credentials);
  if (problem) throw new ConfigError(problem);
  if ((opts.https?.key === undefined) !== (opts.https?.cert === undefined)) throw new ConfigError('https: key and cert go together');
  ensureDataDir(opts.dataDir);
  const selfSigned = opts.https?.cert ? undefined : await selfSignedServingPair(join(opts.dataDir, 'tls'), servingNames(opts.host));
  const store = Store.open(opts.dataDir, { eventLogSize: opts.config.options.eventLogSize });
  const manager = new CacheManager(store);
  const policies = new MemberPolicies(store, (cluster, resource) => manager.rightsShortfall(cluster, resource));
  await manager.apply(opts.config);
  // Tenants follow the configuration file: a reload changes who sees which fleet at once.
  let tenants = new Tenants(opts.config.tenants);
  let operators = opts.config.options.operators;
  let freshReads = opts.config.options.freshReads;
  let tenantPolicy: MemberPolicyApplier | undefined;
  const watcher = source
    ? source.watch({
        onConfig: async (config) => {
          const { started, stopped } = await manager.apply(config);
          tenants = new Tenants(config.tenants);
          operators = config.options.operators;
          freshReads = config.options.freshReads;
          tenantPolicy?.setTenants(config.tenants);
          // A member's authorization mode may have changed: every verdict is made again.
          policies.invalidate();
          log(`flotilla: configuration reloaded: ${started.length} cacher(s) started, ${stopped.length} stopped` +
            (started.length + stopped.length ? ` (${[...started.map((s) => `+${s}`), ...stopped.map((s) => `-${s}`)].join(' ')})` : ''));
          reloads.info({ event: 'config-reloaded', source: configFile, started, stopped }, `configuration reloaded: ${started.length} cacher(s) started, ${stopped.length} stopped`);
        },
        onError: (message) => {
          log(`flotilla: configuration not reloaded, keeping the previous one:\n${message}`);
          reloads.warn({ event: 'config-refused', source: configFile, problems: message }, 'configuration not reloaded, keeping the previous one');
        },
        // Authentication is read at start only, but a file that would start no flotilla is no file to run on.
        refuse: (config) => authenticationProblem(config, configFile, credentials),
      })
    : undefined;
  // Read once at start: a reload does not change who may call (restart to rotate tokens).
  const auth = opts.config.authentication;
  const requestHeader = requestHeaderConfig ? new RequestHeaderAuthenticator(requestHeaderConfig) : undefined;
  const authenticator = new Authenticator(
    {
      ...(auth.tokenReviewCluster ? { tokenReviewCluster: auth.tokenReviewCluster } : {}),
      ...(auth.tokenFile ? { tokens: parseTokenFile(readFileSync(auth.tokenFile, 'utf8'), auth.tokenFile) } : {}),
      cacheTTLSeconds: auth.cacheTTLSeconds,
      staleVerdictSeconds: auth.tokenReviewStaleSeconds,
      clientCertificates: credentials.clientCertificates,
      anonymous: auth.anonymous,
      // The hub reviews tokens as it does for any extension apiserver, unless a member is named to.
      ...(hub && !auth.tokenReviewCluster ? { hubReviewer: hub } : {}),
      ...(requestHeader ? { requestHeader, clientCA: userCAs.flatMap((ca) => certificatesOf(ca)) } : {}),
    },
    (name) => manager.member(name),
    (name) => manager.isSilent(name),
  );
  const pair = selfSigned ?? { key: opts.https!.key!, cert: opts.https!.cert! };
  // Every CA a client certificate may chain to is trusted by the TLS layer; the authenticator tells them apart.
  const trusted = [...userCAs, ...(requestHeaderConfig ? [requestHeaderConfig.clientCA] : [])];
  const https = trusted.length ? { ...pair, ca: Buffer.concat(trusted.flatMap((ca) => [ca, Buffer.from('\n')])), requestCert: true, rejectUnauthorized: false } : pair;
  const server = buildServer({
    fleet: manager,
    catalog: manager,
    health: manager,
    store,
    authenticator,
    // Verdicts of members asked directly are kept a few seconds, as the apiserver's webhook authorizer keeps them.
    authorizer: new ReadAuthorizer(
      policies,
      new AccessReviews((name) => manager.member(name), READ_ACCESS_VERDICT_TTL_MS),
      (cluster) => manager.authorizationMode(cluster),
      (cluster) => cachedNamespaces(manager, store, cluster),
    ),
    policies,
    https,
    // JSON lines, one per event; a person at a terminal reads them formatted (never a file or a test).
    logger: { level: opts.logLevel ?? 'warn', ...(process.stdout.isTTY ? { stream: humanLogStream(process.stdout) } : {}) },
    dataDir: opts.dataDir,
    liveReads: opts.config.options.liveReads,
    dropManagedFields: opts.config.options.dropManagedFields,
    tenants: () => tenants,
    operators: () => operators,
    freshReads: () => freshReads,
    watch: { bookmarkIntervalMs: opts.config.options.watchBookmarkIntervalSeconds * 1000, minTimeoutSeconds: opts.config.options.minWatchTimeoutSeconds, catchUpStallMs: opts.config.options.watchCatchUpStallSeconds * 1000, maxBufferedBytes: opts.config.options.maxWatchBufferMiB * 1024 * 1024 },
  });
  const structuredLog: StructuredLog = { info: (f, m) => server.log.info(f, m), warn: (f, m) => server.log.warn(f, m) };
  manager.useLog(structuredLog);
  reloads.use(structuredLog);
  if (opts.applyTenantPolicy) {
    tenantPolicy = new MemberPolicyApplier(manager, structuredLog);
    tenantPolicy.setTenants(opts.config.tenants);
  }
  watchStoreHealth(store, server.log, opts.onStoreDamaged);
  // A read that met LMDB's corruption error: mark the store for a rebuild rather than serve from it.
  server.addHook('onError', async (_req, _reply, err) => {
    if (isStoreCorruption(err)) store.markDamaged(err.message);
  });
  await server.listen({ port: opts.port, host: opts.host });
  const addr = server.server.address() as AddressInfo;
  const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  return {
    url: `https://${host}:${addr.port}`,
    ...(selfSigned ? { selfSigned: { certFile: selfSigned.certFile, ...(selfSigned.made ? { made: selfSigned.made } : {}) } } : {}),
    manager,
    async stop() {
      watcher?.close();
      tenantPolicy?.close();
      await server.close();
      await manager.stop();
      policies.close();
      await store.close();
    },
  };
}

/**
 * Says in the log what the store went through: set aside at open, the volume full and free again,
 * and LMDB's corruption errors met by a request (the store is then marked for a rebuild at the next start).
 */
function watchStoreHealth(store: Store, log: { error(o: object, m: string): void; warn(o: object, m: string): void }, onDamaged?: (reason: string) => void): void {
  const { rebuilt } = store.health();
  if (rebuilt) {
    log.error({ store: rebuilt }, `store: found damaged at start (${rebuilt.fault}); set aside in ${rebuilt.keptAt}, rebuilding from the members: not ready until every cacher has listed again`);
  }
  let was: StoreHealth = { writable: true };
  const report = (now: StoreHealth) => {
    if (now.damaged && !was.damaged) {
      log.error({ store: now.damaged }, `store: damaged while serving (${now.damaged.reason}): marked for a rebuild at the next start`);
      onDamaged?.(now.damaged.reason);
    } else if (now.full && !was.full) {
      log.error({ store: now.full }, `store: ${now.full.message}: not ready, cachers retry from the resourceVersions they hold`);
    } else if (!now.full && was.full) {
      log.warn({ store: { writable: true } }, 'store: the cache volume has room again: writing, cachers catching up');
    }
    was = now;
  };
  store.onHealth(report);
  // Writes made before the server (and this log) existed: a first discovery answer on a full volume.
  report(store.health());
}
