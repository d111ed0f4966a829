import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { Agent, request as httpsRequest } from 'node:https';
import { connect as tlsConnect } from 'node:tls';
import type { AddressInfo, Socket } from 'node:net';
import type { Duplex } from 'node:stream';

/**
 * A plain-HTTP relay in front of one member apiserver, for tests that must see exactly what
 * flotilla sends a member. Flotilla is configured with `server: http://127.0.0.1:<port>`; every
 * request Node's HTTP parser reads off a connection (what any server would read from those bytes:
 * a request hidden in an unframed body shows up as a request of its own) is recorded, then passed
 * on unchanged (same method, raw URL, headers and body; only the framing and the hop-by-hop
 * headers are the relay's own) to the member over HTTPS, and the member's answer is streamed back
 * (watches and followed logs stream). Upgrade requests (exec, attach, port-forward) are recorded
 * and joined byte for byte with a TLS connection to the member. Bytes the parser cannot read as a
 * request are recorded as a parse error.
 */
export interface RecordedRequest {
  /** Which relay (member) saw it. */
  relay: string;
  /** Order of arrival over every relay of the process. */
  seq: number;
  /** Connection number within this relay: requests that shared a connection share it. */
  connection: number;
  /** Position of the request on its connection (0 = first). */
  indexOnConnection: number;
  at: number;
  method: string;
  /** The request target exactly as it came (never normalised). */
  url: string;
  /** Names and values as they came, in order, repeats kept. */
  rawHeaders: string[];
  body: Buffer;
  upgrade: boolean;
  /** The member's answer, once it came. */
  responseStatus?: number;
  responseContentType?: string;
  /** The first bytes of the member's answer body (to tell a member's answer passed through from flotilla's own). */
  responseBodyHead?: Buffer;
}

const RESPONSE_HEAD_BYTES = 4096;

export interface RecordedParseError {
  relay: string;
  seq: number;
  connection: number;
  at: number;
  code: string;
  message: string;
  /** What the parser choked on (as far as Node tells). */
  rawPacket?: string;
}

export interface RelayTarget {
  name: string;
  /** https://host:port of the member apiserver. */
  server: string;
  ca: Buffer;
}

export interface RecordingRelay {
  name: string;
  /** http://127.0.0.1:<port> */
  url: string;
  requests(): RecordedRequest[];
  parseErrors(): RecordedParseError[];
  /** Forgets what was recorded so far (requests still in flight are recorded when they end). */
  clear(): void;
  close(): Promise<void>;
}

let seqCounter = 0;
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'proxy-authenticate', 'proxy-authorization', 'host']);

