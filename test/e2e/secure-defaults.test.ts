import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { X509Certificate } from 'node:crypto';
import { readFileSync, rmSync, statSync, existsSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { connect } from 'node:net';
import { join } from 'node:path';
import { memberRequest } from '../fleet/http.js';
import type { MemberInfo } from '../fleet/fleet.js';
import { startFlotillaProcess, writeFleetConfig, writeProxyKubeconfig, type FlotillaProcess, type ResourceRuleSpec } from '../support/flotilla-process.js';
import { kubectl } from '../support/kubectl.js';
import { rawHttps, requestText } from '../support/raw-https.js';
import { until } from '../support/poll.js';

/**
 * Secure defaults (issue 26), against the real fleet and flotilla's own binary: a flotilla with no
 * way to authenticate callers does not start; a caller without credentials is a 401 unless the
 * fleet file says `authentication.anonymous: true`, and then it is system:anonymous at the
 * members; without TLS flags flotilla serves HTTPS with a self-signed pair it keeps in its data dir.
 */
const fleet = inject('fleet');
const [east, west] = [fleet.members[0]!, fleet.members[1]!];
const alice = fleet.users.find((u) => u.name === 'alice')!;
const NS = 'secure-defaults';
const RESOURCES: ResourceRuleSpec[] = [
  { version: 'v1', resource: 'namespaces' },
  { version: 'v1', resource: 'configmaps' },
];
const FIXES = ['authentication.tokenReviewCluster', 'authentication.tokenFile', '--client-ca-file', 'authentication.anonymous: true'];

const started: FlotillaProcess[] = [];
async function start(name: string, opts: Omit<Parameters<typeof startFlotillaProcess>[0], 'fleet' | 'dir'> = {}, fresh = true): Promise<FlotillaProcess> {
  const dir = join(fleet.dir, name);
  if (fresh) rmSync(dir, { recursive: true, force: true });
  const f = await startFlotillaProcess({ fleet, dir, members: [east, west], resources: RESOURCES, ...opts });
  started.push(f);
  return f;
}

/** A request with no credentials at all: no Authorization header, no client certificate. */
function anonymous(f: FlotillaProcess, method: string, path: string, body?: string, headers: Record<string, string> = {}) {
  return rawHttps(f.url, f.endpoint.caFile, requestText(method, path, { ...headers, ...(body ? { 'Content-Type': 'application/json' } : {}) }, body));
}

function status(body: string): { kind?: string; code?: number; reason?: string; message?: string } {
  return JSON.parse(body) as { kind?: string; code?: number; reason?: string; message?: string };
}

const configMap = (name: string) => JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data: { a: '1' } });

async function make(m: MemberInfo, path: string, body: object): Promise<void> {
  const res = await memberRequest(m, 'POST', path, body);
  if (res.status !== 201 && res.status !== 409) throw new Error(`${m.name} POST ${path}: ${res.status} ${res.body.slice(0, 300)}`);
}

