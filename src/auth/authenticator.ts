import { createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { TLSSocket } from 'node:tls';
import type { MemberClient } from '../members/member-client.js';
import { serviceUnavailable, unauthorized } from '../api/status.js';
import { anonymousIdentity, type Identity } from './identity.js';
import { chainsTo, type RequestHeaderAuthenticator } from './request-header.js';
import type { X509Certificate } from 'node:crypto';
import { REJECTED_TOKEN_TTL_MS, TOKEN_REVIEW_TIMEOUT_MS, TOKEN_VERDICTS_MAX } from '../registry/defaults.js';

/**
 * Who the caller is. In order: the user the aggregation layer's front proxy names in request
 * headers (src/auth/request-header.ts), a client certificate the TLS layer verified against the client CA
 * (user = CN, groups = O), a bearer token from the static token file, a bearer token a member
 * cluster vouches for through a TokenReview. Verdicts on tokens are cached briefly, by hash: a
 * watch-heavy client must not cost a TokenReview per request.
 *
 * A reviewer that cannot answer (silent, failing, slower than TOKEN_REVIEW_TIMEOUT_MS) is not the
 * caller's fault: a positive verdict younger than `staleVerdictSeconds` is reused, so callers
 * active a moment ago keep being served; anyone else gets a 503, never a hang. The price: a token
 * revoked meanwhile keeps working that long while the reviewer is out.
 */
export interface AuthenticationConfig {
  /** The member that reviews bearer tokens (its authenticators decide). */
  tokenReviewCluster?: string;
  /** The hub cluster, which reviews bearer tokens when no member is named to (aggregated mode). */
  hubReviewer?: MemberClient;
  /** Static tokens, `token,user,uid,"group1,group2"` per line (kube-apiserver's format). */
  tokens?: Map<string, Identity>;
  /** How long a TokenReview verdict is reused. */
  cacheTTLSeconds: number;
  /** How old a positive verdict may be and still be reused while the reviewer cannot answer; 0: never. */
  staleVerdictSeconds?: number;
  /** Whether the TLS layer asks for client certificates (a client CA is configured). */
  clientCertificates?: boolean;
  /**
   * The CAs whose client certificates name users. Needed when the TLS layer trusts more CAs than
   * these (the front proxy's): a certificate of those names no user by itself. Absent: any the TLS layer verified.
   */
  clientCA?: X509Certificate[];
  /** The front proxy of a hub's aggregation layer, whose request headers name the caller. */
  requestHeader?: RequestHeaderAuthenticator;
  /** A request without credentials is system:anonymous; otherwise it has no caller (a 401). */
  anonymous?: boolean;
}

interface Verdict {
  identity?: Identity;
  /** When the reviewer gave it. */
  reviewedAt: number;
  /** Reused without asking until then. */
  until: number;
}


/** Why a reviewer could not give a verdict (as opposed to refusing the token). */
class ReviewerUnavailable extends Error {}

export class Authenticator {
  private readonly cache = new Map<string, Verdict>();
  /** Reviews under way, by token hash: concurrent requests with one token wait for one review. */
  private readonly reviewing = new Map<string, Promise<Verdict>>();
  /** Requests whose caller the front proxy named. */
  private readonly proxied = new WeakSet<IncomingMessage>();

  constructor(
    private readonly config: AuthenticationConfig,
    private readonly member: (name: string) => MemberClient | undefined,
    /** Whether a member is silent (its heartbeat unanswered): a review sent to it now would hang. */
    private readonly silent: (name: string) => boolean = () => false,
  ) {}

  /** Whether any way of presenting credentials is configured. */
  get enabled(): boolean {
    return this.reviews || (this.config.tokens?.size ?? 0) > 0 || this.config.clientCertificates === true ||
      this.config.requestHeader !== undefined;
  }

  private get reviews(): boolean {
    return this.config.tokenReviewCluster !== undefined || this.config.hubReviewer !== undefined;
  }

  /** Whether the front proxy named this request's caller (authenticate() said so). */
  frontProxied(req: IncomingMessage): boolean {
    return this.proxied.has(req);
  }

  /**
   * The caller; for one that sent no credentials system:anonymous where allowed, else undefined.
   * 401 for credentials that do not hold (never anonymous: the apiserver does not fall back either).
   */
  async authenticate(req: IncomingMessage): Promise<Identity | undefined> {
    const named = this.config.requestHeader?.authenticate(req);
    if (named) {
      this.proxied.add(req);
      return named;
    }
    const fromCert = certificateIdentity(req, this.config.clientCA);
    if (fromCert) return fromCert;
    const auth = req.headers.authorization;
    // A client certificate the CA did not sign is failed credentials, not none (as kube-apiserver does).
    if (!auth) return this.config.anonymous && !rejectedCertificate(req) ? anonymousIdentity() : undefined;
    const m = /^Bearer\s+(\S+)\s*$/i.exec(auth);
    if (!m) throw unauthorized('Unauthorized: flotilla accepts bearer tokens and client certificates');
    const token = m[1]!;
    const fromFile = this.config.tokens?.get(token);
    if (fromFile) return fromFile;
    if (!this.reviews) throw unauthorized('Unauthorized');
    const key = createHash('sha256').update(token).digest('base64url');
    const cached = this.cache.get(key);
    const now = Date.now();
    if (cached && cached.until > now) return accepted(cached);
    const staleMs = (this.config.staleVerdictSeconds ?? 0) * 1000;
    const fallback = cached?.identity && now - cached.reviewedAt < staleMs ? cached : undefined;
    const reviewer = this.config.tokenReviewCluster;
    // A silent reviewer is not asked on behalf of a caller it vouched for a moment ago.
    if (fallback && reviewer !== undefined && this.silent(reviewer)) return accepted(fallback);
    let verdict: Verdict;
    try {
      verdict = await this.reviewOnce(key, token);
    } catch (e) {
      if (!(e instanceof ReviewerUnavailable)) throw e;
      if (fallback) return accepted(fallback);
      throw serviceUnavailable(`${e.message}; try again later`);
    }
    return accepted(verdict);
  }

  /** One review per token at a time; its verdict cached. */
  private reviewOnce(key: string, token: string): Promise<Verdict> {
    let pending = this.reviewing.get(key);
    if (!pending) {
      pending = this.review(token)
        .then((result) => {
          const now = Date.now();
          const ttl = result.identity ? this.config.cacheTTLSeconds * 1000 : Math.min(REJECTED_TOKEN_TTL_MS, this.config.cacheTTLSeconds * 1000);
          const verdict: Verdict = { ...result, reviewedAt: now, until: now + ttl };
          // Deleted first: the Map's order is the order of reviews, oldest evicted first.
          this.cache.delete(key);
          if (this.cache.size >= TOKEN_VERDICTS_MAX) this.cache.delete(this.cache.keys().next().value!);
          this.cache.set(key, verdict);
          return verdict;
        })
        .finally(() => this.reviewing.delete(key));
      this.reviewing.set(key, pending);
    }
    return pending;
  }

  private async review(token: string): Promise<{ identity?: Identity }> {
    const cluster = this.config.tokenReviewCluster;
    const client = cluster !== undefined ? this.member(cluster) : this.config.hubReviewer;
    if (!client) throw unauthorized(`Unauthorized: the token reviewer, cluster ${cluster}, is not a member of the fleet`);
    const who = cluster !== undefined ? `the token reviewer, cluster ${cluster},` : 'the hub';
    let res: Awaited<ReturnType<MemberClient['fetch']>>;
    try {
      res = await client.fetch({
        method: 'POST',
        path: '/apis/authentication.k8s.io/v1/tokenreviews',
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        body: JSON.stringify({ apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token } }),
        signal: AbortSignal.timeout(TOKEN_REVIEW_TIMEOUT_MS),
        lane: 'reviews',
      });
    } catch (e) {
      const why = (e as Error).name === 'TimeoutError' || (e as Error).name === 'AbortError' ? `no answer within ${TOKEN_REVIEW_TIMEOUT_MS / 1000} s` : (e as Error).message;
      throw new ReviewerUnavailable(`${who} could not review the token (${why})`);
    }
    if (res.status >= 500 || res.status === 429) {
      throw new ReviewerUnavailable(`${who} could not review the token (HTTP ${res.status})`);
    }
    if (res.status !== 201 && res.status !== 200) {
      throw unauthorized(`Unauthorized: ${who.replace(/,$/, '')} could not review the token (HTTP ${res.status})`);
    }
    const review = JSON.parse(res.body.toString('utf8')) as {
      status?: { authenticated?: boolean; user?: { username?: string; uid?: string; groups?: string[]; extra?: Record<string, string[]> } };
    };
    const user = review.status?.user;
    if (!review.status?.authenticated || !user?.username) return {};
    return { identity: { user: user.username, ...(user.uid ? { uid: user.uid } : {}), groups: user.groups ?? [], extra: user.extra ?? {} } };
  }
}

