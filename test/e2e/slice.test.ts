import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { join } from 'node:path';
import type { V1Pod, V1PodList } from '@kubernetes/client-node';
import { memberJson, memberRequest } from '../fleet/http.js';
import type { MemberInfo } from '../fleet/fleet.js';
import { startFlotillaProcess, type FlotillaProcess } from '../support/flotilla-process.js';
import { kubectl, kubectlOk } from '../support/kubectl.js';
import { decodeGlobalRV, encodeGlobalRV } from '../../src/api/global-rv.js';
import { decodeContinue, encodeContinue } from '../../src/api/continue-token.js';
import { decodeProtobufAnswer, fieldAt, listItems } from '../support/protobuf-tree.js';

/**
 * The first vertical slice against the real fleet: kubectl lists and gets pods of three members
 * through flotilla, errors are Kubernetes Statuses, and the cache follows the members by watch.
 */
const NS = 'slice';
const CLUSTER_ANNOTATION = 'search.flotilla.io/cluster';
const fleet = inject('fleet');
let flotilla: FlotillaProcess;

function pod(name: string): V1Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, labels: { app: 'slice', member: name.split('-')[1]! } },
    spec: { containers: [{ name: 'c', image: 'example.com/slice:1' }] },
  };
}

async function createPod(m: MemberInfo, name: string, ns = NS): Promise<V1Pod> {
  return memberJson<V1Pod>(m, 'POST', `/api/v1/namespaces/${ns}/pods`, pod(name));
}

async function memberPods(m: MemberInfo): Promise<V1Pod[]> {
  return (await memberJson<V1PodList>(m, 'GET', `/api/v1/namespaces/${NS}/pods`)).items;
}

async function flotillaPods(path = `/api/v1/namespaces/${NS}/pods`): Promise<V1PodList> {
  const res = await memberRequest(flotilla.endpoint, 'GET', path);
  expect(res.status).toBe(200);
  return JSON.parse(res.body) as V1PodList;
}

