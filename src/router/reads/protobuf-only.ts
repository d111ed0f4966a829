import { protobufOnly } from '../../api/negotiate.js';
import { watchRequested } from '../../api/list-options.js';
import { servedLive } from '../../forward/live/config.js';
import type { LiveReadsConfig } from '../../registry/fleet-config.js';
import { one, type ReadQuery as Query } from '../../api/list-options.js';
import type { LiveReader } from './read-live.js';
import { cachedScope, type ReadHandler } from './read-handler.js';

/**
 * A cached resource read by a client that takes protobuf alone: the cache holds JSON, so the
 * members answer, in protobuf, as for a resource not cached (where live reads serve it).
 */
export function protobufOnlyHandler(config: LiveReadsConfig, readLive: LiveReader): ReadHandler {
  return {
    name: 'protobuf-only',
    serves: (read) => {
      const { req, target } = read;
      if (!cachedScope(read) || !servedLive(config, target.group, target.resource)) return false;
      const watching = watchRequested(one(req.query as Query, 'watch'));
      return protobufOnly(req.headers.accept, { list: !watching && target.name === undefined });
    },
    serve: ({ req, reply, target, resource }) => readLive(req, reply, target, resource!.clusters),
  };
}
