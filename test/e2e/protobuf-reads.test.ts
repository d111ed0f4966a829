import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { BinaryReader, WireType } from '@bufbuild/protobuf/wire';
import { join } from 'node:path';
import { memberJson, memberRequest } from '../fleet/http.js';
import { startFlotillaProcess, type FlotillaProcess, type ResourceRuleSpec } from '../support/flotilla-process.js';
import { CLUSTER_ANNOTATION } from '../support/differential.js';
import { decodeProtobufAnswer, decodeWatchStream, fieldAt, listItems, withoutFlotillaFields, type ProtoTree } from '../support/protobuf-tree.js';
import { decodeGlobalRV } from '../../src/api/global-rv.js';
import type { MemberInfo } from '../fleet/fleet.js';
import { readProtobufList } from '../../src/api/protobuf-list.js';
import { encodeMessage, protobufTypeOf } from '../../src/api/protobuf-transcode.js';

/**
 * Flotilla's cache holds JSON; a client that prefers protobuf (client-go's default) is answered
 * in protobuf transcoded from it (src/api/protobuf-transcode.ts). The transcoder is held to the
 * member's own encoder: every object of every built-in resource a member lists, read in JSON and
 * in protobuf, must transcode to the member's bytes exactly. Then flotilla's answers (lists, gets,
 * watches from the cache) must equal the member's own, field by field, but for the global RV and
 * the cluster annotation.
 */
const fleet = inject('fleet');
const east: MemberInfo = fleet.members[0]!;
const PROTOBUF = 'application/vnd.kubernetes.protobuf';

const NS = 'protobuf-reads';
const POD_SPEC = {
  containers: [{
    name: 'c', image: 'example.com/c:1', command: ['sleep'], args: ['1h'], ports: [{ name: 'http', containerPort: 8080 }],
    env: [{ name: 'A', value: 'b' }, { name: 'NODE', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } }],
    resources: { requests: { cpu: '100m', memory: '64Mi' }, limits: { cpu: '1.5', memory: '1Gi' } },
    readinessProbe: { httpGet: { path: '/', port: 'http' }, periodSeconds: 3 },
    livenessProbe: { tcpSocket: { port: 8080 }, initialDelaySeconds: 5 },
    securityContext: { runAsUser: 1000, runAsNonRoot: true, capabilities: { drop: ['ALL'] } },
    volumeMounts: [{ name: 'cfg', mountPath: '/cfg' }, { name: 'scratch', mountPath: '/tmp' }],
  }],
  volumes: [{ name: 'cfg', configMap: { name: 'cfg', defaultMode: 420 } }, { name: 'scratch', emptyDir: { sizeLimit: '1Gi' } }],
  tolerations: [{ key: 'kwok.x-k8s.io/node', operator: 'Exists', effect: 'NoSchedule' }],
  terminationGracePeriodSeconds: 0,
};
const LABELS = { app: 'pb' };

