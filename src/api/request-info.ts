import { badRequest } from './status.js';

/**
 * Reads a Kubernetes API path the way the apiserver's RequestInfo does, after an optional
 * `/clusters/<name>` prefix that addresses one member.
 */
export type RequestTarget =
  | { type: 'root'; cluster?: string; path: string }
  | { type: 'legacyVersions'; cluster?: string }
  | { type: 'groups'; cluster?: string }
  | { type: 'group'; cluster?: string; group: string }
  | { type: 'resources'; cluster?: string; group: string; version: string }
  | {
      type: 'resource';
      cluster?: string;
      group: string;
      version: string;
      namespace?: string;
      resource: string;
      name?: string;
      subresource?: string;
    };

// Namespaces' own subresources: `/namespaces/x/status` is the namespace x's status, not resource "status" in x.
const NAMESPACE_SUBRESOURCES = new Set(['status', 'finalize']);

export function parseRequestPath(rawPath: string): RequestTarget {
  let parts = pathSegments(rawPath.split('?')[0] ?? '');
  let cluster: string | undefined;
  if (parts[0] === 'clusters' && parts.length >= 2) {
    cluster = parts[1];
    parts = parts.slice(2);
  }
  const prefix = parts[0];
  if (prefix === 'api') {
    if (parts.length === 1) return { type: 'legacyVersions', cluster };
    return resourcePath(cluster, '', parts[1]!, parts.slice(2));
  }
  if (prefix === 'apis') {
    if (parts.length === 1) return { type: 'groups', cluster };
    if (parts.length === 2) return { type: 'group', cluster, group: parts[1]! };
    return resourcePath(cluster, parts[1]!, parts[2]!, parts.slice(3));
  }
  return { type: 'root', cluster, path: '/' + parts.join('/') };
}

function resourcePath(cluster: string | undefined, group: string, version: string, rest: string[]): RequestTarget {
  if (rest.length === 0) return { type: 'resources', cluster, group, version };
  let namespace: string | undefined;
  let parts = rest;
  if (parts[0] === 'namespaces' && parts.length > 1) {
    namespace = parts[1];
    if (parts.length > 2 && !NAMESPACE_SUBRESOURCES.has(parts[2]!)) parts = parts.slice(2);
  }
  const [resource, name, ...sub] = parts;
  if (!resource) throw badRequest(`invalid request path`);
  // A namespace's own URL names it twice; it is a cluster-scoped object.
  if (resource === 'namespaces' && !group) namespace = undefined;
  return {
    type: 'resource',
    cluster,
    group,
    version,
    resource,
    ...(namespace !== undefined ? { namespace } : {}),
    ...(name !== undefined ? { name } : {}),
    ...(sub.length ? { subresource: sub.join('/') } : {}),
  };
}

/**
 * A path's segments, each percent-decoded exactly once: what every decision about a request reads
 * (the router, a tenant's rewrite, authorization, forwarding), so none can see `%61pi` where
 * another sees `api`. Empty segments do not count; dot segments and encoded slashes are a 400.
 */
export function pathSegments(path: string): string[] {
  const parts = path.split('/').filter((p) => p.length > 0).map(decodeSegment);
  checkSegments(parts);
  return parts;
}

/** A path built from decoded segments, each encoded once; a trailing slash kept where asked. */
export function segmentsPath(parts: readonly string[], trailingSlash: boolean): string {
  return `/${parts.map(encodePathSegment).join('/')}${trailingSlash && parts.length > 0 ? '/' : ''}`;
}

/**
 * A request URL in its one canonical form: the path's segments decoded once and encoded again
 * (`/clusters/east/%61pi/v1` is `/clusters/east/api/v1`), the query as it came. A path that
 * cannot be read so (a bad escape, a dot segment, an encoded slash) is a 400.
 */
export function canonicalUrl(rawUrl: string): string {
  const q = rawUrl.indexOf('?');
  const path = q < 0 ? rawUrl : rawUrl.slice(0, q);
  return segmentsPath(pathSegments(path), path.length > 1 && path.endsWith('/')) + (q < 0 ? '' : rawUrl.slice(q));
}

/**
 * A path with a dot segment or an encoded slash names one thing to flotilla's router and another
 * to whoever resolves it next (`/openapi/v3/%2e%2e/%2e%2e/api/v1/…/secrets/x`). Neither is part of
 * any Kubernetes URL, so both are refused before anything is routed.
 */
function checkSegments(parts: string[]): void {
  for (const p of parts) {
    if (p === '.' || p === '..') throw badRequest('invalid request path: dot segments ("." and "..") are not allowed');
    if (p.includes('/') || p.includes('\\')) throw badRequest('invalid request path: a path segment may not contain an encoded slash');
  }
}

/**
 * The path and query a member gets for a request: re-built from the parsed path (each segment
 * decoded once and encoded again, no dot or empty segments, no `/clusters/<name>` prefix), never
 * the URL as the caller wrote it. A trailing slash is kept: proxied paths depend on it.
 */
export function memberRequestPath(rawUrl: string): string {
  const q = rawUrl.indexOf('?');
  const rawPath = q < 0 ? rawUrl : rawUrl.slice(0, q);
  const query = q < 0 ? '' : rawUrl.slice(q);
  return canonicalPath(parseRequestPath(rawPath)) + (rawPath.length > 1 && rawPath.endsWith('/') ? '/' : '') + query;
}

/** The path that names a parsed request's target on a member. */
export function canonicalPath(t: RequestTarget): string {
  const segments = ((): string[] => {
    switch (t.type) {
      case 'root':
        return t.path.split('/').filter(Boolean);
      case 'legacyVersions':
        return ['api'];
      case 'groups':
        return ['apis'];
      case 'group':
        return ['apis', t.group];
      case 'resources':
        return t.group ? ['apis', t.group, t.version] : ['api', t.version];
      case 'resource':
        return [
          ...(t.group ? ['apis', t.group, t.version] : ['api', t.version]),
          ...(t.namespace !== undefined ? ['namespaces', t.namespace] : []),
          t.resource,
          ...(t.name !== undefined ? [t.name] : []),
          ...(t.subresource ? t.subresource.split('/') : []),
        ];
    }
  })();
  return '/' + segments.map(encodePathSegment).join('/');
}

/** RFC 3986 pchar: what a path segment may hold unencoded. */
export function encodePathSegment(s: string): string {
  return encodeURIComponent(s).replace(/%(3A|40|21|24|26|27|28|29|2A|2B|2C|3B|3D)/g, (_m, hex: string) => String.fromCharCode(parseInt(hex, 16)));
}

export function decodeSegment(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    throw badRequest(`invalid path segment ${JSON.stringify(s)}`);
  }
}
