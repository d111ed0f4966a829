import type { FastifyPluginAsync } from 'fastify';
import fp from 'fastify-plugin';
import { parse as parseQuery } from 'node:querystring';
import { badRequest, rewordStatusBody, unauthorized } from '../../api/status.js';
import type { Callers } from '../callers.js';

/**
 * Who the caller is, before any route runs: a request without a Host header is a 400 (HTTP/1.1
 * requires one), one flotilla cannot authenticate a 401 (system:anonymous where the fleet file
 * allows it), except for what anyone may read. Global: it covers every plugin registered after it.
 */
export interface AuthenticationOptions {
  callers: Callers;
}

// What anyone may read, as the apiserver's system:public-info-viewer role allows.
const PUBLIC_PATHS = new Set(['/healthz', '/livez', '/readyz', '/version']);

const authentication: FastifyPluginAsync<AuthenticationOptions> = async (app, { callers }) => {
  app.addHook('onRequest', async (req) => {
    if (req.raw.httpVersion === '1.1' && !req.headers.host) throw badRequest('missing required Host header');
    if (PUBLIC_PATHS.has(req.url.split('?')[0]!)) return;
    // No shortcut for an unconfigured authenticator: without credentials a caller is system:anonymous
    // only where the fleet file says `authentication.anonymous: true`, else it is refused here.
    if (!(await callers.identify(req.raw))) throw unauthorized('Unauthorized: send a bearer token or a client certificate');
    // A tenant's request goes on in the member's names; the parsed query follows its URL.
    if (await callers.tenantOf(req.raw)) {
      const url = req.raw.url ?? '/';
      req.query = parseQuery(url.includes('?') ? url.slice(url.indexOf('?') + 1) : '');
    }
  });
  // A tenant reads every Warning and every error in its names (member answers and flotilla's own
  // alike): reworded here, once, as the answer leaves, whichever route or handler made it.
  app.addHook('onSend', async (req, reply, payload) => {
    const tenant = callers.tenantDecided(req.raw);
    if (!tenant) return payload;
    const warning = reply.getHeader('warning');
    if (warning !== undefined) {
      reply.header('warning', (Array.isArray(warning) ? warning : [String(warning)]).map((w) => tenant.tenantText(String(w))));
    }
    if (reply.statusCode < 400 || !String(reply.getHeader('content-type') ?? '').startsWith('application/json')) return payload;
    const words = (text: string) => tenant.tenantText(text);
    if (typeof payload === 'string') return rewordStatusBody(payload, words);
    if (Buffer.isBuffer(payload)) return rewordStatusBody(payload.toString('utf8'), words);
    return payload;
  });
};

export const authenticationPlugin = fp(authentication, { name: 'flotilla-authentication', fastify: '5.x', dependencies: ['flotilla-errors'] });
