import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import { Counter, Gauge, type Registry } from 'prom-client';
import type { FleetMembers, ResourceCatalog } from '../cacher/cache-roles.js';
import type { Store } from '../store/store.js';
import { memberRequestPath, parseRequestPath } from '../api/request-info.js';
import { StatusError, badRequest, serviceUnavailable, statusForCode } from '../api/status.js';
import { isProtobuf } from '../api/protobuf-object.js';
import { owningCluster, type OwnerLookup } from './owner.js';
import { STREAMED_ERROR_MAX_BYTES } from '../registry/defaults.js';

/**
 * What the streaming subresources share: which requests they are, which member a request goes to,
 * and which headers cross flotilla.
 */
export type StreamingSubresource = 'log' | 'exec' | 'attach' | 'portforward' | 'proxy';

export interface StreamTarget {
  cluster: string;
  /** The path and query as the member sees them. */
  path: string;
  resource: 'pods' | 'services' | 'nodes';
  subresource: StreamingSubresource;
}

export interface StreamingDeps extends OwnerLookup {
  fleet: FleetMembers;
  catalog: ResourceCatalog;
  store: Store;
  /** The caller's Impersonate-* headers; may throw a StatusError (401). Absent: none are sent. */
  callerHeaders?: (req: IncomingMessage) => Promise<Record<string, string | string[]>>;
  /**
   * Puts a tenant's request into the member's names (its URL rewritten). Upgrades come past
   * fastify's hooks, which do this for every other request.
   */
  enterTenant?: (req: IncomingMessage) => Promise<TenantWords | undefined>;
}

/** What a tenant's answers need of it here: the member's names put back into its own. */
export interface TenantWords {
  tenantText(text: string): string;
}

/** A member's error answer, read whole to STREAMED_ERROR_MAX_BYTES (the rest is dropped, its connection cut). */
export async function readErrorAnswer(res: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of res as AsyncIterable<Buffer>) {
    chunks.push(chunk);
    size += chunk.length;
    if (size > STREAMED_ERROR_MAX_BYTES) {
      res.destroy();
      break;
    }
  }
  return Buffer.concat(chunks).subarray(0, STREAMED_ERROR_MAX_BYTES);
}

/** A refusal in an encoding flotilla does not reword (protobuf, YAML): a tenant gets its code and reason alone. */
export function unreadableRefusal(status: number, contentType: string, cluster: string, subresource: string): StatusError | undefined {
  if (!isProtobuf(contentType) && !contentType.startsWith('application/yaml')) return undefined;
  return statusForCode(status, `cluster ${cluster} refused the ${subresource} request (HTTP ${status}); ask with Accept: application/json for its words`);
}

const POD_SUBRESOURCES = new Set(['log', 'exec', 'attach', 'portforward']);

/**
 * The streaming subresource a URL names, or undefined when it names something else. Only core/v1
 * pods, services and nodes have them.
 */
export function streamingSubresource(url: string): { resource: StreamTarget['resource']; subresource: StreamingSubresource } | undefined {
  let target;
  try {
    target = parseRequestPath(url);
  } catch {
    return undefined;
  }
  if (target.type !== 'resource' || target.group !== '' || target.version !== 'v1' || !target.name || !target.subresource) return undefined;
  const sub = target.subresource;
  const resource = target.resource;
  if (resource !== 'pods' && resource !== 'services' && resource !== 'nodes') return undefined;
  if ((resource === 'nodes') !== (target.namespace === undefined)) return undefined;
  if (sub === 'proxy' || sub.startsWith('proxy/')) return { resource, subresource: 'proxy' };
  if (resource === 'pods' && POD_SUBRESOURCES.has(sub)) return { resource, subresource: sub as StreamingSubresource };
  return undefined;
}

/**
 * The member a streaming request goes to. A proxy URL names `name`, `name:port` or
 * `scheme:name:port` (as the apiserver splits it); the owner is looked up by the name alone.
 */
export async function resolveStreamTarget(deps: StreamingDeps, req: IncomingMessage, url: string): Promise<StreamTarget> {
  const kind = streamingSubresource(url);
  const target = parseRequestPath(url);
  if (!kind || target.type !== 'resource') {
    throw badRequest(`flotilla streams only pods/log, pods/exec, pods/attach, pods/portforward and the proxy subresource of pods, services and nodes; not ${url.split('?')[0]}`);
  }
  const name = kind.subresource === 'proxy' ? objectName(target.name!) : target.name!;
  const cluster = await owningCluster(deps, deps.store, { ...target, name }, req);
  return { cluster, path: memberRequestPath(url), ...kind };
}

