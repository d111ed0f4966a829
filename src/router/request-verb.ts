import { parseRequestPath } from '../api/request-info.js';
import type { Verb } from '../metrics/http-series.js';

/** Subresources that hold a connection to a pod or a member's proxy: the apiserver's `connect` verb. */
const CONNECT_SUBRESOURCES = new Set(['exec', 'attach', 'portforward', 'proxy']);

/**
 * A request's Kubernetes verb, as the apiserver's RequestInfo names it, for the log and the metrics;
 * `longRunning` for a request that lasts as long as its client wants (a watch, a connection, a
 * followed log). A path that names no resource is `other`.
 */
export function requestVerb(method: string, url: string): { verb: Verb; longRunning: boolean } {
  let target;
  try {
    target = parseRequestPath(url);
  } catch {
    // A malformed path is answered 400 by the router; for the log it is just not a resource verb.
    return { verb: 'other', longRunning: false };
  }
  if (target.type !== 'resource') return { verb: 'other', longRunning: false };
  const query = new URLSearchParams(url.split('?')[1] ?? '');
  const sub = target.subresource?.split('/')[0];
  if (sub !== undefined && CONNECT_SUBRESOURCES.has(sub)) return { verb: 'connect', longRunning: true };
  switch (method) {
    case 'GET':
    case 'HEAD': {
      const watch = query.get('watch');
      // The legacy /api/v1/watch/… paths read their first segment as the resource.
      if (watch === 'true' || watch === '1' || target.resource === 'watch') return { verb: 'watch', longRunning: true };
      const follow = sub === 'log' && (query.get('follow') === 'true' || query.get('follow') === '1');
      return { verb: target.name !== undefined ? 'get' : 'list', longRunning: follow };
    }
    case 'POST':
      return { verb: 'create', longRunning: false };
    case 'PUT':
      return { verb: 'update', longRunning: false };
    case 'PATCH':
      return { verb: 'patch', longRunning: false };
    case 'DELETE':
      return { verb: target.name !== undefined ? 'delete' : 'deletecollection', longRunning: false };
    default:
      return { verb: 'other', longRunning: false };
  }
}
