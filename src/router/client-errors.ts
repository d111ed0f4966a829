import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { StatusError, badRequest, writeRawStatus } from '../api/status.js';
import { IN_FLIGHT_ANSWER_WAIT_MS } from '../registry/defaults.js';

/**
 * Errors found before a request reaches a route (the HTTP parser's, the router's), answered as a
 * Kubernetes `Status` like every other error: clients decode the body of any failure as one.
 */

/** A request the HTTP parser could not take (too-large headers, bad framing, an unknown method, a timeout). */
export function clientErrorStatus(err: Error & { code?: string }): StatusError {
  switch (err.code) {
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return new StatusError(408, 'Timeout', 'the request was not received in time');
    case 'HPE_HEADER_OVERFLOW':
      return new StatusError(431, 'RequestHeaderFieldsTooLarge', 'the request headers are too large');
    case 'HPE_INVALID_METHOD':
      return badRequest('invalid request: unknown method');
    default:
      return badRequest(`invalid request: ${err.code ?? 'malformed HTTP'}`);
  }
}

/** Writes the Status on a connection the HTTP server gave up on, then closes it. */
export function answerClientError(err: Error & { code?: string; rawPacket?: unknown }, socket: Socket): void {
  // A reset connection has nobody left to tell.
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  // Node's server reports a parse error again for every chunk that follows: one answer only.
  if (answering.has(socket)) return;
  answering.add(socket);
  // Bytes that do not parse behind a request (pipelined, or a body sent without framing) must not
  // cost that request its answer: it goes out, and the connection closes after it.
  const inFlight = (socket as Socket & { _httpMessage?: ServerResponse & { shouldKeepAlive?: boolean } })._httpMessage;
  if (inFlight && !inFlight.writableFinished) {
    inFlight.shouldKeepAlive = false;
    const cap = setTimeout(() => socket.destroy(), IN_FLIGHT_ANSWER_WAIT_MS);
    cap.unref();
    inFlight.once('close', () => {
      clearTimeout(cap);
      // end(), not destroy(): what the answer left in the socket's buffer must still go out.
      socket.end();
    });
    return;
  }
  const head = Buffer.isBuffer(err.rawPacket) && err.rawPacket.subarray(0, 5).toString('latin1') === 'HEAD ';
  writeRawStatus(socket, clientErrorStatus(err), { head });
}

const answering = new WeakSet<Socket>();

/**
 * CONNECT asks a proxy for a tunnel; Node's server hands it to a 'connect' listener or drops
 * the connection without a word. Flotilla is no forward proxy: 405, as a Status.
 */
export function answerConnect(socket: Socket): void {
  socket.on('error', () => undefined);
  writeRawStatus(socket, new StatusError(405, 'MethodNotAllowed', 'CONNECT is not supported'));
}

/** The router's own errors (a URL that does not decode), as Status. */
export function frameworkErrorStatus(err: Error & { code?: string; statusCode?: number }): StatusError {
  if (err.code === 'FST_ERR_BAD_URL') return badRequest('invalid request path: not valid percent-encoding');
  return new StatusError(err.statusCode && err.statusCode >= 400 && err.statusCode < 500 ? err.statusCode : 400, 'BadRequest', err.message);
}
