import type { FastifyReply } from 'fastify';
import type { StatusError } from '../api/status.js';
import { AGGREGATED_DISCOVERY_V2 } from '../discovery/documents.js';

/** How the plugins answer: bytes as the apiserver writes them, every error a `Status`. */

// The longest delay a Node timer holds; a longer one fires at once.
export const MAX_TIMER_MS = 2 ** 31 - 1;

// Bytes, not a string: fastify re-formats a string reply's content type (quoted parameters, a
// charset); clients read these parameters, so they go out exactly as the apiserver writes them.
export function sendAggregated(reply: FastifyReply, doc: object): FastifyReply {
  return reply.header('content-type', AGGREGATED_DISCOVERY_V2).send(Buffer.from(JSON.stringify(doc)));
}

export function sendJson(reply: FastifyReply, doc: object): FastifyReply {
  return reply.type('application/json').send(JSON.stringify(doc));
}

export function sendBytes(reply: FastifyReply, body: Buffer): FastifyReply {
  return reply.type('application/json').send(body);
}

export function sendStatus(reply: FastifyReply, err: StatusError): FastifyReply {
  if (err.retryAfterSeconds !== undefined) reply.header('retry-after', String(err.retryAfterSeconds));
  return reply.code(err.code).type('application/json').send(JSON.stringify(err.toStatus()));
}
