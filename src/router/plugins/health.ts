import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { CacheHealth } from '../../cacher/cache-roles.js';
import type { HealthSlis } from '../../metrics/health-slis.js';
import { notServed, serviceUnavailable } from '../../api/status.js';
import type { StoreHealth } from '../../store/store.js';

/** Liveness and readiness: ready once every configured cacher has synced. */
export interface HealthOptions {
  health: CacheHealth;
  /** Each check's evaluations, for /metrics/slis. */
  slis?: HealthSlis;
  /** Not ready while the store refuses writes (a full volume, damage): the cache falls behind its members. */
  store?: { health(): StoreHealth };
}

interface HealthCheck {
  name: string;
  passes(): boolean;
  /** What a failure means, in the Status of a failure without `?verbose`. */
  failure: string;
}

/**
 * The endpoints as an apiserver serves them (k8s.io/apiserver's healthz): each runs its named
 * checks; `?verbose` lists them (`[+]ping ok`), `?exclude=<name>` leaves one out, and
 * `/<endpoint>/<check>` runs one alone. A check that fails shows as `[-]<name> failed: reason
 * withheld` (the reason names no member, cacher or resource), and the answer is 503: not ready,
 * where an apiserver answers 500. Without `?verbose` a failure is a Status naming the checks that
 * failed and what that means.
 */
export const healthPlugin: FastifyPluginAsync<HealthOptions> = async (app, { health, slis, store }) => {
  const ping: HealthCheck = { name: 'ping', passes: () => true, failure: 'no answer' };
  const cacheSync: HealthCheck = { name: 'cache-sync', passes: () => health.isSynced(), failure: 'not every cacher has synced yet' };
  const storeWritable: HealthCheck = { name: 'store', passes: () => store?.health().writable !== false, failure: 'the cache store refuses writes (see /status)' };
  const endpoints: Record<string, HealthCheck[]> = { healthz: [ping], livez: [ping], readyz: [ping, cacheSync, storeWritable] };
  for (const [type, checks] of Object.entries(endpoints)) {
    const run = (check: HealthCheck): boolean => {
      const passed = check.passes();
      slis?.observe(check.name, type, passed);
      return passed;
    };
    app.get(`/${type}`, async (req, reply) => answerAll(req, reply, type, checks, run));
    app.get(`/${type}/:check`, async (req, reply) => {
      const name = (req.params as { check: string }).check;
      const check = checks.find((c) => c.name === name);
      if (!check) throw notServed();
      if (!run(check)) throw serviceUnavailable(`${type} check ${name} failed: ${check.failure}`);
      return plain(reply).send('ok');
    });
  }
};

function answerAll(req: FastifyRequest, reply: FastifyReply, type: string, checks: HealthCheck[], run: (c: HealthCheck) => boolean): FastifyReply {
  const query = req.query as Record<string, string | string[] | undefined>;
  const excluded = new Set(([] as string[]).concat(query['exclude'] ?? []).flatMap((e) => e.split(',')).filter((e) => e !== ''));
  const lines: string[] = [];
  const failed: HealthCheck[] = [];
  for (const check of checks) {
    if (excluded.delete(check.name)) {
      lines.push(`[+]${check.name} excluded: ok`);
    } else if (run(check)) {
      lines.push(`[+]${check.name} ok`);
    } else {
      lines.push(`[-]${check.name} failed: reason withheld`);
      failed.push(check);
    }
  }
  if (excluded.size > 0) lines.push(`warn: some health checks cannot be excluded: no matches for ${[...excluded].sort().map((e) => JSON.stringify(e)).join(',')}`);
  const verbose = query['verbose'] !== undefined;
  if (failed.length > 0 && !verbose) throw serviceUnavailable(`${type} check failed: ${failed.map((c) => `${c.name}: ${c.failure}`).join('; ')}`);
  if (failed.length > 0) return plain(reply).code(503).send(`${lines.join('\n')}\n${type} check failed`);
  return plain(reply).send(verbose ? `${lines.join('\n')}\n${type} check passed\n` : 'ok');
}

function plain(reply: FastifyReply): FastifyReply {
  return reply.type('text/plain; charset=utf-8').header('x-content-type-options', 'nosniff');
}
