import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { memberRequest } from '../fleet/http.js';
import type { MemberInfo } from '../fleet/fleet.js';
import { procStatFields } from '../fleet/processes.js';
import { startFlotillaProcess, waitReady, writeFleetConfig, type FlotillaProcess, type ResourceRuleSpec } from '../support/flotilla-process.js';
import { cacherStatus, expectConverged, inParallel } from '../support/compare.js';
import { until } from '../support/poll.js';
import { INGEST_WORKER_NICE } from '../../src/registry/defaults.js';

/**
 * The cache core against the real fleet: churn, SIGKILL mid-list and mid-watch with warm restart,
 * and configuration hot reload.
 */
const fleet = inject('fleet');
const NS = 'churn';
const CM_PATH = `/api/v1/namespaces/${NS}/configmaps`;
const PER_MEMBER = 1000;
const running: FlotillaProcess[] = [];

function configMap(name: string, value: string): object {
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, labels: { churn: 'yes' } }, data: { value, filler: 'x'.repeat(200) } };
}

async function ok(m: MemberInfo, method: string, path: string, body?: unknown): Promise<void> {
  const res = await memberRequest(m, method, path, body);
  if (res.status >= 300) throw new Error(`${m.name}: ${method} ${path}: ${res.status} ${res.body.slice(0, 200)}`);
}

/** Creates, updates and deletes configmaps on every member at once. */
async function churn(prefix: string, creates: number, updates: number, deletes: number): Promise<void> {
  await Promise.all(
    fleet.members.map(async (m) => {
      const names = Array.from({ length: creates }, (_, i) => `${prefix}-${i}`);
      await inParallel(names, 24, (n) => ok(m, 'POST', CM_PATH, configMap(n, 'v0')));
      await Promise.all([
        inParallel(names.slice(0, updates), 12, (n) => ok(m, 'PUT', `${CM_PATH}/${n}`, configMap(n, 'v1'))),
        inParallel(names.slice(creates - deletes), 12, (n) => ok(m, 'DELETE', `${CM_PATH}/${n}`)),
      ]);
    }),
  );
}

async function start(name: string, opts: { resources?: ResourceRuleSpec[]; options?: Record<string, unknown>; waitReady?: boolean; members?: MemberInfo[] } = {}): Promise<FlotillaProcess> {
  const f = await startFlotillaProcess({
    fleet,
    dir: join(fleet.dir, name),
    resources: opts.resources ?? [{ version: 'v1', resource: 'configmaps' }],
    options: opts.options,
    waitReady: opts.waitReady,
    members: opts.members,
  });
  running.push(f);
  return f;
}