/** Objects of the kinds with the encodings the transcoder treats specially: quantities, int-or-strings, durations, bytes, times, inlined structs. */
const SEEDS: [string, unknown][] = [
  ['/api/v1/namespaces/NS/configmaps', { metadata: { name: 'cfg', labels: { a: 'b' }, annotations: { z: '1', a: '2' } }, data: { k: 'v' }, binaryData: { b: 'AAEC' } }],
  ['/api/v1/namespaces/NS/secrets', { metadata: { name: 's' }, data: { k: 'dmFsdWU=', empty: '' }, type: 'Opaque' }],
  ['/api/v1/namespaces/NS/pods', { metadata: { name: 'p', labels: LABELS }, spec: POD_SPEC }],
  ['/api/v1/namespaces/NS/services', { metadata: { name: 'svc' }, spec: { selector: LABELS, ports: [{ name: 'http', port: 80, targetPort: 'http' }, { name: 'alt', port: 81, targetPort: 8081 }] } }],
  ['/api/v1/namespaces/NS/resourcequotas', { metadata: { name: 'q' }, spec: { hard: { pods: '100', 'requests.cpu': '10', 'requests.memory': '10Gi' } } }],
  ['/api/v1/namespaces/NS/limitranges', { metadata: { name: 'l' }, spec: { limits: [{ type: 'Container', default: { cpu: '500m' }, defaultRequest: { cpu: '250m' } }] } }],
  ['/apis/apps/v1/namespaces/NS/deployments', { metadata: { name: 'd' }, spec: { replicas: 2, selector: { matchLabels: LABELS }, strategy: { rollingUpdate: { maxSurge: '50%', maxUnavailable: 0 } }, template: { metadata: { labels: LABELS }, spec: POD_SPEC } } }],
  ['/apis/apps/v1/namespaces/NS/statefulsets', { metadata: { name: 'ss' }, spec: { replicas: 1, serviceName: 'svc', selector: { matchLabels: { app: 'ss' } }, template: { metadata: { labels: { app: 'ss' } }, spec: POD_SPEC }, volumeClaimTemplates: [{ metadata: { name: 'data' }, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } } }] } }],
  ['/apis/batch/v1/namespaces/NS/cronjobs', { metadata: { name: 'cj' }, spec: { schedule: '*/5 * * * *', jobTemplate: { spec: { backoffLimit: 1, template: { spec: { ...POD_SPEC, restartPolicy: 'Never' } } } } } }],
  ['/apis/policy/v1/namespaces/NS/poddisruptionbudgets', { metadata: { name: 'pdb' }, spec: { minAvailable: '50%', selector: { matchLabels: LABELS } } }],
  ['/apis/networking.k8s.io/v1/namespaces/NS/networkpolicies', { metadata: { name: 'np' }, spec: { podSelector: { matchLabels: LABELS }, ingress: [{ ports: [{ port: 'http' }, { port: 443, protocol: 'TCP' }] }] } }],
  ['/apis/autoscaling/v2/namespaces/NS/horizontalpodautoscalers', { metadata: { name: 'hpa' }, spec: { scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'd' }, minReplicas: 1, maxReplicas: 3, metrics: [{ type: 'Resource', resource: { name: 'cpu', target: { type: 'AverageValue', averageValue: '500m' } } }] } }],
  ['/apis/coordination.k8s.io/v1/namespaces/NS/leases', { metadata: { name: 'lease' }, spec: { holderIdentity: 'x', leaseDurationSeconds: 15, acquireTime: '2026-01-01T00:00:00.123456Z', renewTime: '2026-01-01T00:00:01.000001Z' } }],
];

/** The seeded kinds, cached (the ReplicaSet the deployment makes too). */
const CACHED: ResourceRuleSpec[] = [
  ...['configmaps', 'secrets', 'pods', 'services', 'resourcequotas', 'limitranges'].map((resource) => ({ version: 'v1', resource, namespaces: [NS] })),
  ...['deployments', 'replicasets', 'statefulsets'].map((resource) => ({ group: 'apps', version: 'v1', resource, namespaces: [NS] })),
  { group: 'batch', version: 'v1', resource: 'cronjobs', namespaces: [NS] },
  { group: 'policy', version: 'v1', resource: 'poddisruptionbudgets', namespaces: [NS] },
  { group: 'networking.k8s.io', version: 'v1', resource: 'networkpolicies', namespaces: [NS] },
  { group: 'autoscaling', version: 'v2', resource: 'horizontalpodautoscalers', namespaces: [NS] },
  { group: 'coordination.k8s.io', version: 'v1', resource: 'leases', namespaces: [NS] },
];
/** client-go's Accept when a controller asks for protobuf (kube-controller-manager, most built-in controllers). */
const PREFERS_PROTOBUF = 'application/vnd.kubernetes.protobuf, application/json';
let flotilla: FlotillaProcess;