export async function startRecordingRelay(target: RelayTarget): Promise<RecordingRelay> {
  const memberUrl = new URL(target.server);
  const agent = new Agent({ keepAlive: true, maxSockets: 256, ca: target.ca });
  let recorded: RecordedRequest[] = [];
  let errors: RecordedParseError[] = [];
  let connections = 0;
  const connectionIds = new WeakMap<Socket, { id: number; requests: number }>();
  const sockets = new Set<Duplex>();

  const connectionOf = (socket: Socket): { id: number; requests: number } => {
    let c = connectionIds.get(socket);
    if (!c) {
      c = { id: ++connections, requests: 0 };
      connectionIds.set(socket, c);
    }
    return c;
  };

  const record = (req: IncomingMessage, upgrade: boolean): RecordedRequest => {
    const conn = connectionOf(req.socket);
    const rec: RecordedRequest = {
      relay: target.name,
      seq: ++seqCounter,
      connection: conn.id,
      indexOnConnection: conn.requests++,
      at: Date.now(),
      method: req.method ?? '',
      url: req.url ?? '',
      rawHeaders: [...req.rawHeaders],
      body: Buffer.alloc(0),
      upgrade,
    };
    recorded.push(rec);
    return rec;
  };

  const upstreamHeaders = (req: IncomingMessage, keepUpgrade: boolean): [string, string][] => {
    const out: [string, string][] = [['Host', memberUrl.host]];
    for (let i = 0; i < req.rawHeaders.length; i += 2) {
      const name = req.rawHeaders[i]!;
      const lower = name.toLowerCase();
      if (lower === 'host') continue;
      if (HOP_BY_HOP.has(lower) && !(keepUpgrade && (lower === 'connection' || lower === 'upgrade'))) continue;
      out.push([name, req.rawHeaders[i + 1]!]);
    }
    return out;
  };

  const onRequest = (req: IncomingMessage, res: ServerResponse): void => {
    const rec = record(req, false);
    const chunks: Buffer[] = [];
    const headers = upstreamHeaders(req, false);
    // The relay's own framing, stated explicitly: Node would send a streamed DELETE body unframed.
    if (req.headers['transfer-encoding'] !== undefined) headers.push(['Transfer-Encoding', 'chunked']);
    const upstream = httpsRequest({
      host: memberUrl.hostname,
      port: memberUrl.port,
      method: req.method,
      path: req.url,
      agent,
      // A flat list keeps the order and the repeats (Impersonate-Group) as they came.
      headers: headers.flat(),
      setHost: false,
    });
    upstream.on('response', (answer) => {
      rec.responseStatus = answer.statusCode;
      const ct = answer.headers['content-type'];
      if (ct !== undefined) rec.responseContentType = ct;
      let head: Buffer = Buffer.alloc(0);
      const keep = (c: Buffer) => {
        head = Buffer.concat([head, c.subarray(0, RESPONSE_HEAD_BYTES - head.length)]);
        rec.responseBodyHead = head;
        if (head.length >= RESPONSE_HEAD_BYTES) answer.off('data', keep);
      };
      rec.responseBodyHead = head;
      answer.on('data', keep);
      const out: string[] = [];
      for (let i = 0; i < answer.rawHeaders.length; i += 2) {
        const name = answer.rawHeaders[i]!;
        if (HOP_BY_HOP.has(name.toLowerCase())) continue;
        out.push(name, answer.rawHeaders[i + 1]!);
      }
      res.writeHead(answer.statusCode ?? 502, answer.statusMessage, out);
      res.flushHeaders();
      answer.on('error', () => res.destroy());
      answer.pipe(res);
    });
    upstream.on('error', (e) => {
      if (res.headersSent) {
        res.destroy();
        return;
      }
      const body = JSON.stringify({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: `relay ${target.name}: ${e.message}`, reason: 'ServiceUnavailable', code: 503 });
      res.writeHead(503, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      res.end(body);
    });
    // The caller going away ends the member request (a followed watch or log).
    res.on('close', () => {
      if (!res.writableFinished) upstream.destroy();
    });
    req.on('data', (c: Buffer) => {
      chunks.push(c);
      upstream.write(c);
    });
    req.on('end', () => {
      rec.body = Buffer.concat(chunks);
      upstream.end();
    });
    req.on('error', () => upstream.destroy());
  };

  const onUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer): void => {
    const rec = record(req, true);
    rec.body = head;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    const up = tlsConnect({ host: memberUrl.hostname, port: Number(memberUrl.port), ca: target.ca, servername: memberUrl.hostname === '127.0.0.1' ? undefined : memberUrl.hostname });
    sockets.add(up);
    up.on('close', () => sockets.delete(up));
    const lines = [`${req.method} ${req.url} HTTP/1.1`, ...upstreamHeaders(req, true).map(([n, v]) => `${n}: ${v}`)];
    up.once('secureConnect', () => {
      up.write(`${lines.join('\r\n')}\r\n\r\n`);
      if (head.length) up.write(head);
      socket.pipe(up);
      up.pipe(socket);
    });
    // The status of a switched (or refused) upgrade: read off the first bytes the member sends.
    up.once('data', (first: Buffer) => {
      const m = /^HTTP\/1\.[01] (\d{3})/.exec(first.toString('latin1', 0, 16));
      if (m) rec.responseStatus = Number(m[1]);
    });
    up.on('error', () => socket.destroy());
    socket.on('error', () => up.destroy());
    up.on('close', () => socket.destroy());
    socket.on('close', () => up.destroy());
  };

  const server: Server = createServer(
    {
      // A watch lasts as long as it lasts; idle pooled connections live as long as the member's would.
      requestTimeout: 0,
      keepAliveTimeout: 120_000,
      // Go's default header limit (1 MiB) rather than Node's 16 KiB: the relay must not refuse what a member takes.
      maxHeaderSize: 1024 * 1024,
      // Recorded all the same: a request without Host is still a request that reached the member.
      requireHostHeader: false,
    },
    onRequest,
  );
  server.on('connection', (s: Socket) => {
    connectionOf(s);
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  server.on('upgrade', onUpgrade);
  server.on('connect', (req: IncomingMessage, socket: Duplex) => {
    record(req, false);
    socket.end('HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\nConnection: close\r\n\r\n');
  });
  server.on('clientError', (err: Error & { code?: string; rawPacket?: Buffer }, socket: Duplex) => {
    // Node reports a connection flotilla reset or closed mid-request (a client that went away
    // ends its member request) here too: that is no request a member could not read.
    if (err.code === 'ECONNRESET' || err.code === 'EPIPE') {
      socket.destroy();
      return;
    }
    const conn = connectionOf(socket as Socket);
    errors.push({
      relay: target.name,
      seq: ++seqCounter,
      connection: conn.id,
      at: Date.now(),
      code: err.code ?? 'unknown',
      message: err.message,
      ...(err.rawPacket ? { rawPacket: err.rawPacket.toString('latin1').slice(0, 2000) } : {}),
    });
    if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n');
    else socket.destroy();
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  return {
    name: target.name,
    url: `http://127.0.0.1:${port}`,
    requests: () => [...recorded],
    parseErrors: () => [...errors],
    clear: () => {
      recorded = [];
      errors = [];
    },
    close: async () => {
      const closed = new Promise<void>((r) => server.close(() => r()));
      for (const s of sockets) s.destroy();
      server.closeAllConnections();
      agent.destroy();
      await closed;
    },
  };
}

/** A header's values in a recorded request, case-insensitively, in order. */
export function headerValues(rawHeaders: readonly string[], name: string): string[] {
  const lower = name.toLowerCase();
  const out: string[] = [];
  for (let i = 0; i < rawHeaders.length; i += 2) {
    if (rawHeaders[i]!.toLowerCase() === lower) out.push(rawHeaders[i + 1]!);
  }
  return out;
}
