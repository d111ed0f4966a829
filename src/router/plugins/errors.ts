import type { FastifyPluginAsync } from 'fastify';
import fp from 'fastify-plugin';
import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import type { FleetMembers } from '../../cacher/cache-manager.js';
import { StatusError, internalError } from '../../api/status.js';
import { answerConnect } from '../client-errors.js';
import { notServed, sendStatus } from '../replies.js';
import { targetOf } from '../target.js';

/**
 * Every failure is a Kubernetes `Status`: thrown StatusErrors as they are, fastify's own 4xx with
 * the reason the apiserver gives them, anything else a 500 naming the request; paths no route
 * takes are 404 (or 400, if the path itself is malformed); CONNECT is 405. Global (not
 * encapsulated): it covers every plugin registered after it.
 */
export interface ErrorsOptions {
  fleet: FleetMembers;
}

const errors: FastifyPluginAsync<ErrorsOptions> = async (app, { fleet }) => {
  app.server.on('connect', (_req: IncomingMessage, socket: Socket) => answerConnect(socket));

  app.setErrorHandler((err: Error & { statusCode?: number }, req, reply) => {
    if (err instanceof StatusError) return sendStatus(reply, err);
    if (err.statusCode && err.statusCode >= 400 && err.statusCode < 500) {
      const reason = err.statusCode === 415 ? 'UnsupportedMediaType' : err.statusCode === 413 ? 'RequestEntityTooLarge' : 'BadRequest';
      return sendStatus(reply, new StatusError(err.statusCode, reason, err.message));
    }
    req.log.error({ err, url: req.url }, 'request failed');
    return sendStatus(reply, internalError(`flotilla failed to serve ${req.method} ${req.url.split('?')[0]}: ${err.message}`));
  });

  app.setNotFoundHandler((req, reply) => {
    targetOf(req, fleet);
    return sendStatus(reply, notServed());
  });
};

export const errorsPlugin = fp(errors, { name: 'flotilla-errors', fastify: '5.x' });