beforeAll(async () => {
  for (const m of [east, west]) await make(m, '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
});

afterAll(async () => {
  await Promise.all(started.map((f) => f.stop()));
});

describe('a flotilla nobody could authenticate to', () => {
  it('does not start (exit code 2) and names the fields and flag that fix it, before touching its data dir', async () => {
    for (const [name, authentication] of [['flotilla-no-auth', null], ['flotilla-empty-auth', { cacheTTLSeconds: 5, anonymous: false }]] as const) {
      const dir = join(fleet.dir, name);
      rmSync(dir, { recursive: true, force: true });
      // One that starts all the same is stopped with the others.
      const outcome = await startFlotillaProcess({ fleet, dir, members: [east], resources: RESOURCES, authentication }).then(
        (f) => (started.push(f), 'started'),
        (e: Error) => e.message,
      );
      expect(outcome, name).toMatch(/^flotilla exited with 2:/);
      const log = readFileSync(join(dir, 'flotilla.log'), 'utf8');
      expect(log).toContain('fleet.yaml: authentication: flotilla has no way to authenticate callers');
      for (const fix of FIXES) expect(log, fix).toContain(fix);
      expect(existsSync(join(dir, 'data')), name).toBe(false);
    }
  });

  it('starts with client certificates alone (--client-ca-file), and the certificate names the caller', async () => {
    const f = await start('flotilla-client-certs-only', { authentication: null, args: [`--client-ca-file=${fleet.caFile}`] });
    // The fleet's kubelet client certificate: CN=kube-apiserver-kubelet-client, O=system:masters.
    const cert = { cert: readFileSync(join(fleet.dir, 'kubelet-client.crt')), key: readFileSync(join(fleet.dir, 'kubelet-client.key')) };
    const withCert = await certRequest(f, '/api/v1/namespaces', cert);
    expect(withCert.status).toBe(200);
    expect((JSON.parse(withCert.body) as { items: { metadata: { name: string } }[] }).items.map((n) => n.metadata.name)).toContain(NS);
    expect((await anonymous(f, 'GET', '/api/v1/namespaces')).status).toBe(401);
    // A bearer token is no credential here: nobody reviews tokens.
    expect((await memberRequest(f.endpoint, 'GET', '/api/v1/namespaces')).status).toBe(401);
  });

  it('refuses a reload of its fleet file that would remove all authentication, with the same message', async () => {
    const f = await start('flotilla-reload-no-auth');
    // Also adds a resource: had the reload been taken, a pods cacher would start.
    writeFleetConfig(f.configPath, [east, west], [...RESOURCES, { version: 'v1', resource: 'pods' }], undefined, null);
    await until('the reload refused in the log', () => readFileSync(f.proc.logPath, 'utf8').includes('configuration not reloaded'), 10_000);
    const log = readFileSync(f.proc.logPath, 'utf8');
    expect(log).toContain('flotilla: configuration not reloaded, keeping the previous one:\nfleet.yaml: authentication: flotilla has no way to authenticate callers');
    for (const fix of FIXES) expect(log, fix).toContain(fix);
    const cachers = (JSON.parse((await memberRequest(f.endpoint, 'GET', '/status')).body) as { cachers: { resource: string }[] }).cachers;
    expect(cachers.some((c) => c.resource.includes('pods'))).toBe(false);
    expect((await anonymous(f, 'GET', '/api/v1/namespaces')).status).toBe(401);
  });
});

describe('callers without credentials', () => {
  let closed: FlotillaProcess;
  let open: FlotillaProcess;
  beforeAll(async () => {
    [closed, open] = await Promise.all([
      start('flotilla-anonymous-off'),
      start('flotilla-anonymous-on', { authentication: { tokenReviewCluster: east.name, anonymous: true } }),
    ]);
  });

  it('are a 401 Status on everything but /healthz, /livez, /readyz and /version without anonymous: true', async () => {
    for (const path of ['/api/v1/namespaces', `/api/v1/namespaces/${NS}/configmaps`, '/api', '/apis', '/clusters/east/api/v1/namespaces', '/status', '/metrics', '/openapi/v2']) {
      const res = await anonymous(closed, 'GET', path);
      expect(res.status, path).toBe(401);
      expect(status(res.body), path).toMatchObject({ kind: 'Status', code: 401, reason: 'Unauthorized' });
    }
    for (const path of ['/healthz', '/livez', '/readyz', '/version']) expect((await anonymous(closed, 'GET', path)).status, path).toBe(200);
    const write = await anonymous(closed, 'POST', `/clusters/east/api/v1/namespaces/${NS}/configmaps`, configMap('anon-off'));
    expect(write.status).toBe(401);
    expect((await memberRequest(east, 'GET', `/api/v1/namespaces/${NS}/configmaps/anon-off`)).status).toBe(404);
  });

  it('are system:anonymous (groups system:unauthenticated) at the members with anonymous: true', async () => {
    // Past authentication: discovery answers (what a caller may read is the members' RBAC's say).
    expect((await anonymous(open, 'GET', '/apis')).status).toBe(200);
    const path = `/clusters/east/api/v1/namespaces/${NS}/configmaps`;
    const through = await anonymous(open, 'POST', path, configMap('anon-on'));
    // The member's own answer to system:anonymous, asked directly by impersonation.
    const direct = await memberRequest(east, 'POST', `/api/v1/namespaces/${NS}/configmaps`, configMap('anon-on'), {
      headers: { 'Impersonate-User': 'system:anonymous', 'Impersonate-Group': 'system:unauthenticated' },
    });
    expect(direct.status).toBe(403);
    expect(through.status).toBe(403);
    expect(status(through.body).message).toBe(status(direct.body).message);
    expect(status(through.body).message).toContain('User "system:anonymous" cannot create resource "configmaps"');
    expect((await memberRequest(east, 'GET', `/api/v1/namespaces/${NS}/configmaps/anon-on`)).status).toBe(404);

    // Cached reads are the members' RBAC's say for system:anonymous too: it may list nothing here.
    const read = await anonymous(open, 'GET', `/clusters/east/api/v1/namespaces/${NS}/configmaps`);
    const readDirect = await memberRequest(east, 'GET', `/api/v1/namespaces/${NS}/configmaps`, undefined, {
      headers: { 'Impersonate-User': 'system:anonymous', 'Impersonate-Group': 'system:unauthenticated' },
    });
    expect([read.status, readDirect.status]).toEqual([403, 403]);
    expect(status(read.body).message).toBe(status(readDirect.body).message);
  });

  it('with credentials that do not hold are still a 401, and a token still names its user', async () => {
    const bad = await anonymous(open, 'GET', '/apis', undefined, { Authorization: 'Bearer not-a-token' });
    expect(bad.status).toBe(401);
    const asAlice = await memberRequest(open.endpoint, 'POST', `/clusters/east/api/v1/namespaces/${NS}/configmaps`, configMap('alice'), { token: alice.token });
    expect(asAlice.status).toBe(403);
    expect(status(asAlice.body).message).toContain('User "alice" cannot create resource "configmaps"');
  });
});

describe('TLS by default', () => {
  it('serves HTTPS with a self-signed pair made in the data dir, and reuses it after a restart', async () => {
    const first = await start('flotilla-self-signed', { tls: 'self-signed' });
    const certFile = join(first.dataDir, 'tls', 'serving.crt');
    const keyFile = join(first.dataDir, 'tls', 'serving.key');
    expect(first.endpoint.caFile).toBe(certFile);
    expect(statSync(keyFile).mode & 0o777).toBe(0o600);
    const cert = readFileSync(certFile);
    expect(new X509Certificate(cert).subjectAltName).toBe('DNS:localhost, IP Address:127.0.0.1, IP Address:0:0:0:0:0:0:0:1');
    expect(readFileSync(first.proc.logPath, 'utf8')).toContain(`flotilla: TLS with a self-signed certificate made now (first start): ${certFile}`);

    // kubectl trusts it as a kubeconfig's certificate-authority, by IP and by name.
    const port = new URL(first.url).port;
    let r = await kubectl(first.kubeconfig, ['get', 'namespaces', '-o', 'name']);
    expect(r.stderr).toBe('');
    expect(r.stdout.split('\n')).toContain(`namespace/${NS}`);
    const byName = join(fleet.dir, 'flotilla-self-signed', 'kubeconfig-localhost');
    writeProxyKubeconfig(byName, `https://localhost:${port}`, certFile, east.token);
    r = await kubectl(byName, ['get', 'namespaces', '-o', 'name']);
    expect(r.stderr).toBe('');

    // No plain HTTP on the port: a cleartext request gets no HTTP answer.
    expect(await cleartext(Number(port))).not.toMatch(/^HTTP\/1\.[01] 200/);

    await first.stop();
    started.splice(started.indexOf(first), 1);
    const second = await start('flotilla-self-signed', { tls: 'self-signed', port: Number(port) }, false);
    expect(readFileSync(certFile)).toEqual(cert);
    expect(readFileSync(second.proc.logPath, 'utf8')).toContain(`flotilla: TLS with a self-signed certificate kept from an earlier start: ${certFile}`);
    // The kubeconfig written at the first start still works.
    r = await kubectl(byName, ['get', 'namespaces', '-o', 'name']);
    expect(r.stderr).toBe('');
    expect(r.stdout.split('\n')).toContain(`namespace/${NS}`);
  });
});

/** A GET with a client certificate and no other credentials. */
function certRequest(f: FlotillaProcess, path: string, cert: { cert: Buffer; key: Buffer }): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(new URL(path, f.url), { ...cert, ca: readFileSync(f.endpoint.caFile), headers: { accept: 'application/json' } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** What a plain-HTTP request to the port gets back (as text), before the server closes. */
function cleartext(port: number): Promise<string> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    const s = connect(port, '127.0.0.1', () => s.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n'));
    s.setTimeout(5000, () => s.destroy());
    s.on('data', (c: Buffer) => chunks.push(c));
    s.on('error', () => undefined);
    s.on('close', () => resolve(Buffer.concat(chunks).toString('latin1')));
  });
}
