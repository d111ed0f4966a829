import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { IncomingMessage } from 'node:http';
import type { Registry } from 'prom-client';
import { clusterPrefix, createSubresourceMetrics, forwardedRequestHeaders, forwardedResponseHeaders, hasBody, memberFailure, noConnection, readErrorAnswer, resolveStreamTarget, unreadableRefusal, type OpenStreams, type StreamingDeps, type StreamTarget, type SubresourceMetrics } from './streaming.js';
import { handleUpgrade } from './upgrade.js';

/**
 * pods/log and the proxy subresources (plus exec/attach/portforward asked without an upgrade,
 * which the member refuses in its own words) go to the member that owns the object, request and
 * response streamed through unbuffered. Upgrade requests are taken off the HTTP server before
 * fastify sees them (src/forward/upgrade.ts).
 */
export interface SubresourceDeps extends StreamingDeps {
  metrics?: Registry;
}

const PREFIXES = ['', '/clusters/:cluster'];
const POD = '/api/v1/namespaces/:namespace/pods/:name';
const SERVICE = '/api/v1/namespaces/:namespace/services/:name';
const NODE = '/api/v1/nodes/:name';

export function registerSubresources(app: FastifyInstance, deps: SubresourceDeps): void {
  const metrics = createSubresourceMetrics(deps.metrics);
  const open: OpenStreams = new Set();
  app.server.on('upgrade', (req: IncomingMessage, socket, head: Buffer) => handleUpgrade(deps, metrics, open, req, socket, head));
  app.addHook('preClose', async () => {
    for (const cut of [...open]) cut();
  });

  void app.register(async (scope) => {
    // A proxied body goes to the member as it arrives, whatever its type: nothing is parsed here.
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', (_req, _payload, done) => done(null));
    const handler = (req: FastifyRequest, reply: FastifyReply) => forward(deps, metrics, open, req, reply);
    for (const p of PREFIXES) {
      scope.get(`${p}${POD}/log`, handler);
      for (const sub of ['exec', 'attach', 'portforward']) scope.route({ method: ['GET', 'POST'], url: `${p}${POD}/${sub}`, handler });
      for (const base of [POD, SERVICE, NODE]) {
        scope.all(`${p}${base}/proxy`, handler);
        scope.all(`${p}${base}/proxy/*`, handler);
      }
    }
  });
}

async function forward(deps: SubresourceDeps, metrics: SubresourceMetrics, open: OpenStreams, req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  const target = await resolveStreamTarget(deps, req.raw, req.url);
  const member = deps.fleet.member(target.cluster);
  if (!member) throw noConnection(target.cluster);
  const caller = deps.callerHeaders ? await deps.callerHeaders(req.raw) : {};
  const count = (code: number) => metrics.requests.inc({ cluster: target.cluster, subresource: target.subresource, protocol: 'http', code: String(code) });

  // The client going away ends the member request too: a followed log must not outlive its reader.
  const abort = new AbortController();
  const onClientGone = () => abort.abort();
  reply.raw.once('close', onClientGone);
  const withBody = hasBody(req.headers);
  let res: IncomingMessage;
  try {
    res = await member.send({
      method: req.method,
      path: target.path,
      headers: { ...forwardedRequestHeaders(req.raw.rawHeaders, false), ...caller },
      ...(withBody ? { body: req.raw } : {}),
      signal: abort.signal,
      // A followed log or a proxied stream lasts as long as its client reads.
      lane: 'long-running',
    });
  } catch (e) {
    reply.raw.off('close', onClientGone);
    const err = memberFailure(target.cluster, e);
    count(err.code);
    throw err;
  }
  count(res.statusCode ?? 0);
  // A refusal is no stream: answered as flotilla's own answers are, so a tenant reads it in its
  // names. A protobuf or YAML one flotilla does not reword: a tenant gets its code and reason alone.
  const status = res.statusCode ?? 0;
  const type = String(res.headers['content-type'] ?? '');
  if (status >= 400 && type.startsWith('application/json')) {
    reply.raw.off('close', onClientGone);
    return answerStatus(reply, res);
  }
  const unreadable = status >= 400 ? unreadableRefusal(status, type, target.cluster, target.subresource) : undefined;
  if (unreadable && (await deps.enterTenant?.(req.raw)) !== undefined) {
    reply.raw.off('close', onClientGone);
    res.resume();
    throw unreadable;
  }
  return streamBack(reply, res, target, metrics, open, (complete) => {
    reply.raw.off('close', onClientGone);
    if (!complete) abort.abort();
  });
}

/** The member's error answer, read whole and sent through fastify's reply (whose onSend rewords it for a tenant). */
async function answerStatus(reply: FastifyReply, res: IncomingMessage): Promise<FastifyReply> {
  const body = await readErrorAnswer(res);
  for (const h of ['warning', 'retry-after', 'audit-id']) {
    const v = res.headers[h];
    if (v !== undefined) reply.header(h, v);
  }
  return reply.code(res.statusCode!).type(String(res.headers['content-type'])).send(body);
}

/** Writes the member's status and headers, then each chunk as it comes, until either side ends. */
function streamBack(reply: FastifyReply, res: IncomingMessage, target: StreamTarget, metrics: SubresourceMetrics, open: OpenStreams, done: (complete: boolean) => void): FastifyReply {
  reply.hijack();
  const out = reply.raw;
  metrics.streams.inc({ subresource: target.subresource });
  const cut = () => out.destroy();
  open.add(cut);
  let finished = false;
  const finish = () => {
    if (finished) return;
    finished = true;
    open.delete(cut);
    metrics.streams.dec({ subresource: target.subresource });
    done(res.complete);
  };
  out.writeHead(res.statusCode ?? 502, res.statusMessage, forwardedResponseHeaders(res.rawHeaders, { upgrade: false, clusterPrefix: clusterPrefix(reply.request.url) }));
  // Nothing held back: small log lines reach the client as the kubelet flushes them.
  out.flushHeaders();
  res.on('error', () => {
    // A member stream cut mid-body: the client sees its response end early, as it would directly.
    out.destroy();
    finish();
  });
  res.on('end', finish);
  out.on('close', () => {
    if (!res.complete) res.destroy();
    finish();
  });
  res.pipe(out);
  return reply;
}
