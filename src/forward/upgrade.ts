import { edgeUrl } from '../api/fleet-path.js';
import { STATUS_CODES, type IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { StatusError, internalError, rewordStatusBody, timeout, writeRawStatus } from '../api/status.js';
import type { UpgradeResult } from '../members/member-client.js';
import { UPGRADE_HANDSHAKE_TIMEOUT_MS, UPGRADE_LINGER_MS } from '../registry/defaults.js';
import { clusterPrefix, forwardedRequestHeaders, forwardedResponseHeaders, memberFailure, noConnection, readErrorAnswer, resolveStreamTarget, unreadableRefusal, type OpenStreams, type StreamingDeps, type StreamTarget, type SubresourceMetrics, type TenantWords } from './streaming.js';

/**
 * exec, attach, portforward and proxied upgrades: the client's upgrade request goes to the owning
 * member as it came (method, path, query, the offered protocols), and once the member answers 101
 * the two sockets are joined byte for byte. Flotilla never reads the streams: websocket channels
 * and SPDY frames alike pass through. A member that does not switch protocols is answered back
 * verbatim, which is how kubectl learns to fall back from websocket to SPDY; a tenant reads its
 * refusals in its own names, as fastify's onSend rewords every other answer, which upgrades pass by.
 */

export function handleUpgrade(deps: StreamingDeps, metrics: SubresourceMetrics, open: OpenStreams, req: IncomingMessage, socket: Duplex, head: Buffer): void {
  // Until joined, a client reset must not become an unhandled error.
  const ignore = () => undefined;
  socket.on('error', ignore);
  // Upgrades never reach fastify's router, nor its URL rewrite: the same rewrite here.
  req.url = edgeUrl(req.url ?? '/');
  const caller: { tenant?: TenantWords } = {};
  connect(deps, metrics, open, req, socket, head, caller).catch((e: unknown) => {
    const err = e instanceof StatusError ? e : internalError(`flotilla failed to forward ${req.method} ${(req.url ?? '').split('?')[0]}: ${(e as Error).message}`);
    const tenant = caller.tenant;
    writeRawStatus(socket, err, tenant ? { reword: (text) => tenant.tenantText(text) } : {});
  });
}

async function connect(deps: StreamingDeps, metrics: SubresourceMetrics, open: OpenStreams, req: IncomingMessage, socket: Duplex, head: Buffer, caller: { tenant?: TenantWords }): Promise<void> {
  const tenant = await deps.enterTenant?.(req);
  if (tenant) caller.tenant = tenant;
  const target = await resolveStreamTarget(deps, req, req.url ?? '/');
  const protocol = upgradeProtocol(req);
  const count = (code: number) => metrics.requests.inc({ cluster: target.cluster, subresource: target.subresource, protocol, code: String(code) });
  const member = deps.fleet.member(target.cluster);
  if (!member) {
    count(503);
    throw noConnection(target.cluster);
  }
  const callerHeaders = deps.callerHeaders ? await deps.callerHeaders(req) : {};

  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(new Error(`no answer to the upgrade within ${UPGRADE_HANDSHAKE_TIMEOUT_MS / 1000} s`)), UPGRADE_HANDSHAKE_TIMEOUT_MS);
  const onClientGone = () => abort.abort(new Error('the client went away'));
  socket.once('close', onClientGone);
  let result: UpgradeResult;
  try {
    result = await member.upgrade({
      method: req.method ?? 'GET',
      path: target.path,
      headers: { ...forwardedRequestHeaders(req.rawHeaders, true), ...callerHeaders },
      signal: abort.signal,
    });
  } catch (e) {
    const err = abort.signal.aborted && !socket.destroyed
      ? timeout(`cluster "${target.cluster}" did not answer the ${target.subresource} upgrade within ${UPGRADE_HANDSHAKE_TIMEOUT_MS / 1000} s`)
      : memberFailure(target.cluster, e);
    count(err.code);
    throw err;
  } finally {
    clearTimeout(timer);
    socket.off('close', onClientGone);
  }
  count(result.res.statusCode ?? 0);

  if (!result.upgraded) {
    const refusal = (result.res.statusCode ?? 0) >= 400 && tenant ? await refusalForTenant(result.res, target, tenant) : undefined;
    if (refusal) writeRawAnswer(socket, result.res, refusal);
    else passBack(socket, result.res, req.url ?? '/');
    return;
  }
  const upstream = result.socket;
  if (socket.destroyed) {
    upstream.destroy();
    return;
  }
  const res = result.res;
  const lines = [`HTTP/1.1 ${res.statusCode} ${res.statusMessage ?? STATUS_CODES[res.statusCode ?? 101] ?? ''}`];
  const headers = forwardedResponseHeaders(res.rawHeaders, { upgrade: true });
  for (let i = 0; i < headers.length; i += 2) lines.push(`${headers[i]}: ${headers[i + 1]}`);
  socket.write(`${lines.join('\r\n')}\r\n\r\n`);
  // Bytes each side sent right behind its head belong to the stream.
  if (result.head.length) socket.write(result.head);
  if (head.length) upstream.write(head);
  metrics.streams.inc({ subresource: target.subresource });
  const cut = () => {
    socket.destroy();
    upstream.destroy();
  };
  open.add(cut);
  join(socket, upstream, () => {
    open.delete(cut);
    metrics.streams.dec({ subresource: target.subresource });
  });
}

