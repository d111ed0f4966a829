import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { join } from 'node:path';
import { memberRequest } from '../fleet/http.js';
import type { MemberInfo } from '../fleet/fleet.js';
import { startFlotillaProcess, type FlotillaProcess } from '../support/flotilla-process.js';
import { kubectlOk } from '../support/kubectl.js';
import { until } from '../support/poll.js';

/**
 * Discovery as the members have it (issue 27): kubectl api-resources through flotilla lists what
 * the members list, names, verbs, short names, kinds and scope alike, a CRD on one member only
 * included; aggregated discovery is the members'; kubectl explain works; and `/clusters/<name>/`
 * discovery and `/version` are that member's own answers.
 */
const fleet = inject('fleet');
const [east, west] = [fleet.members[0]!, fleet.members[1]!] as [MemberInfo, MemberInfo];
const GROUP = 'discovery.flotilla.test';
const CRD = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: `gadgets.${GROUP}` },
  spec: {
    group: GROUP,
    scope: 'Cluster',
    names: { plural: 'gadgets', singular: 'gadget', kind: 'Gadget', shortNames: ['gdg'], categories: ['flotilla-test'] },
    versions: [{
      name: 'v1',
      served: true,
      storage: true,
      subresources: { status: {} },
      schema: { openAPIV3Schema: { type: 'object', properties: { spec: { type: 'object', properties: { size: { type: 'integer', description: 'How big the gadget is.' } } } } } },
    }],
  },
};
let flotilla: FlotillaProcess;

const AGGREGATED = 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json';
interface AggregatedList { kind: string; items: { metadata: { name: string }; versions: { version: string; resources: { resource: string }[] }[] }[] }

beforeAll(async () => {
  // The CRD on west only: flotilla's discovery is the union.
  const res = await memberRequest(west, 'POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', CRD);
  if (res.status !== 201 && res.status !== 409) throw new Error(`CRD: ${res.status} ${res.body}`);
  await until('the CRD served by west', async () => (await memberRequest(west, 'GET', `/apis/${GROUP}/v1`)).status === 200);
  await until('west\'s openapi to have the CRD', async () => (await memberRequest(west, 'GET', '/openapi/v3')).body.includes(`apis/${GROUP}/v1`));
  flotilla = await startFlotillaProcess({
    fleet,
    dir: join(fleet.dir, 'flotilla-discovery'),
    resources: [{ version: 'v1', resource: 'namespaces' }, { version: 'v1', resource: 'pods' }, { group: 'apps', version: 'v1', resource: 'deployments' }],
  });
});

afterAll(async () => {
  await flotilla?.stop();
  await memberRequest(west, 'DELETE', `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gadgets.${GROUP}`);
});

/** kubectl's output lines, sorted, without its discovery cache (each call asks the server). */
async function lines(kubeconfig: string, args: string[], version?: string): Promise<string[]> {
  const out = await kubectlOk(kubeconfig, ['--cache-dir', join(fleet.dir, 'kubectl-discovery-cache', String(Math.random())), ...args], { version });
  return out.split('\n').map((l) => l.trim().replace(/\s+/g, ' ')).filter((l) => l.length > 0).sort();
}

/** What the members list together: every line of each, once. */
async function union(args: string[], version?: string): Promise<string[]> {
  const all = await Promise.all(fleet.members.map((m) => lines(m.kubeconfig, args, version)));
  return [...new Set(all.flat())].sort();
}

describe.each([['current', undefined], ['1.32', '1.32'], ['1.28', '1.28']] as const)('kubectl %s api-resources through flotilla', (_name, version) => {
  for (const args of [['api-resources', '--no-headers'], ['api-resources', '--no-headers', '-o', 'wide'], ['api-resources', '--no-headers', '--verbs=delete', '-o', 'wide'], ['api-resources', '--no-headers', '--namespaced=false', '-o', 'name']]) {
    it(`lists what the members list: ${args.slice(1).join(' ')}`, async () => {
      const members = await union(args, version);
      expect(members.length).toBeGreaterThan(20);
      expect(members.some((l) => l.startsWith('gadgets'))).toBe(true);
      expect(await lines(flotilla.kubeconfig, args, version)).toEqual(members);
    });
  }
});

