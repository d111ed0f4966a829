import { describe, expect, it } from 'vitest';
import { X509Certificate } from 'node:crypto';
import { chmodSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createServer, request } from 'node:https';
import type { AddressInfo } from 'node:net';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { selfSignedServingPair, servingNames } from '../../../src/tls/serving-pair.js';

const DAY = 24 * 3600 * 1000;
const fresh = () => join(mkdtempSync(join(tmpdir(), 'flotilla-tls-')), 'tls');

/** A client that trusts only `ca` reaches a server serving `pair` at `host` (checking the name). */
async function handshake(pair: { cert: Buffer; key: Buffer }, ca: Buffer, host: string): Promise<number> {
  const server = createServer({ cert: pair.cert, key: pair.key }, (_req, res) => res.end('ok'));
  await new Promise<void>((r) => server.listen(0, host, r));
  try {
    const { port } = server.address() as AddressInfo;
    return await new Promise<number>((resolve, reject) => {
      const req = request({ host, port, path: '/', ca, servername: host.includes(':') || /^\d/.test(host) ? undefined : host }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
      req.end();
    });
  } finally {
    server.close();
  }
}

describe('self-signed serving pair', () => {
  it('is made once, kept with a private key, and reused on the next start', async () => {
    const dir = fresh();
    const first = await selfSignedServingPair(dir, servingNames('127.0.0.1'));
    expect(first.made).toBe('first start');
    expect(first.certFile).toBe(join(dir, 'serving.crt'));
    expect(statSync(first.keyFile).mode & 0o777).toBe(0o600);
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    expect(readFileSync(first.certFile)).toEqual(first.cert);

    const second = await selfSignedServingPair(dir, servingNames('127.0.0.1'));
    expect(second.made).toBeUndefined();
    expect(second.cert).toEqual(first.cert);
    expect(second.key).toEqual(first.key);

    // A key whose rights were widened (a copy, a restore) is narrowed again when reused.
    chmodSync(first.keyFile, 0o644);
    await selfSignedServingPair(dir, servingNames('127.0.0.1'));
    expect(statSync(first.keyFile).mode & 0o777).toBe(0o600);
  });

  it('names localhost, 127.0.0.1, ::1 and the bind address, and clients that trust it reach each', async () => {
    expect(servingNames('127.0.0.1')).toEqual(['localhost', '127.0.0.1', '::1']);
    expect(servingNames('10.1.2.3')).toEqual(['localhost', '127.0.0.1', '::1', '10.1.2.3']);
    expect(servingNames('flotilla.example')).toEqual(['localhost', '127.0.0.1', '::1', 'flotilla.example']);
    expect(servingNames('0.0.0.0')).toContain(hostname());

    const pair = await selfSignedServingPair(fresh(), servingNames('flotilla.example'));
    const cert = new X509Certificate(pair.cert);
    expect(cert.subjectAltName).toBe('DNS:localhost, IP Address:127.0.0.1, IP Address:0:0:0:0:0:0:0:1, DNS:flotilla.example');
    expect(cert.ca).toBe(false);
    expect(cert.keyUsage).toEqual(['1.3.6.1.5.5.7.3.1']); // serverAuth
    const days = (Date.parse(cert.validTo) - Date.now()) / DAY;
    expect(days).toBeGreaterThan(364);
    expect(days).toBeLessThan(366);

    for (const host of ['localhost', '127.0.0.1', '::1']) expect(await handshake(pair, pair.cert, host), host).toBe(200);
    // And a client that trusts another certificate is refused: it is this one that is trusted.
    const other = await selfSignedServingPair(fresh(), servingNames('127.0.0.1'));
    await expect(handshake(pair, other.cert, '127.0.0.1')).rejects.toThrow(/self[- ]signed certificate/);
  });

  it('is made again when the kept one cannot serve: a new bind name, its end near, not a pair', async () => {
    const dir = fresh();
    const first = await selfSignedServingPair(dir, servingNames('127.0.0.1'));

    const renamed = await selfSignedServingPair(dir, servingNames('10.9.8.7'));
    expect(renamed.made).toBe('the kept certificate does not name 10.9.8.7');
    expect(renamed.cert).not.toEqual(first.cert);
    // The new one covers the old names too: going back to the default bind keeps it.
    expect((await selfSignedServingPair(dir, servingNames('127.0.0.1'))).made).toBeUndefined();

    const later = new Date(Date.now() + 340 * DAY);
    expect((await selfSignedServingPair(dir, servingNames('10.9.8.7'), later)).made).toMatch(/^the kept certificate ends in 2[0-9] days$/);

    writeFileSync(join(dir, 'serving.key'), (await selfSignedServingPair(fresh(), ['localhost'])).key);
    expect((await selfSignedServingPair(dir, ['localhost'])).made).toBe(`${join(dir, 'serving.key')} is not the key of ${join(dir, 'serving.crt')}`);

    writeFileSync(join(dir, 'serving.crt'), 'not a certificate');
    expect((await selfSignedServingPair(dir, ['localhost'])).made).toMatch(/^the kept pair cannot be read/);
  });
});
