import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { join } from 'node:path';
import { CoreV1Api, KubeConfig, makeInformer, type V1Pod, type V1PodList } from '@kubernetes/client-node';
import { memberJson, memberRequest } from '../fleet/http.js';
import type { MemberInfo } from '../fleet/fleet.js';
import { startFlotillaProcess, type FlotillaProcess, type ResourceRuleSpec } from '../support/flotilla-process.js';
import { inParallel } from '../support/compare.js';
import { kubectl, kubectlOk } from '../support/kubectl.js';
import { decodeGlobalRV, encodeGlobalRV } from '../../src/api/global-rv.js';

/**
 * Read fidelity against the real fleet: resourceVersion semantics on lists, Table cells equal to
 * the member apiserver's own for built-in kinds, kubectl's output flags, and client-node's informer.
 */
const fleet = inject('fleet');
const NS = 'fidelity';
const CLUSTER = 'search.flotilla.io/cluster';
const [east, west, north] = [fleet.members[0]!, fleet.members[1]!, fleet.members[2]!];
let flotilla: FlotillaProcess;

const RESOURCES: ResourceRuleSpec[] = [
  { version: 'v1', resource: 'pods' },
  { version: 'v1', resource: 'nodes' },
  { version: 'v1', resource: 'namespaces' },
  { version: 'v1', resource: 'services' },
  { version: 'v1', resource: 'configmaps' },
  { version: 'v1', resource: 'secrets' },
  { version: 'v1', resource: 'serviceaccounts' },
  { version: 'v1', resource: 'events' },
  { group: 'apps', version: 'v1', resource: 'deployments' },
  { group: 'apps', version: 'v1', resource: 'replicasets' },
];

async function ok(m: MemberInfo, method: string, path: string, body?: unknown): Promise<{ metadata?: { resourceVersion?: string } }> {
  const res = await memberRequest(m, method, path, body);
  if (res.status >= 300 && res.status !== 409) throw new Error(`${m.name}: ${method} ${path}: ${res.status} ${res.body.slice(0, 200)}`);
  return JSON.parse(res.body) as { metadata?: { resourceVersion?: string } };
}

beforeAll(async () => {
  for (const m of fleet.members) {
    await ok(m, 'POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
    for (let i = 0; i < 100 && (await memberRequest(m, 'GET', `/api/v1/namespaces/${NS}/serviceaccounts/default`)).status !== 200; i++) {
      await new Promise((r) => setTimeout(r, 100));
    }
    await ok(m, 'POST', `/apis/apps/v1/namespaces/${NS}/deployments`, {
      apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: `web-${m.name}`, labels: { app: 'web' } },
      spec: { replicas: 2, selector: { matchLabels: { app: 'web' } }, template: { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'web', image: 'example.com/web:1' }] } } },
    });
    await ok(m, 'POST', `/api/v1/namespaces/${NS}/services`, { apiVersion: 'v1', kind: 'Service', metadata: { name: `svc-${m.name}` }, spec: { selector: { app: 'web' }, ports: [{ port: 80 }] } });
    await ok(m, 'POST', `/api/v1/namespaces/${NS}/secrets`, { apiVersion: 'v1', kind: 'Secret', metadata: { name: `s-${m.name}` }, stringData: { a: 'b' } });
    await ok(m, 'POST', `/api/v1/namespaces/${NS}/configmaps`, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `cm-${m.name}` }, data: { a: 'b', c: 'd' } });
  }
  flotilla = await startFlotillaProcess({ fleet, dir: join(fleet.dir, 'flotilla-fidelity'), resources: RESOURCES });
  // Let the deployments' pods come up and settle (kwok runs them).
  for (const m of fleet.members) {
    for (let i = 0; i < 100; i++) {
      const pods = await memberJson<V1PodList>(m, 'GET', `/api/v1/namespaces/${NS}/pods?fieldSelector=status.phase%3DRunning`);
      if (pods.items.length >= 2) break;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
});

afterAll(async () => {
  await flotilla?.stop();
});

