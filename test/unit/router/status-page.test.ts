import { describe, expect, it } from 'vitest';
import Fastify from 'fastify';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { FleetMembers } from '../../../src/cacher/cache-roles.js';
import type { ReadAuthorizer } from '../../../src/authz/authorizer.js';
import type { Callers } from '../../../src/router/callers.js';
import { errorsPlugin } from '../../../src/router/plugins/errors.js';
import { uiPlugin } from '../../../src/router/plugins/ui.js';
import {
  memberRows,
  metricSums,
  progressOf,
  recentErrors,
  resourceRows,
  type StatusDocument,
} from '../../../src/router/ui/status-page-model.js';

const NOW = Date.parse('2025-01-01T00:00:10Z');
const at = (secondsBefore: number) => new Date(NOW - secondsBefore * 1000).toISOString();

const cacher = (cluster: string, resource: string, more: Partial<NonNullable<StatusDocument['cachers']>[number]> = {}) => ({
  cluster,
  resource,
  phase: 'watching' as const,
  synced: true,
  objects: 3,
  relists: 1,
  watches: 1,
  historyResets: 0,
  ...more,
});

describe('the status page: members', () => {
  const status: StatusDocument = {
    members: [
      { cluster: 'east', silent: false, lastAnswerAt: at(1) },
      { cluster: 'west', silent: true, silentSince: at(4), lastAnswerAt: at(5), lastError: 'connect ECONNREFUSED 127.0.0.1:6443' },
      { cluster: 'north', silent: false, lastAnswerAt: at(0.5) },
      { cluster: 'south', silent: false, lastAnswerAt: at(0.2) },
    ],
    cachers: [
      cacher('east', 'pods', { objects: 10 }),
      cacher('east', 'namespaces', { objects: 4 }),
      cacher('west', 'pods'),
      cacher('north', 'pods', { phase: 'backoff', lastError: 'watch: 500' }),
      cacher('south', 'pods', { phase: 'listing', synced: false, objects: 0 }),
    ],
  };
  const rows = new Map(memberRows(status, NOW).map((r) => [r.name, r]));

  it('a member answering with every cache watching is up, its objects summed over its resources', () => {
    expect(rows.get('east')).toMatchObject({ health: 'up', objects: 14, synced: 2, resources: 2, silent: false });
    expect(rows.get('east')!.lagSeconds).toBeCloseTo(1);
  });

  it('a silent member is stale, whatever its caches say: the heartbeat decides, and says why', () => {
    expect(rows.get('west')).toMatchObject({ health: 'stale', silent: true });
    expect(rows.get('west')!.heartbeat).toBe('silent for 4 s: connect ECONNREFUSED 127.0.0.1:6443');
    expect(rows.get('west')!.lagSeconds).toBeCloseTo(5);
  });

  it('a member answering whose cache is failing is stale; one not listed yet is syncing', () => {
    expect(rows.get('north')).toMatchObject({ health: 'stale', why: 'pods: watch: 500' });
    expect(rows.get('south')).toMatchObject({ health: 'syncing', why: '0 of 1 resources listed' });
  });

  it('a member\'s labels from /status, key=value sorted by key; none for one without', () => {
    const labelled = memberRows({ members: [{ cluster: 'east', silent: false, labels: { region: 'eu', env: 'prod' } }], cachers: [cacher('west', 'pods')] }, NOW);
    expect(labelled.map((r) => [r.name, r.labels])).toEqual([['east', ['env=prod', 'region=eu']], ['west', []]]);
  });

  it('members are every name with a heartbeat or a cacher, sorted', () => {
    expect([...rows.keys()]).toEqual(['east', 'north', 'south', 'west']);
  });
});

