import type { IncomingMessage } from 'node:http';
import type { FleetMembers } from '../cacher/cache-manager.js';
import { parseRequestPath, type RequestTarget } from '../api/request-info.js';
import { checkAddressedCluster } from '../forward/owner.js';

const targets = new WeakMap<IncomingMessage, { url: string; target: RequestTarget }>();

/**
 * What a request's path names, read as the apiserver's RequestInfo does (a bad path is a 400) and
 * with a `/clusters/<name>/` that names no member a 404: once per request, whatever route took it.
 */
export function targetOf(req: IncomingMessage, fleet: FleetMembers): RequestTarget {
  const url = req.url ?? '/';
  const known = targets.get(req);
  // A tenant's request is read again once in the member's names (src/tenancy/request-names.ts).
  if (known?.url === url) return known.target;
  const target = parseRequestPath(url);
  checkAddressedCluster(fleet, target);
  targets.set(req, { url, target });
  return target;
}

/** Routes are registered at the root and under a member's prefix alike. */
export const CLUSTER_PREFIXES = ['', '/clusters/:cluster'];