beforeAll(async () => {
  for (const m of fleet.members) {
    const res = await memberRequest(m, 'POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
    expect([201, 409]).toContain(res.status);
  }
});

afterAll(async () => {
  await Promise.all(running.map((f) => f.stop()));
});

describe('churn', () => {
  it('ends equal to the union of the members after thousands of creates, updates and deletes', async () => {
    const f = await start('churn', { options: { listPageSize: 100 } });
    await churn('a', PER_MEMBER, 600, 400);
    const view = await expectConverged(f.endpoint, fleet.members, CM_PATH, 60_000);
    // Three members' configmaps: each member's kube-root-ca.crt plus what survived the churn.
    expect(view.length).toBe(3 * (PER_MEMBER - 400 + 1));
    const statuses = await cacherStatus(f.endpoint);
    expect(statuses.every((s) => s.relists === 1)).toBe(true);
    // Decoding gives way to the event loop on busy CPUs: the ingest worker's thread alone runs nicer.
    const nices = threadNices(f.proc.pid);
    expect(nices.get(f.proc.pid)).toBe(0);
    expect([...nices.values()].filter((n) => n === INGEST_WORKER_NICE).length).toBeGreaterThanOrEqual(1);
  });
});

/** Each thread's nice value, by thread id (Linux keeps one per thread: /proc/<pid>/task/<tid>/stat, field 19). */
function threadNices(pid: number): Map<number, number> {
  const out = new Map<number, number>();
  for (const tid of readdirSync(`/proc/${pid}/task`).map(Number)) {
    try {
      out.set(tid, Number(procStatFields(`/proc/${pid}/task/${tid}/stat`)[16]));
    } catch {
      // Ended since it was listed.
    }
  }
  return out;
}

describe('SIGKILL and warm restart', () => {
  it('recovers from a kill in the middle of the initial list', async () => {
    // Tiny pages make the initial list long enough to be caught in the middle.
    const f = await start('killed-mid-list', { options: { listPageSize: 10 }, waitReady: false });
    const deadline = Date.now() + 30_000;
    let caught = false;
    while (!caught && Date.now() < deadline) {
      const s = await cacherStatus(f.endpoint).catch(() => []);
      caught = s.some((c) => c.phase === 'listing') && s.some((c) => !c.synced);
      if (!caught) await new Promise((r) => setTimeout(r, 10));
    }
    expect(caught, 'never saw a cacher mid-list').toBe(true);
    process.kill(f.proc.pid, 'SIGKILL');
    await new Promise((r) => f.proc.child.once('exit', r));
    // One list page at a time for the whole process: the three members' relists share it.
    const again = await start('killed-mid-list', { options: { listPageSize: 10, maxInflightListPages: 1 } });
    await expectConverged(again.endpoint, fleet.members, CM_PATH);
    // At least one cacher had not finished its list: it relisted rather than trusting half a list.
    expect((await cacherStatus(again.endpoint)).some((c) => c.relists === 1)).toBe(true);
  });

  it('resumes every watch from the stored RV after a kill during watching: no relist, nothing lost', async () => {
    const f = await start('killed-watching', { resources: [{ version: 'v1', resource: 'configmaps' }, { version: 'v1', resource: 'pods' }] });
    await churn('b', 100, 50, 30);
    await expectConverged(f.endpoint, fleet.members, CM_PATH);
    process.kill(f.proc.pid, 'SIGKILL');
    await new Promise((r) => f.proc.child.once('exit', r));
    // Changes while flotilla is down arrive through the resumed watch.
    await churn('c', 50, 20, 10);
    const started = Date.now();
    const again = await start('killed-watching', { resources: [{ version: 'v1', resource: 'configmaps' }, { version: 'v1', resource: 'pods' }] });
    const readyAfter = Date.now() - started;
    await expectConverged(again.endpoint, fleet.members, CM_PATH);
    await expectConverged(again.endpoint, fleet.members, '/api/v1/pods');
    const statuses = await cacherStatus(again.endpoint);
    expect(statuses.length).toBe(6);
    expect(statuses.map((s) => s.relists)).toEqual([0, 0, 0, 0, 0, 0]);
    // Ready means serving the stored state at once, not after a list.
    expect(readyAfter).toBeLessThan(10_000);
  });
});

describe('configuration hot reload', () => {
  const crd = {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: 'widgets.example.com' },
    spec: {
      group: 'example.com',
      scope: 'Namespaced',
      names: { plural: 'widgets', singular: 'widget', kind: 'Widget', shortNames: ['wd'] },
      versions: [{
        name: 'v1',
        served: true,
        storage: true,
        schema: { openAPIV3Schema: { type: 'object', properties: { spec: { type: 'object', properties: { size: { type: 'integer' } } } } } },
        additionalPrinterColumns: [{ name: 'Size', type: 'integer', jsonPath: '.spec.size' }],
      }],
    },
  };

  it('adds a cluster and a CRD-based resource, then removes a cluster, without disturbing other watchers', async () => {
    const [east, west, north] = [fleet.members[0]!, fleet.members[1]!, fleet.members[2]!];
    for (const m of fleet.members) {
      const res = await memberRequest(m, 'POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', crd);
      expect([201, 409]).toContain(res.status);
    }
    for (const m of fleet.members) {
      for (let i = 0; i < 60; i++) {
        const res = await memberRequest(m, 'POST', `/apis/example.com/v1/namespaces/${NS}/widgets`, { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: `w-${m.name}` }, spec: { size: 3 } });
        if (res.status === 201 || res.status === 409) break;
        await new Promise((r) => setTimeout(r, 250)); // the CRD's endpoint takes a moment to appear
      }
    }

    const pods: ResourceRuleSpec = { version: 'v1', resource: 'pods' };
    const widgets: ResourceRuleSpec = { group: 'example.com', version: 'v1', resource: 'widgets' };
    const f = await start('reload', { resources: [pods], members: [east, west] });
    const before = await cacherStatus(f.endpoint);
    expect(before.map((s) => s.cluster).sort()).toEqual(['east', 'west']);

    writeFleetConfig(f.configPath, [east, west, north], [pods, widgets]);
    await until('the added cluster and resource to be watching', async () => {
      const s = await cacherStatus(f.endpoint);
      return s.length === 6 && s.every((c) => c.synced && c.phase === 'watching');
    });
    const after = await cacherStatus(f.endpoint);
    for (const b of before) {
      const a = after.find((x) => x.cluster === b.cluster && x.resource === b.resource)!;
      // Same watch, never restarted, never relisted.
      expect({ watches: a.watches, relists: a.relists }).toEqual({ watches: b.watches, relists: b.relists });
    }
    await expectConverged(f.endpoint, [east, west, north], `/apis/example.com/v1/namespaces/${NS}/widgets`);
    // A custom resource's list items carry their kind and apiVersion, as the members list them
    // (built-in kinds' do not: the differential harness compares those).
    const widgetList = JSON.parse((await memberRequest(f.endpoint, 'GET', `/apis/example.com/v1/namespaces/${NS}/widgets`)).body) as { items: { kind?: string; apiVersion?: string }[] };
    expect(widgetList.items.map((i) => `${i.kind} ${i.apiVersion}`)).toEqual(['Widget example.com/v1', 'Widget example.com/v1', 'Widget example.com/v1']);
    const discovery = await memberRequest(f.endpoint, 'GET', '/apis/example.com/v1');
    expect(JSON.parse(discovery.body)).toMatchObject({ groupVersion: 'example.com/v1', resources: [{ name: 'widgets', kind: 'Widget', namespaced: true }] });
    await waitReady(f.endpoint, f.proc);

    // An invalid file is refused and the running configuration kept.
    const { writeFileSync } = await import('node:fs');
    writeFileSync(f.configPath, 'clusters: [{name: "Bad_Name"}]\nresources: []\n');
    await until('the invalid file to be refused', () => readFileSync(f.proc.logPath, 'utf8').includes('configuration not reloaded'));
    expect((await cacherStatus(f.endpoint)).length).toBe(6);

    writeFleetConfig(f.configPath, [west, north], [pods, widgets]);
    await until('the removed cluster\'s cachers to stop', async () => (await cacherStatus(f.endpoint)).every((c) => c.cluster !== 'east'));
    const pruned = await cacherStatus(f.endpoint);
    expect(pruned.length).toBe(4);
    const westPods = pruned.find((c) => c.cluster === 'west' && c.resource === 'v1/pods')!;
    expect(westPods.watches).toBe(before.find((c) => c.cluster === 'west')!.watches);
    await expectConverged(f.endpoint, [west, north], '/api/v1/pods');
    const widgetsNow = await memberRequest(f.endpoint, 'GET', `/apis/example.com/v1/namespaces/${NS}/widgets`);
    expect(widgetsNow.body).not.toContain('"w-east"');
    // Reads of the removed cluster are gone too.
    expect((await memberRequest(f.endpoint, 'GET', '/clusters/east/api/v1/pods')).status).toBe(404);
  });
});
