import type { FastifyPluginAsync } from 'fastify';
import fp from 'fastify-plugin';
import { stateOf } from '../request-state.js';

/** `req.flotilla`: the request's state (request-state.ts), one object per request. Global. */
const requestState: FastifyPluginAsync = async (app) => {
  app.decorateRequest('flotilla', {
    getter() {
      return stateOf(this.raw);
    },
  });
};

export const requestStatePlugin = fp(requestState, { name: 'flotilla-request-state', fastify: '5.x' });
