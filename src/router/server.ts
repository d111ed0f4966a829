import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { CacheManager, CachedResource } from '../cacher/cache-manager.js';
import { getResponse, listResponse, type ListOptions } from '../mux/reads.js';
import { WatchHub } from '../mux/watch.js';
import { SnapshotRegistry } from '../mux/snapshots.js';
import { compareMemberRV, decodeContinue, decodeGlobalRV } from '../api/global-rv.js';
import { gvrKey } from '../api/resource-info.js';
import { parseLabelSelector } from '../api/label-selector.js';
import { parseFieldSelector, validateFieldSelector } from '../api/field-selector.js';
import { selectableFieldNames } from '../ingest/fields.js';
import type { ObjectFilter } from '../mux/filter.js';
import type { Store } from '../store/store.js';
import { createMetrics } from '../metrics/metrics.js';
import { registerSubresources } from '../forward/subresources.js';
import { hasBody } from '../forward/streaming.js';
import { AGGREGATED_DISCOVERY_V2, aggregatedDiscovery, group, groupList, legacyVersions, resourceList, wantsAggregated } from './discovery.js';
import { negotiate } from '../api/negotiate.js';
import { answerClientError, answerConnect, frameworkErrorStatus } from './client-errors.js';
import { parseRequestPath, type RequestTarget } from '../api/request-info.js';
import { StatusError, badRequest, expired, internalError, invalid, serviceUnavailable, timeout, unauthorized } from '../api/status.js';
import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import { Readable } from 'node:stream';
import type { Authenticator } from '../auth/authenticator.js';
import { impersonationHeaders, type Identity } from '../auth/identity.js';
import { ImpersonationChecker, asksImpersonation, requestedIdentity } from '../auth/impersonation.js';
import { WriteTracker } from '../forward/read-your-writes.js';
import { forwardRead, forwardWrite, type ForwardDeps } from '../forward/writes.js';
import { checkAddressedCluster } from '../forward/owner.js';

/** The HTTP surface: Kubernetes URLs in, cached reads out, every error a `Status`. */
export interface ServerOptions {
  manager: CacheManager;
  store: Store;
  /** minTimeoutSeconds: as the apiserver's --min-request-timeout, for watches without timeoutSeconds. */
  watch?: { bookmarkIntervalMs?: number; maxBufferedBytes?: number; minTimeoutSeconds?: number; catchUpStallMs?: number };
  https?: { key: Buffer; cert: Buffer; ca?: Buffer; requestCert?: boolean; rejectUnauthorized?: boolean };
  logLevel?: string;
  /** Who callers are; without one, callers are anonymous and nothing is forwarded to members. */
  authenticator?: Authenticator;
}

// What anyone may read, as the apiserver's system:public-info-viewer role allows.
const PUBLIC_PATHS = new Set(['/healthz', '/livez', '/readyz', '/version']);
// The apiserver's limit on a request body is 3 MiB of object plus some room for the envelope.
const BODY_LIMIT = 3 * 1024 * 1024 + 512 * 1024;

type Query = Record<string, string | string[] | undefined>;

// The schema documents, the only paths (with /version) members are asked with flotilla's own identity.
const SCHEMA_PATH = /^\/openapi\/(v2|v3|v3\/api\/v1|v3\/apis\/[a-z0-9.-]+\/v[0-9]+(?:(?:alpha|beta)[0-9]+)?)$/;

// Fields every kind can be selected by; each built-in kind adds its own (src/ingest/fields.ts).
const GENERIC_FIELDS = ['metadata.name', 'metadata.namespace'];

function one(q: Query, name: string): string | undefined {
  const v = q[name];
  return Array.isArray(v) ? v[0] : v;
}

function notServed(): StatusError {
  return new StatusError(404, 'NotFound', 'the server could not find the requested resource');
}