describe('discovery documents', () => {
  it('aggregated discovery is the members\', the CRD of west included', async () => {
    for (const path of ['/api', '/apis']) {
      const mine = JSON.parse((await memberRequest(flotilla.endpoint, 'GET', path, undefined, { accept: AGGREGATED })).body) as AggregatedList;
      const theirs = JSON.parse((await memberRequest(east, 'GET', path, undefined, { accept: AGGREGATED })).body) as AggregatedList;
      expect(mine.kind).toBe('APIGroupDiscoveryList');
      // Everything east has, as east has it (subresources included).
      for (const g of theirs.items) expect(mine.items.find((x) => x.metadata.name === g.metadata.name), g.metadata.name).toEqual(g);
      if (path === '/apis') {
        const westDoc = JSON.parse((await memberRequest(west, 'GET', path, undefined, { accept: AGGREGATED })).body) as AggregatedList;
        expect(mine.items.find((x) => x.metadata.name === GROUP)).toEqual(westDoc.items.find((x) => x.metadata.name === GROUP));
        expect(mine.items.map((g) => g.metadata.name).sort()).toEqual(westDoc.items.map((g) => g.metadata.name).sort());
      }
    }
  });

  it('legacy resource lists name the subresources with their verbs', async () => {
    const v1 = JSON.parse((await memberRequest(flotilla.endpoint, 'GET', '/api/v1')).body) as { resources: { name: string; verbs: string[]; kind: string }[] };
    const byName = new Map(v1.resources.map((r) => [r.name, r]));
    expect(byName.get('pods')?.verbs.sort()).toEqual(['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch']);
    expect(byName.get('pods/log')).toMatchObject({ kind: 'Pod', verbs: ['get'] });
    expect(byName.get('pods/exec')?.verbs.sort()).toEqual(['create', 'get']);
    expect(byName.get('pods/status')?.verbs.sort()).toEqual(['get', 'patch', 'update']);
    const apps = JSON.parse((await memberRequest(flotilla.endpoint, 'GET', '/apis/apps/v1')).body) as { resources: { name: string; group?: string; kind: string }[] };
    expect(apps.resources.find((r) => r.name === 'deployments/scale')).toMatchObject({ group: 'autoscaling', version: 'v1', kind: 'Scale' });
    const gadgets = JSON.parse((await memberRequest(flotilla.endpoint, 'GET', `/apis/${GROUP}/v1`)).body) as { resources: { name: string }[] };
    expect(gadgets.resources.map((r) => r.name).sort()).toEqual(['gadgets', 'gadgets/status']);
  });

  it('legacy resource lists carry the storageVersionHash the members agree on', async () => {
    // Aggregated discovery has none: each member's legacy document is asked. The CRD on west only
    // has west's; built-in kinds have the one both members give (the same release).
    type ResourceList = { resources: { name: string; storageVersionHash?: string }[] };
    const hashes = async (ep: typeof east | FlotillaProcess['endpoint'], path: string) =>
      new Map((JSON.parse((await memberRequest(ep, 'GET', path)).body) as ResourceList).resources.map((r) => [r.name, r.storageVersionHash]));
    for (const [path, member] of [['/api/v1', east], ['/apis/apps/v1', east], [`/apis/${GROUP}/v1`, west]] as const) {
      const theirs = await hashes(member, path);
      expect([...theirs.values()].filter(Boolean).length, path).toBeGreaterThan(0);
      expect(await hashes(flotilla.endpoint, path), path).toEqual(theirs);
    }
  });

  it('/clusters/<name>/ discovery and /version are that member\'s own', async () => {
    for (const m of fleet.members) {
      const version = await memberRequest(flotilla.endpoint, 'GET', `/clusters/${m.name}/version`);
      expect(JSON.parse(version.body)).toEqual(JSON.parse((await memberRequest(m, 'GET', '/version')).body));
      for (const [path, accept] of [['/apis', 'application/json'], ['/apis', AGGREGATED], ['/api/v1', 'application/json'], ['/apis/apps/v1', 'application/json']] as const) {
        const mine = await memberRequest(flotilla.endpoint, 'GET', `/clusters/${m.name}${path}`, undefined, { accept });
        const theirs = await memberRequest(m, 'GET', path, undefined, { accept });
        expect(mine.status, `${m.name} ${path}`).toBe(200);
        expect(mine.headers['content-type']).toBe(theirs.headers['content-type']);
        expect(JSON.parse(mine.body), `${m.name} ${path} ${accept}`).toEqual(JSON.parse(theirs.body));
      }
    }
    // A 304 is the member's, with no length or type of its own (kubectl's HTTP cache merges them).
    const first = await memberRequest(flotilla.endpoint, 'GET', `/clusters/${east.name}/api`, undefined, { accept: AGGREGATED });
    const again = await memberRequest(flotilla.endpoint, 'GET', `/clusters/${east.name}/api`, undefined, { accept: AGGREGATED, headers: { 'if-none-match': String(first.headers['etag']) } });
    expect(again.status).toBe(304);
    expect([again.headers['content-length'], again.headers['content-type']]).toEqual([undefined, undefined]);
    expect((await memberRequest(flotilla.endpoint, 'GET', `/clusters/${east.name}/apis/${GROUP}/v1`)).status).toBe(404);
    expect((await memberRequest(flotilla.endpoint, 'GET', `/clusters/${west.name}/apis/${GROUP}/v1`)).status).toBe(200);
  });
});

