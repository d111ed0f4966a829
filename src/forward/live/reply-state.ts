import type { FastifyInstance } from 'fastify';
import type { LiveBufferHold } from '../live-read-limits.js';
import type { AnswerEdits } from './answer-edits.js';

/**
 * What a live read keeps on its reply until its answer is written: the edits its answer takes
 * (answer-edits.ts), and its hold on the bytes live reads may hold (send.ts takes the answer's
 * bytes too). A fastify decoration (decorateLiveReads, called where the server is built), null
 * on every other reply.
 */
export interface LiveReplyState {
  edits?: AnswerEdits;
  hold?: LiveBufferHold;
}

declare module 'fastify' {
  interface FastifyReply {
    liveRead: LiveReplyState | null;
  }
}

/** Declares the live read state on every reply of `app` (before the plugins that read live). */
export function decorateLiveReads(app: FastifyInstance): void {
  app.decorateReply('liveRead', null);
}