export function buildServer(opts: ServerOptions): FastifyInstance {
  const app = Fastify({
    logger: { level: opts.logLevel ?? 'warn' },
    // Without a Host header Node's server would answer a bare 400 itself; flotilla answers a Status.
    ...(opts.https ? { https: { ...opts.https, requireHostHeader: false } } : { http: { requireHostHeader: false } }),
    // Kubernetes names and selectors can be long; the default 100-char parameter cap is too tight.
    routerOptions: { maxParamLength: 2048 },
    // Every failure is a Status, also those found before a route is: by the HTTP parser, the router.
    clientErrorHandler: answerClientError,
    frameworkErrors: (err, _req, reply) => void sendStatus(reply, frameworkErrorStatus(err)),
  }) as unknown as FastifyInstance;
  const { manager, store } = opts;
  app.server.on('connect', (_req: IncomingMessage, socket: Socket) => answerConnect(socket));
  let versionCache: { at: number; body: Buffer } | undefined;
  const hub = new WatchHub(store);
  const { registry: metrics, stop: stopMetrics } = createMetrics(() => manager.status(), () => hub.stats());
  const snapshots = new SnapshotRegistry(store);
  // Open watches would hold a graceful close forever: end them first; clients re-watch elsewhere.
  app.addHook('preClose', async () => hub.closeAll());
  app.addHook('onClose', async () => {
    snapshots.close();
    stopMetrics();
  });

  app.setErrorHandler((err: Error & { statusCode?: number }, req, reply) => {
    if (err instanceof StatusError) return sendStatus(reply, err);
    if (err.statusCode && err.statusCode >= 400 && err.statusCode < 500) {
      const reason = err.statusCode === 415 ? 'UnsupportedMediaType' : err.statusCode === 413 ? 'RequestEntityTooLarge' : 'BadRequest';
      return sendStatus(reply, new StatusError(err.statusCode, reason, err.message));
    }
    req.log.error({ err, url: req.url }, 'request failed');
    return sendStatus(reply, internalError(`flotilla failed to serve ${req.method} ${req.url.split('?')[0]}: ${err.message}`));
  });
  app.setNotFoundHandler((_req, reply) => sendStatus(reply, notServed()));

  // Bodies are forwarded as they came (JSON, YAML, protobuf): never parsed by fastify.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: BODY_LIMIT }, (_req, body, done) => done(null, body));

  const identities = new WeakMap<IncomingMessage, Identity | null>();
  const impersonation = new ImpersonationChecker((name) => manager.member(name));
  /** Who the request acts as: the authenticated caller, or whom it may and does impersonate. */
  async function identify(req: IncomingMessage): Promise<Identity | undefined> {
    const known = identities.get(req);
    if (known !== undefined) return known ?? undefined;
    let id = opts.authenticator?.enabled ? await opts.authenticator.authenticate(req) : undefined;
    if (asksImpersonation(req.headers)) {
      if (!id) throw unauthorized('Unauthorized: impersonation (Impersonate-* headers) needs an authenticated caller');
      const wanted = requestedIdentity(req.rawHeaders);
      await impersonation.check(id, wanted, addressedClusters(req.url ?? '/'));
      id = wanted;
    }
    identities.set(req, id ?? null);
    return id;
  }
  /** The members a request addresses: its `/clusters/<name>/`, else the whole fleet. */
  function addressedClusters(url: string): string[] {
    const target = parseRequestPath(url);
    checkAddressedCluster(manager, target);
    return target.cluster !== undefined ? [target.cluster] : manager.clusterNames();
  }
  app.addHook('onRequest', async (req) => {
    if (req.raw.httpVersion === '1.1' && !req.headers.host) throw badRequest('missing required Host header');
    if (PUBLIC_PATHS.has(req.url.split('?')[0]!)) return;
    if (!opts.authenticator?.enabled && !asksImpersonation(req.headers)) return;
    if (!(await identify(req.raw))) throw unauthorized('Unauthorized: send a bearer token or a client certificate');
  });
  const minWatchTimeout = opts.watch?.minTimeoutSeconds ?? 1800;
  const writes = new WriteTracker();
  const forwardDeps: ForwardDeps = {
    manager,
    store,
    writes,
    async callerHeaders(req) {
      const id = await identify(req);
      if (!id) {
        throw unauthorized('flotilla forwards this request to a member cluster as its caller (Impersonate-User), and does not know the caller: ' +
          (opts.authenticator?.enabled ? 'send a bearer token or a client certificate' : 'configure authentication in the fleet file'));
      }
      return impersonationHeaders(id);
    },
    callerKey: (req) => {
      const id = identities.get(req);
      return id ? `user:${id.user}` : `addr:${req.socket.remoteAddress ?? ''}`;
    },
  };
  // Logs, exec, attach, port-forward and proxy stream straight through to the owning member.
  registerSubresources(app, { manager, store, callerHeaders: forwardDeps.callerHeaders, metrics });

  app.route({
    method: ['POST', 'PUT', 'PATCH', 'DELETE'],
    url: '/*',
    handler: async (req, reply) => {
      const target = parseRequestPath(req.url);
      checkAddressedCluster(manager, target);
      return forwardWrite(req, reply, forwardDeps, target);
    },
  });

  app.get('/*', async (req, reply) => {
    // A GET's body means nothing here, but left unread it would be on the connection when it
    // closes, and the kernel's reset would cut the answer short: it is read and dropped as it
    // comes, without holding the answer (a client may announce a body it never sends).
    if (hasBody(req.headers)) req.raw.resume();
    const target = parseRequestPath(req.url);
    checkAddressedCluster(manager, target);
    switch (target.type) {
      case 'root':
        return root(target.path, target.cluster, req, reply);
      case 'legacyVersions':
        if (wantsAggregated(req.headers.accept)) return sendAggregated(reply, aggregatedDiscovery(manager.cachedResources(), true));
        return sendJson(reply, legacyVersions(req.host));
      case 'groups':
        if (wantsAggregated(req.headers.accept)) return sendAggregated(reply, aggregatedDiscovery(manager.cachedResources(), false));
        return sendJson(reply, groupList(manager.cachedResources()));
      case 'group': {
        const doc = group(manager.cachedResources(), target.group);
        if (!doc) throw notServed();
        return sendJson(reply, doc);
      }
      case 'resources': {
        const doc = resourceList(manager.cachedResources(), target.group, target.version);
        if (!doc) throw notServed();
        return sendJson(reply, doc);
      }
      case 'resource':
        return read(target, req, reply);
    }
  });

  async function root(path: string, cluster: string | undefined, req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    switch (path) {
      case '/version':
        return reply.type('application/json').send(await version(cluster));
      case '/healthz':
      case '/livez':
        return reply.type('text/plain').send('ok');
      case '/readyz':
        if (!manager.isSynced()) throw serviceUnavailable('not every cacher has synced yet');
        return reply.type('text/plain').send('ok');
      case '/status':
        return sendJson(reply, { synced: manager.isSynced(), cachers: manager.status() });
      case '/metrics':
        return reply.type(metrics.contentType).send(await metrics.metrics());
      default:
        // kubectl explain and apply read the schema: any member's will do (they run one release).
        if (SCHEMA_PATH.test(path)) return proxySchema(path, cluster, req, reply);
        req.log.debug({ path }, 'unknown non-resource path');
        throw notServed();
    }
  }

  /**
   * A list or watch from a given RV, one rule for both: a cluster the resource is not cached from
   * (the fleet changed since the RV was read) is 410 Expired, so the client relists; "not older
   * than" waits (up to 3 s) for cachers behind it, then answers 504 ResourceVersionTooLarge with
   * Retry-After, as the apiserver's watch cache does; "Exact" can only be served for the current
   * state (old snapshots are not kept): older is 410 Expired.
   */
  async function awaitResourceVersion(cached: CachedResource, since: Record<string, string>, exact: boolean, only?: string): Promise<void> {
    const resource = gvrKey(cached.info);
    const wanted = Object.fromEntries(Object.entries(since).filter(([c]) => only === undefined || c === only));
    const foreign = Object.keys(wanted).filter((c) => !cached.clusters.includes(c));
    if (foreign.length > 0) throw expired(`too old resource version: it was read from ${foreign.join(', ')}, which this resource is no longer cached from`);
    if (!(await store.waitFor(resource, wanted, 3000))) {
      const latest = store.latestRVs(resource);
      const behind = Object.entries(wanted).filter(([c, rv]) => latest[c] === undefined || compareMemberRV(latest[c]!, rv) < 0).map(([c]) => c);
      throw timeout(`Too large resource version: the cache of ${behind.join(', ')} has not reached the requested resource version yet`, [{ reason: 'ResourceVersionTooLarge', message: 'Too large resource version' }], 1);
    }
    if (exact) {
      const latest = store.latestRVs(resource);
      const older = Object.entries(wanted).filter(([c, rv]) => latest[c] !== undefined && compareMemberRV(latest[c]!, rv) > 0);
      if (older.length > 0) throw expired(`too old resource version: flotilla serves Exact lists only at the current resource version (${older.map(([c]) => c).join(', ')} moved on)`);
    }
  }

  /** A member that is down does not fail a read: its cached state is served, with a warning. */
  function warnStale(reply: FastifyReply, resource: string, only?: string): void {
    const warnings = manager
      .staleClusters(resource)
      .filter((s) => only === undefined || s.cluster === only)
      .map((s) => `299 - ${JSON.stringify(`flotilla: cluster ${s.cluster} is not reachable; serving its cached state${s.since ? ` as of ${s.since}` : ''} (${(s.error ?? '').slice(0, 200)})`)}`);
    if (warnings.length) reply.header('warning', warnings);
  }

  /**
   * The schema, asked of a member with flotilla's own credentials: so only the fixed read-only
   * paths SCHEMA_PATH allows, re-built from the parsed request, with no query but openapi v3's
   * `hash`. `/clusters/<name>/` asks that member alone.
   */
  async function proxySchema(path: string, cluster: string | undefined, req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    const headers: Record<string, string> = {};
    for (const h of ['accept', 'if-none-match', 'accept-encoding']) {
      const v = req.headers[h];
      if (typeof v === 'string') headers[h] = v;
    }
    const hash = one(req.query as Query, 'hash');
    const memberPath = path + (hash !== undefined ? `?${new URLSearchParams({ hash })}` : '');
    for (const name of cluster !== undefined ? [cluster] : manager.clusterNames()) {
      try {
        const res = await manager.member(name)!.fetch({ path: memberPath, headers });
        if (res.status >= 500 && cluster === undefined) continue;
        for (const h of ['content-type', 'etag', 'cache-control', 'content-encoding', 'vary', 'last-modified']) {
          const v = res.headers[h];
          if (v !== undefined) reply.header(h, v);
        }
        return reply.code(res.status).send(res.body);
      } catch {
        // ask the next member
      }
    }
    throw serviceUnavailable(`no member cluster answered ${path}`);
  }

  /** The members' version (one release across the fleet), or the addressed member's. */
  async function version(cluster: string | undefined): Promise<Buffer> {
    if (cluster === undefined && versionCache && Date.now() - versionCache.at < 60_000) return versionCache.body;
    for (const name of cluster !== undefined ? [cluster] : manager.clusterNames()) {
      try {
        const res = await manager.member(name)!.fetch({ path: '/version', headers: { accept: 'application/json' } });
        if (res.status === 200) {
          if (cluster === undefined) versionCache = { at: Date.now(), body: res.body };
          return res.body;
        }
      } catch {
        // ask the next member
      }
    }
    throw serviceUnavailable('no member cluster answered /version');
  }

  async function read(target: Extract<RequestTarget, { type: 'resource' }>, req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    const resource = manager.resource(gvrKey(target));
    if (!resource) throw notServed();
    if (target.namespace !== undefined && !resource.info.namespaced) throw notServed();
    if (target.subresource) {
      if (target.name === undefined) throw notServed();
      return forwardRead(req, reply, forwardDeps, target);
    }
    const q = req.query as Query;
    const watching = one(q, 'watch') === 'true' || one(q, 'watch') === '1';
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
    const filter = objectFilter(q, target, resource.info.group, resource.info.kind);
    if (watching) {
      // The legacy single-object watch URL (/pods/NAME?watch=1) is a metadata.name selector.
      if (target.name !== undefined) filter.fieldSelector!.push({ field: 'metadata.name', operator: 'Equals', value: target.name });
      const timeoutSeconds = int64Param(q, 'timeoutSeconds');
      // Everything that can refuse the watch does so before the response is taken over.
      const form = negotiate(req.headers.accept, { list: false });
      if (since) await awaitResourceVersion(resource, since, false, target.cluster);
      reply.hijack();
      hub.open(reply.raw, {
        resource,
        filter,
        form,
        includeObject: includeObject as ListOptions['includeObject'],
        since,
        sendInitialEvents: sendInitialEvents === 'true',
        bookmarks: one(q, 'allowWatchBookmarks') === 'true',
        // Like the apiserver: the client's timeout, else a random one from the minimum to twice it,
        // so that the watches of a fleet of clients do not all end (and relist) at once.
        // 0 is the default, as in the apiserver; past what a timer holds (24.8 days) is that long.
        timeoutMs: Math.min(MAX_TIMER_MS, (timeoutSeconds ? timeoutSeconds : minWatchTimeout * (1 + Math.random())) * 1000),
        bookmarkIntervalMs: opts.watch?.bookmarkIntervalMs ?? 30_000,
        maxBufferedBytes: opts.watch?.maxBufferedBytes ?? 16 * 1024 * 1024,
        catchUpStallMs: opts.watch?.catchUpStallMs ?? 60_000,
      });
      return reply;
    }
    const scope = { resource, cluster: target.cluster, namespace: target.namespace };
    warnStale(reply, gvrKey(resource.info), target.cluster);
    // Read-your-writes: a caller's read waits (briefly) for the cache to hold the caller's last write.
    const written = since ? undefined : writes.pending(forwardDeps.callerKey(req.raw), gvrKey(resource.info));
    if (written) await store.waitFor(gvrKey(resource.info), written, 2000);
    if (target.name !== undefined) {
      const form = negotiate(req.headers.accept, { list: false });
      return sendBytes(reply, getResponse(store, scope, target.name, form, includeObject as ListOptions['includeObject']));
    }
    const form = negotiate(req.headers.accept, { list: true });
    if (since && !one(q, 'continue')) await awaitResourceVersion(resource, since, rvMatch === 'Exact', target.cluster);
    const limit = int64Param(q, 'limit');
    const continueText = one(q, 'continue');
    const continueToken = continueText ? decodeContinue(continueText) : undefined;
    if (continueToken && rvParam && rvParam !== '0') {
      throw invalid('ListOptions.meta.k8s.io "" is invalid: resourceVersion: specifying resource version is not allowed when using continue', [{ reason: 'FieldValueInvalid', field: 'resourceVersion', message: 'specifying resource version is not allowed when using continue' }]);
    }
    const body = listResponse(store, {
      ...scope,
      form,
      filter,
      includeObject: includeObject as ListOptions['includeObject'],
      limit: limit || undefined,
      continueToken,
      snapshots,
      caller: forwardDeps.callerKey(req.raw),
    });
    if (Buffer.isBuffer(body)) return sendBytes(reply, body);
    // A large list streams; the client going away ends it and frees its snapshot.
    const stream = Readable.from(body.chunks, { objectMode: false, highWaterMark: 1 });
    stream.once('close', body.done);
    return reply.type('application/json').send(stream);
  }

  return app;
}

