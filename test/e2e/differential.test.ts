import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { join } from 'node:path';
import { memberRequest } from '../fleet/http.js';
import type { MemberInfo } from '../fleet/fleet.js';
import { startFlotillaProcess, type FlotillaProcess, type ResourceRuleSpec } from '../support/flotilla-process.js';
import { until } from '../support/poll.js';
import { ACCEPT, differ, type Difference } from '../support/differential.js';

/**
 * Every read form, asked of a member directly and of flotilla addressing that member, must give
 * the same answer but for what flotilla documents as its own (test/support/differential.ts):
 * lists and gets in JSON, Table and PartialObjectMetadata, with selectors, paging, cluster- and
 * namespace-scoped kinds, and errors.
 */
const fleet = inject('fleet');
const NS = 'differential';
const east: MemberInfo = fleet.members[0]!;
let flotilla: FlotillaProcess;

const RESOURCES: ResourceRuleSpec[] = [
  { version: 'v1', resource: 'namespaces' },
  { version: 'v1', resource: 'nodes' },
  { version: 'v1', resource: 'configmaps', namespaces: [NS] },
  { version: 'v1', resource: 'pods', namespaces: [NS] },
  { group: 'apps', version: 'v1', resource: 'deployments', namespaces: [NS] },
];

beforeAll(async () => {
  const make = async (path: string, body: unknown) => {
    const res = await memberRequest(east, 'POST', path, body);
    if (res.status !== 201 && res.status !== 409) throw new Error(`POST ${path}: ${res.status} ${res.body.slice(0, 300)}`);
  };
  await make('/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS, labels: { purpose: 'differential' } } });
  await until('the default service account', async () => (await memberRequest(east, 'GET', `/api/v1/namespaces/${NS}/serviceaccounts/default`)).status === 200);
  for (let i = 0; i < 5; i++) {
    await make(`/api/v1/namespaces/${NS}/configmaps`, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `cm-${i}`, labels: { team: i % 2 ? 'red' : 'blue', idx: String(i) }, annotations: i === 0 ? { note: 'x' } : undefined }, data: { k: 'v'.repeat(i) } });
  }
  await make(`/api/v1/namespaces/${NS}/pods`, { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p-0', labels: { app: 'diff' } }, spec: { containers: [{ name: 'c', image: 'example.com/c:1' }] } });
  await make(`/apis/apps/v1/namespaces/${NS}/deployments`, {
    apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'd-0' },
    spec: { replicas: 0, selector: { matchLabels: { app: 'd' } }, template: { metadata: { labels: { app: 'd' } }, spec: { containers: [{ name: 'c', image: 'example.com/c:1' }] } } },
  });
  await until('the pod running', async () => (JSON.parse((await memberRequest(east, 'GET', `/api/v1/namespaces/${NS}/pods/p-0`)).body) as { status?: { phase?: string } }).status?.phase === 'Running', 60_000);
  // managedFields are kept, as a member serves them (flotilla drops them by default: documented).
  flotilla = await startFlotillaProcess({ fleet, dir: join(fleet.dir, 'flotilla-differential'), resources: RESOURCES, options: { dropManagedFields: false } });
});

afterAll(async () => {
  await flotilla?.stop();
});

/** Asks until the two agree (flotilla's cache follows the member by watch) or reports the last difference. */
async function agree(path: string, accept: string): Promise<Difference | undefined> {
  let last: Difference | undefined;
  for (let i = 0; i < 20; i++) {
    last = await differ(east, flotilla.endpoint, path, accept);
    if (!last) return undefined;
    await new Promise((r) => setTimeout(r, 100));
  }
  return last;
}

const CM = `/api/v1/namespaces/${NS}/configmaps`;
const CASES: [string, string][] = [];
for (const [form, accept] of Object.entries({ json: ACCEPT.json, table: ACCEPT.table })) {
  void form;
  CASES.push(
    [CM, accept],
    [`${CM}?labelSelector=team%3Dblue`, accept],
    [`${CM}?labelSelector=team%20in%20(red),idx!%3D3`, accept],
    [`${CM}?fieldSelector=metadata.name%3Dcm-2`, accept],
    [`${CM}/cm-0`, accept],
    [`${CM}/nope`, accept],
    [`/api/v1/namespaces/${NS}/pods`, accept],
    [`/api/v1/namespaces/${NS}/pods/p-0`, accept],
    [`/apis/apps/v1/namespaces/${NS}/deployments`, accept],
    [`/api/v1/namespaces?labelSelector=purpose%3Ddifferential`, accept],
    [`/api/v1/namespaces/${NS}`, accept],
    [`/api/v1/nodes`, accept],
  );
}
CASES.push(
  [`${CM}?includeObject=Object`, ACCEPT.table],
  [`${CM}?includeObject=None`, ACCEPT.table],
  [CM, ACCEPT.metadataList],
  [`${CM}?labelSelector=team%3Dred`, ACCEPT.metadataList],
  [`${CM}/cm-1`, ACCEPT.metadata],
  [`/api/v1/namespaces/${NS}/pods/p-0`, ACCEPT.metadata],
  [`${CM}?labelSelector=%3D%3D`, ACCEPT.json],
  [`${CM}?fieldSelector=data.k%3Dv`, ACCEPT.json],
);

describe('reads through flotilla equal the member’s own', () => {
  it.each(CASES)('GET %s (%s)', async (path, accept) => {
    const diff = await agree(path, accept);
    expect(diff, JSON.stringify(diff, null, 1)?.slice(0, 4000)).toBeUndefined();
  });
});
