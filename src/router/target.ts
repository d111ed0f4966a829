import type { IncomingMessage } from 'node:http';
import type { FleetMembers } from '../cacher/cache-roles.js';
import { parseRequestPath, type RequestTarget } from '../api/request-info.js';
import { checkAddressedCluster } from '../forward/owner.js';
import { stateOf } from './request-state.js';

/**
 * What a request's path names, read as the apiserver's RequestInfo does (a bad path is a 400) and
 * with a `/clusters/<name>/` that names no member a 404: once per request, whatever route took it.
 */
export function targetOf(req: IncomingMessage, fleet: FleetMembers): RequestTarget {
  const url = req.url ?? '/';
  const state = stateOf(req);
  // A tenant's request is read again once in the member's names (src/tenancy/request-names.ts).
  if (state.target?.url === url) return state.target.target;
  const target = parseRequestPath(url);
  checkAddressedCluster(fleet, target);
  state.target = { url, target };
  return target;
}

/** Routes are registered at the root and under a member's prefix alike. */
export const CLUSTER_PREFIXES = ['', '/clusters/:cluster'];
