import type { FastifyPluginAsync } from 'fastify';
import type { Registry } from 'prom-client';
import type { CacheHealth } from '../../cacher/cache-manager.js';
import { sendJson } from '../replies.js';

/** Each cacher's state at /status, and every series at /metrics (Prometheus). */
export interface StatusOptions {
  health: CacheHealth;
  metrics: Registry;
}

export const statusPlugin: FastifyPluginAsync<StatusOptions> = async (app, { health, metrics }) => {
  app.get('/status', async (_req, reply) => sendJson(reply, { synced: health.isSynced(), cachers: health.status() }));
  app.get('/metrics', async (_req, reply) => reply.type(metrics.contentType).send(await metrics.metrics()));
};
