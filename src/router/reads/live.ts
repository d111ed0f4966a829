import { outsideCache } from '../../cacher/cache-roles.js';
import { servedLive } from '../../forward/live/config.js';
import type { LiveReadsConfig } from '../../registry/fleet-config.js';
import type { LiveReader } from './read-live.js';
import type { ReadHandler } from './read-handler.js';

/**
 * Reads the cache cannot answer, asked of the members: a resource not cached at all, and what a
 * resource cached in part (some namespaces, some clusters) holds outside the cache, where live
 * reads serve the resource.
 */
export function liveHandler(config: LiveReadsConfig, readLive: LiveReader): ReadHandler {
  return {
    name: 'live',
    serves: ({ target, resource }) => !resource || (servedLive(config, target.group, target.resource) && outsideCache(resource, target)),
    serve: ({ req, reply, target, resource }) => readLive(req, reply, target, resource?.clusters),
  };
}