describe('resourceVersion on lists', () => {
  it('waits for a cacher to reach an RV it has not seen yet (read-your-writes)', async () => {
    const created = await ok(west, 'POST', `/api/v1/namespaces/${NS}/configmaps`, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'just-written' } });
    const rv = encodeGlobalRV({ west: created.metadata!.resourceVersion! });
    const res = await memberRequest(flotilla.endpoint, 'GET', `/api/v1/namespaces/${NS}/configmaps?resourceVersion=${rv}&resourceVersionMatch=NotOlderThan`);
    expect(res.status).toBe(200);
    expect(res.body).toContain('"just-written"');
  });

  it('answers an RV the cache does not reach with 504 ResourceVersionTooLarge and Retry-After', async () => {
    const current = decodeGlobalRV(JSON.parse((await memberRequest(flotilla.endpoint, 'GET', `/api/v1/namespaces/${NS}/configmaps`)).body).metadata.resourceVersion);
    const ahead = encodeGlobalRV({ ...current, east: String(BigInt(current.east!) + 10_000_000n) });
    const res = await memberRequest(flotilla.endpoint, 'GET', `/api/v1/namespaces/${NS}/configmaps?resourceVersion=${ahead}&resourceVersionMatch=NotOlderThan`);
    expect(res.status).toBe(504);
    expect(res.headers['retry-after']).toBe('1');
    expect(JSON.parse(res.body)).toMatchObject({ kind: 'Status', reason: 'Timeout', code: 504, details: { causes: [{ reason: 'ResourceVersionTooLarge' }], retryAfterSeconds: 1 } });
  });

  it('serves Exact at the current RV and answers an older one with 410', async () => {
    const list = JSON.parse((await memberRequest(flotilla.endpoint, 'GET', '/api/v1/nodes')).body) as { metadata: { resourceVersion: string } };
    const exact = await memberRequest(flotilla.endpoint, 'GET', `/api/v1/nodes?resourceVersion=${list.metadata.resourceVersion}&resourceVersionMatch=Exact`);
    expect([200, 410]).toContain(exact.status); // nodes may have moved on (kwok leases): then 410 is right
    const old = encodeGlobalRV({ east: '1', west: '1', north: '1' });
    const res = await memberRequest(flotilla.endpoint, 'GET', `/api/v1/nodes?resourceVersion=${old}&resourceVersionMatch=Exact`);
    expect(res.status).toBe(410);
    expect(JSON.parse(res.body)).toMatchObject({ reason: 'Expired', code: 410 });
  });
});

describe('Table cells equal the member apiserver’s', () => {
  const TABLE = 'application/json;as=Table;v=v1;g=meta.k8s.io';
  it.each([
    ['/api/v1/namespaces/NS/pods'],
    ['/api/v1/nodes'],
    ['/api/v1/namespaces'],
    ['/api/v1/namespaces/NS/services'],
    ['/api/v1/namespaces/NS/configmaps'],
    ['/api/v1/namespaces/NS/secrets'],
    ['/api/v1/namespaces/NS/serviceaccounts'],
    ['/api/v1/namespaces/NS/events'],
    ['/apis/apps/v1/namespaces/NS/deployments'],
    ['/apis/apps/v1/namespaces/NS/replicasets'],
  ])('%s', async (template) => {
    const path = template.replace('NS', NS);
    type Table = { columnDefinitions: { name: string; format: string; priority: number }[]; rows: { cells: unknown[]; object: { metadata: { name: string; namespace?: string } } }[] };
    const compare = async () => {
      // flotilla first: its fresh read may wait a second for the member's confirmation, and cells such as
      // an event's Last Seen are ages printed when the Table is made, so the member is asked right after.
      const via = JSON.parse((await memberRequest(flotilla.endpoint, 'GET', `/clusters/north${path}`, undefined, { accept: TABLE })).body) as Table;
      const direct = JSON.parse((await memberRequest(north, 'GET', path, undefined, { accept: TABLE })).body) as Table;
      const age = direct.columnDefinitions.findIndex((c) => c.name === 'Age');
      // The Cluster column after the name column shown by default (events have none: first).
      const at = direct.columnDefinitions.findIndex((c) => c.format === 'name' && c.priority === 0) + 1;
      const row = (cells: unknown[]) => cells.map((c, i) => (i === age ? '<age>' : c));
      const byName = (t: Table, strip: boolean) =>
        Object.fromEntries(t.rows.map((r) => [`${r.object.metadata.namespace ?? ''}/${r.object.metadata.name}`, row(strip ? r.cells.filter((_, i) => i !== at) : r.cells)]));
      return {
        columns: [via.columnDefinitions.map((c) => c.name), direct.columnDefinitions.map((c) => c.name)],
        rows: [byName(via, true), byName(direct, false)],
        clusterCells: via.rows.map((r) => r.cells[at]),
        at,
      };
    };
    let c = await compare();
    for (let i = 0; i < 20 && JSON.stringify(c.rows[0]) !== JSON.stringify(c.rows[1]); i++) {
      await new Promise((r) => setTimeout(r, 100));
      c = await compare();
    }
    // After the name, where kubectl and the upstream e2e Table tests read it.
    expect(c.at).toBe(path.endsWith('/events') ? 0 : 1);
    expect(c.columns[0]).toEqual([...c.columns[1]!.slice(0, c.at), 'Cluster', ...c.columns[1]!.slice(c.at)]);
    expect(Object.keys(c.rows[1]!).length).toBeGreaterThan(0);
    expect(c.rows[0]).toEqual(c.rows[1]);
    expect(new Set(c.clusterCells)).toEqual(new Set(['north']));
  });
});

