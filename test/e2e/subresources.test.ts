import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { join } from 'node:path';
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { createServer as createTcpServer, connect, type AddressInfo, type Server as TcpServer, type Socket } from 'node:net';
import { networkInterfaces } from 'node:os';
import { request as httpsRequest } from 'node:https';
import { readFileSync } from 'node:fs';
import type { V1Pod } from '@kubernetes/client-node';
import { memberJson, memberRequest } from '../fleet/http.js';
import { appendPodLog, type MemberInfo } from '../fleet/fleet.js';
import { startFlotillaProcess, writeProxyKubeconfig, type FlotillaProcess } from '../support/flotilla-process.js';
import { kubectl, kubectlSession } from '../support/kubectl.js';
import { until } from '../support/poll.js';

/**
 * Streaming subresources through flotilla against the real fleet: logs (followed), exec, attach and
 * port-forward over both websocket (current kubectl) and SPDY (kubectl 1.28), and the proxy
 * subresource, each reaching the member that owns the pod, as the caller.
 */
const fleet = inject('fleet');
const NS = 'streams';
const [east, west, north] = [fleet.members[0]!, fleet.members[1]!, fleet.members[2]!];
// kubectl 1.28 speaks SPDY for exec, attach and port-forward; the default kubectl (≥1.31) websocket.
const CLIENTS = [
  { version: undefined, protocol: 'websocket' },
  { version: '1.28', protocol: 'spdy' },
] as const;
let flotilla: FlotillaProcess;

// The pod proxy needs an address the apiserver is willing to dial: never loopback.
const hostIP = Object.values(networkInterfaces())
  .flat()
  .find((a) => a && a.family === 'IPv4' && !a.internal)?.address;

async function make(m: MemberInfo, path: string, body: unknown): Promise<void> {
  const res = await memberRequest(m, 'POST', path, body);
  if (res.status !== 201 && res.status !== 409) throw new Error(`${m.name} POST ${path}: ${res.status} ${res.body.slice(0, 300)}`);
}

const pod = (name: string, spec: Partial<NonNullable<V1Pod['spec']>> = {}): V1Pod => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name },
  spec: { containers: [{ name: 'main', image: 'example.com/app:1' }], ...spec },
});

/** The value of one sample of flotilla's /metrics, 0 when absent. */
async function metric(name: string, labels: Record<string, string>): Promise<number> {
  const res = await memberRequest(flotilla.endpoint, 'GET', '/metrics', undefined, { accept: 'text/plain' });
  for (const line of res.body.split('\n')) {
    if (!line.startsWith(`${name}{`)) continue;
    if (Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) return Number(line.split(' ').pop());
  }
  return 0;
}

let webServer: HttpServer | undefined;
let webPort = 0;

beforeAll(async () => {
  for (const m of fleet.members) await make(m, '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
  await make(west, `/api/v1/namespaces/${NS}/pods`, pod('solo'));
  // alice may read solo (so kubectl gets as far as the subresource), nothing more: the member refuses the rest.
  await make(west, `/apis/rbac.authorization.k8s.io/v1/namespaces/${NS}/roles`, {
    apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: { name: 'pod-reader' },
    rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['get', 'list'] }],
  });
  await make(west, `/apis/rbac.authorization.k8s.io/v1/namespaces/${NS}/rolebindings`, {
    apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name: 'alice-pod-reader' },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'pod-reader' }, subjects: [{ kind: 'User', name: 'alice', apiGroup: 'rbac.authorization.k8s.io' }],
  });
  for (const m of [east, north]) await make(m, `/api/v1/namespaces/${NS}/pods`, pod('twin'));

  if (hostIP) {
    // A pod no kubelet runs, given this machine's address: the member's pod proxy dials our server.
    webServer = createHttpServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ method: req.method, url: req.url, body: Buffer.concat(chunks).toString('utf8') }));
      });
    });
    await new Promise<void>((r) => webServer!.listen(0, '0.0.0.0', r));
    webPort = (webServer.address() as AddressInfo).port;
    await make(west, `/api/v1/namespaces/${NS}/pods`, pod('web', { schedulerName: 'nobody' }));
    const status = await memberRequest(west, 'PATCH', `/api/v1/namespaces/${NS}/pods/web/status`, { status: { podIP: hostIP, podIPs: [{ ip: hostIP }] } }, { contentType: 'application/merge-patch+json' });
    if (status.status !== 200) throw new Error(`setting web's podIP: ${status.status} ${status.body}`);
  }

  flotilla = await startFlotillaProcess({ fleet, dir: join(fleet.dir, 'flotilla-subresources'), resources: [{ version: 'v1', resource: 'pods' }, { version: 'v1', resource: 'namespaces' }] });
  // kwok serves logs and exec only for a pod it runs.
  await until('solo and the twins Running, as flotilla sees them', async () => {
    const list = await memberJson<{ items: V1Pod[] }>(flotilla.endpoint, 'GET', `/api/v1/namespaces/${NS}/pods`);
    const running = list.items.filter((p) => p.status?.phase === 'Running').map((p) => p.metadata!.name);
    return running.filter((n) => n === 'solo').length === 1 && running.filter((n) => n === 'twin').length === 2;
  });
});

