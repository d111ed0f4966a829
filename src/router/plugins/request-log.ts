import type { FastifyPluginAsync } from 'fastify';
import fp from 'fastify-plugin';
import { StatusError } from '../../api/status.js';
import type { HttpSeries } from '../../metrics/http-series.js';
import { LOG_REPEAT_WINDOW_MS } from '../../registry/defaults.js';
import { RepeatGate } from '../../util/structured-log.js';
import { requestVerb } from '../request-verb.js';

/**
 * One log line per request, at info (a successful probe or scrape at debug), when its answer ends (a watch when it closes): request id,
 * caller (the user name only), Kubernetes verb, path (without its query), status and duration;
 * and the request counted in the HTTP series. Nothing else of the request is written: no header,
 * no query, no body, so no credential and nothing the answer held. A fresh read adds how long its members' confirmation took (`freshReadMs`). The path is the caller's own,
 * as sent, before a tenant's names are rewritten. A 429 is also said at warn, with why, once a
 * window per reason. Global: it sees every route.
 */
export interface RequestLogOptions {
  http: HttpSeries;
}

/** Probes and scrapes come every few seconds from kubelets and Prometheus: their lines are at debug. */
const PROBE_PATHS = /^\/(healthz|livez|readyz|metrics)(\/|$)/;

const requestLog: FastifyPluginAsync<RequestLogOptions> = async (app, { http }) => {
  const refusedGate = new RepeatGate(LOG_REPEAT_WINDOW_MS);
  app.addHook('onError', async (req, _reply, err) => {
    if (err instanceof StatusError && err.refusal) req.flotilla.refusal = err.refusal;
  });
  app.addHook('onRequest', async (req, reply) => {
    const started = performance.now();
    const url = req.url;
    const path = url.split('?')[0]!;
    const { verb, longRunning } = requestVerb(req.method, url);
    reply.raw.once('close', () => {
      const seconds = (performance.now() - started) / 1000;
      const status = reply.raw.statusCode;
      const caller = req.flotilla.identity?.user;
      // Ended before its answer did: the client went away (or the server closed a watch).
      const cut = !reply.raw.writableFinished;
      http.observe(verb, status, seconds, longRunning);
      const level = PROBE_PATHS.test(path) && status < 400 ? 'debug' : 'info';
      const fresh = req.flotilla.freshReadMs;
      req.log[level]({ caller, verb, path, status, durationMs: Math.round(seconds * 10_000) / 10, ...(fresh !== undefined ? { freshReadMs: fresh } : {}), ...(cut ? { cut: true } : {}) }, 'request');
      if (status !== 429) return;
      // A 429 flotilla did not refuse itself came from a member, passed on.
      const reason = req.flotilla.refusal ?? 'member';
      http.refused(reason);
      const { pass, held } = refusedGate.pass(reason);
      if (pass) req.log.warn({ caller, verb, path, event: 'request-refused', reason, ...(held ? { repeats: held } : {}) }, `request refused with 429 (${reason})`);
    });
  });
};

export const requestLogPlugin = fp(requestLog, { name: 'flotilla-request-log', fastify: '5.x' });
