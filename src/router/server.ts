import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { CacheManager } from '../cacher/cache-manager.js';
import { getResponse, listResponse, type ListOptions } from '../mux/reads.js';
import { gvrKey } from '../resources/resource-info.js';
import { parseLabelSelector } from '../selectors/labels.js';
import { parseFieldSelector, validateFieldSelector, matchesFields } from '../selectors/fields.js';
import type { Store } from '../store/store.js';
import { createMetrics } from '../metrics/metrics.js';
import { group, groupList, legacyVersions, resourceList } from './discovery.js';
import { negotiate } from './negotiate.js';
import { parseRequestPath, type RequestTarget } from './request-info.js';
import { StatusError, badRequest, methodNotAllowed, internalError, serviceUnavailable } from './status.js';

/** The HTTP surface: Kubernetes URLs in, cached reads out, every error a `Status`. */
export interface ServerOptions {
  manager: CacheManager;
  store: Store;
  https?: { key: Buffer; cert: Buffer };
  logLevel?: string;
}

type Query = Record<string, string | string[] | undefined>;

// Fields every kind can be selected by; kind-specific ones come with the read-fidelity work.
const GENERIC_FIELDS: ReadonlySet<string> = new Set(['metadata.name', 'metadata.namespace']);

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
    ...(opts.https ? { https: opts.https } : {}),
    // Kubernetes names and selectors can be long; the default 100-char parameter cap is too tight.
    routerOptions: { maxParamLength: 2048 },
  }) as unknown as FastifyInstance;
  const { manager, store } = opts;
  let versionCache: { at: number; body: Buffer } | undefined;
  const metrics = createMetrics(() => manager.status());

  app.setErrorHandler((err: Error & { statusCode?: number }, req, reply) => {
    if (err instanceof StatusError) return sendStatus(reply, err);
    if (err.statusCode && err.statusCode >= 400 && err.statusCode < 500) {
      return sendStatus(reply, new StatusError(err.statusCode, err.statusCode === 415 ? 'UnsupportedMediaType' : 'BadRequest', err.message));
    }
    req.log.error({ err, url: req.url }, 'request failed');
    return sendStatus(reply, internalError(`flotilla failed to serve ${req.method} ${req.url.split('?')[0]}: ${err.message}`));
  });
  app.setNotFoundHandler((_req, reply) => sendStatus(reply, notServed()));

  app.route({
    method: ['POST', 'PUT', 'PATCH', 'DELETE'],
    url: '/*',
    handler: async (req) => {
      throw methodNotAllowed(`${req.method} is not supported by flotilla yet: it serves reads from its cache`);
    },
  });

  app.get('/*', async (req, reply) => {
    const target = parseRequestPath(req.url);
    if (target.cluster !== undefined && !manager.clusterNames().includes(target.cluster)) {
      throw new StatusError(404, 'NotFound', `cluster "${target.cluster}" is not a member of this fleet`);
    }
    switch (target.type) {
      case 'root':
        return root(target.path, req, reply);
      case 'legacyVersions':
        return sendJson(reply, legacyVersions(req.host));
      case 'groups':
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

  async function root(path: string, req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    switch (path) {
      case '/version':
        return reply.type('application/json').send(await version());
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
        req.log.debug({ path }, 'unknown non-resource path');
        throw notServed();
    }
  }

  async function version(): Promise<Buffer> {
    if (versionCache && Date.now() - versionCache.at < 60_000) return versionCache.body;
    for (const name of manager.clusterNames()) {
      try {
        const res = await manager.member(name)!.fetch({ path: '/version', headers: { accept: 'application/json' } });
        if (res.status === 200) {
          versionCache = { at: Date.now(), body: res.body };
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
    if (target.subresource) throw notServed();
    if (target.namespace !== undefined && !resource.info.namespaced) throw notServed();
    const q = req.query as Query;
    if (one(q, 'watch') === 'true' || one(q, 'watch') === '1') {
      throw methodNotAllowed('watch is not served by flotilla yet');
    }
    const includeObject = one(q, 'includeObject');
    if (includeObject !== undefined && !['Metadata', 'Object', 'None'].includes(includeObject)) {
      throw badRequest(`unrecognized includeObject value: "${includeObject}"`);
    }
    const scope = { resource, cluster: target.cluster, namespace: target.namespace };
    if (target.name !== undefined) {
      const form = negotiate(req.headers.accept, { list: false });
      return sendBytes(reply, getResponse(store, scope, target.name, form, includeObject as ListOptions['includeObject']));
    }
    const form = negotiate(req.headers.accept, { list: true });
    const labelText = one(q, 'labelSelector');
    const fieldText = one(q, 'fieldSelector');
    let fieldFilter: ListOptions['fieldFilter'];
    if (fieldText) {
      const sel = parseFieldSelector(fieldText);
      validateFieldSelector(sel, GENERIC_FIELDS);
      fieldFilter = (e) => matchesFields(sel, { 'metadata.name': e.name, 'metadata.namespace': e.namespace });
    }
    const body = listResponse(store, {
      ...scope,
      form,
      labelSelector: labelText ? parseLabelSelector(labelText) : undefined,
      fieldFilter,
      includeObject: includeObject as ListOptions['includeObject'],
    });
    return sendBytes(reply, body);
  }

  return app;
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