// The longest delay a Node timer holds; a longer one fires at once.
const MAX_TIMER_MS = 2 ** 31 - 1;
const INT64_MAX = 2n ** 63n - 1n;

/** A non-negative integer query parameter as the apiserver reads it (an int64); 400 otherwise. */
function int64Param(q: Query, name: string): number | undefined {
  const text = one(q, name);
  if (text === undefined) return undefined;
  if (!/^[0-9]{1,19}$/.test(text) || BigInt(text) > INT64_MAX) throw badRequest(`invalid ${name}: ${JSON.stringify(text)}`);
  return Number(text);
}

/** Cluster, namespace, label and field selection of a list or watch; unknown fields are a 400. */
function objectFilter(q: Query, target: { cluster?: string; namespace?: string }, group: string, kind: string): ObjectFilter {
  const labelText = one(q, 'labelSelector');
  const fieldText = one(q, 'fieldSelector');
  const fieldSelector = fieldText ? parseFieldSelector(fieldText) : [];
  validateFieldSelector(fieldSelector, new Set([...GENERIC_FIELDS, ...selectableFieldNames(group, kind)]));
  return {
    cluster: target.cluster,
    namespace: target.namespace,
    labelSelector: labelText ? parseLabelSelector(labelText) : undefined,
    fieldSelector,
  };
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

// Bytes, not a string: fastify re-formats a string reply's content type (quoted parameters, a
// charset); clients read these parameters, so they go out exactly as the apiserver writes them.
function sendAggregated(reply: FastifyReply, doc: object): FastifyReply {
  return reply.header('content-type', AGGREGATED_DISCOVERY_V2).send(Buffer.from(JSON.stringify(doc)));
}

function sendJson(reply: FastifyReply, doc: object): FastifyReply {
  return reply.type('application/json').send(JSON.stringify(doc));
}

function sendBytes(reply: FastifyReply, body: Buffer): FastifyReply {
  return reply.type('application/json').send(body);
}

export function sendStatus(reply: FastifyReply, err: StatusError): FastifyReply {
  if (err.retryAfterSeconds !== undefined) reply.header('retry-after', String(err.retryAfterSeconds));
  return reply.code(err.code).type('application/json').send(JSON.stringify(err.toStatus()));
}

