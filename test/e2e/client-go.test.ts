import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import type { V1PodList } from '@kubernetes/client-node';
import { memberJson, memberRequest } from '../fleet/http.js';
import type { MemberInfo } from '../fleet/fleet.js';
import { startFlotillaProcess, type FlotillaProcess } from '../support/flotilla-process.js';
import { expectConverged, inParallel } from '../support/compare.js';
import { decodeGlobalRV } from '../../src/api/global-rv.js';
import { clientsDir, startInformer, type InformerMode, type InformerRun } from '../support/informer.js';

/**
 * What real controllers see: a client-go program (test/clients/go) runs a shared informer or a
 * metadata informer against flotilla, with watch-list off and on, through churn on every member.
 * Its cache must end equal to the members' union: every pod, by uid and member resourceVersion.
 */
const fleet = inject('fleet');
const NS = 'informers';
const PODS = `/api/v1/namespaces/${NS}/pods`;
let flotilla: FlotillaProcess;
let informerBin: string;

async function ok(m: MemberInfo, method: string, path: string, body?: unknown, contentType?: string): Promise<void> {
  const res = await memberRequest(m, method, path, body, { contentType });
  if (res.status >= 300) throw new Error(`${m.name}: ${method} ${path}: ${res.status} ${res.body.slice(0, 200)}`);
}

const pod = (name: string) => ({ apiVersion: 'v1', kind: 'Pod', metadata: { name }, spec: { containers: [{ name: 'c', image: 'example.com/i:1' }] } });

async function churn(tag: string): Promise<void> {
  await Promise.all(fleet.members.map(async (m) => {
    const names = Array.from({ length: 6 }, (_, i) => `${tag}-${m.name}-${i}`);
    await inParallel(names, 6, (n) => ok(m, 'POST', PODS, pod(n)));
    await inParallel(names.slice(0, 2), 2, (n) => ok(m, 'DELETE', `${PODS}/${n}?gracePeriodSeconds=0`));
    await inParallel(names.slice(2, 4), 2, (n) => ok(m, 'PATCH', `${PODS}/${n}`, { metadata: { labels: { touched: tag } } }, 'application/merge-patch+json'));
  }));
}

/**
 * Pods that enter and leave a label selection on every member: created blue or red, then some
 * blue ones relabelled red (they leave) and red ones blue (they enter), one back and forth.
 */
async function relabelChurn(tag: string): Promise<void> {
  const labelled = (name: string, team: string) => ({ ...pod(name), metadata: { name, labels: { team } } });
  const relabel = (m: MemberInfo, name: string, team: string) => ok(m, 'PATCH', `${PODS}/${name}`, { metadata: { labels: { team } } }, 'application/merge-patch+json');
  await Promise.all(fleet.members.map(async (m) => {
    const blue = Array.from({ length: 4 }, (_, i) => `${tag}-${m.name}-b${i}`);
    const red = Array.from({ length: 3 }, (_, i) => `${tag}-${m.name}-r${i}`);
    await inParallel(blue, 4, (n) => ok(m, 'POST', PODS, labelled(n, 'blue')));
    await inParallel(red, 3, (n) => ok(m, 'POST', PODS, labelled(n, 'red')));
    await inParallel(blue.slice(0, 2), 2, (n) => relabel(m, n, 'red'));
    await inParallel(red.slice(0, 2), 2, (n) => relabel(m, n, 'blue'));
    await relabel(m, blue[0]!, 'blue');
    await relabel(m, red[0]!, 'red');
  }));
}

async function membersView(labelSelector?: string): Promise<string[]> {
  const lines: string[] = [];
  for (const m of fleet.members) {
    for (const p of (await memberJson<V1PodList>(m, 'GET', labelSelector ? `${PODS}?labelSelector=${encodeURIComponent(labelSelector)}` : PODS)).items) {
      lines.push(`${NS}/${p.metadata!.name} ${p.metadata!.uid} ${m.name}:${p.metadata!.resourceVersion}`);
    }
  }
  return lines.sort();
}

/** Informers this file started: a test that fails before dump() leaves its client running. */
const started: InformerRun[] = [];

function runInformer(mode: InformerMode, watchList: boolean | 'default', selector = '', accept?: string): InformerRun {
  const run = startInformer({ bin: informerBin, kubeconfig: flotilla.kubeconfig, mode, watchList, selector, namespace: NS, ...(accept ? { accept } : {}) });
  started.push(run);
  return run;
}

// Each stopped by its PID (a no-op for one dump() already ended).
afterEach(() => {
  for (const run of started.splice(0)) run.stop();
});

