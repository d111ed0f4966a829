import { Agent, request, type RequestOptions } from 'node:https';
import { request as httpRequest, Agent as HttpAgent } from 'node:http';
import type { ClientRequest, IncomingMessage } from 'node:http';
import type { Duplex, Readable } from 'node:stream';
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { KubeConfig } from '@kubernetes/client-node';
import type { ClusterConfig } from '../registry/fleet-config.js';
import { TOKEN_FILE_REREAD_MS } from '../registry/defaults.js';

/**
 * The HTTP(S) connection to one member apiserver, with the member's credentials from its
 * kubeconfig (or server + CA + token). Responses are handed back as raw streams: the cacher
 * never wants a parsed list page on the event loop.
 */
export interface MemberRequest {
  method?: string;
  path: string;
  /** A list value is sent as repeated headers (Impersonate-Group). */
  headers?: Record<string, string | string[]>;
  /** A stream is piped as it arrives (a proxied upload is never held in memory). */
  body?: Buffer | string | Readable;
  signal?: AbortSignal;
  /** Socket idle timeout; watches rely on bookmarks to keep the socket busy. */
  idleTimeoutMs?: number;
  /** Which connections carry it (MemberLane; default 'pool'). */
  lane?: MemberLane;
}

/** Where an answer's bytes go as they arrive (MemberClient.fetch), and all of them once it has ended. */
export interface AnswerSink {
  push(chunk: Buffer): void;
  readonly body: Buffer;
}

/**
 * Which connections to a member a request goes on, so that no kind of request can take the
 * connections another needs:
 * - 'pool': requests that end (lists, gets, writes), 64 keep-alive connections;
 * - 'long-running': requests that stay open as long as their reader wants (watches, followed
 *   logs, proxied streams), a connection each;
 * - 'reviews': the TokenReviews and SubjectAccessReviews that authenticate and authorize every
 *   caller, on connections of their own, so that no caller's flood of reads delays another's.
 */
export type MemberLane = 'pool' | 'long-running' | 'reviews';

/** What a request sent on a pooled connection the member had closed fails with. */
const STALE_SOCKET_ERRORS: ReadonlySet<string> = new Set(['ECONNRESET', 'EPIPE']);
/**
 * Methods a member can be sent twice: reads, and writes whose second arrival changes nothing the
 * first did not (a PUT is the same state; a DELETE of what is gone is a 404). Not POST (a second
 * object) nor PATCH (a JSON patch applied twice).
 */
const RETRIED_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'OPTIONS', 'PUT', 'DELETE']);


export class MemberClient {
  /** The token file (server + tokenFile configurations) and when it was last read. */
  private tokenSource?: { file: string; readAt: number };
  /** Called as each answer's head arrives, unless a 5xx: the member is answering (the heartbeat's `heard`). */
  onAnswer?: () => void;

  private constructor(
    readonly cluster: string,
    readonly server: URL,
    private readonly tls: RequestOptions,
    private authHeaders: Record<string, string>,
    /**
     * Each lane's connections (MemberLane). 'long-running' has as many as it needs: in one pool of
     * 64, a caller's 64 live watches took every connection to a member, its lists, gets, writes
     * and token reviews then waited out their timeouts, and every caller got 503s, cached reads
     * too. 'reviews' has 64 of its own: in the pool, behind one caller's 200 live lists that the
     * members held (each ~3 s), another caller's token review timed out, a 503 after 9.2 s.
     */
    private readonly lanes: Record<MemberLane, Agent | HttpAgent>,
    /**
     * One connection of its own for the heartbeat's probes: queued behind the pool's watches and
     * lists, a probe would call a busy member silent.
     */
    private readonly probeAgent: Agent | HttpAgent,
  ) {}

