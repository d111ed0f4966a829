import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { join } from 'node:path';
import type { V1ConfigMap, V1ConfigMapList } from '@kubernetes/client-node';
import { memberJson, memberRequest } from '../fleet/http.js';
import type { MemberInfo } from '../fleet/fleet.js';
import { startFlotillaProcess, type FlotillaProcess, type ResourceRuleSpec } from '../support/flotilla-process.js';
import { expectConverged, membersView } from '../support/compare.js';
import { pythonClientBin, pythonClientScript, runPython } from '../support/python.js';
import { decodeGlobalRV } from '../../src/api/global-rv.js';
import { until } from '../support/poll.js';

/**
 * The official Python client (test/clients/python/fleet_reader.py, in the venv that
 * scripts/python-client.mjs makes) against flotilla in front of the real fleet: its lists are the
 * members' union with flotilla's global resourceVersion, its watch from that RV delivers what
 * members create afterwards, and a get of a missing object is its ApiException 404.
 */
const fleet = inject('fleet');
const NS = 'python-client';
const CMS = `/api/v1/namespaces/${NS}/configmaps`;
const PODS = `/api/v1/namespaces/${NS}/pods`;
const [east, west, north] = [fleet.members[0]!, fleet.members[1]!, fleet.members[2]!];
const MEMBER_NAMES = fleet.members.map((m) => m.name).sort();
let flotilla: FlotillaProcess;
let python: string;

const RESOURCES: ResourceRuleSpec[] = [
  { version: 'v1', resource: 'pods' },
  { version: 'v1', resource: 'namespaces' },
  { version: 'v1', resource: 'configmaps' },
];

interface Summary {
  namespace: string;
  name: string;
  uid: string;
  cluster: string | null;
  resourceVersion: string;
}
interface Listing {
  resourceVersion: string;
  items: Summary[];
}
interface PyEvent {
  type: string;
  name: string;
  cluster: string | null;
  resourceVersion: string;
}

async function create<T>(m: MemberInfo, path: string, body: unknown): Promise<T> {
  const res = await memberRequest(m, 'POST', path, body);
  if (res.status !== 201) throw new Error(`${m.name} POST ${path}: ${res.status} ${res.body.slice(0, 300)}`);
  return JSON.parse(res.body) as T;
}

const configMap = (name: string): V1ConfigMap => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data: { from: name } });
const pod = (name: string) => ({ apiVersion: 'v1', kind: 'Pod', metadata: { name }, spec: { containers: [{ name: 'c', image: 'example.com/i:1' }] } });

/** A listed object as compare.ts's membersView writes it: member, namespace, name, uid and the member's own RV. */
function asMemberView(i: Summary): string {
  const rvs = decodeGlobalRV(i.resourceVersion);
  // A listed object carries its own cluster's RV only.
  expect(Object.keys(rvs), i.name).toEqual([i.cluster]);
  return `${i.cluster}/${i.namespace}/${i.name}@${i.uid}@${rvs[i.cluster!]}`;
}

