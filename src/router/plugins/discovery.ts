import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { FleetMembers } from '../../cacher/cache-roles.js';
import { notServed, serviceUnavailable } from '../../api/status.js';
import { one, type ReadQuery as Query } from '../../api/list-options.js';
import type { IncomingMessage } from 'node:http';
import type { Tenant } from '../../tenancy/tenant.js';
import type { FleetDiscovery } from '../../discovery/fleet-discovery.js';
import { aggregatedDiscovery, group, groupList, legacyVersions, resourceList, servesGroupVersion, wantsAggregated } from '../../discovery/documents.js';
import { tenantDocuments } from '../../discovery/tenant-view.js';
import type { FleetDocuments } from '../../discovery/union.js';
import { CLUSTER_PREFIXES, targetOf } from '../target.js';
import { sendAggregated, sendJson } from '../replies.js';
import { FLEET_GROUP, FLEET_VERSION, cameUnderFleetPath } from '../../api/fleet-path.js';
import { MEMBER_OPENAPI_TIMEOUT_MS, VERSION_CACHE_TTL_MS } from '../../registry/defaults.js';

/**
 * What the API serves: discovery (legacy and aggregated v2), the union of the members' own
 * (src/discovery/), and the members' `/version` and schema documents (`/openapi/…`),
 * which kubectl explain and apply read. Members run one release, so any member's version will do.
 * Under `/clusters/<name>/`, discovery, `/version` and the schema are that member's own answers.
 */
export interface DiscoveryOptions {
  fleet: FleetMembers;
  discovery: FleetDiscovery;
  /** The caller's tenant (src/tenancy), whose discovery and schema are its own names only. */
  tenantOf(req: IncomingMessage): Tenant | undefined;
  /** Whether a hub's front proxy named the caller (src/auth/request-header.ts). */
  frontProxied(req: IncomingMessage): boolean;
}

/**
 * Flotilla's own group, as an extension apiserver of a hub: it lists no resource (the fleet API
 * under FLEET_PATH is no resource of the hub's), so nothing in the hub's discovery can be
 * mistaken for one (`kubectl get fleet` stays the hub's Fleet custom resource).
 */
const EXTENSION: FleetDocuments = {
  legacy: [],
  groups: [{ metadata: { name: FLEET_GROUP }, versions: [{ version: FLEET_VERSION, resources: [], freshness: 'Current' }] }],
};

/** A request that came in under FLEET_PATH (its URL has it taken off since). */
function underFleetPath(req: IncomingMessage): boolean {
  const original = (req as IncomingMessage & { originalUrl?: string }).originalUrl;
  return original !== undefined && cameUnderFleetPath(original);
}

// The schema documents, the only paths (with /version) members are asked with flotilla's own identity.
const SCHEMA_PATH = /^\/openapi\/(v2|v3|v3\/api\/v1|v3\/apis\/[a-z0-9.-]+\/v[0-9]+(?:(?:alpha|beta)[0-9]+)?)$/;

// A group name and an API version, as discovery paths of one member are re-built from them.
const DISCOVERY_NAME = /^[a-z0-9]([a-z0-9.-]{0,252}[a-z0-9])?$/;
const API_VERSION = /^v[0-9]+(?:(?:alpha|beta)[0-9]+)?$/;

/**
 * A member's answer as it gave it. A 304 goes with no body, type or length of its own: a client's
 * HTTP cache (kubectl's) merges a 304's headers into the response it kept, and a
 * `Content-Length: 0` there empties the cached discovery.
 */
function relayed(reply: FastifyReply, res: { status: number; headers: Record<string, string | string[] | undefined>; body: Buffer }): FastifyReply {
  for (const h of ['content-type', 'etag', 'cache-control', 'content-encoding', 'vary', 'last-modified', 'expires']) {
    const v = res.headers[h];
    if (v !== undefined) reply.header(h, v);
  }
  if (res.status === 304) {
    reply.raw.removeHeader('content-type');
    return reply.code(304).send();
  }
  return reply.code(res.status).send(res.body);
}

/**
 * A schema's words in a tenant's names: its groups (`"acme.example.com"` as a value, `apis/acme.…`
 * in a path) without the tenant's id. A group's schema names no other tenant's groups.
 */
function schemaWords(text: string, tenant: Tenant): string {
  return text.split(`"${tenant.id}.`).join('"').split(`apis/${tenant.id}.`).join('apis/');
}

