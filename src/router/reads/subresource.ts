import { notServed } from '../../api/status.js';
import { forwardRead, type ForwardDeps } from '../../forward/writes.js';
import { cachedScope, type ReadHandler } from './read-handler.js';

/** A cached resource's subresource (status, scale): the owning member's to answer. */
export function subresourceHandler(forward: ForwardDeps): ReadHandler {
  return {
    name: 'subresource',
    serves: (read) => cachedScope(read) && read.target.subresource !== undefined,
    serve: async ({ req, reply, target }) => {
      if (target.name === undefined) throw notServed();
      return forwardRead(req, reply, forward, target);
    },
  };
}