describe('the status page: resources, progress, errors, metrics', () => {
  it('a cell per member and resource; a cacher of one namespace is a row of its own', () => {
    const rows = resourceRows({ cachers: [cacher('a', 'pods'), cacher('b', 'pods', { objects: 7 }), cacher('a', 'configmaps', { namespace: 'kube-system' })] });
    expect(rows.map((r) => r.resource)).toEqual(['configmaps in kube-system', 'pods']);
    expect(rows[1]!.cells.get('b')).toEqual({ phase: 'watching', synced: true, objects: 7 });
  });

  it('first-sync progress: objects listed, of about how many (remainingItemCount), time left', () => {
    const startedAt = at(5);
    expect(progressOf({ startedAt, objects: 250, pages: 1, remainingItemCount: 750, estimatedSecondsLeft: 12.2 })).toEqual({ fraction: 0.25, text: '250 of ~1000, 25%, ~13 s left' });
    expect(progressOf({ startedAt, objects: 40, pages: 1, remainingItemCount: 60 })).toEqual({ fraction: 0.4, text: '40 of ~100, 40%' });
    expect(progressOf({ startedAt, objects: 40, pages: 1 })).toEqual({ text: '40 listed' });
    expect(progressOf(undefined)).toBeUndefined();
    const [row] = resourceRows({ cachers: [cacher('a', 'pods', { synced: false, phase: 'listing', progress: { startedAt, objects: 5, pages: 1, remainingItemCount: 5 } })] });
    expect(row!.cells.get('a')!.progress).toEqual({ fraction: 0.5, text: '5 of ~10, 50%' });
  });

  it('recent errors: heartbeats, cachers, history rewrites and the store', () => {
    const errors = recentErrors({
      members: [{ cluster: 'west', silent: true, silentSince: at(3), lastError: 'refused' }],
      cachers: [cacher('east', 'pods', { lastError: 'list: 403', lastEventAt: at(9), lastHistoryReset: { at: at(2), reason: 'resourceVersion went back' } })],
      store: { writable: false, full: { since: at(1), message: 'volume 98% full' } },
    });
    expect(errors.map((e) => `${e.where}: ${e.error}`)).toEqual([
      'west heartbeat: refused',
      'east pods: list: 403',
      'east pods: history rewritten: resourceVersion went back',
      'store: writes refused: volume 98% full',
    ]);
  });

  it('metric families are summed over their labels; other families and comments are skipped', () => {
    const text = [
      '# HELP flotilla_watches Client watches open now.',
      '# TYPE flotilla_watches gauge',
      'flotilla_watches 7',
      'flotilla_watch_evictions_total{reason="slow",x="a}b"} 2',
      'flotilla_watch_evictions_total{reason="other"} 1',
      'flotilla_watches_other 100',
    ].join('\n');
    expect(metricSums(text, ['flotilla_watches', 'flotilla_watch_evictions_total', 'absent'])).toEqual(new Map([['flotilla_watches', 7], ['flotilla_watch_evictions_total', 3]]));
  });
});

describe('the status page is served as /status is', () => {
  const fleet = { clusterNames: () => ['a', 'b'], member: () => undefined } as unknown as FleetMembers;
  async function server(allowed: string[]) {
    const asked: string[] = [];
    const callers = {
      reader: async (req: { headers: Record<string, string | undefined> }) => ({ user: req.headers['x-user'] ?? 'nobody', groups: [] }),
      tenantSeen: () => undefined,
    } as unknown as Callers;
    const authorizer = {
      mayGet: async (caller: { user: string }, _clusters: string[], path: string) => {
        asked.push(path);
        return allowed.includes(caller.user);
      },
      undecidable: () => [],
    } as unknown as ReadAuthorizer;
    const app = Fastify({ routerOptions: { ignoreTrailingSlash: true } });
    await app.register(errorsPlugin, { fleet });
    await app.register(uiPlugin, { fleet, callers, authorizer });
    return { app, asked };
  }

  it('a caller refused /status is refused the page and its assets, asked as /status', async () => {
    const { app, asked } = await server(['admin']);
    for (const url of ['/ui/', '/ui/status-page.css', '/ui/status-page.js']) {
      const res = await app.inject({ url, headers: { 'x-user': 'alice' } });
      expect(res.statusCode).toBe(403);
      expect(res.json()).toMatchObject({ kind: 'Status', reason: 'Forbidden', message: 'forbidden: User "alice" cannot get path "/status"' });
    }
    expect(new Set(asked)).toEqual(new Set(['/status']));
    await app.close();
  });

  it('a caller allowed /status gets the page under a self-only policy; /ui goes to /ui/; nothing else is served', async () => {
    const { app } = await server(['admin']);
    const page = await app.inject({ url: '/ui/', headers: { 'x-user': 'admin' } });
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(page.headers['content-security-policy']).toContain("default-src 'self'");
    expect(page.headers['content-security-policy']).not.toMatch(/unsafe|https?:|\*/);
    expect(page.body).toContain('<script type="module" src="status-page.js">');
    const bare = await app.inject({ url: '/ui', headers: { 'x-user': 'admin' } });
    expect(bare.statusCode).toBe(302);
    expect(bare.headers.location).toBe('ui/');
    expect((await app.inject({ url: '/ui/other.js', headers: { 'x-user': 'admin' } })).statusCode).toBe(404);
    await app.close();
  });
});

describe("the page's scripts load in a browser", () => {
  it('they import only each other (types excepted: no import of them is left in the compiled script)', () => {
    for (const file of ['status-page.ts', 'status-page-model.ts']) {
      const source = readFileSync(join(import.meta.dirname, '../../../src/router/ui', file), 'utf8');
      const imports = [...source.matchAll(/^import\s+(type\s+)?[^;]*?from\s+'([^']+)'/gms)].filter((m) => !m[1]).map((m) => m[2]);
      for (const specifier of imports) expect(['./status-page-model.js']).toContain(specifier);
    }
  });
});
