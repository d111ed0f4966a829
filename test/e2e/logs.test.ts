import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { startFleet, type Fleet } from '../fleet/fleet.js';
import { memberRequest } from '../fleet/http.js';
import { startFlotillaProcess, type FlotillaProcess } from '../support/flotilla-process.js';
import { openWatch } from '../support/watch-client.js';
import { until } from '../support/poll.js';
import { commandsOnPath } from '../support/commands-on-path.js';
import { execFileSync } from 'node:child_process';

/**
 * flotilla's log at debug, read whole: one JSON line per request with its caller, verb, path and
 * status, and never a credential (bearer tokens, flotilla's serving key, a member's token) or a
 * Secret's data, whoever read it and however (get, list, watch); a caller's request line names
 * nothing but what that caller sent. A member stopped shows as silent in /status, in
 * flotilla_member_up, `flotilla status`, `kubectl flotilla clusters` and the log within 5 s. Its own fleet: a member is stopped.
 */
const SECRET_VALUE = `s3cr3t-${randomBytes(8).toString('hex')}`;
const HIDDEN_NS = `hidden-${randomBytes(4).toString('hex')}`;
const HIDDEN_CM = `only-admins-${randomBytes(4).toString('hex')}`;
const BOGUS_TOKEN = randomBytes(16).toString('hex');
let fleet: Fleet;
let flotilla: FlotillaProcess;

interface Line { level: number; msg: string; reqId?: string; caller?: string; verb?: string; path?: string; status?: number; durationMs?: number; event?: string; cluster?: string; [k: string]: unknown }
const logText = () => readFileSync(flotilla.proc.logPath, 'utf8');
/** The log's pino lines (the process also prints a few plain ones at start). */
const lines = (): Line[] => logText().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Line);

beforeAll(async () => {
  fleet = await startFleet({ names: ['logs-a', 'logs-b'], dir: join(inject('fleet').dir, 'logs-fleet'), workloads: false });
  const [a] = fleet.info.members;
  for (const body of [{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: HIDDEN_NS } }]) expect((await memberRequest(a!, 'POST', '/api/v1/namespaces', body)).status).toBe(201);
  expect((await memberRequest(a!, 'POST', `/api/v1/namespaces/${HIDDEN_NS}/secrets`, { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'known' }, data: { password: Buffer.from(SECRET_VALUE).toString('base64') }, stringData: { plain: SECRET_VALUE } })).status).toBe(201);
  expect((await memberRequest(a!, 'POST', `/api/v1/namespaces/${HIDDEN_NS}/configmaps`, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: HIDDEN_CM }, data: { v: SECRET_VALUE } })).status).toBe(201);
  flotilla = await startFlotillaProcess({
    fleet: fleet.info,
    dir: join(fleet.info.dir, 'flotilla'),
    resources: [{ version: 'v1', resource: 'secrets' }, { version: 'v1', resource: 'configmaps' }],
    args: ['--log-level=debug'],
  });
}, 180_000);

afterAll(async () => {
  await flotilla?.stop();
  await fleet?.stop();
});

