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
  const path = rawPath.split('?')[0] ?? '';
  let parts = path.split('/').filter((p) => p.length > 0).map(decodeSegment);
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

function decodeSegment(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    throw badRequest(`invalid path segment ${JSON.stringify(s)}`);
  }
}
