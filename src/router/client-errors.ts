import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import { StatusError, badRequest } from './status.js';

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
export function answerClientError(err: Error & { code?: string }, socket: Socket): void {
  // A reset connection has nobody left to tell.
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  if (socket.writable) {
    const status = clientErrorStatus(err);
    const body = JSON.stringify(status.toStatus());
    socket.write(
      `HTTP/1.1 ${status.code} ${STATUS_CODES[status.code] ?? ''}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy();
}

/** The router's own errors (a URL that does not decode), as Status. */
export function frameworkErrorStatus(err: Error & { code?: string; statusCode?: number }): StatusError {
  if (err.code === 'FST_ERR_BAD_URL') return badRequest('invalid request path: not valid percent-encoding');
  return new StatusError(err.statusCode && err.statusCode >= 400 && err.statusCode < 500 ? err.statusCode : 400, 'BadRequest', err.message);
}
