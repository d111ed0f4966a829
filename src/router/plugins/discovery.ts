import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { FleetMembers, ResourceCatalog } from '../../cacher/cache-manager.js';
import { serviceUnavailable } from '../../api/status.js';
import { aggregatedDiscovery, group, groupList, legacyVersions, resourceList, wantsAggregated } from '../discovery.js';
import { CLUSTER_PREFIXES, targetOf } from '../target.js';
import { notServed, one, sendAggregated, sendJson, type Query } from '../replies.js';

/**
 * What the API serves: discovery (legacy and aggregated v2) of the cached resources, and the
 * members' `/version` and schema documents (`/openapi/…`), which kubectl explain and apply read.
 * Members run one release, so any member's answer will do; `/clusters/<name>/` asks that one.
 */
export interface DiscoveryOptions {
  fleet: FleetMembers;
  catalog: ResourceCatalog;
}

// The schema documents, the only paths (with /version) members are asked with flotilla's own identity.
const SCHEMA_PATH = /^\/openapi\/(v2|v3|v3\/api\/v1|v3\/apis\/[a-z0-9.-]+\/v[0-9]+(?:(?:alpha|beta)[0-9]+)?)$/;

export const discoveryPlugin: FastifyPluginAsync<DiscoveryOptions> = async (app, { fleet, catalog }) => {
  let versionCache: { at: number; body: Buffer } | undefined;

  const documents = async (req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> => {
    const target = targetOf(req.raw, fleet);
    switch (target.type) {
      case 'legacyVersions':
        if (wantsAggregated(req.headers.accept)) return sendAggregated(reply, aggregatedDiscovery(catalog.cachedResources(), true));
        return sendJson(reply, legacyVersions(req.host));
      case 'groups':
        if (wantsAggregated(req.headers.accept)) return sendAggregated(reply, aggregatedDiscovery(catalog.cachedResources(), false));
        return sendJson(reply, groupList(catalog.cachedResources()));
      case 'group': {
        const doc = group(catalog.cachedResources(), target.group);
        if (!doc) throw notServed();
        return sendJson(reply, doc);
      }
      case 'resources': {
        const doc = resourceList(catalog.cachedResources(), target.group, target.version);
        if (!doc) throw notServed();
        return sendJson(reply, doc);
      }
      default:
        throw notServed();
    }
  };

  /** The members' version (one release across the fleet), or the addressed member's. */
  async function version(cluster: string | undefined): Promise<Buffer> {
    if (cluster === undefined && versionCache && Date.now() - versionCache.at < 60_000) return versionCache.body;
    for (const name of cluster !== undefined ? [cluster] : fleet.clusterNames()) {
      try {
        const res = await fleet.member(name)!.fetch({ path: '/version', headers: { accept: 'application/json' } });
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

  /**
   * The schema, asked of a member with flotilla's own credentials: so only the fixed read-only
   * paths SCHEMA_PATH allows, re-built from the parsed request, with no query but openapi v3's
   * `hash`.
   */
  async function schema(req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    const target = targetOf(req.raw, fleet);
    if (target.type !== 'root' || !SCHEMA_PATH.test(target.path)) throw notServed();
    const headers: Record<string, string> = {};
    for (const h of ['accept', 'if-none-match', 'accept-encoding']) {
      const v = req.headers[h];
      if (typeof v === 'string') headers[h] = v;
    }
    const hash = one(req.query as Query, 'hash');
    const memberPath = target.path + (hash !== undefined ? `?${new URLSearchParams({ hash })}` : '');
    for (const name of target.cluster !== undefined ? [target.cluster] : fleet.clusterNames()) {
      try {
        const res = await fleet.member(name)!.fetch({ path: memberPath, headers });
        if (res.status >= 500 && target.cluster === undefined) continue;
        for (const h of ['content-type', 'etag', 'cache-control', 'content-encoding', 'vary', 'last-modified']) {
          const v = res.headers[h];
          if (v !== undefined) reply.header(h, v);
        }
        return reply.code(res.status).send(res.body);
      } catch {
        // ask the next member
      }
    }
    throw serviceUnavailable(`no member cluster answered ${target.path}`);
  }

  for (const p of CLUSTER_PREFIXES) {
    for (const path of ['/api', '/api/:version', '/apis', '/apis/:group', '/apis/:group/:version']) app.get(`${p}${path}`, documents);
    app.get(`${p}/version`, async (req, reply) => reply.type('application/json').send(await version(targetOf(req.raw, fleet).cluster)));
    app.get(`${p}/openapi/*`, schema);
  }
};