describe('the log', () => {
  it('carries no credential or Secret data, and a caller\'s line only what the caller sent', async () => {
    const admin = flotilla.endpoint;
    const alice = fleet.info.users.find((u) => u.name === 'alice')!;
    const secretPath = `/api/v1/namespaces/${HIDDEN_NS}/secrets`;
    expect((await memberRequest(admin, 'GET', `${secretPath}/known`)).body).toContain(Buffer.from(SECRET_VALUE).toString('base64'));
    expect((await memberRequest(admin, 'GET', '/api/v1/secrets')).status).toBe(200);
    const watch = await openWatch(admin, `${secretPath}?watch=1`);
    await watch.until((events) => events.some((e) => e.object.metadata?.name === 'known'));
    watch.close();
    // alice may read nothing here: denied, her line says her path and 403, nothing of what she was denied.
    expect((await memberRequest(admin, 'GET', '/api/v1/configmaps', undefined, { token: alice.token })).status).toBe(403);
    expect((await memberRequest(admin, 'GET', `/api/v1/namespaces/${HIDDEN_NS}/configmaps`, undefined, { token: alice.token })).status).toBe(403);
    expect((await memberRequest(admin, 'GET', '/api/v1/configmaps', undefined, { token: BOGUS_TOKEN })).status).toBe(401);
    // A line is written when its answer's socket closes, after the client has read the answer: wait for the last ones.
    await until('the watch\'s line (written when it ends) and the unauthenticated request\'s', () => {
      const all = lines();
      return all.some((l) => l.verb === 'watch' && l.path === secretPath) && all.some((l) => l.msg === 'request' && l.status === 401);
    }, 10_000);

    const text = logText();
    const secrets = [SECRET_VALUE, Buffer.from(SECRET_VALUE).toString('base64'), admin.token, alice.token, BOGUS_TOKEN, ...fleet.info.members.map((m) => m.token)];
    // The serving key's body, and any PEM at all (a certificate or key).
    const key = readFileSync(join(fleet.info.dir, 'serving.key'), 'utf8').split('\n').filter((l) => l.length > 40);
    for (const s of [...secrets, ...key, 'BEGIN CERTIFICATE', 'PRIVATE KEY']) expect(text.toLowerCase()).not.toContain(s.toLowerCase());

    const requests = lines().filter((l) => l.msg === 'request');
    for (const l of requests) expect(Object.keys(l).sort()).toEqual(expect.arrayContaining(['reqId', 'verb', 'path', 'status', 'durationMs', 'time', 'level']));
    expect(requests.find((l) => l.path === `${secretPath}/known`)).toMatchObject({ caller: 'flotilla-admin', verb: 'get', status: 200, level: 30 });
    expect(requests.find((l) => l.path === '/api/v1/secrets')).toMatchObject({ verb: 'list', status: 200 });
    const hers = lines().filter((l) => l.caller === 'alice');
    expect(hers.map((l) => [l.verb, l.path, l.status])).toEqual([['list', '/api/v1/configmaps', 403], ['list', `/api/v1/namespaces/${HIDDEN_NS}/configmaps`, 403]]);
    // Her cluster-wide list's line does not name the namespace she was denied, nor any object.
    expect(JSON.stringify(hers[0])).not.toContain(HIDDEN_NS);
    for (const l of hers) expect(JSON.stringify(l)).not.toContain(HIDDEN_CM);
    expect(requests.find((l) => l.status === 401)).toMatchObject({ path: '/api/v1/configmaps' });
    expect(requests.find((l) => l.status === 401)!.caller).toBeUndefined();
    // Fastify's own two lines a request are gone.
    expect(text).not.toContain('incoming request');
    // Each member and resource synced for the first time, said once each.
    const done = lines().filter((l) => l.event === 'first-sync-done');
    expect(new Set(done.map((l) => `${l.cluster}/${l.resource as string}`)).size).toBe(done.length);
    expect(done.map((l) => l.cluster)).toEqual(expect.arrayContaining(['logs-a', 'logs-b']));
    expect(lines().filter((l) => l.event === 'member-connected').map((l) => l.cluster).sort()).toEqual(['logs-a', 'logs-b']);
  });

  it('a stopped member: silent in /status and flotilla_member_up within 5 s, its transitions in the log once', async () => {
    const stopped = Date.now();
    await fleet.stopApiserver('logs-b');
    await until('logs-b silent in /status', async () => {
      const status = JSON.parse((await memberRequest(flotilla.endpoint, 'GET', '/status')).body) as { members: { cluster: string; silent: boolean }[] };
      return status.members.find((m) => m.cluster === 'logs-b')?.silent === true;
    }, 5_000);
    await until('the member lost, and its cachers failing, in the log', () => lines().some((l) => l.cluster === 'logs-b' && (l.event === 'member-lost' || l.event === 'member-silent')) && lines().some((l) => l.cluster === 'logs-b' && l.event === 'cacher-failed'), 5_000);
    // Timed before the commands below run: starting two CLIs on a loaded machine takes seconds of its own.
    expect(Date.now() - stopped).toBeLessThan(10_000);
    // What an operator runs shows it too: the flotilla command and the kubectl plugin, found on PATH.
    const env = { ...process.env, PATH: `${commandsOnPath(join(fleet.info.dir, 'bin'))}:${process.env.PATH}`, KUBECONFIG: flotilla.kubeconfig };
    for (const [command, args] of [['flotilla', ['status']], ['kubectl', ['flotilla', 'clusters']]] as const) {
      const out = execFileSync(command, args, { env, encoding: 'utf8', timeout: 30_000 });
      expect(out.split('\n').find((l) => l.startsWith('logs-b')), `${command} ${args.join(' ')}:\n${out}`).toMatch(/\bstale\b/);
    }
    const metrics = (await memberRequest(flotilla.endpoint, 'GET', '/metrics')).body;
    expect(metrics).toContain('flotilla_member_up{cluster="logs-b"} 0');
    expect(metrics).toContain('flotilla_member_silent{cluster="logs-b"} 1');
    expect(metrics).toContain('flotilla_member_up{cluster="logs-a"} 1');
    expect(metrics).toMatch(/flotilla_http_requests_total\{verb="list",code="403"\} 2/);
    expect(metrics).toMatch(/flotilla_http_request_duration_seconds_count\{verb="get"\} \d/);
    expect(metrics).toMatch(/flotilla_store_bytes \d+/);
    // A few more seconds of retries add no line: each transition is said once.
    await new Promise((r) => setTimeout(r, 4_000));
    const lost = lines().filter((l) => l.cluster === 'logs-b' && l.level === 40);
    const kinds = lost.map((l) => `${l.event as string}/${(l.resource as string | undefined) ?? ''}`);
    expect(new Set(kinds).size).toBe(kinds.length);
  });
});
