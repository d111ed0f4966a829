import { connect as tlsConnect, type TLSSocket } from 'node:tls';
import { Agent, request as httpsRequest } from 'node:https';
import type { Answer } from './invariants.js';

/**
 * Two ways to put a request in front of flotilla. `sendRaw` writes exact bytes on a TLS
 * connection of its own (so `/../`, `%2e` and broken framing arrive as written, not as a client
 * library would normalise them) and reads one response with a small HTTP/1.1 response parser.
 * `sendNode` uses node's https client on a keep-alive pool. Both give up after `timeoutMs` with
 * nothing received (at most six times that in all).
 */
export interface Endpoint {
  host: string;
  port: number;
  ca: Buffer;
}

export interface SendOptions {
  timeoutMs: number;
  /** A 2xx answer counts once its head is in (a watch or followed log would run on). */
  streaming: boolean;
  /** The request was a HEAD: its answer has no body whatever its headers say. */
  head: boolean;
}

interface ParsedHead {
  status: number;
  headers: Record<string, string[]>;
  bodyStart: number;
}

function parseHead(buf: Buffer): ParsedHead | undefined | 'bad' {
  const end = buf.indexOf('\r\n\r\n');
  if (end < 0) return buf.length > 1024 * 1024 ? 'bad' : undefined;
  const lines = buf.toString('latin1', 0, end).split('\r\n');
  const m = /^HTTP\/1\.[01] (\d{3})(?: .*)?$/.exec(lines[0] ?? '');
  if (!m) return 'bad';
  const headers: Record<string, string[]> = {};
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(':');
    if (colon <= 0) return 'bad';
    (headers[line.slice(0, colon).trim().toLowerCase()] ??= []).push(line.slice(colon + 1).trim());
  }
  return { status: Number(m[1]), headers, bodyStart: end + 4 };
}

/** Decodes a complete chunked body; undefined while incomplete, 'bad' when it is not chunked framing. */
function dechunk(buf: Buffer): Buffer | undefined | 'bad' {
  const parts: Buffer[] = [];
  let at = 0;
  while (true) {
    const eol = buf.indexOf('\r\n', at);
    if (eol < 0) return undefined;
    const size = parseInt(buf.toString('latin1', at, eol).split(';')[0]!.trim(), 16);
    if (Number.isNaN(size)) return 'bad';
    if (size === 0) {
      // Trailers end with an empty line.
      const end = buf.indexOf('\r\n\r\n', eol);
      return end < 0 && buf.indexOf('\r\n', eol + 2) !== eol + 2 ? undefined : Buffer.concat(parts);
    }
    if (buf.length < eol + 2 + size + 2) return undefined;
    parts.push(buf.subarray(eol + 2, eol + 2 + size));
    at = eol + 2 + size + 2;
  }
}

let tlsSession: Buffer | undefined;