beforeAll(async () => {
  python = pythonClientBin();
  for (const m of fleet.members) {
    await create(m, '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
    // Pods need the namespace's default ServiceAccount, and the list below must not change under
    // us: wait for what the controller manager adds to every new namespace.
    await until(`${m.name}: default ServiceAccount`, async () => (await memberRequest(m, 'GET', `/api/v1/namespaces/${NS}/serviceaccounts/default`)).status === 200);
    await until(`${m.name}: kube-root-ca.crt`, async () => (await memberRequest(m, 'GET', `${CMS}/kube-root-ca.crt`)).status === 200);
    await create(m, CMS, configMap(`cm-${m.name}`));
  }
  // One name in two members: the list shows both copies.
  for (const m of [east, west]) {
    await create(m, CMS, configMap('shared'));
    await create(m, PODS, pod(`pod-${m.name}`));
  }
  flotilla = await startFlotillaProcess({ fleet, dir: join(fleet.dir, 'flotilla-python'), resources: RESOURCES });
}, 600_000);

afterAll(async () => {
  await flotilla?.stop();
});

describe('the Python kubernetes client against flotilla', () => {
  it('lists the union of the members with the global resourceVersion, and a missing object is ApiException 404', async () => {
    const direct = await expectConverged(flotilla.endpoint, fleet.members, CMS);
    await expectConverged(flotilla.endpoint, fleet.members, PODS);
    // Each member's own one, east's and west's "shared", and every member's kube-root-ca.crt.
    expect(direct).toHaveLength(8);
    const run = runPython(python, pythonClientScript('fleet_reader.py'), [flotilla.kubeconfig, NS, '5']);
    try {
      const lists = await run.line<{ pods: Listing; configmaps: Listing }>('list');
      run.finishInput([]);

      const cms = lists.configmaps;
      expect(cms.items.map(asMemberView).sort()).toEqual(await membersView(fleet.members, CMS));
      // Served in flotilla's order: namespace, name, then cluster.
      expect(cms.items.map((i) => `${i.name} ${i.cluster}`)).toEqual([
        'cm-east east', 'cm-north north', 'cm-west west',
        'kube-root-ca.crt east', 'kube-root-ca.crt north', 'kube-root-ca.crt west',
        'shared east', 'shared west',
      ]);

      // The list's RV is every member's, each at least as new as what was listed from it and no
      // newer than the member itself is now.
      const listRV = decodeGlobalRV(cms.resourceVersion);
      expect(Object.keys(listRV)).toEqual(MEMBER_NAMES);
      for (const m of fleet.members) {
        const now = await memberJson<V1ConfigMapList>(m, 'GET', CMS);
        const listedRVs = cms.items.filter((i) => i.cluster === m.name).map((i) => BigInt(decodeGlobalRV(i.resourceVersion)[m.name]!));
        const rv = BigInt(listRV[m.name]!);
        expect(listedRVs.length, m.name).toBeGreaterThan(0);
        for (const listed of listedRVs) expect(rv >= listed, `${m.name}: ${rv} < ${listed}`).toBe(true);
        expect(rv <= BigInt(now.metadata!.resourceVersion!), `${m.name}: ${rv} > ${now.metadata!.resourceVersion}`).toBe(true);
      }

      // All namespaces' pods: this namespace's part is east's and west's, by uid.
      const podsHere = lists.pods.items.filter((i) => i.namespace === NS);
      const directPods = (await membersView(fleet.members, PODS)).map((l) => l.slice(0, l.lastIndexOf('@')));
      expect(podsHere.map((i) => `${i.cluster}/${i.namespace}/${i.name}@${i.uid}`).sort()).toEqual(directPods);
      expect(podsHere.map((i) => i.name)).toEqual(['pod-east', 'pod-west']);
      expect(Object.keys(decodeGlobalRV(lists.pods.resourceVersion))).toEqual(MEMBER_NAMES);

      expect(await run.line('notFound')).toEqual([
        { kind: 'pod', status: 404, reason: 'NotFound' },
        { kind: 'configmap', status: 404, reason: 'NotFound' },
      ]);
    } finally {
      await run.stop();
    }
  });

  it('a watch from the list’s resourceVersion delivers configmaps created in two members afterwards, annotated with their cluster', async () => {
    await expectConverged(flotilla.endpoint, fleet.members, CMS);
    const run = runPython(python, pythonClientScript('fleet_reader.py'), [flotilla.kubeconfig, NS, '30']);
    try {
      const before = (await run.line<{ configmaps: Listing }>('list')).configmaps;
      // Created only once the client holds its list, so only its watch can report them.
      const made = new Map<string, { member: MemberInfo; rv: string }>();
      for (const m of [west, north]) {
        const name = `late-${m.name}`;
        expect(before.items.map((i) => i.name)).not.toContain(name);
        const cm = await create<V1ConfigMap>(m, CMS, configMap(name));
        made.set(name, { member: m, rv: cm.metadata!.resourceVersion! });
      }
      run.finishInput([...made.keys()]);

      expect(await run.line('done', 45_000)).toEqual({ reason: 'seen', missing: [] });
      expect(await run.exited, run.stderr()).toBe(0);
      const events = run.lines.filter((l) => 'event' in l).map((l) => l['event'] as PyEvent);
      // Nothing listed before is replayed, and nothing else happened in the namespace.
      expect(events.map((e) => `${e.type} ${e.name} ${e.cluster}`).sort()).toEqual(['ADDED late-north north', 'ADDED late-west west']);
      for (const e of events) {
        const rvs = decodeGlobalRV(e.resourceVersion);
        // A watched object carries every member's RV at that event, its own at the object's.
        expect(Object.keys(rvs), e.name).toEqual(MEMBER_NAMES);
        expect(rvs[e.cluster!], e.name).toBe(made.get(e.name)!.rv);
        // …and is at least as new as the list it follows.
        const listRV = decodeGlobalRV(before.resourceVersion);
        for (const m of MEMBER_NAMES) expect(BigInt(rvs[m]!) >= BigInt(listRV[m]!), `${e.name} ${m}`).toBe(true);
      }
    } finally {
      await run.stop();
    }
  });
});
