import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { MemberClient, memberUrl, unsafeMemberPath } from '../../../src/members/member-client.js';

/**
 * What a member's HTTP server parses from flotilla's connection. Node's parser stands in for the
 * apiserver's: a body without framing is not read as a body, and whatever follows it on a
 * keep-alive connection is parsed as the next request.
 */
interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

let server: Server;
let client: MemberClient;
const seen: Seen[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      seen.push({ method: req.method!, url: req.url!, headers: req.headers, body: Buffer.concat(chunks).toString() });
      res.setHeader('content-type', 'application/json');
      res.end('{}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  client = await MemberClient.create({ name: 'm', server: `http://127.0.0.1:${port}/`, insecureSkipTLSVerify: true, labels: {}, authorization: 'rbac', priority: 0 });
});

afterAll(async () => {
  client.close();
  await new Promise((r) => server.close(r));
});

const smuggled = 'POST /api/v1/namespaces/x/configmaps HTTP/1.1\r\nHost: m\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}';

describe('MemberClient frames every body', () => {
  it('a DELETE body (buffer or string) goes with its Content-Length and is read as the body', async () => {
    seen.length = 0;
    const options = JSON.stringify({ kind: 'DeleteOptions', apiVersion: 'v1', dryRun: ['All'] });
    await client.fetch({ method: 'DELETE', path: '/api/v1/namespaces/x/configmaps/a', body: Buffer.from(options), headers: { 'content-type': 'application/json' } });
    await client.fetch({ method: 'DELETE', path: '/api/v1/namespaces/x/configmaps/b', body: options, headers: { 'content-type': 'application/json' } });
    expect(seen.map((s) => [s.method, s.headers['content-length'], s.body])).toEqual([
      ['DELETE', String(options.length), options],
      ['DELETE', String(options.length), options],
    ]);
  });

  it('a streamed DELETE or OPTIONS body is chunked', async () => {
    seen.length = 0;
    for (const method of ['DELETE', 'OPTIONS']) {
      await client.fetch({ method, path: '/api/v1/namespaces/x/services/s/proxy/', body: Readable.from([Buffer.from('part1'), Buffer.from('part2')]) });
    }
    expect(seen.map((s) => [s.method, s.headers['transfer-encoding'], s.body])).toEqual([
      ['DELETE', 'chunked', 'part1part2'],
      ['OPTIONS', 'chunked', 'part1part2'],
    ]);
  });

  it('a request hidden in a body stays a body, and the next request on the connection is the next one sent', async () => {
    seen.length = 0;
    await client.fetch({ method: 'DELETE', path: '/api/v1/namespaces/x/configmaps/a', body: smuggled, headers: { 'content-type': 'application/json' } });
    await client.fetch({ path: '/api/v1/namespaces/x/configmaps' });
    expect(seen.map((s) => `${s.method} ${s.url}`)).toEqual(['DELETE /api/v1/namespaces/x/configmaps/a', 'GET /api/v1/namespaces/x/configmaps']);
    expect(seen[0]!.body).toBe(smuggled);
  });

  it('a caller header cannot set the framing', async () => {
    seen.length = 0;
    await client.fetch({ method: 'DELETE', path: '/a', body: smuggled, headers: { 'content-length': '0', 'transfer-encoding': 'identity' } });
    expect(seen).toHaveLength(1);
    expect(seen[0]!.body).toBe(smuggled);
  });
});

describe('memberUrl: the last guard of the forwarding rule', () => {
  const base = new URL('https://member.example:6443/');
  it('refuses dot segments, encoded slashes and empty segments, raw or encoded, in any case', () => {
    for (const p of ['/openapi/v3/../../api/v1/secrets', '/openapi/v3/%2e%2e/api', '/a/%2E%2e/b', '/a/./b', '/a/.%2e/b', '/a/%2E/b', '/a%2fb', '/a%2Fb', '/a//b', '/a\\b', 'relative']) {
      expect(() => memberUrl(base, p), p).toThrow(/unnormalised/);
    }
  });

  it('keeps a normal path, a trailing slash, the query, and a server URL’s own path prefix', () => {
    expect(memberUrl(base, '/api/v1/namespaces/a/pods?watch=1&x=%2e%2e').href).toBe('https://member.example:6443/api/v1/namespaces/a/pods?watch=1&x=%2e%2e');
    expect(memberUrl(base, '/api/v1/namespaces/a/services/s/proxy/').pathname).toBe('/api/v1/namespaces/a/services/s/proxy/');
    expect(memberUrl(new URL('https://rancher.example/k8s/clusters/c-1'), '/api/v1/pods').href).toBe('https://rancher.example/k8s/clusters/c-1/api/v1/pods');
    expect(unsafeMemberPath('/api/v1/namespaces/a/configmaps/x..y')).toBe(false);
  });
});

describe('a pooled connection the member closed while idle', () => {
  /** A member that closes each connection, unanswered, when a second request arrives on it. */
  async function closingMember(): Promise<{ server: Server; client: MemberClient; requests: string[] }> {
    const requests: string[] = [];
    const served = new WeakMap<object, number>();
    const s = createServer((req, res) => {
      const n = (served.get(req.socket) ?? 0) + 1;
      served.set(req.socket, n);
      req.resume();
      req.on('end', () => {
        requests.push(`${req.method} ${n}`);
        if (n > 1) req.socket.destroy();
        else res.end('{}');
      });
    });
    await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
    const port = (s.address() as AddressInfo).port;
    const c = await MemberClient.create({ name: 'm', server: `http://127.0.0.1:${port}/`, insecureSkipTLSVerify: true, labels: {}, authorization: 'rbac', priority: 0 });
    return { server: s, client: c, requests };
  }

  for (const method of ['GET', 'PUT', 'DELETE']) {
    it(`a ${method} sent on it is sent once more on a new connection`, async () => {
      const m = await closingMember();
      try {
        const body = method === 'PUT' ? { body: '{}' } : {};
        await m.client.fetch({ method, path: '/a', ...body });
        const again = await m.client.fetch({ method, path: '/a', ...body });
        expect(again.status).toBe(200);
        expect(m.requests).toEqual([`${method} 1`, `${method} 2`, `${method} 1`]);
      } finally {
        m.client.close();
        await new Promise((r) => m.server.close(r));
      }
    });
  }

  for (const method of ['POST', 'PATCH']) {
    it(`a ${method} is not: the failure is the answer`, async () => {
      const m = await closingMember();
      try {
        await m.client.fetch({ method, path: '/a', body: '{}' });
        await expect(m.client.fetch({ method, path: '/a', body: '{}' })).rejects.toThrow(/socket hang up|ECONNRESET/);
        expect(m.requests).toEqual([`${method} 1`, `${method} 2`]);
      } finally {
        m.client.close();
        await new Promise((r) => m.server.close(r));
      }
    });
  }
});