  static async create(cfg: ClusterConfig): Promise<MemberClient> {
    const kc = new KubeConfig();
    if (cfg.kubeconfig) {
      kc.loadFromFile(cfg.kubeconfig);
      if (cfg.context) kc.setCurrentContext(cfg.context);
    } else if (cfg.server) {
      const token = cfg.tokenFile ? (await readFile(cfg.tokenFile, 'utf8')).trim() : undefined;
      kc.loadFromOptions({
        clusters: [{ name: cfg.name, server: cfg.server, caFile: cfg.caFile, skipTLSVerify: cfg.insecureSkipTLSVerify ?? false }],
        users: [{ name: cfg.name, ...(token ? { token } : {}) }],
        contexts: [{ name: cfg.name, cluster: cfg.name, user: cfg.name }],
        currentContext: cfg.name,
      });
    }
    const client = await MemberClient.fromKubeConfig(cfg.name, kc);
    if (cfg.server && cfg.tokenFile) client.tokenSource = { file: cfg.tokenFile, readAt: Date.now() };
    return client;
  }

  /** A client of the current context's cluster, with its user's credentials (the CLI's way to flotilla, as kubectl's). */
  static async fromKubeConfig(name: string, kc: KubeConfig): Promise<MemberClient> {
    const current = kc.getCurrentCluster();
    if (!current) throw new Error(`cluster ${name}: no current cluster in its kubeconfig`);
    const opts: RequestOptions = {};
    await kc.applyToHTTPSOptions(opts);
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(opts.headers ?? {})) {
      if (typeof v === 'string') headers[k.toLowerCase()] = v;
    }
    const tls = {
      ca: opts.ca,
      cert: opts.cert,
      key: opts.key,
      rejectUnauthorized: opts.rejectUnauthorized,
      servername: opts.servername,
    } satisfies RequestOptions;
    const server = new URL(current.server);
    const agentOf = (opts: { keepAlive: true; maxSockets?: number }) => (server.protocol === 'http:' ? new HttpAgent(opts) : new Agent({ ...opts, ...tls }));
    // Long-running requests are bounded where they are made (options.liveReads.maxWatches, the
    // cached resources); reviews end quickly, and their own 64 keep a flood of unknown tokens
    // from opening a connection each.
    const lanes = {
      pool: agentOf({ keepAlive: true, maxSockets: 64 }),
      'long-running': agentOf({ keepAlive: true }),
      reviews: agentOf({ keepAlive: true, maxSockets: 64 }),
    };
    return new MemberClient(name, server, tls, headers, lanes, agentOf({ keepAlive: true, maxSockets: 1 }));
  }

  /** Re-reads the token file once its token is older than TOKEN_FILE_REREAD_MS (a failed read keeps the old token). */
  private freshAuthHeaders(): Record<string, string> {
    const src = this.tokenSource;
    if (src && Date.now() - src.readAt >= TOKEN_FILE_REREAD_MS) {
      src.readAt = Date.now();
      try {
        const token = readFileSync(src.file, 'utf8').trim();
        if (token) this.authHeaders = { ...this.authHeaders, authorization: `Bearer ${token}` };
      } catch {
        // keep the token read last; the member's 401s will say why
      }
    }
    return this.authHeaders;
  }

  /**
   * Sends a request and resolves with the response head; the body is left unread. A pooled
   * connection the member closed while idle fails the request sent on it at once (ECONNRESET,
   * "socket hang up"); such a request is sent once more on a new connection when sending it twice
   * cannot do twice what it means (RETRIED_METHODS, a body held in memory).
   */
  send(req: MemberRequest, retried = false): Promise<IncomingMessage> {
    return new Promise((resolve, reject) => {
      let answered = false;
      const r = this.open(req, this.lanes[req.lane ?? 'pool'], (res) => {
        answered = true;
        if ((res.statusCode ?? 0) < 500) this.onAnswer?.();
        resolve(res);
      });
      if (req.idleTimeoutMs) r.setTimeout(req.idleTimeoutMs, () => r.destroy(new Error(`no data from ${this.cluster} for ${req.idleTimeoutMs} ms`)));
      r.on('error', (e: NodeJS.ErrnoException) => {
        const resendable = req.body === undefined || typeof req.body === 'string' || Buffer.isBuffer(req.body);
        if (!retried && !answered && r.reusedSocket && STALE_SOCKET_ERRORS.has(e.code ?? '') && RETRIED_METHODS.has(req.method ?? 'GET') && resendable && !req.signal?.aborted) {
          resolve(this.send(req, true));
          return;
        }
        reject(e);
      });
      const body = req.body;
      if (body === undefined || typeof body === 'string' || Buffer.isBuffer(body)) {
        r.end(body);
      } else {
        body.on('error', (e) => r.destroy(e));
        body.pipe(r);
      }
    });
  }

  /**
   * Every body is framed. Node frames a body by itself only for methods that usually carry one: a
   * DELETE's (or an OPTIONS's) would go out with neither Content-Length nor Transfer-Encoding, the
   * member would never read it (its DeleteOptions ignored) and would parse it as the next request
   * on this pooled connection, sent with flotilla's own credentials.
   */
  private static framing(body: MemberRequest['body']): Record<string, string> {
    if (body === undefined) return {};
    if (typeof body === 'string' || Buffer.isBuffer(body)) return { 'content-length': String(Buffer.byteLength(body)) };
    return { 'transfer-encoding': 'chunked' };
  }

  /**
   * Sends an HTTP upgrade request (exec, attach, port-forward, a proxied websocket). Resolves with
   * the member's socket once it answers 101, or with its plain response otherwise (the caller
   * passes that back, so clients can fall back from websocket to SPDY).
   */
  upgrade(req: MemberRequest): Promise<UpgradeResult> {
    return new Promise((resolve, reject) => {
      // Its own connection: an upgraded socket never goes back to a keep-alive pool.
      const r = this.open(req, false);
      r.on('upgrade', (res: IncomingMessage, socket: Duplex, head: Buffer) => resolve({ upgraded: true, res, socket, head }));
      r.on('response', (res: IncomingMessage) => resolve({ upgraded: false, res }));
      r.on('error', reject);
      r.end();
    });
  }

  /** A request to the member with flotilla's credentials and the request's own headers. */
  private open(req: MemberRequest, agent: Agent | HttpAgent | false, onResponse?: (res: IncomingMessage) => void): ClientRequest {
    const url = memberUrl(this.server, req.path);
    const doRequest = url.protocol === 'http:' ? httpRequest : request;
    return doRequest(
      url,
      {
        method: req.method ?? 'GET',
        agent,
        ...this.tls,
        // The framing last: no caller header may set how the member reads the body.
        headers: { ...withoutFraming({ ...this.freshAuthHeaders(), 'user-agent': 'flotilla', ...req.headers }), ...MemberClient.framing(req.body) },
        signal: req.signal,
      },
      onResponse,
    );
  }

  /**
   * Sends a request and buffers the whole body. `take`: asked for each chunk's bytes before it is
   * kept; when it refuses, the answer is dropped (its connection closed) and fetch rejects with
   * AnswerRefusedError. `sinkFor`: where the body goes as it arrives, chosen by the answer's head
   * (a live list splices its items meanwhile); by default its chunks are joined at the end.
   */
  async fetch(req: MemberRequest, take?: (bytes: number) => boolean, sinkFor?: (res: IncomingMessage) => AnswerSink | undefined): Promise<{ status: number; headers: IncomingMessage['headers']; body: Buffer; sink?: AnswerSink }> {
    const res = await this.send(req);
    const sink = sinkFor?.(res);
    // 'data' events, not an async iterator: a member writes its lists in ~2 KB chunks, and a
    // promise per chunk was a measurable part of reading a large list.
    const chunks: Buffer[] = [];
    const keep = sink ? (chunk: Buffer) => sink.push(chunk) : (chunk: Buffer) => void chunks.push(chunk);
    await new Promise<void>((resolve, reject) => {
      res.on('data', (chunk: Buffer) => {
        if (take && !take(chunk.length)) {
          chunks.length = 0;
          // Rejected first: destroying the answer fires its 'aborted' at once.
          reject(new AnswerRefusedError(this.cluster));
          res.destroy();
          return;
        }
        keep(chunk);
      });
      res.once('end', resolve);
      res.once('error', reject);
      res.once('aborted', () => reject(new Error(`${this.cluster}: the answer was cut off`)));
    });
    return { status: res.statusCode ?? 0, headers: res.headers, body: sink ? sink.body : Buffer.concat(chunks), ...(sink ? { sink } : {}) };
  }

  async getJson<T>(path: string, signal?: AbortSignal): Promise<T> {
    const res = await this.fetch({ path, headers: { accept: 'application/json' }, signal });
    if (res.status !== 200) throw new MemberHttpError(this.cluster, path, res.status, res.body.toString('utf8'));
    return JSON.parse(res.body.toString('utf8')) as T;
  }

  /**
   * The heartbeat's probe: a GET of a health path as flotilla itself, on the probe connection.
   * Resolves on 2xx; rejects with the status (and the start of the body) otherwise.
   */
  async probe(path: string, signal: AbortSignal): Promise<void> {
    const res = await new Promise<IncomingMessage>((resolve, reject) => {
      const r = this.open({ path, signal }, this.probeAgent, resolve);
      r.on('error', reject);
      r.end();
    });
    const chunks: Buffer[] = [];
    for await (const chunk of res) chunks.push(chunk as Buffer);
    const status = res.statusCode ?? 0;
    if (status < 200 || status > 299) throw new Error(`${path}: HTTP ${status}: ${Buffer.concat(chunks).toString('utf8').slice(0, 200)}`);
  }

  close(): void {
    for (const agent of Object.values(this.lanes)) agent.destroy();
    this.probeAgent.destroy();
  }
}

