import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { memberRequest } from '../fleet/http.js';
import type { MemberInfo } from '../fleet/fleet.js';
import { startFlotillaProcess, type FlotillaProcess } from '../support/flotilla-process.js';

/**
 * /healthz, /livez and /readyz as an apiserver serves them (`?verbose`, `?exclude=`, one check by
 * its path), and their service-level indicators at /metrics/slis, beside the member's own answers
 * to the same requests: a monitoring stack or a probe written for apiservers reads flotilla's.
 */
const fleet = inject('fleet');
const east = fleet.members[0] as MemberInfo;
let ready: FlotillaProcess;
let syncing: FlotillaProcess;

beforeAll(async () => {
  ready = await startFlotillaProcess({ fleet, members: [east], dir: join(fleet.dir, 'flotilla-health') });
  // A second member that never answers (nothing listens on port 1): its cachers never sync.
  // Flotilla reads a member's address from its kubeconfig.
  const dir = join(fleet.dir, 'flotilla-health-syncing');
  mkdirSync(dir, { recursive: true });
  const kubeconfig = join(dir, 'nowhere.kubeconfig');
  writeFileSync(kubeconfig, readFileSync(east.kubeconfig, 'utf8').replace(/server: \S+/, 'server: https://127.0.0.1:1'));
  const nowhere: MemberInfo = { ...east, name: 'nowhere', server: 'https://127.0.0.1:1', kubeconfig };
  syncing = await startFlotillaProcess({ fleet, members: [east, nowhere], dir, waitReady: false });
});

afterAll(async () => {
  await ready?.stop();
  await syncing?.stop();
});

/** Each line of a verbose answer: `[+]name ok`, `[-]name failed: reason withheld`, and the verdict. */
const VERBOSE_LINE = /^(\[\+\][a-z0-9/-]+ (ok|excluded: ok)|\[-\][a-z0-9/-]+ failed: reason withheld|warn: .*|(healthz|livez|readyz) check (passed|failed))$/;