export function sendRaw(ep: Endpoint, bytes: Buffer, opts: SendOptions): Promise<Answer> {
  const started = Date.now();
  return new Promise((resolve) => {
    let settled = false;
    let buf: Buffer = Buffer.alloc(0);
    let written = false;
    let connected = false;
    let head: ParsedHead | undefined;
    const socket: TLSSocket = tlsConnect({ host: ep.host, port: ep.port, ca: ep.ca, ...(tlsSession ? { session: tlsSession } : {}) });
    const finish = (a: Answer) => {
      if (settled) return;
      settled = true;
      timer.clear();
      socket.destroy();
      resolve(a);
    };
    const timer = idleTimeout(opts.timeoutMs, () =>
        finish({
          type: 'timeout',
          ms: Date.now() - started,
          gotHead: head !== undefined,
          ...(head ? { status: head.status } : {}),
          note: `raw TLS connection ${connected ? 'up' : 'not up'}, request ${written ? 'written' : 'not all written'}, ${buf.length} answer bytes`,
        }),
    );
    const response = (body: Buffer) => finish({ type: 'response', status: head!.status, headers: head!.headers, body, ms: Date.now() - started, streaming: opts.streaming });
    const tryComplete = (ended: boolean) => {
      if (!head) {
        const h = parseHead(buf);
        if (h === 'bad') return finish({ type: 'error', phase: 'reading', ms: Date.now() - started, message: `not an HTTP response: ${JSON.stringify(buf.toString('latin1', 0, 200))}` });
        if (!h) {
          if (ended) {
            const phase = buf.length ? 'reading' : !connected ? 'connecting' : written ? 'waiting' : 'sending';
            finish({ type: 'error', phase, ms: Date.now() - started, message: buf.length ? `the connection ended inside the response head: ${JSON.stringify(buf.toString('latin1', 0, 200))}` : `the connection ended without a response${phase === 'sending' ? ` while ${bytes.length} request bytes were being sent` : ''}` });
          }
          return;
        }
        // Interim answers (100 Continue) come before the real one.
        if (h.status >= 100 && h.status < 200 && h.status !== 101) {
          buf = buf.subarray(h.bodyStart);
          return tryComplete(ended);
        }
        head = h;
      }
      const rest = buf.subarray(head.bodyStart);
      const st = head.status;
      if (opts.head || st === 204 || st === 304 || st === 101) return response(Buffer.alloc(0));
      if (opts.streaming && st >= 200 && st < 300) return response(rest);
      const te = (head.headers['transfer-encoding'] ?? []).join(',').toLowerCase();
      if (te.includes('chunked')) {
        const body = dechunk(rest);
        if (body === 'bad') return finish({ type: 'error', phase: 'reading', ms: Date.now() - started, message: 'a chunked body that is not chunked framing' });
        if (body) return response(body);
        if (ended) finish({ type: 'error', phase: 'reading', ms: Date.now() - started, message: `HTTP ${st}: the connection ended inside a chunked body` });
        return;
      }
      const cl = head.headers['content-length']?.[0];
      if (cl !== undefined) {
        const n = Number(cl);
        if (rest.length >= n) return response(rest.subarray(0, n));
        if (ended) finish({ type: 'error', phase: 'reading', ms: Date.now() - started, message: `HTTP ${st}: the connection ended after ${rest.length} of ${n} body bytes` });
        return;
      }
      // No framing: the body runs to the end of the connection.
      if (ended) response(rest);
    };
    socket.on('session', (s: Buffer) => {
      tlsSession = s;
    });
    socket.once('secureConnect', () => {
      connected = true;
      socket.write(bytes, (err) => {
        if (!err) written = true;
      });
    });
    socket.on('data', (chunk: Buffer) => {
      timer.touch();
      buf = buf.length ? Buffer.concat([buf, chunk]) : chunk;
      tryComplete(false);
    });
    socket.on('end', () => tryComplete(true));
    socket.on('close', () => tryComplete(true));
    socket.on('error', (e: Error & { code?: string }) => {
      // A reset after the whole answer came is no failure; before it, it is.
      if (head || buf.length) return tryComplete(true);
      const phase = !connected ? 'connecting' : written && !failedWrite(e) ? 'waiting' : 'sending';
      finish({ type: 'error', phase, ms: Date.now() - started, message: `${e.code ?? ''} ${e.message}${phase === 'sending' ? ` while ${bytes.length} request bytes were being sent` : ''}`.trim() });
    });
  });
}

export interface NodeRequest {
  method: string;
  path: string;
  /** Flat name/value list, repeats kept. */
  headers: string[];
  body?: Buffer;
}

const agents = new Map<string, Agent>();

function agentFor(ep: Endpoint): Agent {
  const key = `${ep.host}:${ep.port}`;
  let a = agents.get(key);
  if (!a) {
    a = new Agent({ keepAlive: true, maxSockets: 16, ca: ep.ca });
    agents.set(key, a);
  }
  return a;
}

export function closeAgents(): void {
  for (const a of agents.values()) a.destroy();
  agents.clear();
}

