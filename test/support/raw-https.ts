import { readFileSync } from 'node:fs';
import { sendRaw } from './abuse/raw-client.js';

/**
 * Exact bytes to an HTTPS server and its answer, with nothing normalised on the way: a path with
 * `%2e%2e` arrives as written (curl --path-as-is), a body with no framing goes as it is, and a
 * request may carry another request behind it. The abuse suite's raw client sends and parses;
 * this is its answer in the shape the regression tests read.
 */
export interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
  /** No answer came at all within the timeout (the connection stayed open, silent). */
  timedOut: boolean;
  /** Milliseconds until the answer was complete, or until the client gave up. */
  ms: number;
}

export async function rawHttps(url: string, caFile: string, request: string | Buffer, timeoutMs = 10_000): Promise<RawAnswer> {
  const { hostname, port } = new URL(url);
  const bytes = Buffer.isBuffer(request) ? request : Buffer.from(request);
  const head = bytes.subarray(0, 5).toString('latin1') === 'HEAD ';
  const a = await sendRaw({ host: hostname, port: Number(port), ca: readFileSync(caFile) }, bytes, { timeoutMs, streaming: false, head });
  switch (a.type) {
    case 'response':
      return { status: a.status, headers: Object.fromEntries(Object.entries(a.headers).map(([k, v]) => [k, v.at(-1) ?? ''])), body: a.body.toString('utf8'), timedOut: false, ms: a.ms };
    case 'timeout':
      return { status: a.status ?? 0, headers: {}, body: '', timedOut: !a.gotHead, ms: a.ms };
    default:
      return { status: 0, headers: {}, body: a.message, timedOut: false, ms: a.ms };
  }
}

/** One HTTP/1.1 request as text, `Connection: close`, with a Content-Length when it has a body. */
export function requestText(method: string, path: string, headers: Record<string, string>, body?: string): string {
  const lines = [`${method} ${path} HTTP/1.1`, 'Host: 127.0.0.1', 'Connection: close', ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`)];
  if (body !== undefined) lines.push(`Content-Length: ${Buffer.byteLength(body)}`);
  return `${lines.join('\r\n')}\r\n\r\n${body ?? ''}`;
}