/** A sample of the Prometheus text `body` with exactly these labels, or undefined. */
function sample(body: string, name: string, labels: Record<string, string>): number | undefined {
  for (const line of body.split('\n')) {
    const m = /^([a-z_]+)\{([^}]*)\} (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const got = Object.fromEntries([...m[2]!.matchAll(/([a-z_]+)="([^"]*)"/g)].map((l) => [l[1]!, l[2]!]));
    if (Object.keys(labels).length === Object.keys(got).length && Object.entries(labels).every(([k, v]) => got[k] === v)) return Number(m[3]);
  }
  return undefined;
}

describe('health endpoints', () => {
  it('list their checks with ?verbose, in the member’s format', async () => {
    for (const path of ['/healthz?verbose', '/livez?verbose', '/readyz?verbose']) {
      const own = await memberRequest(east, 'GET', path);
      const via = await memberRequest(ready.endpoint, 'GET', path);
      expect(own.status, path).toBe(200);
      expect(via.status, path).toBe(200);
      const type = path.slice(1, path.indexOf('?'));
      for (const answer of [own.body, via.body]) {
        const lines = answer.trimEnd().split('\n');
        for (const l of lines) expect(l, `${path}: ${l}`).toMatch(VERBOSE_LINE);
        expect(lines.at(-1), path).toBe(`${type} check passed`);
        expect(lines, path).toContain('[+]ping ok');
      }
      expect(String(via.headers['content-type'])).toBe('text/plain; charset=utf-8');
    }
    expect((await memberRequest(ready.endpoint, 'GET', '/readyz?verbose')).body).toBe('[+]ping ok\n[+]cache-sync ok\n[+]store ok\nreadyz check passed\n');
    expect((await memberRequest(ready.endpoint, 'GET', '/readyz')).body).toBe('ok');
  });

  it('leave out excluded checks and warn of names they do not have, as the member does', async () => {
    const path = '/livez?verbose&exclude=ping&exclude=no-such-check';
    const own = await memberRequest(east, 'GET', path);
    const via = await memberRequest(ready.endpoint, 'GET', path);
    expect(via.status).toBe(200);
    for (const answer of [own.body, via.body]) {
      expect(answer).toContain('[+]ping excluded: ok\n');
      expect(answer).toContain('warn: some health checks cannot be excluded: no matches for "no-such-check"\n');
    }
  });

  it('run one check by its path; a check they do not have is 404', async () => {
    for (const path of ['/livez/ping', '/readyz/ping']) {
      const own = await memberRequest(east, 'GET', path);
      const via = await memberRequest(ready.endpoint, 'GET', path);
      expect([own.status, own.body], path).toEqual([200, 'ok']);
      expect([via.status, via.body], path).toEqual([200, 'ok']);
    }
    expect((await memberRequest(ready.endpoint, 'GET', '/readyz/cache-sync')).body).toBe('ok');
    const none = await memberRequest(ready.endpoint, 'GET', '/readyz/no-such-check');
    expect(none.status).toBe(404);
    expect(JSON.parse(none.body)).toMatchObject({ kind: 'Status', code: 404 });
  });

  it('say which check fails while the cachers sync, and nothing of why', async () => {
    // Long enough for east's cachers to sync: what stays unready is nowhere's.
    await new Promise((r) => setTimeout(r, 3000));
    const verbose = await memberRequest(syncing.endpoint, 'GET', '/readyz?verbose');
    expect(verbose.status).toBe(503);
    expect(verbose.body).toBe('[+]ping ok\n[-]cache-sync failed: reason withheld\n[+]store ok\nreadyz check failed');
    expect(verbose.body).not.toContain('nowhere');
    const plain = await memberRequest(syncing.endpoint, 'GET', '/readyz');
    expect(plain.status).toBe(503);
    expect(JSON.parse(plain.body)).toMatchObject({ kind: 'Status', code: 503, message: 'readyz check failed: cache-sync: not every cacher has synced yet' });
    expect((await memberRequest(syncing.endpoint, 'GET', '/readyz?exclude=cache-sync')).status).toBe(200);
    expect((await memberRequest(syncing.endpoint, 'GET', '/livez')).status).toBe(200);
  });
});

describe('/metrics/slis', () => {
  it('has the member’s health check series, each check counted as it runs', async () => {
    const own = await memberRequest(east, 'GET', '/metrics/slis', undefined, { accept: 'text/plain' });
    expect(own.status).toBe(200);
    for (const name of ['kubernetes_healthcheck', 'kubernetes_healthchecks_total']) expect(own.body).toContain(`# TYPE ${name} `);
    expect(sample(own.body, 'kubernetes_healthcheck', { name: 'ping', type: 'readyz' })).toBe(1);

    await memberRequest(ready.endpoint, 'GET', '/readyz');
    const before = await memberRequest(ready.endpoint, 'GET', '/metrics/slis', undefined, { accept: 'text/plain' });
    expect(before.status).toBe(200);
    expect(before.body).toContain('# TYPE kubernetes_healthcheck gauge');
    expect(before.body).toContain('# TYPE kubernetes_healthchecks_total counter');
    expect(sample(before.body, 'kubernetes_healthcheck', { name: 'cache-sync', type: 'readyz' })).toBe(1);
    const counted = sample(before.body, 'kubernetes_healthchecks_total', { name: 'cache-sync', status: 'success', type: 'readyz' })!;
    expect(counted).toBeGreaterThanOrEqual(1);
    await memberRequest(ready.endpoint, 'GET', '/readyz');
    const after = await memberRequest(ready.endpoint, 'GET', '/metrics/slis', undefined, { accept: 'text/plain' });
    expect(sample(after.body, 'kubernetes_healthchecks_total', { name: 'cache-sync', status: 'success', type: 'readyz' })).toBe(counted + 1);

    await memberRequest(syncing.endpoint, 'GET', '/readyz');
    const failing = await memberRequest(syncing.endpoint, 'GET', '/metrics/slis', undefined, { accept: 'text/plain' });
    expect(sample(failing.body, 'kubernetes_healthcheck', { name: 'cache-sync', type: 'readyz' })).toBe(0);
    expect(sample(failing.body, 'kubernetes_healthchecks_total', { name: 'cache-sync', status: 'error', type: 'readyz' })).toBeGreaterThanOrEqual(1);
  });

  it('is refused to a caller the members do not let read it', async () => {
    const bob = fleet.users.find((u) => u.name === 'bob')!;
    const own = await memberRequest(east, 'GET', '/metrics/slis', undefined, { token: bob.token });
    const via = await memberRequest(ready.endpoint, 'GET', '/metrics/slis', undefined, { token: bob.token });
    expect(own.status).toBe(403);
    expect(via.status).toBe(403);
  });
});
