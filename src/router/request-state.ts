import type { IncomingMessage } from 'node:http';
import type { RequestTarget } from '../api/request-info.js';
import type { Identity } from '../auth/identity.js';
import type { Tenant } from '../tenancy/tenant.js';
import type { RefusalReason } from '../api/status.js';

/**
 * What flotilla decides about a request once and reads many times: what its path names, who the
 * caller is, its tenant. It is kept on the request itself: fastify's requests reach it as the
 * `flotilla` decoration; an upgrade (exec, attach, port-forward), which fastify never sees, and
 * the forwarders, which are handed the raw request, reach the same object through stateOf().
 */
export interface RequestState {
  /** The path as last read; a tenant's request is read again once in its member's names. */
  target?: { url: string; target: RequestTarget };
  /** null: no caller was identified (anonymous access is off and it sent no credentials). */
  identity?: Identity | null;
  /** The tenant whose names the request was rewritten into; null: none. */
  tenant?: Tenant | null;
  /** The authenticated caller's tenant, known as soon as the identity is, before any rewrite. */
  decidedTenant?: Tenant;
  /** Why flotilla refused the request with 429 itself (its metric's label and log line). */
  refusal?: RefusalReason;
  /** How long a fresh read waited for its members' confirmation (reads/cached.ts), for its log line. */
  freshReadMs?: number;
}

const STATE = Symbol('flotilla.requestState');

type WithState = IncomingMessage & { [STATE]?: RequestState };

/** The request's state, made on first use: whichever path the request entered by. */
export function stateOf(req: IncomingMessage): RequestState {
  const carrier = req as WithState;
  return (carrier[STATE] ??= {});
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The request's state (stateOf(req.raw)). */
    readonly flotilla: RequestState;
  }
}
