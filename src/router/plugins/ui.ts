import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { notServed } from '../../api/status.js';
import { STATUS_PAGE_METRICS_EVERY_POLLS, STATUS_PAGE_POLL_MS } from '../../registry/defaults.js';
import { STATUS_PAGE_CSS, statusPageHtml } from '../ui/page.js';
import { fleetStateGuard, type FleetStateReaders } from './status.js';

/**
 * The status page at /ui/: an HTML page, its style sheet and its scripts, all served by flotilla
 * itself, which read /status and /metrics from the same origin. The page shows what /status
 * shows, so it is served exactly to those who may read /status (the same check, asked of /status).
 * The scripts are this package's own compiled modules (src/router/ui/), read once from beside
 * this file: nothing is fetched from anywhere else, and the policy below lets the browser load
 * nothing else.
 */
export type UiOptions = FleetStateReaders;

const POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

/** The compiled modules the page loads, by the name it asks for. */
const SCRIPTS = new Set(['status-page.js', 'status-page-model.js']);

const SOURCE_MAP_LINE = /\n\/\/# sourceMappingURL=.*\s*$/;

export const uiPlugin: FastifyPluginAsync<UiOptions> = async (app, readers) => {
  const scripts = new Map<string, Promise<string>>();
  const script = (name: string): Promise<string> => {
    let text = scripts.get(name);
    if (!text) {
      text = readFile(fileURLToPath(new URL(`../ui/${name}`, import.meta.url)), 'utf8').then((js) => js.replace(SOURCE_MAP_LINE, '\n'));
      // A failed read (a build without the page) is tried again on the next request.
      text.catch(() => scripts.delete(name));
      scripts.set(name, text);
    }
    return text;
  };
  const page = statusPageHtml(STATUS_PAGE_POLL_MS, STATUS_PAGE_METRICS_EVERY_POLLS);

  app.addHook('onRequest', fleetStateGuard(readers, '/status'));
  app.addHook('onSend', async (_req, reply, payload) => {
    reply.header('content-security-policy', POLICY);
    reply.header('x-content-type-options', 'nosniff');
    reply.header('referrer-policy', 'no-referrer');
    reply.header('cache-control', 'no-cache');
    return payload;
  });

  const send = (reply: FastifyReply, type: string, body: string) => reply.type(type).send(body);
  app.get('/ui/', async (req, reply) => {
    // The page's paths are relative to /ui/: /ui itself is sent there (relative, so a prefix is kept).
    if (!req.url.split('?')[0]!.endsWith('/')) return reply.redirect('ui/', 302);
    return send(reply, 'text/html; charset=utf-8', page);
  });
  app.get('/ui/status-page.css', async (_req, reply) => send(reply, 'text/css; charset=utf-8', STATUS_PAGE_CSS));
  app.get('/ui/:script', async (req, reply) => {
    const name = (req.params as { script: string }).script;
    if (!SCRIPTS.has(name)) throw notServed();
    let js: string;
    try {
      js = await script(name);
    } catch (e) {
      req.log.error({ err: e, script: name }, 'status page script missing from the build');
      throw notServed();
    }
    return send(reply, 'text/javascript; charset=utf-8', js);
  });
};