beforeAll(async () => {
  const created = await memberRequest(east, 'POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
  if (created.status !== 201 && created.status !== 409) throw new Error(`namespace: ${created.status}`);
  for (const [path, body] of SEEDS) {
    const res = await memberRequest(east, 'POST', path.replace('NS', NS), body);
    if (res.status !== 201 && res.status !== 409) throw new Error(`POST ${path}: ${res.status} ${res.body.slice(0, 300)}`);
  }
  // The deployment's ReplicaSet and pods, and the pods' status, written by the member's controllers and kwok.
  for (let i = 0; i < 100; i++) {
    const pods = await memberJson<{ items: { status?: { phase?: string } }[] }>(east, 'GET', `/api/v1/namespaces/${NS}/pods`);
    if (pods.items.length >= 4 && pods.items.every((p) => p.status?.phase === 'Running')) break;
    await new Promise((r) => setTimeout(r, 300));
  }
  // managedFields kept, as the member serves them.
  flotilla = await startFlotillaProcess({ fleet, dir: join(fleet.dir, 'flotilla-protobuf-reads'), resources: CACHED, options: { dropManagedFields: false } });
}, 120_000);

afterAll(async () => {
  await flotilla?.stop();
  await memberRequest(east, 'DELETE', `/api/v1/namespaces/${NS}`);
});

interface Discovered { path: string; apiVersion: string; kind: string }

async function builtInResources(): Promise<Discovered[]> {
  const out: Discovered[] = [];
  const core = await memberJson<{ resources: { name: string; kind: string; verbs: string[] }[] }>(east, 'GET', '/api/v1');
  for (const r of core.resources) if (!r.name.includes('/') && r.verbs.includes('list')) out.push({ path: `/api/v1/${r.name}`, apiVersion: 'v1', kind: r.kind });
  const groups = await memberJson<{ groups: { name: string; versions: { groupVersion: string }[] }[] }>(east, 'GET', '/apis');
  for (const g of groups.groups) {
    for (const v of g.versions) {
      const list = await memberJson<{ resources: { name: string; kind: string; verbs: string[] }[] }>(east, 'GET', `/apis/${v.groupVersion}`);
      for (const r of list.resources) if (!r.name.includes('/') && r.verbs.includes('list')) out.push({ path: `/apis/${v.groupVersion}/${r.name}`, apiVersion: v.groupVersion, kind: r.kind });
    }
  }
  return out;
}

describe('the transcoder writes what the member writes', () => {
  it('every object of every built-in resource on a member, byte for byte', async () => {
    const resources = (await builtInResources()).filter((r) => protobufTypeOf(r.apiVersion, r.kind) !== undefined);
    expect(resources.length).toBeGreaterThan(30);
    let compared = 0;
    const kinds = new Set<string>();
    const mismatches: string[] = [];
    for (const r of resources) {
      const [json, proto] = await Promise.all([memberRequest(east, 'GET', r.path), memberRequest(east, 'GET', r.path, undefined, { accept: PROTOBUF })]);
      expect([json.status, proto.status], r.path).toEqual([200, 200]);
      const items = (JSON.parse(json.body) as { items: { metadata: { uid?: string; resourceVersion?: string } }[] }).items;
      const list = readProtobufList(proto.raw!);
      expect(list, r.path).toBeDefined();
      // Objects that changed between the two reads (leases, nodes' heartbeats) are left out.
      const byVersion = new Map(items.map((o) => [`${o.metadata.uid}/${o.metadata.resourceVersion}`, o]));
      const type = protobufTypeOf(r.apiVersion, r.kind)!;
      for (const bytes of list!.items) {
        const uid = fieldString(bytes, 1, 5);
        const rv = fieldString(bytes, 1, 6);
        const item = byVersion.get(`${uid}/${rv}`);
        if (!item) continue;
        compared++;
        kinds.add(r.kind);
        const ours = Buffer.from(encodeMessage(type, item));
        if (!ours.equals(Buffer.from(bytes))) mismatches.push(`${r.path} ${uid}: ${ours.length} bytes against ${bytes.length}; first difference at ${firstDifference(ours, Buffer.from(bytes))}`);
      }
    }
    expect(mismatches.slice(0, 20)).toEqual([]);
    expect(compared).toBeGreaterThan(100);
    expect(kinds.size).toBeGreaterThan(25);
    for (const kind of ['Pod', 'Deployment', 'ReplicaSet', 'StatefulSet', 'CronJob', 'Secret', 'Service', 'HorizontalPodAutoscaler', 'Lease']) expect(kinds).toContain(kind);
  }, 120_000);
});

function firstDifference(a: Buffer, b: Buffer): number {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  return i;
}

/** A string at a path of field numbers (a message's first occurrence of each). */
function fieldString(bytes: Uint8Array, ...path: number[]): string {
  let at = bytes;
  for (const want of path) {
    const r = new BinaryReader(at);
    let found: Uint8Array | undefined;
    while (r.pos < r.len && !found) {
      const [no, wire] = r.tag();
      if (no === want && wire === WireType.LengthDelimited) found = r.bytes();
      else r.skip(wire, no);
    }
    if (!found) return '';
    at = found;
  }
  return Buffer.from(at).toString('utf8');
}

const pathOf = (r: ResourceRuleSpec) => `${r.group ? `/apis/${r.group}` : '/api'}/${r.version}/namespaces/${NS}/${r.resource}`;

describe('flotilla answers a client preferring protobuf in protobuf, from its cache', () => {
  /** The member's answer and flotilla's for the member, asked until they agree (the cache follows by watch). */
  async function both(path: string): Promise<[Buffer, Buffer, string]> {
    let last: [Buffer, Buffer, string] | undefined;
    for (let i = 0; i < 30; i++) {
      const [direct, via] = await Promise.all([memberRequest(east, 'GET', path, undefined, { accept: PREFERS_PROTOBUF }), memberRequest(flotilla.endpoint, 'GET', `/clusters/${east.name}${path}`, undefined, { accept: PREFERS_PROTOBUF })]);
      expect([direct.status, via.status], `${path}: ${via.body.slice(0, 200)}`).toEqual([200, 200]);
      last = [direct.raw!, via.raw!, String(via.headers['content-type'])];
      if (JSON.stringify(withoutFlotillaFields(decodeProtobufAnswer(last[0]), CLUSTER_ANNOTATION)) === JSON.stringify(withoutFlotillaFields(decodeProtobufAnswer(last[1]), CLUSTER_ANNOTATION))) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    return last!;
  }

  it.each(CACHED.map((r) => [r.resource, pathOf(r)]))('a list of %s: the member’s, with the global RV and the cluster annotation', async (_, path) => {
    const [direct, via, contentType] = await both(path);
    expect(contentType).toBe('application/vnd.kubernetes.protobuf');
    const [d, v] = [decodeProtobufAnswer(direct), decodeProtobufAnswer(via)];
    expect(withoutFlotillaFields(v, CLUSTER_ANNOTATION)).toEqual(withoutFlotillaFields(d, CLUSTER_ANNOTATION));
    expect(listItems(v).length).toBeGreaterThan(0);
    for (const item of listItems(v)) {
      const meta = fieldAt(item, 1) as ProtoTree;
      expect(Object.keys(decodeGlobalRV(String(fieldAt(meta, 6))))).toEqual([east.name]);
      expect(meta.some(([no, e]) => no === 12 && Array.isArray(e) && fieldAt(e, 1) === CLUSTER_ANNOTATION && fieldAt(e, 2) === east.name)).toBe(true);
    }
  });

  it.each([['pods', 'p'], ['configmaps', 'cfg'], ['secrets', 's'], ['deployments', 'd'], ['leases', 'lease']])('a get of %s/%s: the member’s object', async (resource, name) => {
    const [direct, via, contentType] = await both(`${pathOf(CACHED.find((r) => r.resource === resource)!)}/${name}`);
    expect(contentType).toBe('application/vnd.kubernetes.protobuf');
    expect(withoutFlotillaFields(decodeProtobufAnswer(via), CLUSTER_ANNOTATION)).toEqual(withoutFlotillaFields(decodeProtobufAnswer(direct), CLUSTER_ANNOTATION));
  });

  it('a missing object: the member’s 404 Status, in protobuf', async () => {
    const path = `${pathOf(CACHED[0]!)}/nope`;
    const [direct, via] = await Promise.all([memberRequest(east, 'GET', path, undefined, { accept: PREFERS_PROTOBUF }), memberRequest(flotilla.endpoint, 'GET', `/clusters/${east.name}${path}`, undefined, { accept: PREFERS_PROTOBUF })]);
    expect([direct.status, via.status, via.headers['content-type']]).toEqual([404, 404, direct.headers['content-type']]);
    expect(String(fieldAt(decodeProtobufAnswer(via.raw!), 1, 2))).toBe('Status');
  });

  it('a custom resource’s list stays JSON, as the member serves it', async () => {
    const res = await memberRequest(flotilla.endpoint, 'GET', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', undefined, { accept: PREFERS_PROTOBUF });
    // Not cached here: read live; the apiextensions kinds are not in client-go's scheme, so JSON.
    expect(res.status).toBe(200);
    expect(String(res.headers['content-type'])).toMatch(/^application\/json/);
  });

  it('a JSON client is answered in JSON', async () => {
    const res = await memberRequest(flotilla.endpoint, 'GET', `/clusters/${east.name}${pathOf(CACHED[2]!)}`, undefined, { accept: 'application/json, application/vnd.kubernetes.protobuf' });
    expect(String(res.headers['content-type'])).toMatch(/^application\/json/);
    expect((JSON.parse(res.body) as { kind: string }).kind).toBe('PodList');
  });

  it('a watch: the member’s events in protobuf, a bookmark of the kind, each object with the global RV and the annotation', async () => {
    const name = 'protobuf-watch';
    const cm = pathOf(CACHED[0]!);
    const rvOf = (tree: ProtoTree): string => String(fieldAt(tree, 2, 1, 6));
    const listRV = async (server: typeof east | typeof flotilla.endpoint, path: string) => (JSON.parse((await memberRequest(server, 'GET', path)).body) as { metadata: { resourceVersion: string } }).metadata.resourceVersion;
    const query = `watch=true&timeoutSeconds=6&allowWatchBookmarks=true&fieldSelector=${encodeURIComponent(`metadata.name=${name}`)}`;
    const [directRV, viaRV] = await Promise.all([listRV(east, cm), listRV(flotilla.endpoint, `/clusters/${east.name}${cm}`)]);
    const streams = Promise.all([
      memberRequest(east, 'GET', `${cm}?${query}&resourceVersion=${directRV}`, undefined, { accept: PREFERS_PROTOBUF, timeoutMs: 20_000 }),
      memberRequest(flotilla.endpoint, 'GET', `/clusters/${east.name}${cm}?${query}&resourceVersion=${encodeURIComponent(viaRV)}`, undefined, { accept: PREFERS_PROTOBUF, timeoutMs: 20_000 }),
    ]);
    await new Promise((r) => setTimeout(r, 1000));
    for (const [method, path, body, contentType] of [
      ['POST', cm, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data: { k: 'v' } }, undefined],
      ['PATCH', `${cm}/${name}`, { data: { k: 'w' }, binaryData: { b: 'AQI=' } }, 'application/merge-patch+json'],
      ['DELETE', `${cm}/${name}`, undefined, undefined],
    ] as const) {
      const res = await memberRequest(east, method, path, body, contentType ? { contentType } : {});
      expect(res.status, `${method} ${path}`).toBeLessThan(300);
    }
    const [direct, via] = await streams;
    expect([direct.status, via.status, via.headers['content-type']]).toEqual([200, 200, direct.headers['content-type']]);
    const changes = (events: { type: string; object: ProtoTree }[]) => events.filter((e) => e.type !== 'BOOKMARK');
    const [d, v] = [changes(decodeWatchStream(direct.raw!)), changes(decodeWatchStream(via.raw!))];
    expect(d.map((e) => e.type)).toEqual(['ADDED', 'MODIFIED', 'DELETED']);
    expect(v.map((e) => e.type)).toEqual(d.map((e) => e.type));
    v.forEach((e, i) => {
      expect(withoutFlotillaFields(e.object, CLUSTER_ANNOTATION)).toEqual(withoutFlotillaFields(d[i]!.object, CLUSTER_ANNOTATION));
      expect(decodeGlobalRV(rvOf(e.object))[east.name]).toBe(rvOf(d[i]!.object));
    });
    // Bookmarks (every minute by default: maybe none in 6 s) are ConfigMaps too, as the member's.
    for (const b of decodeWatchStream(via.raw!).filter((e) => e.type === 'BOOKMARK')) expect(String(fieldAt(b.object, 1, 2))).toBe('ConfigMap');
  });
});