beforeAll(async () => {
  informerBin = join(clientsDir(), 'informer');
  for (const m of fleet.members) {
    const res = await memberRequest(m, 'POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
    expect([201, 409]).toContain(res.status);
    for (let i = 0; i < 100 && (await memberRequest(m, 'GET', `/api/v1/namespaces/${NS}/serviceaccounts/default`)).status !== 200; i++) {
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  flotilla = await startFlotillaProcess({ fleet, dir: join(fleet.dir, 'flotilla-client-go') });
}, 600_000);

afterAll(async () => {
  await flotilla?.stop();
});

describe('client-go against flotilla', () => {
  // 'default': client-go 0.35 as it ships, whose informers open with watch-list.
  it.each([
    ['informer', false],
    ['informer', true],
    ['informer', 'default'],
    ['metadata', false],
    ['metadata', true],
    ['dynamic', false],
    ['dynamic', 'default'],
  ] as const)('a %s (watch-list %s) ends equal to the members after churn', async (mode, watchList) => {
    const run = runInformer(mode, watchList);
    await run.synced;
    await churn(`${mode.slice(0, 4)}${watchList === 'default' ? 'df' : watchList ? 'wl' : 'lw'}`);
    await expectConverged(flotilla.endpoint, fleet.members, PODS);
    // Flotilla is caught up; the informer hears the same events within milliseconds. Resyncs
    // every second need a little wall time too.
    await new Promise((r) => setTimeout(r, 1500));
    const direct = await membersView();
    const { lines, resyncs, lists, watches, log } = await run.dump();
    expect(lines).toEqual(direct);
    expect(resyncs).toBeGreaterThan(0);
    // Synced is not enough: the client must not have hit a decode error or fallen back. With
    // watch-list it never lists; without, it lists once and then only watches.
    expect(log).not.toMatch(/falling back|unable to decode|Failed to watch|failed to list|Unhandled Error/i);
    expect({ lists, watchesAtLeast: watches >= 1 }).toEqual({ lists: watchList === false ? 1 : 0, watchesAtLeast: true });
  });
});

describe('client-go asking for protobuf (AcceptContentTypes)', () => {
  // Protobuf alone is read live from the members; protobuf then JSON (as kube-controller-manager
  // asks) is served from the cache, transcoded.
  it.each([
    ['alone', false, 'application/vnd.kubernetes.protobuf'],
    ['alone', true, 'application/vnd.kubernetes.protobuf'],
    ['first', false, 'application/vnd.kubernetes.protobuf,application/json'],
    ['first', true, 'application/vnd.kubernetes.protobuf,application/json'],
  ] as const)('protobuf %s: an informer (watch-list %s) ends equal to the members after churn, every answer protobuf', async (how, watchList, accept) => {
    const run = runInformer('informer', watchList, '', accept);
    await run.synced;
    await churn(`p${how[0]}${watchList ? 'wl' : 'lw'}`);
    await expectConverged(flotilla.endpoint, fleet.members, PODS);
    await new Promise((r) => setTimeout(r, 1500));
    const direct = await membersView();
    const { lines, lists, watches, protobufAnswers, log } = await run.dump();
    expect(lines).toEqual(direct);
    expect(log).not.toMatch(/falling back|unable to decode|Failed to watch|failed to list|Unhandled Error/i);
    expect({ lists, watchesAtLeast: watches >= 1 }).toEqual({ lists: watchList ? 0 : 1, watchesAtLeast: true });
    expect(protobufAnswers).toBe(lists + watches);
  });
});

describe('client-go with a label selector, across relabels', () => {
  it.each([
    ['informer', false],
    ['informer', true],
    ['metadata', false],
    ['metadata', true],
  ] as const)('a %s (watch-list %s) of team=blue ends equal to the members’ own selection, with no relist', async (mode, watchList) => {
    const selector = 'team=blue';
    const run = runInformer(mode, watchList, selector);
    await run.synced;
    await relabelChurn(`s${mode.slice(0, 4)}${watchList ? 'wl' : 'lw'}`);
    await expectConverged(flotilla.endpoint, fleet.members, PODS);
    await new Promise((r) => setTimeout(r, 1500));
    const direct = await membersView(selector);
    const { lines, lists, watches, log } = await run.dump();
    expect(lines).toEqual(direct);
    expect(log).not.toMatch(/falling back|unable to decode|Failed to watch|failed to list|Unhandled Error/i);
    expect({ lists, watchesAtLeast: watches >= 1 }).toEqual({ lists: watchList ? 0 : 1, watchesAtLeast: true });
  });
});

describe('a service-discovery controller on client-go', () => {
  it('watches pods fleet-wide and patches each through flotilla: every member converges, the cache within a second', async () => {
    const run = runInformer('patcher', false);
    await run.synced;
    const ANNOTATION = 'discovery.flotilla.io/cluster';
    const names = fleet.members.flatMap((m) => [0, 1, 2].map((i) => ({ m, name: `disc-${m.name}-${i}` })));
    await Promise.all(names.map(({ m, name }) => ok(m, 'POST', PODS, { ...pod(name), metadata: { name, labels: { discover: 'yes' } } })));
    const patchedAt = new Map<string, number>();
    const cachedAt = new Map<string, number>();
    const deadline = Date.now() + 20_000;
    while (Date.now() < deadline && cachedAt.size < names.length) {
      for (const line of run.output().split('\n')) {
        const m = /^PATCHED \S+\/(\S+) /.exec(line);
        if (m && !patchedAt.has(m[1]!)) patchedAt.set(m[1]!, Date.now());
      }
      // The cache as it stands (resourceVersion=0): its own pace, not a fresh read's confirmation.
      const cached = JSON.parse((await memberRequest(flotilla.endpoint, 'GET', `${PODS}?labelSelector=discover%3Dyes&resourceVersion=0`)).body) as V1PodList;
      for (const p of cached.items) {
        if (p.metadata!.annotations?.[ANNOTATION] && !cachedAt.has(p.metadata!.name!)) cachedAt.set(p.metadata!.name!, Date.now());
      }
      await new Promise((r) => setTimeout(r, 25));
    }
    const { lines } = await run.dump();
    expect(lines.length).toBeGreaterThanOrEqual(names.length);
    expect(run.output()).not.toContain('PATCH-ERROR');
    for (const { m, name } of names) {
      const direct = await memberJson<{ metadata: { annotations?: Record<string, string> } }>(m, 'GET', `${PODS}/${name}`);
      expect(direct.metadata.annotations?.[ANNOTATION], name).toBe(m.name);
      expect(run.output()).toContain(`PATCHED ${NS}/${name} ${m.name}`);
      expect(cachedAt.has(name), name).toBe(true);
      // Seen in the cache within a second of the controller reporting its patch (polled every 25 ms).
      if (patchedAt.has(name)) expect(cachedAt.get(name)! - patchedAt.get(name)!, name).toBeLessThan(1000);
    }
  });
});

describe('a client-go controller writing in protobuf (its default content type for built-in kinds)', () => {
  it('gets, updates with the RV it read, patches, creates, gets at once, deletes with an RV precondition, and lists: all through flotilla', async () => {
    const labelled = fleet.members.map((m) => ({ m, name: `pb-${m.name}` }));
    // Unscheduled (no scheduler serves them): nothing else changes them while the writer does.
    await Promise.all(labelled.map(({ m, name }) => ok(m, 'POST', PODS, { ...pod(name), metadata: { name, labels: { pb: 'yes' } }, spec: { schedulerName: 'nobody', containers: [{ name: 'c', image: 'example.com/i:1' }] } })));
    for (let i = 0; i < 100; i++) {
      const cached = JSON.parse((await memberRequest(flotilla.endpoint, 'GET', `${PODS}?labelSelector=pb%3Dyes`)).body) as V1PodList;
      if (cached.items.length === labelled.length) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    const [target] = fleet.members.slice(-1) as [MemberInfo];
    const child = spawn(informerBin, ['-kubeconfig', flotilla.kubeconfig, '-mode', 'protobuf-writer', '-namespace', NS, '-create-in', target.name], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const code = await new Promise<number | null>((r) => child.once('exit', r));
    expect(code, err.slice(-2000)).toBe(0);
    expect(out, out).not.toContain('ERROR');
    for (const { m, name } of labelled) {
      // Answers in protobuf carry flotilla's parts as JSON answers do: the cluster, a global RV.
      const updated = new RegExp(`^UPDATED ${name} ${m.name} (\\S+)$`, 'm').exec(out);
      expect(updated, out).not.toBeNull();
      const direct = await memberJson<{ metadata: { labels: Record<string, string>; annotations?: Record<string, string>; resourceVersion: string } }>(m, 'GET', `${PODS}/${name}`);
      expect(direct.metadata.labels['updated']).toBe('yes');
      expect(direct.metadata.annotations?.['pb-patched']).toBe('yes');
      expect(direct.metadata.annotations?.['search.flotilla.io/cluster'], 'never written to a member').toBeUndefined();
      const patched = new RegExp(`^PATCHED ${name} ${m.name} (\\S+)$`, 'm').exec(out)!;
      expect(decodeGlobalRV(patched[1]!)).toEqual({ [m.name]: direct.metadata.resourceVersion });
      expect(decodeGlobalRV(updated![1]!)[m.name]).toMatch(/^\d+$/);
    }
    const made = /^CREATED (\S+) (\S+)$/m.exec(out);
    expect(made?.[2], out).toBe(target.name);
    expect(out).toContain(`GOT ${made![1]} ${target.name}`);
    expect(out).toContain(`DELETED ${made![1]}`);
    expect(out).toContain(`LISTED ${made![1]} present=false`);
    expect((await memberRequest(target, 'GET', `${PODS}/${made![1]}`)).status).toBe(404);
    // Every write was answered in protobuf (3 × update and patch, create, delete).
    expect(Number(/PROTOBUF-ANSWERS (\d+)/.exec(out)?.[1])).toBe(labelled.length * 2 + 2);
  });
});