/** Undefined when node's client refuses to send it at all (a header value it rejects): nothing to check. */
export function sendNode(ep: Endpoint, r: NodeRequest, opts: SendOptions): Promise<Answer | undefined> {
  const started = Date.now();
  return new Promise((resolve) => {
    let settled = false;
    let gotHead: number | undefined;
    let connected = false;
    let written = false;
    let timer: IdleTimeout | undefined = undefined;
    const finish = (a: Answer | undefined) => {
      if (settled) return;
      settled = true;
      timer?.clear();
      resolve(a);
    };
    let req: ReturnType<typeof httpsRequest>;
    try {
      req = httpsRequest({ host: ep.host, port: ep.port, method: r.method, path: r.path, headers: r.headers, agent: agentFor(ep), setHost: false });
    } catch {
      return finish(undefined);
    }
    timer = idleTimeout(opts.timeoutMs, () => {
      const note = `node client, ${req.reusedSocket ? 'a reused keep-alive connection' : 'a new connection'} ${connected ? 'up' : 'not up'}, request ${written ? 'written' : 'not all written'}`;
      finish({ type: 'timeout', ms: Date.now() - started, gotHead: gotHead !== undefined, ...(gotHead !== undefined ? { status: gotHead } : {}), note });
      req.destroy();
    });
    req.on('response', (res) => {
      gotHead = res.statusCode ?? 0;
      const headers: Record<string, string[]> = {};
      for (let i = 0; i < res.rawHeaders.length; i += 2) (headers[res.rawHeaders[i]!.toLowerCase()] ??= []).push(res.rawHeaders[i + 1]!);
      const status = res.statusCode ?? 0;
      if (opts.streaming && status >= 200 && status < 300) {
        finish({ type: 'response', status, headers, body: Buffer.alloc(0), ms: Date.now() - started, streaming: true });
        req.destroy();
        return;
      }
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => {
        timer?.touch();
        chunks.push(c);
      });
      res.on('end', () => finish({ type: 'response', status, headers, body: Buffer.concat(chunks), ms: Date.now() - started, streaming: false }));
      res.on('error', (e) => finish({ type: 'error', phase: 'reading', ms: Date.now() - started, message: `HTTP ${status}: the body broke off: ${e.message}` }));
    });
    req.on('error', (e: Error & { code?: string }) => {
      if (e.code === 'ERR_INVALID_CHAR' || e.code === 'ERR_INVALID_HTTP_TOKEN' || e.code === 'ERR_UNESCAPED_CHARACTERS') return finish(undefined);
      // A write that failed (EPIPE, or a reset seen by a write): the body was still going out
      // (end()'s callback only means it was handed to the socket), whatever `written` says.
      const phase = gotHead !== undefined ? 'reading' : !connected ? 'connecting' : written && !failedWrite(e) ? 'waiting' : 'sending';
      finish({ type: 'error', phase, ms: Date.now() - started, message: `${e.code ?? ''} ${e.message}`.trim() });
    });
    req.on('socket', (s) => {
      // A pooled socket is connected already.
      if (!s.connecting) connected = true;
      else s.once('connect', () => (connected = true));
    });
    req.on('finish', () => (written = true));
    try {
      req.end(r.body);
    } catch {
      finish(undefined);
    }
  });
}

/** An error a write of the request got (the server closed while the body was going out). */
function failedWrite(e: Error & { code?: string; syscall?: string }): boolean {
  return e.code === 'EPIPE' || e.syscall === 'write';
}

interface IdleTimeout {
  touch(): void;
  clear(): void;
}

/**
 * A hang is an answer that stops coming, not a large one that takes a while on a busy machine
 * (a list of every configmap the other test files left behind): the timer restarts with every
 * chunk received, up to six times the timeout in all.
 */
function idleTimeout(ms: number, onTimeout: () => void): IdleTimeout {
  const hardStop = Date.now() + 6 * ms;
  let timer = setTimeout(onTimeout, ms);
  return {
    touch() {
      clearTimeout(timer);
      timer = setTimeout(onTimeout, Math.max(0, Math.min(ms, hardStop - Date.now())));
    },
    clear() {
      clearTimeout(timer);
    },
  };
}