export const discoveryPlugin: FastifyPluginAsync<DiscoveryOptions> = async (app, { fleet, discovery, tenantOf, frontProxied }) => {
  let versionCache: { at: number; body: Buffer } | undefined;
  /** The hub's aggregator asking for itself: at flotilla's root, not under FLEET_PATH. */
  const hubAsksForItself = (req: IncomingMessage) => frontProxied(req) && !underFleetPath(req);

  const documents = async (req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> => {
    const target = targetOf(req.raw, fleet);
    // The hub's aggregator asks an extension apiserver for its own groups at the root (`/apis`):
    // the fleet's would be merged into the hub's discovery as the hub's own.
    if (target.type === 'groups' && target.cluster === undefined && hubAsksForItself(req.raw)) {
      return wantsAggregated(req.headers.accept) ? sendAggregated(reply, aggregatedDiscovery(EXTENSION, false)) : sendJson(reply, groupList(EXTENSION));
    }
    const tenant = tenantOf(req.raw);
    // A member's own documents name every tenant's groups: a tenant reads the fleet's, in its names.
    if (target.cluster !== undefined && !tenant) return memberDocument(req, reply, target.cluster, target);
    const fleetDocs = await discovery.documents();
    const docs = tenant ? tenantDocuments(fleetDocs, tenant) : fleetDocs;
    if (tenant && (target.type === 'group' || target.type === 'resources')) target.group = tenant.tenantGroup(target.group) ?? target.group;
    switch (target.type) {
      case 'legacyVersions':
        if (wantsAggregated(req.headers.accept)) return sendAggregated(reply, aggregatedDiscovery(docs, true));
        return sendJson(reply, legacyVersions(docs, req.host));
      case 'groups':
        if (wantsAggregated(req.headers.accept)) return sendAggregated(reply, aggregatedDiscovery(docs, false));
        return sendJson(reply, groupList(docs));
      case 'group': {
        const doc = group(docs, target.group);
        if (!doc) throw notServed();
        return sendJson(reply, doc);
      }
      case 'resources': {
        // Only a group-version the fleet serves is asked of the members (its hashes).
        if (!servesGroupVersion(docs, target.group, target.version)) throw notServed();
        const hashes = await discovery.storageVersionHashes(target.group, target.version);
        return sendJson(reply, resourceList(docs, target.group, target.version, hashes)!);
      }
      default:
        throw notServed();
    }
  };

  /**
   * One member's own discovery document, asked with flotilla's identity (discovery is not
   * filtered): the path re-built from the parsed request, the Accept passed on, so aggregated
   * discovery in any form the member speaks comes back as it answers it.
   */
  async function memberDocument(req: FastifyRequest, reply: FastifyReply, cluster: string, target: ReturnType<typeof targetOf>): Promise<FastifyReply> {
    let path: string;
    switch (target.type) {
      case 'legacyVersions': path = '/api'; break;
      case 'groups': path = '/apis'; break;
      case 'group': path = `/apis/${target.group}`; break;
      case 'resources': path = target.group === '' ? `/api/${target.version}` : `/apis/${target.group}/${target.version}`; break;
      default: throw notServed();
    }
    if (target.type === 'group' && !DISCOVERY_NAME.test(target.group)) throw notServed();
    if (target.type === 'resources' && (!API_VERSION.test(target.version) || target.group !== '' && !DISCOVERY_NAME.test(target.group))) throw notServed();
    return relay(reply, cluster, path, req);
  }

  /** A member's answer to a fixed read-only path, with the request's negotiation headers. */
  async function relay(reply: FastifyReply, cluster: string, path: string, req: FastifyRequest): Promise<FastifyReply> {
    const headers: Record<string, string> = {};
    for (const h of ['accept', 'if-none-match', 'accept-encoding']) {
      const v = req.headers[h];
      if (typeof v === 'string') headers[h] = v;
    }
    let res;
    try {
      res = await fleet.member(cluster)!.fetch({ path, headers });
    } catch {
      throw serviceUnavailable(`member cluster ${cluster} did not answer ${path}`);
    }
    return relayed(reply, res);
  }

  /** The members' version (one release across the fleet), or the addressed member's. */
  async function version(cluster: string | undefined): Promise<Buffer> {
    if (cluster === undefined && versionCache && Date.now() - versionCache.at < VERSION_CACHE_TTL_MS) return versionCache.body;
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
    // Nor is the fleet's schema the hub's: the aggregator merges what its extension apiservers serve here.
    if (hubAsksForItself(req.raw)) throw notServed();
    const headers: Record<string, string> = {};
    for (const h of ['accept', 'if-none-match', 'accept-encoding']) {
      const v = req.headers[h];
      if (typeof v === 'string') headers[h] = v;
    }
    // A tenant reads the fleet's schema in its names (the path came in the member's group): the
    // documents whole, asked for in JSON, and never one member's own (it names every tenant's groups).
    const tenant = tenantOf(req.raw);
    const cluster = tenant ? undefined : target.cluster;
    if (cluster === undefined && target.path === '/openapi/v3') return sendJson(reply, tenant ? await tenantSchemaIndex(tenant) : await schemaIndex());
    if (tenant) headers['accept'] = 'application/json';
    const hash = one(req.query as Query, 'hash');
    const memberPath = target.path + (hash !== undefined ? `?${new URLSearchParams({ hash })}` : '');
    for (const name of cluster !== undefined ? [cluster] : await schemaOwners(target.path)) {
      try {
        const res = await fleet.member(name)!.fetch({ path: memberPath, headers });
        if (res.status >= 500 && cluster === undefined) continue;
        if (tenant && res.status === 200) return reply.type('application/json').send(Buffer.from(schemaWords(res.body.toString('utf8'), tenant)));
        return relayed(reply, res);
      } catch {
        // ask the next member
      }
    }
    throw serviceUnavailable(`no member cluster answered ${target.path}`);
  }

  /** The fleet's v3 index as a tenant reads it: without other tenants' groups, its own named without its id. */
  async function tenantSchemaIndex(tenant: Tenant): Promise<{ paths: Record<string, unknown> }> {
    const docs = tenantDocuments(await discovery.documents(), tenant);
    const shown = new Set(docs.groups.flatMap((g) => g.versions.map((v) => `apis/${g.metadata.name ?? ''}/${v.version}`)));
    const paths: Record<string, unknown> = {};
    for (const [p, v] of Object.entries((await schemaIndex()).paths)) {
      const named = p.startsWith('apis/') ? schemaWords(p, tenant) : p;
      if (p.startsWith('apis/') && !shown.has(named)) continue;
      paths[named] = JSON.parse(schemaWords(JSON.stringify(v), tenant)) as unknown;
    }
    return { paths };
  }

  /** Which member listed each openapi v3 path first in the last fleet-wide index (its hash is that member's). */
  let schemaOwner = new Map<string, string>();

  /**
   * The fleet's openapi v3 index: the union of the members' `paths` (the first member listing a
   * group version owns it), so `kubectl explain` finds a CRD that only some members serve.
   */
  async function schemaIndex(): Promise<{ paths: Record<string, unknown> }> {
    const paths: Record<string, unknown> = {};
    const owner = new Map<string, string>();
    const names = fleet.clusterNames();
    // Asked all at once, merged in configuration order.
    const indexes = await Promise.all(names.map(async (name) => {
      try {
        const res = await fleet.member(name)!.fetch({ path: '/openapi/v3', headers: { accept: 'application/json' }, signal: AbortSignal.timeout(MEMBER_OPENAPI_TIMEOUT_MS) });
        return res.status === 200 ? JSON.parse(res.body.toString('utf8')) as { paths?: Record<string, unknown> } : undefined;
      } catch {
        return undefined; // the others answer
      }
    }));
    indexes.forEach((doc, i) => {
      for (const [p, v] of Object.entries(doc?.paths ?? {})) {
        if (p in paths) continue;
        paths[p] = v;
        owner.set(`/openapi/v3/${p}`, names[i]!);
      }
    });
    if (indexes.every((d) => d === undefined)) throw serviceUnavailable('no member cluster answered /openapi/v3');
    schemaOwner = owner;
    return { paths };
  }

  /** The members to ask for a schema path: its owner in the index first, then configuration order. */
  async function schemaOwners(path: string): Promise<string[]> {
    const names = fleet.clusterNames();
    if (!path.startsWith('/openapi/v3/')) return names;
    if (!schemaOwner.has(path)) await schemaIndex().catch(() => undefined);
    const first = schemaOwner.get(path);
    return first !== undefined && names.includes(first) ? [first, ...names.filter((n) => n !== first)] : names;
  }

  // The extension's own group and version, which the aggregator's availability check reads.
  app.get(`/apis/${FLEET_GROUP}`, async (_req, reply) => sendJson(reply, group(EXTENSION, FLEET_GROUP)!));
  app.get(`/apis/${FLEET_GROUP}/${FLEET_VERSION}`, async (_req, reply) => sendJson(reply, resourceList(EXTENSION, FLEET_GROUP, FLEET_VERSION)!));

  for (const p of CLUSTER_PREFIXES) {
    for (const path of ['/api', '/api/:version', '/apis', '/apis/:group', '/apis/:group/:version']) app.get(`${p}${path}`, documents);
    app.get(`${p}/version`, async (req, reply) => reply.type('application/json').send(await version(targetOf(req.raw, fleet).cluster)));
    app.get(`${p}/openapi/*`, schema);
  }
};