afterAll(async () => {
  await flotilla?.stop();
  await new Promise((r) => (webServer ? webServer.close(r) : r(undefined)));
});

describe('pods/log', () => {
  it('kubectl logs reaches the member that runs the pod', async () => {
    for (const { version } of CLIENTS) {
      const r = await kubectl(flotilla.kubeconfig, ['logs', '-n', NS, 'solo'], { version });
      expect(r.stderr).toBe('');
      expect(r.stdout).toContain('hello from a kwok pod in west');
    }
  });

  it('a name in two members needs a cluster; /clusters/<name>/ picks it', async () => {
    const ambiguous = await kubectl(flotilla.kubeconfig, ['logs', '-n', NS, 'twin']);
    expect(ambiguous.code).not.toBe(0);
    expect(ambiguous.stderr).toMatch(/east.*north/);
    for (const m of [east, north]) {
      const r = await kubectl(flotilla.kubeconfig, ['--server', `${flotilla.url}/clusters/${m.name}`, 'logs', '-n', NS, 'twin']);
      expect(r.stdout).toContain(`hello from a kwok pod in ${m.name}`);
    }
  });

  it('a missing pod is a 404 Status', async () => {
    const res = await memberRequest(flotilla.endpoint, 'GET', `/api/v1/namespaces/${NS}/pods/nope/log`);
    expect(res.status).toBe(404);
    expect(JSON.parse(res.body)).toMatchObject({ kind: 'Status', reason: 'NotFound', code: 404 });
    const r = await kubectl(flotilla.kubeconfig, ['logs', '-n', NS, 'nope']);
    expect(r.stderr).toMatch(/pods "nope" not found/);
  });

  it('logs -f streams new lines as the container writes them, and the member stream ends with the client', async () => {
    const follow = kubectlSession(flotilla.kubeconfig, ['logs', '-f', '-n', NS, 'solo']);
    try {
      await follow.waitForOutput(/hello from a kwok pod in west/);
      for (const n of [1, 2, 3]) {
        const marker = `followed-line-${n}-${Date.now()}`;
        appendPodLog(west, marker);
        await follow.waitForOutput(new RegExp(marker), 10_000);
      }
      expect(await metric('flotilla_subresource_streams', { subresource: 'log' })).toBe(1);
    } finally {
      await follow.stop();
    }
    await until('the log stream to the member to close', async () => (await metric('flotilla_subresource_streams', { subresource: 'log' })) === 0, 10_000);
  });
});

