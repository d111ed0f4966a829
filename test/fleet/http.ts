import { request } from 'node:https';
import { readFileSync } from 'node:fs';

/** Just enough HTTPS to talk to a member apiserver as its admin, with its CA. */
export interface MemberEndpoint {
  server: string;
  token: string;
  caFile: string;
}

export interface MemberResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  /** The body's bytes (a protobuf answer's, which `body` mangles). */
  raw?: Buffer;
}

const caCache = new Map<string, Buffer>();

/**
 * `path` on `server`, keeping a path the server URL has (as a kubeconfig's server may: karmada-search's
 * proxy is one), which `new URL(path, server)` would drop for an absolute path.
 */
export function endpointUrl(server: string, path: string): URL {
  const base = new URL(server);
  return new URL(base.pathname.replace(/\/$/, '') + path, base.origin);
}

export function memberRequest(
  ep: MemberEndpoint,
  method: string,
  path: string,
  body?: unknown,
  opts: { contentType?: string; timeoutMs?: number; token?: string; accept?: string; headers?: Record<string, string | string[]> } = {},
): Promise<MemberResponse> {
  let ca = caCache.get(ep.caFile);
  if (!ca) {
    ca = readFileSync(ep.caFile);
    caCache.set(ep.caFile, ca);
  }
  const url = endpointUrl(ep.server, path);
  const payload = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method,
        ca,
        headers: {
          ...opts.headers,
          authorization: `Bearer ${opts.token ?? ep.token}`,
          accept: opts.accept ?? 'application/json',
          // Framed explicitly: Node frames no DELETE body by itself, and the server would never read it.
          ...(payload !== undefined ? { 'content-type': opts.contentType ?? 'application/json', 'content-length': String(Buffer.byteLength(payload)) } : {}),
        },
        timeout: opts.timeoutMs ?? 10_000,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const raw = Buffer.concat(chunks);
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: raw.toString('utf8'), raw });
        });
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`${method} ${url} timed out`)));
    req.on('error', reject);
    if (payload !== undefined) req.write(payload);
    req.end();
  });
}

export async function memberJson<T = unknown>(ep: MemberEndpoint, method: string, path: string, body?: unknown): Promise<T> {
  const res = await memberRequest(ep, method, path, body);
  if (res.status < 200 || res.status >= 300) {
    throw new Error(`${method} ${path} on ${ep.server}: ${res.status} ${res.body.slice(0, 500)}`);
  }
  return JSON.parse(res.body) as T;
}
