import type { FastifyPluginAsync } from 'fastify';
import type { CacheHealth } from '../../cacher/cache-manager.js';
import { serviceUnavailable } from '../../api/status.js';

/** Liveness and readiness: ready once every configured cacher has synced. */
export interface HealthOptions {
  health: CacheHealth;
}

export const healthPlugin: FastifyPluginAsync<HealthOptions> = async (app, { health }) => {
  for (const path of ['/healthz', '/livez']) app.get(path, async (_req, reply) => reply.type('text/plain').send('ok'));
  app.get('/readyz', async (_req, reply) => {
    if (!health.isSynced()) throw serviceUnavailable('not every cacher has synced yet');
    return reply.type('text/plain').send('ok');
  });
};