describe('exec and attach', () => {
  it('kubectl exec: stdout, stderr, stdin and the exit code, over websocket and SPDY', async () => {
    for (const { version, protocol } of CLIENTS) {
      const before = await metric('flotilla_subresource_requests_total', { subresource: 'exec', protocol, code: '101' });
      const r = await kubectl(flotilla.kubeconfig, ['exec', '-n', NS, 'solo', '--', 'sh', '-c', 'echo to-stdout; echo to-stderr >&2; exit 3'], { version });
      expect(r.stdout).toBe('to-stdout\n');
      expect(r.stderr).toContain('to-stderr');
      // A failed command fails kubectl as it does directly (kwok reports it as an error status, exit 1).
      const direct = await kubectl(west.kubeconfig, ['exec', '-n', NS, 'solo', '--', 'sh', '-c', 'exit 3'], { version });
      expect(direct.stderr).toContain('exit status 3');
      expect(r.code).toBe(direct.code);
      expect(r.stderr).toContain('exit status 3');
      // kwok never closes a command's stdin, so the command reads one line rather than to the end.
      const echoed = await kubectl(flotilla.kubeconfig, ['exec', '-i', '-n', NS, 'solo', '--', 'head', '-n', '1'], { version, input: `piped through ${protocol}\n` });
      expect(echoed.stdout).toBe(`piped through ${protocol}\n`);
      // Each client really took the path it is here for.
      expect(await metric('flotilla_subresource_requests_total', { subresource: 'exec', protocol, code: '101' })).toBe(before + 2);
    }
  });

  it('kubectl attach shows what the container writes', async () => {
    for (const { version } of CLIENTS) {
      const attach = kubectlSession(flotilla.kubeconfig, ['attach', '-n', NS, 'solo'], { version });
      try {
        const marker = `attached-line-${version ?? 'default'}-${Date.now()}`;
        // kwok attaches to the log from its end: write until a line arrives.
        await until('attach to print a new line', async () => {
          appendPodLog(west, marker);
          await new Promise((r) => setTimeout(r, 300));
          return attach.stdout().includes(marker);
        }, 15_000);
      } finally {
        await attach.stop();
      }
    }
  });

  it('exec as another user is that user at the member: RBAC there decides', async () => {
    const alice = fleet.users.find((u) => u.name === 'alice')!;
    const kc = join(flotilla.dataDir, '..', 'alice.kubeconfig');
    writeProxyKubeconfig(kc, flotilla.url, fleet.caFile, alice.token, 'flotilla-alice');
    for (const { version } of CLIENTS) {
      const r = await kubectl(kc, ['exec', '-n', NS, 'solo', '--', 'true'], { version });
      expect(r.code).not.toBe(0);
      expect(r.stderr).toMatch(/User "alice" cannot (create|get) resource "pods\/exec"/);
    }
    const logs = await kubectl(kc, ['logs', '-n', NS, 'solo']);
    expect(logs.stderr).toMatch(/User "alice" cannot get resource "pods\/log"/);
  });

  it('a request without valid credentials is refused with a 401 Status before any member is asked, upgrade or not', async () => {
    const res = await memberRequest(flotilla.endpoint, 'GET', `/api/v1/namespaces/${NS}/pods/solo/log`, undefined, { token: 'not-a-token' });
    expect(res.status).toBe(401);
    expect(JSON.parse(res.body)).toMatchObject({ kind: 'Status', code: 401 });
    const upgrade = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = httpsRequest(`${flotilla.url}/api/v1/namespaces/${NS}/pods/solo/exec?command=true&stdout=true`, {
        ca: readFileSync(fleet.caFile),
        headers: { authorization: 'Bearer not-a-token', connection: 'Upgrade', upgrade: 'websocket', 'sec-websocket-version': '13', 'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==', 'sec-websocket-protocol': 'v5.channel.k8s.io' },
      });
      req.on('upgrade', () => reject(new Error('flotilla switched protocols for an unknown caller')));
      req.on('response', (r) => {
        let body = '';
        r.setEncoding('utf8').on('data', (d: string) => (body += d)).on('end', () => resolve({ status: r.statusCode ?? 0, body }));
      });
      req.on('error', reject);
      req.end();
    });
    expect(upgrade.status).toBe(401);
    expect(JSON.parse(upgrade.body)).toMatchObject({ kind: 'Status', code: 401 });
  });
});

describe('port-forward', () => {
  let echo: TcpServer;
  const conversations = new Set<Socket>();
  beforeAll(async () => {
    // kwok sends pod port 8080 of every west pod here.
    echo = createTcpServer((s) => {
      conversations.add(s);
      s.on('close', () => conversations.delete(s));
      s.on('data', (d) => s.write(`echo:${d.toString('utf8')}`));
    });
    await new Promise<void>((r) => echo.listen(west.portForwardTargetPort, '127.0.0.1', r));
  });
  afterAll(async () => {
    // kwok keeps its side open after the client left; close would wait for it.
    for (const s of conversations) s.destroy();
    await new Promise((r) => echo.close(r));
  });

  it('kubectl port-forward carries a TCP conversation, over websocket and SPDY', async () => {
    for (const { version, protocol } of CLIENTS) {
      const forward = kubectlSession(flotilla.kubeconfig, ['port-forward', '-n', NS, 'pod/solo', ':8080'], { version });
      try {
        const [, port] = await forward.waitForOutput(/Forwarding from 127\.0\.0\.1:(\d+) -> 8080/);
        const reply = await new Promise<string>((resolve, reject) => {
          const s = connect(Number(port), '127.0.0.1', () => s.write(`ping over ${protocol}`));
          s.setEncoding('utf8');
          s.on('data', (d: string) => {
            resolve(d);
            s.end();
          });
          s.on('error', reject);
        });
        expect(reply).toBe(`echo:ping over ${protocol}`);
        expect(await metric('flotilla_subresource_requests_total', { subresource: 'portforward', protocol, code: '101' })).toBeGreaterThan(0);
      } finally {
        await forward.stop();
      }
    }
  });
});

describe('proxy', () => {
  it.skipIf(!hostIP)('the pod proxy subresource carries method, path, query and body', async () => {
    const base = `/api/v1/namespaces/${NS}/pods/web:${webPort}/proxy`;
    const got = await memberRequest(flotilla.endpoint, 'GET', `${base}/some/path?x=1&y=two`);
    expect(got.status).toBe(200);
    expect(JSON.parse(got.body)).toEqual({ method: 'GET', url: '/some/path?x=1&y=two', body: '' });
    const posted = await memberRequest(flotilla.endpoint, 'POST', `${base}/submit`, { hello: 'pod' });
    expect(JSON.parse(posted.body)).toEqual({ method: 'POST', url: '/submit', body: JSON.stringify({ hello: 'pod' }) });
    const viaKubectl = await kubectl(flotilla.kubeconfig, ['get', '--raw', `${base}/from-kubectl`]);
    expect(JSON.parse(viaKubectl.stdout)).toMatchObject({ url: '/from-kubectl' });
  });
});
