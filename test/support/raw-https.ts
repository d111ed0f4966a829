import { readFileSync } from 'node:fs';
import { connect } from 'node:tls';

/**
 * Exact bytes to an HTTPS server and its answer, with nothing normalised on the way: a path with
 * `%2e%2e` arrives as written (curl --path-as-is), a body with no framing goes as it is, and a
 * request may carry another request behind it. The request should say `Connection: close`; the
 * answer is read to the end of the connection (or `timeoutMs`, then `timedOut`).
 */
export interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
  /** The connection stayed open, with no complete answer, for the whole timeout. */
  timedOut: boolean;
  /** Milliseconds until the connection ended. */
  ms: number;
}

export function rawHttps(url: string, caFile: string, request: string | Buffer, timeoutMs = 10_000): Promise<RawAnswer> {
  const { hostname, port } = new URL(url);
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const socket = connect({ host: hostname, port: Number(port), ca: readFileSync(caFile), servername: hostname === '127.0.0.1' ? undefined : hostname });
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      socket.destroy();
    }, timeoutMs);
    socket.on('secureConnect', () => socket.write(request));
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', (e) => {
      if (chunks.length === 0 && !timedOut) {
        clearTimeout(timer);
        reject(e);
      }
    });
    socket.on('close', () => {
      clearTimeout(timer);
      resolve({ ...parseAnswer(Buffer.concat(chunks)), timedOut: timedOut && chunks.length === 0, ms: Date.now() - started });
    });
  });
}

/** Status, headers (lower-cased, last wins) and the de-chunked body of the first answer in `raw`. */
export function parseAnswer(raw: Buffer): { status: number; headers: Record<string, string>; body: string } {
  const end = raw.indexOf('\r\n\r\n');
  if (end < 0) return { status: 0, headers: {}, body: raw.toString('utf8') };
  const [statusLine = '', ...lines] = raw.subarray(0, end).toString('latin1').split('\r\n');
  const headers: Record<string, string> = {};
  for (const l of lines) {
    const i = l.indexOf(':');
    if (i > 0) headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
  }
  let body = raw.subarray(end + 4);
  if ((headers['transfer-encoding'] ?? '').includes('chunked')) {
    const parts: Buffer[] = [];
    let at = 0;
    for (;;) {
      const eol = body.indexOf('\r\n', at);
      if (eol < 0) break;
      const size = parseInt(body.subarray(at, eol).toString('latin1'), 16);
      if (!size) break;
      parts.push(body.subarray(eol + 2, eol + 2 + size));
      at = eol + 2 + size + 2;
    }
    body = Buffer.concat(parts);
  } else if (headers['content-length'] !== undefined) {
    body = body.subarray(0, Number(headers['content-length']));
  }
  return { status: Number(statusLine.split(' ')[1] ?? 0), headers, body: body.toString('utf8') };
}

/** One HTTP/1.1 request as text, `Connection: close`, with a Content-Length when it has a body. */
export function requestText(method: string, path: string, headers: Record<string, string>, body?: string): string {
  const lines = [`${method} ${path} HTTP/1.1`, 'Host: 127.0.0.1', 'Connection: close', ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`)];
  if (body !== undefined) lines.push(`Content-Length: ${Buffer.byteLength(body)}`);
  return `${lines.join('\r\n')}\r\n\r\n${body ?? ''}`;
}