describe('kubectl output', () => {
  it('-o wide adds the wide columns after the member\'s own', async () => {
    const out = await kubectlOk(flotilla.kubeconfig, ['get', 'pods', '-n', NS, '-o', 'wide']);
    expect(out.split('\n')[0]!.split(/\s{2,}/)).toEqual(['NAME', 'CLUSTER', 'READY', 'STATUS', 'RESTARTS', 'AGE', 'IP', 'NODE', 'NOMINATED NODE', 'READINESS GATES']);
  });

  it('-o yaml, custom-columns, --sort-by and --show-labels', async () => {
    const yaml = await kubectlOk(flotilla.kubeconfig, ['get', 'configmap', '-n', NS, 'cm-east', '-o', 'yaml']);
    expect(yaml).toContain('search.flotilla.io/cluster: east');
    const cols = await kubectlOk(flotilla.kubeconfig, ['get', 'configmaps', '-n', NS, '-o', 'custom-columns=NAME:.metadata.name,CLUSTER:.metadata.annotations.search\\.flotilla\\.io/cluster', '--sort-by=.metadata.name']);
    const rows = cols.trim().split('\n').slice(1).map((l) => l.split(/\s+/));
    expect(rows.filter((r) => r[0]!.startsWith('cm-'))).toEqual([['cm-east', 'east'], ['cm-north', 'north'], ['cm-west', 'west']]);
    const labels = await kubectlOk(flotilla.kubeconfig, ['get', 'deployments', '-n', NS, '--show-labels']);
    expect(labels.split('\n')[0]).toContain('LABELS');
    expect(labels).toContain('app=web');
  });

  it('kubectl describe shows the same events as the member (events selected by involvedObject, from the field index)', async () => {
    const podName = (await memberJson<V1PodList>(west, 'GET', `/api/v1/namespaces/${NS}/pods`)).items[0]!.metadata!.name!;
    const eventLines = (out: string) => out.slice(out.indexOf('\nEvents:')).split('\n').slice(1).filter((l) => /^\s+\S/.test(l) && !l.includes('----')).map((l) => l.trim().split(/\s{2,}/)).map((cols) => [cols[0], cols[1], cols.at(-1)].join('|'));
    const direct = eventLines(await kubectlOk(west.kubeconfig, ['describe', 'pod', '-n', NS, podName]));
    expect(direct.length).toBeGreaterThan(0);
    let via: string[] = [];
    for (let i = 0; i < 20; i++) {
      via = eventLines(await kubectlOk(flotilla.kubeconfig, ['describe', 'pod', '-n', NS, podName]));
      if (JSON.stringify(via) === JSON.stringify(direct)) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(via).toEqual(direct);
  });

  it('kubectl wait --for a condition through a watch', async () => {
    const podName = (await memberJson<V1PodList>(west, 'GET', `/api/v1/namespaces/${NS}/pods`)).items[0]!.metadata!.name!;
    const r = await kubectl(flotilla.kubeconfig, ['wait', '-n', NS, '--for=condition=Ready', `pod/${podName}`, '--timeout=20s'], { timeoutMs: 30_000 });
    expect(r.stderr).toBe('');
    expect(r.stdout.trim()).toBe(`pod/${podName} condition met`);
  });
});

describe('@kubernetes/client-node informer', () => {
  it('lists then watches through flotilla and ends equal to the members after churn', async () => {
    const kc = new KubeConfig();
    kc.loadFromFile(flotilla.kubeconfig);
    const api = kc.makeApiClient(CoreV1Api);
    const informer = makeInformer<V1Pod>(kc, `/api/v1/namespaces/${NS}/pods`, () => api.listNamespacedPod({ namespace: NS }));
    const errors: unknown[] = [];
    informer.on('error', (e) => errors.push(e));
    await informer.start();
    try {
      await Promise.all(fleet.members.map((m) =>
        inParallel([0, 1, 2, 3], 4, (i) => ok(m, 'POST', `/api/v1/namespaces/${NS}/pods`, { apiVersion: 'v1', kind: 'Pod', metadata: { name: `node-client-${m.name}-${i}` }, spec: { containers: [{ name: 'c', image: 'example.com/c:1' }] } }).then(() => undefined)),
      ));
      await ok(east, 'DELETE', `/api/v1/namespaces/${NS}/pods/node-client-east-0?gracePeriodSeconds=0`);
      const view = (pods: readonly V1Pod[]) => pods.map((p) => `${p.metadata!.annotations?.[CLUSTER]}/${p.metadata!.name}@${p.metadata!.uid}`).sort();
      const direct = async () => view((await Promise.all(fleet.members.map(async (m) =>
        (await memberJson<V1PodList>(m, 'GET', `/api/v1/namespaces/${NS}/pods`)).items.map((p) => ({ ...p, metadata: { ...p.metadata, annotations: { [CLUSTER]: m.name } } }))))).flat());
      let want = await direct();
      for (let i = 0; i < 50 && JSON.stringify(view(informer.list())) !== JSON.stringify(want); i++) {
        await new Promise((r) => setTimeout(r, 100));
        want = await direct();
      }
      expect(view(informer.list())).toEqual(want);
      expect(errors).toEqual([]);
    } finally {
      await informer.stop();
    }
  });
});
