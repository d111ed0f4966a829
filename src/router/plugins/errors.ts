import type { FastifyPluginAsync } from 'fastify';
import fp from 'fastify-plugin';
import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import type { FleetMembers } from '../../cacher/cache-roles.js';
import { StatusError, internalError, notServed } from '../../api/status.js';
import { answerConnect } from '../client-errors.js';
import { hasBody } from '../../forward/streaming.js';
import { sendStatus } from '../replies.js';
import { targetOf } from '../target.js';
import { BODY_DRAIN_WAIT_MS } from '../../registry/defaults.js';

/**
 * Every failure is a Kubernetes `Status`: thrown StatusErrors as they are, fastify's own 4xx with
 * the reason the apiserver gives them, anything else a 500 naming the request; paths no route
 * takes are 404 (or 400, if the path itself is malformed); CONNECT is 405. Global (not
 * encapsulated): it covers every plugin registered after it. GET bodies are drained here too.
 */
export interface ErrorsOptions {
  fleet: FleetMembers;
}


const errors: FastifyPluginAsync<ErrorsOptions> = async (app, { fleet }) => {
  app.server.on('connect', (_req: IncomingMessage, socket: Socket) => answerConnect(socket));

  // A GET's (or HEAD's) body means nothing to any route, and fastify does not read it; left unread
  // it would be on the connection when it closes, and the kernel's reset would cut the answer
  // short. It is read and dropped as it comes, without holding the answer (a client may announce
  // a body it never sends): for every route and for a 401 or 404 alike.
  app.addHook('onRequest', async (req) => {
    if ((req.method === 'GET' || req.method === 'HEAD') && hasBody(req.headers)) req.raw.resume();
  });
  // And the answer waits (briefly) for the rest of that body: a connection closed while the client
  // still sends is reset, and the reset cuts the answer short on the client's side (kubectl sees
  // EPIPE, not the Status). So does a 413's, whose body nothing reads: it is read and dropped too.
  app.addHook('onSend', async (req, reply, payload) => {
    const raw = req.raw;
    const unread = hasBody(req.headers) && !raw.readableEnded && !raw.destroyed;
    if (unread && reply.statusCode === 413) raw.resume();
    if (unread && (req.method === 'GET' || req.method === 'HEAD' || reply.statusCode === 413)) {
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          raw.off('end', done).off('close', done).off('error', done);
          resolve();
        };
        const timer = setTimeout(done, BODY_DRAIN_WAIT_MS);
        raw.once('end', done).once('close', done).once('error', done);
      });
    }
    return payload;
  });

  app.setErrorHandler((err: Error & { statusCode?: number }, req, reply) => {
    // A tenant's caller reads it in its names: reworded as it is sent (the authentication plugin).
    if (err instanceof StatusError) return sendStatus(reply, err);
    if (err.statusCode && err.statusCode >= 400 && err.statusCode < 500) {
      const reason = err.statusCode === 415 ? 'UnsupportedMediaType' : err.statusCode === 413 ? 'RequestEntityTooLarge' : 'BadRequest';
      return sendStatus(reply, new StatusError(err.statusCode, reason, err.message));
    }
    req.log.error({ err, url: req.url }, 'request failed');
    return sendStatus(reply, internalError(`flotilla failed to serve ${req.method} ${req.url.split('?')[0]}: ${err.message}`));
  });

  app.setNotFoundHandler((req, reply) => {
    targetOf(req.raw, fleet);
    return sendStatus(reply, notServed());
  });
};

export const errorsPlugin = fp(errors, { name: 'flotilla-errors', fastify: '5.x' });