it('a resource excluded from live reads (and not cached) is listed without get, list and watch', async () => {
  const excluding = await startFlotillaProcess({ fleet, dir: join(fleet.dir, 'flotilla-discovery-exclude'), resources: [{ version: 'v1', resource: 'namespaces' }], options: { liveReads: { exclude: ['secrets'] } } });
  try {
    const verbs = async (ep: { server: string; token: string; caFile: string }, name: string) =>
      (JSON.parse((await memberRequest(ep, 'GET', '/api/v1')).body) as { resources: { name: string; verbs: string[] }[] }).resources.find((r) => r.name === name)?.verbs.sort();
    expect(await verbs(excluding.endpoint, 'secrets')).toEqual(['create', 'delete', 'deletecollection', 'patch', 'update']);
    expect(await verbs(excluding.endpoint, 'configmaps')).toEqual(await verbs(east, 'configmaps'));
    expect(await verbs(excluding.endpoint, 'namespaces')).toEqual(await verbs(east, 'namespaces'));
    expect(await verbs(flotilla.endpoint, 'secrets')).toEqual(await verbs(east, 'secrets'));
  } finally {
    await excluding.stop();
  }
});

it('kubectl of two releases sharing a cache reads through /clusters/<name>/ again and again', async () => {
  // Their discovery (v2beta1, then v2) and HTTP caches meet, as in one user's ~/.kube/cache.
  const cache = ['--cache-dir', join(fleet.dir, 'kubectl-discovery-cache', 'shared')];
  for (const m of fleet.members) {
    for (const version of ['1.28', undefined, '1.28', undefined]) {
      const out = await kubectlOk(flotilla.kubeconfig, [...cache, '--server', `${flotilla.url}/clusters/${m.name}`, 'get', 'namespaces', 'default', '-o', 'name'], { version });
      expect(out.trim()).toBe('namespace/default');
    }
  }
});

describe.each([['current', undefined], ['1.32', '1.32'], ['1.28', '1.28']] as const)('kubectl %s explain through flotilla', (_name, version) => {
  for (const what of ['secrets', 'deployments.spec', 'pods.spec.containers', 'events', 'gadgets.spec']) {
    it(`explain ${what} is the member's`, async () => {
      const owner = what.startsWith('gadgets') ? west : east;
      const theirs = await kubectlOk(owner.kubeconfig, ['explain', what], { version });
      expect(await kubectlOk(flotilla.kubeconfig, ['explain', what], { version })).toBe(theirs);
    });
  }
});
