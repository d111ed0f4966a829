import type { FastifyPluginAsync } from 'fastify';
import fp from 'fastify-plugin';
import { badRequest } from '../../api/status.js';
import { isGoDuration } from '../../api/go-duration.js';
import { watchRequested } from '../../api/list-options.js';
import { streamingSubresource } from '../../forward/streaming.js';


/** As the apiserver's long-running check: watches, proxies, and the streaming subresources. */
function longRunning(url: string, query: URLSearchParams): boolean {
  if (watchRequested(query.get('watch'))) return true;
  const segments = url.split('?')[0]!.split('/');
  return segments.includes('watch') || segments.includes('proxy') || streamingSubresource(url) !== undefined;
}

/**
 * The `timeout` query parameter, read as the apiserver reads it before it authenticates: on a
 * request that is not long-running, a value that is not a Go duration is 400 "invalid timeout
 * specified in the request URL". (Flotilla bounds its own work by other means; a valid timeout
 * changes nothing here.)
 */
const requestTimeout: FastifyPluginAsync = async (app) => {
  app.addHook('onRequest', async (req) => {
    const url = req.raw.url ?? '/';
    const at = url.indexOf('?');
    if (at < 0 || !url.includes('timeout=', at)) return;
    const query = new URLSearchParams(url.slice(at + 1));
    const timeout = query.get('timeout');
    if (!timeout || isGoDuration(timeout) || longRunning(url, query)) return;
    throw badRequest(`invalid timeout specified in the request URL - time: invalid duration ${JSON.stringify(timeout)}`);
  });
};

export const requestTimeoutPlugin = fp(requestTimeout, { name: 'flotilla-request-timeout', fastify: '5.x', dependencies: ['flotilla-errors'] });
