import { X509Certificate } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { DetailedPeerCertificate, PeerCertificate, TLSSocket } from 'node:tls';
import { unauthorized } from '../api/status.js';
import type { Identity } from './identity.js';

/**
 * The aggregation layer's front proxy (a hub kube-apiserver) tells an extension apiserver who is
 * asking in request headers (`X-Remote-User`, `-Group`, `-Extra-*`). Those headers are believed
 * only on a connection whose client certificate chains to the requestheader CA and, when names are
 * listed, carries one of the allowed common names: anyone else could write them. A request that
 * sends them without that certificate is refused outright (401), never served as someone else.
 */
export interface RequestHeaderConfig {
  /** The requestheader client CA(s), PEM: the front proxy's client certificate chains to one. */
  clientCA: Buffer;
  /** Common names the front proxy's certificate may carry; empty: any the CA signed. */
  allowedNames: string[];
  usernameHeaders: string[];
  groupHeaders: string[];
  extraHeaderPrefixes: string[];
  uidHeaders?: string[];
}

/** The defaults of kube-apiserver's own front proxy, which `kubeadm` and most control planes use. */
export const DEFAULT_REQUEST_HEADERS = {
  usernameHeaders: ['X-Remote-User'],
  groupHeaders: ['X-Remote-Group'],
  extraHeaderPrefixes: ['X-Remote-Extra-'],
  uidHeaders: ['X-Remote-Uid'],
};

/** Certificates of a PEM bundle. */
export function certificatesOf(pem: Buffer): X509Certificate[] {
  const blocks = pem.toString('utf8').match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  return blocks.map((b) => new X509Certificate(b));
}

/** Whether the peer's certificate chain (as it sent it) reaches one of `cas` by signature. */
export function chainsTo(socket: TLSSocket, cas: readonly X509Certificate[]): boolean {
  if (!socket.encrypted || !socket.authorized || cas.length === 0) return false;
  let cert: DetailedPeerCertificate | undefined = socket.getPeerCertificate(true);
  // The TLS layer verified the chain against every trusted CA; this says which one it reached.
  for (let depth = 0; cert?.raw && depth < 8; depth++) {
    const x = new X509Certificate(cert.raw);
    if (cas.some((ca) => x.checkIssued(ca) && x.verify(ca.publicKey))) return true;
    if (cert.issuerCertificate === cert) break;
    cert = cert.issuerCertificate;
  }
  return false;
}

export class RequestHeaderAuthenticator {
  private readonly cas: X509Certificate[];
  private readonly allowed: Set<string>;
  private readonly userHeaders: string[];
  private readonly groupHeaders: string[];
  private readonly uidHeaders: string[];
  private readonly extraPrefixes: string[];
  /** Every header this scheme reads: none of them may arrive from anyone but the front proxy. */
  private readonly claimHeaders: string[];

  constructor(config: RequestHeaderConfig) {
    this.cas = certificatesOf(config.clientCA);
    if (this.cas.length === 0) throw new Error('the requestheader client CA holds no certificate');
    this.allowed = new Set(config.allowedNames);
    const lower = (hs: string[]) => hs.map((h) => h.toLowerCase());
    this.userHeaders = lower(config.usernameHeaders);
    this.groupHeaders = lower(config.groupHeaders);
    this.uidHeaders = lower(config.uidHeaders ?? []);
    this.extraPrefixes = lower(config.extraHeaderPrefixes);
    this.claimHeaders = [...this.userHeaders, ...this.groupHeaders, ...this.uidHeaders];
  }

  /**
   * The user the front proxy names; undefined when the request names nobody in these headers
   * (it authenticates otherwise). 401 for headers anyone but the front proxy sent.
   */
  authenticate(req: IncomingMessage): Identity | undefined {
    const headers = req.headersDistinct;
    const claims = this.claimHeaders.some((h) => headers[h] !== undefined) ||
      Object.keys(headers).some((h) => this.extraPrefixes.some((p) => h.startsWith(p)));
    if (!claims) return undefined;
    const socket = req.socket as TLSSocket;
    if (!chainsTo(socket, this.cas)) {
      throw unauthorized('Unauthorized: request headers naming a user are accepted only from the front proxy, with its client certificate');
    }
    const cn = commonName(socket.getPeerCertificate());
    if (this.allowed.size > 0 && (cn === undefined || !this.allowed.has(cn))) {
      throw unauthorized('Unauthorized: the client certificate is not one of the front proxy’s allowed names');
    }
    const user = this.first(headers, this.userHeaders);
    if (!user) throw unauthorized('Unauthorized: the front proxy named no user');
    const uid = this.first(headers, this.uidHeaders);
    const groups = this.groupHeaders.flatMap((h) => headers[h] ?? []);
    const extra: Record<string, string[]> = {};
    for (const [name, values] of Object.entries(headers)) {
      const prefix = this.extraPrefixes.find((p) => name.startsWith(p));
      if (!prefix || !values) continue;
      // Keys travel percent-encoded (header names are case-insensitive tokens), as the aggregator sends them.
      let key: string;
      try {
        key = decodeURIComponent(name.slice(prefix.length)).toLowerCase();
      } catch {
        throw unauthorized('Unauthorized: a malformed extra header from the front proxy');
      }
      (extra[key] ??= []).push(...values);
    }
    return { user, ...(uid ? { uid } : {}), groups, extra };
  }

  private first(headers: NodeJS.Dict<string[]>, names: string[]): string | undefined {
    for (const h of names) {
      const v = headers[h]?.find((x) => x.length > 0);
      if (v) return v;
    }
    return undefined;
  }
}

function commonName(cert: PeerCertificate | undefined): string | undefined {
  const cn = cert?.subject?.CN as string | string[] | undefined;
  return Array.isArray(cn) ? cn[0] : cn;
}
