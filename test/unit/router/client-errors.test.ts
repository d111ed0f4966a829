import { describe, expect, it } from 'vitest';
import { PassThrough } from 'node:stream';
import type { Socket } from 'node:net';
import { answerClientError, answerConnect, clientErrorStatus, frameworkErrorStatus } from '../../../src/router/client-errors.js';

const err = (code: string) => Object.assign(new Error(code), { code });

describe('errors found before routing are Status', () => {
  it('maps the HTTP parser’s errors to their codes', () => {
    expect(clientErrorStatus(err('HPE_HEADER_OVERFLOW')).code).toBe(431);
    expect(clientErrorStatus(err('ERR_HTTP_REQUEST_TIMEOUT')).code).toBe(408);
    expect(clientErrorStatus(err('HPE_INVALID_METHOD')).code).toBe(400);
    expect(clientErrorStatus(err('HPE_INVALID_CHUNK_SIZE')).code).toBe(400);
    expect(frameworkErrorStatus(err('FST_ERR_BAD_URL')).code).toBe(400);
  });

  it('writes a Status body with its length, then closes the connection once it is written', async () => {
    const socket = new PassThrough() as unknown as Socket;
    let written = '';
    (socket as unknown as PassThrough).on('data', (c: Buffer) => (written += c.toString()));
    answerClientError(err('HPE_HEADER_OVERFLOW'), socket);
    const [head, body] = written.split('\r\n\r\n');
    expect(head).toMatch(/^HTTP\/1.1 431 Request Header Fields Too Large\r\n/);
    expect(head).toContain(`Content-Length: ${Buffer.byteLength(body!)}`);
    expect(JSON.parse(body!)).toMatchObject({ kind: 'Status', code: 431, reason: 'RequestHeaderFieldsTooLarge' });
    if (!socket.destroyed) await new Promise((r) => socket.once('close', r));
    expect(socket.destroyed).toBe(true);
  });
});

describe('answers with no body where there must be none, and to CONNECT', () => {
  const capture = () => {
    const socket = new PassThrough() as unknown as Socket;
    let written = '';
    (socket as unknown as PassThrough).on('data', (c: Buffer) => (written += c.toString()));
    return { socket, written: () => written };
  };
  it('a HEAD the parser refused gets the Status head with its length but no body', () => {
    const { socket, written } = capture();
    answerClientError(Object.assign(err('HPE_INVALID_URL'), { rawPacket: Buffer.from('HEAD %2fapi HTTP/1.1\r\n\r\n') }), socket);
    const [head, body] = written().split('\r\n\r\n');
    expect(head).toMatch(/^HTTP\/1.1 400 /);
    expect(body).toBe('');
  });
  it('CONNECT is 405, as a Status', () => {
    const { socket, written } = capture();
    answerConnect(socket);
    expect(written()).toMatch(/^HTTP\/1.1 405 /);
    expect(JSON.parse(written().split('\r\n\r\n')[1]!)).toMatchObject({ kind: 'Status', code: 405, reason: 'MethodNotAllowed' });
  });
});