/** The caller a verdict names, or a 401 for a token the reviewer refused. */
function accepted(verdict: Verdict): Identity {
  if (!verdict.identity) throw unauthorized('Unauthorized');
  return verdict.identity;
}

function certificateIdentity(req: IncomingMessage, clientCA: X509Certificate[] | undefined): Identity | undefined {
  const socket = req.socket as TLSSocket;
  if (!socket.encrypted || !socket.authorized) return undefined;
  if (clientCA && !chainsTo(socket, clientCA)) return undefined;
  const cert = socket.getPeerCertificate();
  const cn = cert?.subject?.CN;
  if (!cn) return undefined;
  const o = cert.subject.O;
  const groups = o === undefined ? [] : Array.isArray(o) ? o : [o];
  return { user: Array.isArray(cn) ? cn[0]! : cn, groups, extra: {} };
}

function rejectedCertificate(req: IncomingMessage): boolean {
  const socket = req.socket as TLSSocket;
  return socket.encrypted === true && !socket.authorized && Object.keys(socket.getPeerCertificate() ?? {}).length > 0;
}

/** Parses a kube-apiserver static token file: `token,user,uid[,"group1,group2"]` per line. */
export function parseTokenFile(text: string, source: string): Map<string, Identity> {
  const tokens = new Map<string, Identity>();
  text.split('\n').forEach((raw, i) => {
    const line = raw.trim();
    if (!line || line.startsWith('#')) return;
    const m = /^([^,]+),([^,]+),([^,]*)(?:,"?([^"]*)"?)?$/.exec(line);
    if (!m) throw new Error(`${source}:${i + 1}: expected token,user,uid[,"groups"]`);
    const groups = m[4] ? m[4].split(',').map((g) => g.trim()).filter(Boolean) : [];
    tokens.set(m[1]!, { user: m[2]!, ...(m[3] ? { uid: m[3] } : {}), groups, extra: {} });
  });
  return tokens;
}