beforeAll(async () => {
  for (const m of fleet.members) {
    const res = await memberRequest(m, 'POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
    expect([201, 409]).toContain(res.status);
    // The namespace's default ServiceAccount must exist before pods are admitted.
    for (let i = 0; i < 100 && (await memberRequest(m, 'GET', `/api/v1/namespaces/${NS}/serviceaccounts/default`)).status !== 200; i++) {
      await new Promise((r) => setTimeout(r, 100));
    }
    for (let i = 0; i < 3; i++) await createPod(m, `pod-${m.name}-${i}`);
  }
  // The same namespace/name in two members: a read by name says which it shows, a write must not pick one.
  await createPod(fleet.members[0]!, 'twin');
  await createPod(fleet.members[1]!, 'twin');
  flotilla = await startFlotillaProcess({ fleet, dir: join(fleet.dir, 'flotilla-slice') });
});

afterAll(async () => {
  await flotilla?.stop();
});

describe('fleet-wide list', () => {
  it('kubectl get pods -A lists every member pod once, with the cluster annotation', async () => {
    const out = JSON.parse(await kubectlOk(flotilla.kubeconfig, ['get', 'pods', '-A', '-o', 'json'])) as V1PodList;
    const expected = new Map<string, string>();
    for (const m of fleet.members) {
      for (const p of (await memberJson<V1PodList>(m, 'GET', '/api/v1/pods')).items) expected.set(p.metadata!.uid!, m.name);
    }
    const got = new Map<string, string>();
    for (const p of out.items) {
      expect(got.has(p.metadata!.uid!), `duplicate ${p.metadata!.name}`).toBe(false);
      got.set(p.metadata!.uid!, p.metadata!.annotations![CLUSTER_ANNOTATION]!);
    }
    expect(got).toEqual(expected);
    expect(new Set(got.values())).toEqual(new Set(['east', 'west', 'north']));
  });

  it('prints a Table with the member printer columns and a Cluster column after the name', async () => {
    const out = await kubectlOk(flotilla.kubeconfig, ['get', 'pods', '-n', NS]);
    const [header, ...rows] = out.trim().split('\n');
    expect(header!.split(/\s+/)).toEqual(['NAME', 'CLUSTER', 'READY', 'STATUS', 'RESTARTS', 'AGE']);
    expect(rows.length).toBe(3 * 3 + 2);
    expect(rows.find((r) => r.includes('pod-west-1'))!.split(/\s+/).slice(0, 2)).toEqual(['pod-west-1', 'west']);
  });

  it.each(['1.28', '1.33', '1.34', '1.35'])('works the same with kubectl %s', async (version) => {
    const out = await kubectlOk(flotilla.kubeconfig, ['get', 'pods', '-n', NS], { version });
    const rows = out.trim().split('\n');
    expect(rows[0]!.split(/\s+/)).toEqual(['NAME', 'CLUSTER', 'READY', 'STATUS', 'RESTARTS', 'AGE']);
    expect(rows.find((r) => r.includes('pod-north-2'))!.split(/\s+/).slice(0, 2)).toEqual(['pod-north-2', 'north']);
  });

  it('returns a global resourceVersion covering every member', async () => {
    const list = await flotillaPods();
    const rvs = decodeGlobalRV(list.metadata!.resourceVersion!);
    expect(Object.keys(rvs).sort()).toEqual(['east', 'north', 'west']);
    for (const p of list.items) {
      const own = decodeGlobalRV(p.metadata!.resourceVersion!);
      const cluster = p.metadata!.annotations![CLUSTER_ANNOTATION]!;
      const member = fleet.members.find((m) => m.name === cluster)!;
      const direct = await memberJson<V1Pod>(member, 'GET', `/api/v1/namespaces/${NS}/pods/${p.metadata!.name}`);
      expect(own).toEqual({ [cluster]: direct.metadata!.resourceVersion });
    }
  });

  it('filters by label selector', async () => {
    const out = await kubectlOk(flotilla.kubeconfig, ['get', 'pods', '-A', '-l', 'member=north', '-o', 'name']);
    expect(out.trim().split('\n').sort()).toEqual(['pod/pod-north-0', 'pod/pod-north-1', 'pod/pod-north-2']);
  });

  it('follows relabelling on a member in label-selected lists', async () => {
    const north = fleet.members.find((m) => m.name === 'north')!;
    const patch = (labels: Record<string, string | null>) =>
      memberRequest(north, 'PATCH', `/api/v1/namespaces/${NS}/pods/pod-north-0`, { metadata: { labels } }, { contentType: 'application/merge-patch+json' });
    const names = async (sel: string) =>
      (await flotillaPods(`/api/v1/namespaces/${NS}/pods?labelSelector=${encodeURIComponent(sel)}`)).items.map((p) => p.metadata!.name);
    expect((await patch({ member: null, moved: 'yes' })).status).toBe(200);
    for (let i = 0; i < 50 && (await names('moved=yes')).length === 0; i++) await new Promise((r) => setTimeout(r, 20));
    expect(await names('moved=yes')).toEqual(['pod-north-0']);
    expect(await names('member in (north)')).toEqual(['pod-north-1', 'pod-north-2']);
    expect((await patch({ member: 'north', moved: null })).status).toBe(200);
    for (let i = 0; i < 50 && (await names('moved=yes')).length > 0; i++) await new Promise((r) => setTimeout(r, 20));
    expect(await names('member=north,app=slice')).toEqual(['pod-north-0', 'pod-north-1', 'pod-north-2']);
  });

  /** Flotilla's answer to a selected list equals the union of the members' own answers. */
  async function expectSelectsLikeMembers(q: string): Promise<void> {
    const direct = new Set<string>();
    for (const m of fleet.members) {
      for (const p of (await memberJson<V1PodList>(m, 'GET', `/api/v1/namespaces/${NS}/pods${q}`)).items) direct.add(`${m.name}/${p.metadata!.name}`);
    }
    // Pods change phase as kwok runs them: compare once both sides agree, or fail after a few tries.
    let cached = new Set<string>();
    for (let i = 0; i < 20; i++) {
      cached = new Set((await flotillaPods(`/api/v1/namespaces/${NS}/pods${q}`)).items.map((p) => `${p.metadata!.annotations![CLUSTER_ANNOTATION]}/${p.metadata!.name}`));
      if ([...cached].sort().join() === [...direct].sort().join()) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect([...cached].sort()).toEqual([...direct].sort());
  }

  // spec.nodeName=<node> is answered from the field index; `spec.nodeName=` (unscheduled) by a scan.
  it.each(['status.phase=Running', 'spec.nodeName=east-node-1', 'spec.nodeName=east-node-1,status.phase=Running', 'spec.nodeName=', 'status.phase!=Running,spec.restartPolicy=Always', 'metadata.name=pod-west-1', 'spec.hostNetwork=false'])(
    'selects by field %s exactly as the members do',
    (selector) => expectSelectsLikeMembers(`?fieldSelector=${encodeURIComponent(selector)}`),
  );

  // Several indexed requirements: the smallest index range drives whichever order they come in,
  // and a candidate must be in every other one.
  it.each([
    ['member=north,app=slice', ''],
    ['app=slice,member=north', ''],
    ['member=north', 'spec.nodeName=east-node-1'],
    ['app=slice,member in (north,west)', ''],
    ['app in (slice,none),member=west,member!=east', ''],
    ['app=slice,member=nowhere', ''],
    ['app=slice', 'spec.nodeName=east-node-1'],
    ['member in (east,west)', 'spec.nodeName=east-node-1,status.phase=Running'],
  ])('selects by labels %j and fields %j exactly as the members do', (labelSelector, fieldSelector) =>
    expectSelectsLikeMembers(`?${new URLSearchParams(fieldSelector ? { labelSelector, fieldSelector } : { labelSelector })}`),
  );

  it('addresses one member under /clusters/<name>/', async () => {
    const list = await flotillaPods(`/clusters/west/api/v1/namespaces/${NS}/pods`);
    expect(new Set(list.items.map((p) => p.metadata!.annotations![CLUSTER_ANNOTATION]))).toEqual(new Set(['west']));
    expect(list.items.length).toBe(4);
  });
});

// Raw JSON says `continue`; client-node's type calls it `_continue`.
const continueOf = (l: V1PodList) => (l.metadata as { continue?: string } | undefined)?.continue;

describe('paging', () => {
  it('kubectl --chunk-size pages through everything', async () => {
    const whole = await kubectlOk(flotilla.kubeconfig, ['get', 'pods', '-A', '-o', 'name']);
    const paged = await kubectlOk(flotilla.kubeconfig, ['get', 'pods', '-A', '-o', 'name', '--chunk-size=2']);
    expect(paged.trim().split('\n').length).toBeGreaterThan(4);
    expect(paged).toBe(whole);
  });

  it('serves every page from the first page’s snapshot, with remainingItemCount', async () => {
    const path = `/api/v1/namespaces/${NS}/pods`;
    const first = await flotillaPods(`${path}?limit=3`);
    const total = (await flotillaPods(path)).items.length;
    expect(first.items).toHaveLength(3);
    expect(first.metadata!.remainingItemCount).toBe(total - 3);
    // A pod created after the first page is not in the later pages: they read the same snapshot.
    const created = await createPod(fleet.members[2]!, 'pod-after-first-page');
    const id = (p: V1Pod) => `${p.metadata!.annotations![CLUSTER_ANNOTATION]}/${p.metadata!.name}`;
    const names = first.items.map(id);
    let token = continueOf(first);
    while (token) {
      const page = await flotillaPods(`${path}?limit=3&continue=${encodeURIComponent(token)}`);
      expect(page.metadata!.resourceVersion).toBe(first.metadata!.resourceVersion);
      names.push(...page.items.map(id));
      token = continueOf(page);
    }
    expect(names).toHaveLength(total);
    expect(new Set(names).size).toBe(total);
    expect(names).not.toContain('north/pod-after-first-page');
    await memberRequest(fleet.members[2]!, 'DELETE', `${path}/${created.metadata!.name}?gracePeriodSeconds=0`);
  });

  it('reads a page whose snapshot is gone at the token’s RV, from the event log; 410 and a fresh token that works where the log does not reach back', async () => {
    const path = `/api/v1/namespaces/${NS}/pods`;
    // The whole list of the first page's state: read before and after it, again while pods an earlier
    // test deleted are still going.
    const uids = async () => (await flotillaPods(path)).items.map((p) => p.metadata!.uid);
    let first = await flotillaPods(`${path}?limit=2`);
    let whole = await uids();
    for (let attempt = 0; attempt < 10; attempt++) {
      const before = await uids();
      first = await flotillaPods(`${path}?limit=2`);
      whole = await uids();
      if (JSON.stringify(before) === JSON.stringify(whole)) break;
      await new Promise((r) => setTimeout(r, 1000));
    }
    const gone = encodeContinue({ ...decodeContinue(continueOf(first)!), snap: 'gone' });
    const rest = await flotillaPods(`${path}?limit=100&continue=${gone}`);
    expect(rest.metadata!.resourceVersion).toBe(first.metadata!.resourceVersion);
    expect([...first.items, ...rest.items].map((p) => p.metadata!.uid)).toEqual(whole);
    const beforeLog = encodeContinue({ rv: encodeGlobalRV(Object.fromEntries(Object.keys(decodeGlobalRV(first.metadata!.resourceVersion!)).map((c) => [c, '1']))), start: decodeContinue(continueOf(first)!).start });
    const res = await memberRequest(flotilla.endpoint, 'GET', `${path}?limit=2&continue=${beforeLog}`);
    expect(res.status).toBe(410);
    const status = JSON.parse(res.body) as { reason: string; metadata: { continue?: string } };
    expect(status.reason).toBe('Expired');
    expect(status.metadata.continue).toBeTruthy();
    const fresh = await flotillaPods(`${path}?limit=100&continue=${encodeURIComponent(status.metadata.continue!)}`);
    expect(fresh.items.length).toBeGreaterThan(0);
    expect(fresh.items.map((p) => p.metadata!.name)).not.toContain(first.items[0]!.metadata!.name);
    expect((await memberRequest(flotilla.endpoint, 'GET', `${path}?limit=2&continue=not-a-token!`)).status).toBe(400);
  });
});

describe('get by name', () => {
  it('finds a pod in whichever member holds it', async () => {
    const out = JSON.parse(await kubectlOk(flotilla.kubeconfig, ['get', 'pod', '-n', NS, 'pod-north-1', '-o', 'json'])) as V1Pod;
    expect(out.metadata!.annotations![CLUSTER_ANNOTATION]).toBe('north');
    expect(out.kind).toBe('Pod');
    expect(out.apiVersion).toBe('v1');
  });

  it('answers a missing pod with a NotFound Status that kubectl prints', async () => {
    const r = await kubectl(flotilla.kubeconfig, ['get', 'pod', '-n', NS, 'no-such-pod']);
    expect(r.code).toBe(1);
    // kubectl then reads the namespace, which every member has: the first's, with a Warning saying so.
    expect(r.stderr.trim().split('\n').pop()).toBe('Error from server (NotFound): pods "no-such-pod" not found');
    const raw = await memberRequest(flotilla.endpoint, 'GET', `/api/v1/namespaces/${NS}/pods/no-such-pod`);
    expect(raw.status).toBe(404);
    expect(JSON.parse(raw.body)).toMatchObject({ kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'NotFound', code: 404, details: { name: 'no-such-pod', kind: 'pods' } });
  });

  it('gets the first member’s copy of a name two members hold, names them both, and refuses to guess on a write', async () => {
    const raw = await memberRequest(flotilla.endpoint, 'GET', `/api/v1/namespaces/${NS}/pods/twin`);
    expect(raw.status).toBe(200);
    expect((JSON.parse(raw.body) as V1Pod).metadata!.annotations![CLUSTER_ANNOTATION]).toBe('east');
    expect(String(raw.headers['warning'])).toContain(`pods \\"twin\\" is in clusters east, west; this is east's`);
    const write = await memberRequest(flotilla.endpoint, 'PATCH', `/api/v1/namespaces/${NS}/pods/twin`, { metadata: { annotations: { note: 'hi' } } }, { contentType: 'application/merge-patch+json' });
    expect(write.status).toBe(400);
    const status = JSON.parse(write.body) as { reason: string; message: string };
    expect(status.reason).toBe('BadRequest');
    expect(status.message).toContain('east');
    expect(status.message).toContain('west');
    expect(status.message).toContain('/clusters/');
    const one = await memberRequest(flotilla.endpoint, 'GET', `/clusters/west/api/v1/namespaces/${NS}/pods/twin`);
    expect(one.status).toBe(200);
    expect((JSON.parse(one.body) as V1Pod).metadata!.annotations![CLUSTER_ANNOTATION]).toBe('west');
  });
});

describe('bad input', () => {
  it('rejects an unsupported field selector with 400', async () => {
    const res = await memberRequest(flotilla.endpoint, 'GET', `/api/v1/pods?fieldSelector=${encodeURIComponent('spec.bogus=x')}`);
    expect(res.status).toBe(400);
    expect(JSON.parse(res.body)).toMatchObject({ kind: 'Status', reason: 'BadRequest', code: 400 });
  });

  it('rejects a malformed label selector with 400', async () => {
    const res = await memberRequest(flotilla.endpoint, 'GET', `/api/v1/pods?labelSelector=${encodeURIComponent('a in (b')}`);
    expect(res.status).toBe(400);
  });

  it('answers an unknown cluster and a resource no member serves with 404 Status', async () => {
    expect((await memberRequest(flotilla.endpoint, 'GET', '/clusters/nowhere/api/v1/pods')).status).toBe(404);
    const res = await memberRequest(flotilla.endpoint, 'GET', '/apis/nowhere.example.com/v1/things');
    expect(res.status).toBe(404);
    expect(JSON.parse(res.body)).toMatchObject({ kind: 'Status', code: 404, reason: 'NotFound' });
  });

  it('answers in protobuf when the client asks for it first (cached, or live for protobuf alone), JSON when JSON comes first, 406 when neither is acceptable', async () => {
    const jsonFirst = await memberRequest(flotilla.endpoint, 'GET', '/api/v1/pods', undefined, { accept: 'application/json, application/vnd.kubernetes.protobuf' });
    expect(jsonFirst.status).toBe(200);
    const json = JSON.parse(jsonFirst.body) as V1PodList;
    expect(json.kind).toBe('PodList');
    const names = json.items.map((p) => p.metadata!.name!).sort();
    for (const accept of ['application/vnd.kubernetes.protobuf, application/json', 'application/vnd.kubernetes.protobuf']) {
      const proto = await memberRequest(flotilla.endpoint, 'GET', '/api/v1/pods', undefined, { accept });
      expect([proto.status, proto.headers['content-type']], accept).toEqual([200, 'application/vnd.kubernetes.protobuf']);
      const list = decodeProtobufAnswer(proto.raw!);
      expect(fieldAt(list, 1, 2)).toBe('PodList');
      expect(listItems(list).map((pod) => String(fieldAt(pod, 1, 1))).sort(), accept).toEqual(names);
    }
    const neither = await memberRequest(flotilla.endpoint, 'GET', '/api/v1/pods', undefined, { accept: 'text/html' });
    expect(neither.status).toBe(406);
    expect(JSON.parse(neither.body)).toMatchObject({ kind: 'Status', reason: 'NotAcceptable', code: 406 });
  });
});

describe('following the members', () => {
  it('shows a pod created directly in a member within a second, and drops it when deleted', async () => {
    const west = fleet.members.find((m) => m.name === 'west')!;
    const created = await createPod(west, 'pod-west-late');
    const started = Date.now();
    let seenAfter = -1;
    // The cache's own pace: lists as the cache stands (resourceVersion=0), not fresh reads, which
    // would show it at once by confirming with every member (fresh-reads.test.ts).
    while (Date.now() - started < 5000) {
      const list = await flotillaPods(`/api/v1/namespaces/${NS}/pods?resourceVersion=0`);
      const hit = list.items.find((p) => p.metadata!.uid === created.metadata!.uid);
      if (hit) {
        seenAfter = Date.now() - started;
        break;
      }
      await new Promise((r) => setTimeout(r, 20));
    }
    expect(seenAfter, 'pod never appeared in flotilla').toBeGreaterThanOrEqual(0);
    expect(seenAfter).toBeLessThan(1000);

    const del = await memberRequest(west, 'DELETE', `/api/v1/namespaces/${NS}/pods/pod-west-late?gracePeriodSeconds=0`);
    expect(del.status).toBe(200);
    const deadline = Date.now() + 5000;
    let gone = false;
    while (!gone && Date.now() < deadline) {
      gone = !(await flotillaPods(`/api/v1/namespaces/${NS}/pods?resourceVersion=0`)).items.some((p) => p.metadata!.uid === created.metadata!.uid);
      if (!gone) await new Promise((r) => setTimeout(r, 20));
    }
    expect(gone).toBe(true);
  });

  it('serves aggregated discovery and proxies OpenAPI, so kubectl explain works', async () => {
    const res = await memberRequest(flotilla.endpoint, 'GET', '/api', undefined, {
      accept: 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json',
    });
    expect(res.headers['content-type']).toContain('as=APIGroupDiscoveryList');
    const doc = JSON.parse(res.body) as { kind: string; items: { versions: { resources: { resource: string; scope: string; verbs: string[] }[] }[] }[] };
    expect(doc.kind).toBe('APIGroupDiscoveryList');
    const pods = doc.items[0]!.versions[0]!.resources.find((r) => r.resource === 'pods')!;
    // The members' verbs (writes are forwarded), as a member lists them.
    expect(pods).toMatchObject({ scope: 'Namespaced', verbs: ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'] });
    const explain = await kubectlOk(flotilla.kubeconfig, ['explain', 'pods.spec.nodeName']);
    expect(explain).toContain('FIELD: nodeName <string>');
  });

  it('serves discovery that kubectl understands', async () => {
    const out = await kubectlOk(flotilla.kubeconfig, ['api-resources', '--no-headers', '-o', 'name']);
    // The members' resources, not only the cached ones (test/e2e/discovery.test.ts compares them).
    expect(out.trim().split('\n')).toEqual(expect.arrayContaining(['namespaces', 'nodes', 'pods', 'secrets', 'deployments.apps']));
    const version = JSON.parse(await kubectlOk(flotilla.kubeconfig, ['version', '-o', 'json'])) as { serverVersion: { gitVersion: string } };
    expect(version.serverVersion.gitVersion).toBe('v1.34.4');
  });

  it('matches the members after all of this (uid and RV of every object)', async () => {
    const snapshot = async () => {
      const direct = (await Promise.all(fleet.members.map(memberPods))).flat().map((p) => `${p.metadata!.uid}@${p.metadata!.resourceVersion}`);
      const cached = (await flotillaPods()).items.map((p) => {
        const cluster = p.metadata!.annotations![CLUSTER_ANNOTATION]!;
        return `${p.metadata!.uid}@${decodeGlobalRV(p.metadata!.resourceVersion!)[cluster]}`;
      });
      return { direct: direct.sort(), cached: cached.sort() };
    };
    // Members keep updating pod status (kwok); the two reads are not atomic, so allow a few tries.
    let s = await snapshot();
    for (let i = 0; i < 20 && JSON.stringify(s.direct) !== JSON.stringify(s.cached); i++) {
      await new Promise((r) => setTimeout(r, 100));
      s = await snapshot();
    }
    expect(s.cached).toEqual(s.direct);
  });
});
