import { createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { TLSSocket } from 'node:tls';
import type { MemberClient } from '../members/member-client.js';
import { unauthorized } from '../api/status.js';
import { anonymousIdentity, type Identity } from './identity.js';

/**
 * Who the caller is. In order: a client certificate the TLS layer verified against the client CA
 * (user = CN, groups = O), a bearer token from the static token file, a bearer token a member
 * cluster vouches for through a TokenReview. Verdicts on tokens are cached briefly, by hash: a
 * watch-heavy client must not cost a TokenReview per request.
 */
export interface AuthenticationConfig {
  /** The member that reviews bearer tokens (its authenticators decide). */
  tokenReviewCluster?: string;
  /** Static tokens, `token,user,uid,"group1,group2"` per line (kube-apiserver's format). */
  tokens?: Map<string, Identity>;
  /** How long a TokenReview verdict is reused. */
  cacheTTLSeconds: number;
  /** Whether the TLS layer asks for client certificates (a client CA is configured). */
  clientCertificates?: boolean;
  /** A request without credentials is system:anonymous; otherwise it has no caller (a 401). */
  anonymous?: boolean;
}

interface Verdict {
  identity?: Identity;
  until: number;
}

const MAX_CACHED = 10_000;

export class Authenticator {
  private readonly cache = new Map<string, Verdict>();

  constructor(
    private readonly config: AuthenticationConfig,
    private readonly member: (name: string) => MemberClient | undefined,
  ) {}

  /** Whether any way of presenting credentials is configured. */
  get enabled(): boolean {
    return this.config.tokenReviewCluster !== undefined || (this.config.tokens?.size ?? 0) > 0 || this.config.clientCertificates === true;
  }

  /**
   * The caller; for one that sent no credentials system:anonymous where allowed, else undefined.
   * 401 for credentials that do not hold (never anonymous: the apiserver does not fall back either).
   */
  async authenticate(req: IncomingMessage): Promise<Identity | undefined> {
    const fromCert = certificateIdentity(req);
    if (fromCert) return fromCert;
    const auth = req.headers.authorization;
    // A client certificate the CA did not sign is failed credentials, not none (as kube-apiserver does).
    if (!auth) return this.config.anonymous && !rejectedCertificate(req) ? anonymousIdentity() : undefined;
    const m = /^Bearer\s+(\S+)\s*$/i.exec(auth);
    if (!m) throw unauthorized('Unauthorized: flotilla accepts bearer tokens and client certificates');
    const token = m[1]!;
    const fromFile = this.config.tokens?.get(token);
    if (fromFile) return fromFile;
    if (this.config.tokenReviewCluster === undefined) throw unauthorized('Unauthorized');
    const key = createHash('sha256').update(token).digest('base64url');
    const cached = this.cache.get(key);
    const now = Date.now();
    let verdict = cached && cached.until > now ? cached : undefined;
    if (!verdict) {
      verdict = { ...(await this.review(token)), until: 0 };
      // A rejected token is remembered for less time: it may be a token that just got created.
      verdict.until = now + (verdict.identity ? this.config.cacheTTLSeconds * 1000 : Math.min(2000, this.config.cacheTTLSeconds * 1000));
      if (this.cache.size >= MAX_CACHED) this.cache.delete(this.cache.keys().next().value!);
      this.cache.set(key, verdict);
    }
    if (!verdict.identity) throw unauthorized('Unauthorized');
    return verdict.identity;
  }

  private async review(token: string): Promise<{ identity?: Identity }> {
    const cluster = this.config.tokenReviewCluster!;
    const client = this.member(cluster);
    if (!client) throw unauthorized(`Unauthorized: the token reviewer, cluster ${cluster}, is not a member of the fleet`);
    const res = await client.fetch({
      method: 'POST',
      path: '/apis/authentication.k8s.io/v1/tokenreviews',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify({ apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token } }),
    });
    if (res.status !== 201 && res.status !== 200) {
      throw unauthorized(`Unauthorized: cluster ${cluster} could not review the token (HTTP ${res.status})`);
    }
    const review = JSON.parse(res.body.toString('utf8')) as {
      status?: { authenticated?: boolean; user?: { username?: string; uid?: string; groups?: string[]; extra?: Record<string, string[]> } };
    };
    const user = review.status?.user;
    if (!review.status?.authenticated || !user?.username) return {};
    return { identity: { user: user.username, ...(user.uid ? { uid: user.uid } : {}), groups: user.groups ?? [], extra: user.extra ?? {} } };
  }
}

function certificateIdentity(req: IncomingMessage): Identity | undefined {
  const socket = req.socket as TLSSocket;
  if (!socket.encrypted || !socket.authorized) return undefined;
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
