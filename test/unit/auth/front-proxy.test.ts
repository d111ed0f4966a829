import { describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { IncomingMessage } from 'node:http';
import { RequestHeaderAuthenticator, certificatesOf } from '../../../src/auth/request-header.js';
import { fromConfigMapData } from '../../../src/auth/hub-authentication.js';
import { FLEET_PATH, withoutFleetPath } from '../../../src/api/fleet-path.js';

/** A self-signed CA and a client certificate it signed, made with the openssl CLI. */
function pki(): { ca: Buffer; client: Buffer } {
  const dir = mkdtempSync(join(tmpdir(), 'front-proxy-'));
  const run = (args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
  run(['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '1', '-subj', '/CN=test-ca']);
  writeFileSync(join(dir, 'ext'), 'extendedKeyUsage=clientAuth\n');
  run(['req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'c.key', '-out', 'c.csr', '-subj', '/CN=front-proxy-client']);
  run(['x509', '-req', '-in', 'c.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'c.crt', '-days', '1', '-extfile', 'ext']);
  return { ca: readFileSync(join(dir, 'ca.crt')), client: readFileSync(join(dir, 'c.crt')) };
}

const { ca, client } = pki();
const other = pki();

/** A request on a TLS socket that presented `cert` (DER from PEM), verified by the TLS layer or not. */
function requestWith(headers: Record<string, string | string[]>, cert?: Buffer, authorized = true): IncomingMessage {
  const raw = cert ? certificatesOf(cert)[0]!.raw : undefined;
  const peer = raw ? { raw, subject: { CN: 'front-proxy-client' }, issuerCertificate: undefined } : {};
  const distinct = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), Array.isArray(v) ? v : [v]]));
  return {
    headersDistinct: distinct,
    socket: { encrypted: true, authorized: authorized && raw !== undefined, getPeerCertificate: () => peer },
  } as unknown as IncomingMessage;
}

const authenticator = new RequestHeaderAuthenticator({
  clientCA: ca,
  allowedNames: ['front-proxy-client'],
  usernameHeaders: ['X-Remote-User'],
  groupHeaders: ['X-Remote-Group'],
  extraHeaderPrefixes: ['X-Remote-Extra-'],
});

describe('RequestHeaderAuthenticator', () => {
  it('reads user, every group value and percent-encoded extra keys from the front proxy', () => {
    const id = authenticator.authenticate(requestWith({
      'X-Remote-User': 'alice',
      'X-Remote-Group': ['team-a', 'system:authenticated'],
      'X-Remote-Extra-Scopes': ['a', 'b'],
      'X-Remote-Extra-example.org%2Fthing': 'x',
    }, client));
    expect(id).toEqual({ user: 'alice', groups: ['team-a', 'system:authenticated'], extra: { scopes: ['a', 'b'], 'example.org/thing': ['x'] } });
  });

  it('names nobody when no header claims anyone (other credentials decide)', () => {
    expect(authenticator.authenticate(requestWith({ authorization: 'Bearer x' }))).toBeUndefined();
  });

  it('refuses the headers without the front proxy’s certificate, or with another CA’s', () => {
    expect(() => authenticator.authenticate(requestWith({ 'X-Remote-User': 'system:admin' }))).toThrow(/only from the front proxy/);
    expect(() => authenticator.authenticate(requestWith({ 'X-Remote-Group': 'system:masters' }))).toThrow(/only from the front proxy/);
    expect(() => authenticator.authenticate(requestWith({ 'X-Remote-User': 'system:admin' }, other.client))).toThrow(/only from the front proxy/);
    // A certificate the TLS layer did not verify counts for nothing, whoever signed it.
    expect(() => authenticator.authenticate(requestWith({ 'X-Remote-User': 'system:admin' }, client, false))).toThrow(/only from the front proxy/);
  });

  it('refuses a certificate of the right CA with a name not allowed', () => {
    const strict = new RequestHeaderAuthenticator({ clientCA: ca, allowedNames: ['aggregator'], usernameHeaders: ['X-Remote-User'], groupHeaders: [], extraHeaderPrefixes: [] });
    expect(() => strict.authenticate(requestWith({ 'X-Remote-User': 'alice' }, client))).toThrow(/allowed names/);
    const any = new RequestHeaderAuthenticator({ clientCA: ca, allowedNames: [], usernameHeaders: ['X-Remote-User'], groupHeaders: [], extraHeaderPrefixes: [] });
    expect(any.authenticate(requestWith({ 'X-Remote-User': 'alice' }, client))?.user).toBe('alice');
  });
});

describe('the hub’s extension-apiserver-authentication ConfigMap', () => {
  it('reads the CAs and the JSON lists kube-apiserver writes', () => {
    const got = fromConfigMapData({
      'client-ca-file': 'CLIENT',
      'requestheader-client-ca-file': 'FRONT',
      'requestheader-allowed-names': '["front-proxy-client"]',
      'requestheader-username-headers': '["X-Remote-User"]',
      'requestheader-group-headers': '["X-Remote-Group"]',
      'requestheader-extra-headers-prefix': '["X-Remote-Extra-"]',
    });
    expect(got.clientCA?.toString()).toBe('CLIENT');
    expect(got.requestHeader).toMatchObject({ allowedNames: ['front-proxy-client'], usernameHeaders: ['X-Remote-User'], groupHeaders: ['X-Remote-Group'], extraHeaderPrefixes: ['X-Remote-Extra-'] });
    expect(got.requestHeader?.clientCA.toString()).toBe('FRONT');
  });

  it('has no front proxy when the hub has no aggregation layer, and refuses malformed lists', () => {
    expect(fromConfigMapData({ 'client-ca-file': 'CLIENT' }).requestHeader).toBeUndefined();
    expect(() => fromConfigMapData({ 'requestheader-client-ca-file': 'FRONT', 'requestheader-allowed-names': '{"a":1}' })).toThrow(/not a list of strings/);
  });
});

describe('the fleet path', () => {
  it('is taken off whole segments only', () => {
    expect(withoutFleetPath(`${FLEET_PATH}/api/v1/pods?limit=1`)).toBe('/api/v1/pods?limit=1');
    expect(withoutFleetPath(FLEET_PATH)).toBe('/');
    expect(withoutFleetPath(`${FLEET_PATH}?watch=1`)).toBe('/?watch=1');
    expect(withoutFleetPath(`${FLEET_PATH}x/api`)).toBeUndefined();
    expect(withoutFleetPath('/api/v1/pods')).toBeUndefined();
  });
});
