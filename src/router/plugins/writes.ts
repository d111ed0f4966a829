import type { FastifyPluginAsync } from 'fastify';
import type { FleetMembers } from '../../cacher/cache-roles.js';
import { forwardWrite, type ForwardDeps } from '../../forward/writes.js';
import { targetOf } from '../target.js';

/**
 * Writes (create, update, patch, delete, deletecollection and the plain subresources) go to the
 * owning member as the caller (src/forward).
 */
export interface WritesOptions {
  fleet: FleetMembers;
  forward: ForwardDeps;
}

// The apiserver's limit on a request body is 3 MiB of object plus some room for the envelope.
const BODY_LIMIT = 3 * 1024 * 1024 + 512 * 1024;

export const writesPlugin: FastifyPluginAsync<WritesOptions> = async (app, { fleet, forward }) => {
  // Bodies are forwarded as they came (JSON, YAML, protobuf): never parsed by fastify.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: BODY_LIMIT }, (_req, body, done) => done(null, body));
  app.route({
    method: ['POST', 'PUT', 'PATCH', 'DELETE'],
    url: '/*',
    handler: async (req, reply) => forwardWrite(req, reply, forward, targetOf(req.raw, fleet)),
  });
};