const FRAMING_HEADERS = new Set(['content-length', 'transfer-encoding']);

function withoutFraming(headers: Record<string, string | string[]>): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [k, v] of Object.entries(headers)) if (!FRAMING_HEADERS.has(k.toLowerCase())) out[k] = v;
  return out;
}

/**
 * The member URL for a request path. The last guard of the one forwarding rule: every path was
 * re-built from a parsed request, so a dot segment or an encoded slash here is a bug upstream, and
 * the request is refused rather than resolved (`new URL` would resolve `%2e%2e` itself). A server
 * URL with a path of its own (a cluster behind a proxy) keeps it.
 */
export function memberUrl(server: URL, path: string): URL {
  if (!path.startsWith('/') || unsafeMemberPath(path)) throw new UnsafeMemberPathError(path);
  const url = new URL(server.href);
  const q = path.indexOf('?');
  url.pathname = server.pathname.replace(/\/+$/, '') + (q < 0 ? path : path.slice(0, q));
  url.search = q < 0 ? '' : path.slice(q);
  return url;
}

/** Dot segments (raw or percent-encoded), empty segments or encoded slashes in a path's path part. */
export function unsafeMemberPath(path: string): boolean {
  const q = path.indexOf('?');
  const p = q < 0 ? path : path.slice(0, q);
  if (/%2f|%5c|\\|#/i.test(p)) return true;
  return p
    .split('/')
    .slice(1)
    .some((seg, i, all) => (seg === '' && i < all.length - 1) || /^(\.|%2e){1,2}$/i.test(seg));
}

export class UnsafeMemberPathError extends Error {
  constructor(readonly path: string) {
    super(`refusing to send an unnormalised path to a member: ${JSON.stringify(path.slice(0, 200))}`);
  }
}

export type UpgradeResult =
  | { upgraded: true; res: IncomingMessage; socket: Duplex; head: Buffer }
  | { upgraded: false; res: IncomingMessage };

/** A member's answer dropped as it arrived: the bytes it would take were refused (fetch's `take`). */
export class AnswerRefusedError extends Error {
  constructor(readonly cluster: string) {
    super(`${cluster}: the answer was dropped: flotilla may not hold more of it`);
  }
}

export class MemberHttpError extends Error {
  constructor(
    readonly cluster: string,
    readonly path: string,
    readonly status: number,
    readonly body: string,
  ) {
    super(`${cluster}: GET ${path}: HTTP ${status}: ${body.slice(0, 300)}`);
  }
}
