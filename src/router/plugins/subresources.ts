import type { FastifyPluginAsync } from 'fastify';
import { registerSubresources, type SubresourceDeps } from '../../forward/subresources.js';

/**
 * Logs, exec, attach, port-forward and proxy stream straight through to the owning member, as the
 * caller; upgrades (exec, attach, port-forward over SPDY or websockets) are taken off the HTTP
 * server before fastify sees them.
 */
export const subresourcesPlugin: FastifyPluginAsync<SubresourceDeps> = async (app, deps) => registerSubresources(app, deps);