/** `websocket` or `spdy` (from `SPDY/3.1`), for the metrics. */
function upgradeProtocol(req: IncomingMessage): string {
  const offered = (req.headers.upgrade ?? '').toLowerCase();
  if (offered.includes('websocket')) return 'websocket';
  if (offered.startsWith('spdy')) return 'spdy';
  return offered.split('/')[0] || 'unknown';
}

/** Pipes both ways; an end travels to the other side, an error or a lingering half cuts both. */
function join(a: Duplex, b: Duplex, onClosed: () => void): void {
  for (const s of [a, b]) {
    (s as Duplex & { setNoDelay?: (v: boolean) => void }).setNoDelay?.(true);
    (s as Duplex & { setTimeout?: (ms: number) => void }).setTimeout?.(0);
  }
  let open = 2;
  const closed = (other: Duplex) => () => {
    if (!other.destroyed) {
      other.end();
      // Its pipe went with the closed side: drain what it still sends so its end is seen.
      other.resume();
      setTimeout(() => other.destroy(), UPGRADE_LINGER_MS).unref();
    }
    if (--open === 0) onClosed();
  };
  a.on('error', () => b.destroy());
  b.on('error', () => a.destroy());
  a.once('close', closed(b));
  b.once('close', closed(a));
  a.pipe(b);
  b.pipe(a);
}

/**
 * A member's refusal of a tenant's upgrade in the tenant's names: a JSON Status reworded, a
 * protobuf or YAML one as its code and reason alone; undefined for any other body (a proxied
 * application's own), which passes back as it came.
 */
async function refusalForTenant(res: IncomingMessage, target: StreamTarget, tenant: TenantWords): Promise<{ contentType: string; body: string } | undefined> {
  const status = res.statusCode ?? 0;
  const type = String(res.headers['content-type'] ?? '');
  const reword = (text: string) => tenant.tenantText(text);
  const unreadable = unreadableRefusal(status, type, target.cluster, target.subresource);
  if (unreadable) {
    res.resume();
    return { contentType: 'application/json', body: rewordStatusBody(JSON.stringify(unreadable.toStatus()), reword) };
  }
  if (!type.startsWith('application/json')) return undefined;
  return { contentType: type, body: rewordStatusBody((await readErrorAnswer(res)).toString('utf8'), reword) };
}

/** The member's status line with a body of flotilla's, then the connection ends. */
function writeRawAnswer(socket: Duplex, res: IncomingMessage, answer: { contentType: string; body: string }): void {
  if (socket.destroyed || !socket.writable) return;
  const status = res.statusCode ?? 500;
  socket.end(`HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\nContent-Type: ${answer.contentType}\r\nContent-Length: ${Buffer.byteLength(answer.body)}\r\nConnection: close\r\n\r\n${answer.body}`, () => socket.destroy());
}

/** A member that did not switch protocols: its status, headers and body, then the connection ends. */
function passBack(socket: Duplex, res: IncomingMessage, url: string): void {
  const headers = forwardedResponseHeaders(res.rawHeaders, { upgrade: false, clusterPrefix: clusterPrefix(url) });
  const lines = [`HTTP/1.1 ${res.statusCode} ${res.statusMessage ?? STATUS_CODES[res.statusCode ?? 500] ?? ''}`];
  for (let i = 0; i < headers.length; i += 2) lines.push(`${headers[i]}: ${headers[i + 1]}`);
  // Without a length, the body runs to the end of the connection (chunked framing was the member's hop).
  lines.push('Connection: close');
  socket.write(`${lines.join('\r\n')}\r\n\r\n`);
  res.on('error', () => socket.destroy());
  res.pipe(socket);
}