function objectName(id: string): string {
  const parts = id.split(':');
  if (parts.length === 1 || parts.length === 2) return parts[0]!;
  if (parts.length === 3 && (parts[0] === 'http' || parts[0] === 'https')) return parts[1]!;
  throw badRequest(`invalid proxy request name ${JSON.stringify(id)}: expected name, name:port or scheme:name:port`);
}

// RFC 9110 §7.6.1 connection-specific fields: they describe one hop, never the next.
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'proxy-authenticate', 'proxy-authorization']);

/**
 * The caller's request headers as the member should get them. The caller's credentials and any
 * impersonation or front-proxy identity it sends are dropped: flotilla calls members with its own
 * credentials, and who the caller is comes only from `callerHeaders`. Repeated headers stay
 * repeated (the kubelet reads each X-Stream-Protocol-Version line as one offered protocol).
 */
export function forwardedRequestHeaders(rawHeaders: string[], upgrade: boolean): Record<string, string[]> {
  const connectionTokens = new Set<string>();
  for (let i = 0; i < rawHeaders.length; i += 2) {
    if (rawHeaders[i]!.toLowerCase() === 'connection') {
      for (const t of rawHeaders[i + 1]!.split(',')) connectionTokens.add(t.trim().toLowerCase());
    }
  }
  const out: Record<string, string[]> = {};
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]!.toLowerCase();
    const value = rawHeaders[i + 1]!;
    if (name === 'host' || name === 'authorization' || name.startsWith('impersonate-') || name.startsWith('x-remote-')) continue;
    // An upgrade is end to end through flotilla: the member must see the client's offer.
    const keepForUpgrade = upgrade && (name === 'connection' || name === 'upgrade');
    if (!keepForUpgrade && (HOP_BY_HOP.has(name) || connectionTokens.has(name))) continue;
    (out[name] ??= []).push(value);
  }
  return out;
}

/**
 * A member's response headers for the client, as a flat name/value list (repeats and case kept).
 * A redirect to a path on the member (the apiserver sends `…/proxy` to `…/proxy/`) keeps the
 * `/clusters/<name>` prefix the client used, or the client would leave the member it addressed.
 */
export function forwardedResponseHeaders(rawHeaders: string[], opts: { upgrade: boolean; clusterPrefix?: string }): string[] {
  const out: string[] = [];
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]!.toLowerCase();
    if (!(opts.upgrade && (name === 'connection' || name === 'upgrade')) && HOP_BY_HOP.has(name)) continue;
    let value = rawHeaders[i + 1]!;
    if (name === 'location' && opts.clusterPrefix && value.startsWith('/') && !value.startsWith('//')) value = opts.clusterPrefix + value;
    out.push(rawHeaders[i]!, value);
  }
  return out;
}

/** The `/clusters/<name>` a request URL starts with, if any. */
export function clusterPrefix(url: string): string | undefined {
  return /^\/clusters\/[^/?]+/.exec(url)?.[0];
}

export function hasBody(headers: IncomingHttpHeaders): boolean {
  return headers['transfer-encoding'] !== undefined || (headers['content-length'] !== undefined && headers['content-length'] !== '0');
}

/** No connection to the member a stream goes to (yet): 503, the client retries. */
export function noConnection(cluster: string): StatusError {
  return serviceUnavailable(`cluster "${cluster}" has no connection yet`);
}

/** A failure before the member answered, as a Status: unreachable members are 503, not 500. */
export function memberFailure(cluster: string, err: unknown): StatusError {
  if (err instanceof StatusError) return err;
  return serviceUnavailable(`cluster "${cluster}" did not answer: ${(err as Error).message}`);
}

export interface SubresourceMetrics {
  requests: Counter<'cluster' | 'subresource' | 'protocol' | 'code'>;
  streams: Gauge<'subresource'>;
}

/**
 * Open streams, each with what cuts it. A graceful close would otherwise wait for every followed
 * log and exec session to end by itself.
 */
export type OpenStreams = Set<() => void>;

export function createSubresourceMetrics(registry?: Registry): SubresourceMetrics {
  const registers = registry ? [registry] : [];
  return {
    requests: new Counter({
      name: 'flotilla_subresource_requests_total',
      help: 'Streaming subresource requests forwarded to members, by the status the member (or flotilla) answered; protocol is http, websocket or spdy.',
      labelNames: ['cluster', 'subresource', 'protocol', 'code'],
      registers,
    }),
    streams: new Gauge({
      name: 'flotilla_subresource_streams',
      help: 'Streaming subresource connections to members open now.',
      labelNames: ['subresource'],
      registers,
    }),
  };
}
