import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Fastify, { type FastifyInstance } from 'fastify';
import { errorsPlugin } from '../../../src/router/plugins/errors.js';
import { writesPlugin } from '../../../src/router/plugins/writes.js';
import { WriteTracker } from '../../../src/forward/read-your-writes.js';
import type { ForwardDeps } from '../../../src/forward/writes.js';
import type { MemberClient, MemberRequest } from '../../../src/members/member-client.js';
import type { CachedResource } from '../../../src/cacher/cache-roles.js';
import { Store, type Change } from '../../../src/store/store.js';
import { decodeObject } from '../../../src/ingest/decode.js';
import { CLUSTER_ANNOTATION } from '../../../src/api/fleet-object/index.js';
import { encodeObjects, viewObjects } from '../../../src/ingest/batch.js';
import { decodeGlobalRV, encodeGlobalRV } from '../../../src/api/global-rv.js';

/**
 * Writes forwarded to the member that owns the object (src/forward/writes.ts), through the writes
 * and errors plugins of a fastify instance of their own (inject: no socket). The store is real
 * (LMDB in a scratch directory) and holds what the cache would; each member is an in-process
 * `fetch` that records what it was sent and gives a fixed answer.
 */
const info = (resource: string, kind: string, namespaced: boolean) => ({ group: '', version: 'v1', resource, kind, namespaced, singularName: kind.toLowerCase(), shortNames: [], categories: [], memberVerbs: [] });
const CLUSTERS = ['east', 'west', 'north'];
const namespaces: CachedResource = { info: info('namespaces', 'Namespace', false), clusters: CLUSTERS };
const configmaps: CachedResource = { info: info('configmaps', 'ConfigMap', true), clusters: CLUSTERS };

type Answer = { status: number; body: unknown };
interface Sent extends MemberRequest {
  cluster: string;
}

function stored(cluster: string, kind: string, namespace: string, name: string, rv: string): Change {
  const o = viewObjects(encodeObjects([decodeObject({ metadata: { ...(namespace ? { namespace } : {}), name, uid: `${cluster}-${name}`, resourceVersion: rv } }, { cluster, apiVersion: 'v1', kind, dropManagedFields: true })]))[0]!;
  return { type: 'ADDED', rv, ...o };
}

const json = { 'content-type': 'application/json' };
const configMap = (name: string, rv: string, extra: Record<string, unknown> = {}) => ({ kind: 'ConfigMap', apiVersion: 'v1', metadata: { name, namespace: 'shop', resourceVersion: rv, ...extra } });
const status = (code: number, message: string) => ({ kind: 'Status', apiVersion: 'v1', status: 'Failure', message, code });

let dir: string;
let store: Store;
let app: FastifyInstance;
let sent: Sent[];
let writes: WriteTracker;
/** What each member answers a request (its cluster, the request). */
let answer: (cluster: string, r: MemberRequest) => Answer;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'flotilla-writes-'));
  store = Store.open(dir);
  // Namespace shop is on east only, both on east and west; configmap cm and old-cm on east.
  await store.commit({ cluster: 'east', resource: 'v1/namespaces' }, [stored('east', 'Namespace', '', 'both', '1'), stored('east', 'Namespace', '', 'shop', '2')], { rv: '2' }, { log: false });
  await store.commit({ cluster: 'west', resource: 'v1/namespaces' }, [stored('west', 'Namespace', '', 'both', '1')], { rv: '1' }, { log: false });
  await store.commit({ cluster: 'east', resource: 'v1/configmaps' }, [stored('east', 'ConfigMap', 'shop', 'cm', '3'), stored('east', 'ConfigMap', 'shop', 'old-cm', '4')], { rv: '4' }, { log: false });
  sent = [];
  writes = new WriteTracker();
  answer = () => ({ status: 500, body: status(500, 'no answer set') });
  const member = (cluster: string) =>
    ({
      cluster,
      fetch: async (r: MemberRequest) => {
        sent.push({ ...r, cluster });
        const a = answer(cluster, r);
        return { status: a.status, headers: json, body: Buffer.from(JSON.stringify(a.body)) };
      },
    }) as unknown as MemberClient;
  const members = new Map(CLUSTERS.map((c) => [c, member(c)]));
  const fleet = { clusterNames: () => [...CLUSTERS], member: (name: string) => members.get(name), clusterLabels: () => ({}) };
  const cached = new Map([['v1/namespaces', namespaces], ['v1/configmaps', configmaps]]);
  const forward: ForwardDeps = {
    fleet,
    catalog: { resource: (key) => cached.get(key), cachedResources: () => [...cached.values()] },
    store,
    writes,
    callerHeaders: async () => ({ 'Impersonate-User': 'alice', 'Impersonate-Group': ['team-a'] }),
    callerKey: () => 'alice',
  };
  app = Fastify();
  await app.register(errorsPlugin, { fleet });
  await app.register(writesPlugin, { fleet, forward });
  await app.ready();
});

afterEach(async () => {
  await app.close();
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

const send = (method: 'POST' | 'PUT' | 'PATCH' | 'DELETE', url: string, body?: unknown, headers: Record<string, string> = json) =>
  app.inject({ method, url, headers: { ...headers, 'user-agent': 'kubectl/v1.34' }, ...(body !== undefined ? { payload: typeof body === 'string' ? body : JSON.stringify(body) } : {}) });

describe('a create', () => {
  it('goes to the addressed cluster, else the one its annotation names, else the one member holding its namespace', async () => {
    answer = (cluster, r) => ({ status: 201, body: { ...JSON.parse(String(r.body)), metadata: { ...configMap('made', '7').metadata, uid: cluster } } });
    const created: string[] = [];
    for (const [url, annotation] of [
      ['/clusters/west/api/v1/namespaces/shop/configmaps', undefined],
      ['/api/v1/namespaces/shop/configmaps', 'north'],
      ['/api/v1/namespaces/shop/configmaps', undefined],
    ] as const) {
      const res = await send('POST', url, { kind: 'ConfigMap', apiVersion: 'v1', metadata: { name: 'made', ...(annotation ? { annotations: { [CLUSTER_ANNOTATION]: annotation } } : {}) } });
      expect(res.statusCode, url).toBe(201);
      const body = res.json<{ metadata: { resourceVersion: string; annotations: Record<string, string> } }>();
      created.push(body.metadata.annotations[CLUSTER_ANNOTATION]!);
      expect(decodeGlobalRV(body.metadata.resourceVersion)).toEqual({ [created.at(-1)!]: '7' });
    }
    expect(created).toEqual(['west', 'north', 'east']);
    expect(sent.map((s) => `${s.cluster} ${s.method} ${s.path}`)).toEqual([
      'west POST /api/v1/namespaces/shop/configmaps',
      'north POST /api/v1/namespaces/shop/configmaps',
      'east POST /api/v1/namespaces/shop/configmaps',
    ]);
    // As the caller, the client named.
    expect(sent[0]!.headers).toMatchObject({ 'Impersonate-User': 'alice', 'Impersonate-Group': ['team-a'], 'user-agent': 'kubectl/v1.34 via flotilla' });
  });

  it('that no member or several could take is a 400 that says how to choose, or a 404 for a namespace nobody has, and reaches no member', async () => {
    const refused = [
      ['/api/v1/namespaces/both/configmaps', undefined, 400, 'namespace "both" exists in clusters east, west'],
      ['/api/v1/namespaces/nowhere/configmaps', undefined, 404, 'namespaces "nowhere" not found in any cluster of the fleet'],
      ['/api/v1/namespaces', undefined, 400, 'flotilla cannot tell which cluster should get this new namespaces'],
      ['/api/v1/namespaces/shop/configmaps', 'south', 400, 'annotation names "south", which is not a member of this fleet'],
    ] as const;
    for (const [url, annotation, code, message] of refused) {
      const res = await send('POST', url, { kind: 'ConfigMap', apiVersion: 'v1', metadata: { name: 'made', ...(annotation ? { annotations: { [CLUSTER_ANNOTATION]: annotation } } : {}) } });
      expect(res.statusCode, url).toBe(code);
      expect(res.json<{ kind: string; message: string }>(), url).toMatchObject({ kind: 'Status', message: expect.stringContaining(message) });
    }
    expect(sent).toEqual([]);
  });

  it('that names a resourceVersion is a 400, in JSON or YAML, before any member is asked; an empty one goes', async () => {
    answer = () => ({ status: 201, body: configMap('made', '7') });
    for (const [body, type] of [
      [JSON.stringify({ kind: 'ConfigMap', metadata: { name: 'made', resourceVersion: '5' } }), 'application/json'],
      ['kind: ConfigMap\nmetadata:\n  name: made\n  resourceVersion: "5"\n', 'application/yaml'],
    ] as const) {
      const res = await send('POST', '/api/v1/namespaces/shop/configmaps', body, { 'content-type': type });
      expect(res.statusCode, type).toBe(400);
      expect(res.json<{ message: string }>().message).toBe('metadata.resourceVersion: must not be set on an object to be created');
    }
    expect(sent).toEqual([]);
    const res = await send('POST', '/api/v1/namespaces/shop/configmaps', { kind: 'ConfigMap', metadata: { name: 'made', resourceVersion: '' } });
    expect(res.statusCode).toBe(201);
    expect(sent.map((s) => s.cluster)).toEqual(['east']);
  });
});

describe('an update or delete of a named object', () => {
  it('goes to the member whose cached copy it is, with that member’s RV, and the caller’s next reads wait for its answer', async () => {
    answer = () => ({ status: 200, body: configMap('cm', '8') });
    const res = await send('PUT', '/api/v1/namespaces/shop/configmaps/cm', configMap('cm', encodeGlobalRV({ east: '3', west: '1' })));
    expect(res.statusCode).toBe(200);
    expect(sent.map((s) => `${s.cluster} ${s.method} ${s.path}`)).toEqual(['east PUT /api/v1/namespaces/shop/configmaps/cm']);
    expect(JSON.parse(String(sent[0]!.body))).toMatchObject({ metadata: { resourceVersion: '3' } });
    const body = res.json<{ metadata: { resourceVersion: string; annotations: Record<string, string> } }>();
    expect(decodeGlobalRV(body.metadata.resourceVersion)).toEqual({ east: '8' });
    expect(body.metadata.annotations[CLUSTER_ANNOTATION]).toBe('east');
    expect(writes.pending('alice', 'v1/configmaps')).toEqual({ east: '8' });
    expect(writes.deleted('alice', 'v1/configmaps')).toBeUndefined();
  });

  it('that the member says is gone is waited out by the caller’s reads; one still terminating is a write like any other', async () => {
    answer = (_c, r) => (r.path.endsWith('/old-cm') ? { status: 200, body: configMap('old-cm', '9') } : { status: 200, body: configMap('cm', '10', { deletionTimestamp: '2026-01-01T00:00:00Z', finalizers: ['x'] }) });
    expect((await send('DELETE', '/api/v1/namespaces/shop/configmaps/old-cm')).statusCode).toBe(200);
    expect((await send('DELETE', '/api/v1/namespaces/shop/configmaps/cm')).statusCode).toBe(200);
    expect(sent.map((s) => `${s.cluster} ${s.method} ${s.path}`)).toEqual(['east DELETE /api/v1/namespaces/shop/configmaps/old-cm', 'east DELETE /api/v1/namespaces/shop/configmaps/cm']);
    expect(writes.deleted('alice', 'v1/configmaps')).toEqual([{ cluster: 'east', namespace: 'shop', name: 'old-cm' }]);
    expect(writes.pending('alice', 'v1/configmaps')).toEqual({ east: '10' });
  });
});

describe('a deletecollection', () => {
  const list = (rv: string, ...items: unknown[]) => ({ kind: 'ConfigMapList', apiVersion: 'v1', metadata: { resourceVersion: rv }, items });

  it('goes to every member with its own RV, merges their lists, names a failed member, and has the caller’s reads wait out what each deleted', async () => {
    answer = (cluster) =>
      cluster === 'east' ? { status: 200, body: list('20', configMap('a', '18'), configMap('b', '19', { deletionTimestamp: '2026-01-01T00:00:00Z' })) }
      : cluster === 'west' ? { status: 200, body: list('30', configMap('c', '29')) }
      : { status: 500, body: status(500, 'etcdserver: request timed out') };
    const rv = encodeGlobalRV({ east: '15', west: '25', north: '35' });
    const res = await send('DELETE', `/api/v1/namespaces/shop/configmaps?labelSelector=app%3Dweb&resourceVersion=${rv}`, undefined, { accept: 'application/json' });
    expect(res.statusCode).toBe(200);
    expect(sent.map((s) => `${s.cluster} ${s.method} ${s.path}`).sort()).toEqual([
      'east DELETE /api/v1/namespaces/shop/configmaps?labelSelector=app%3Dweb&resourceVersion=15',
      'north DELETE /api/v1/namespaces/shop/configmaps?labelSelector=app%3Dweb&resourceVersion=35',
      'west DELETE /api/v1/namespaces/shop/configmaps?labelSelector=app%3Dweb&resourceVersion=25',
    ]);
    const body = res.json<{ kind: string; metadata: { resourceVersion: string }; items: { metadata: { name: string; annotations: Record<string, string> } }[] }>();
    expect(body.kind).toBe('ConfigMapList');
    expect(decodeGlobalRV(body.metadata.resourceVersion)).toEqual({ east: '20', west: '30' });
    expect(body.items.map((i) => `${i.metadata.annotations[CLUSTER_ANNOTATION]}/${i.metadata.name}`)).toEqual(['east/a', 'east/b', 'west/c']);
    expect([res.headers['warning']].flat()).toEqual(['299 - "flotilla: cluster north answered 500: etcdserver: request timed out"']);
    expect(writes.deleted('alice', 'v1/configmaps')).toEqual([{ cluster: 'east', namespace: 'shop', name: 'a' }, { cluster: 'west', namespace: 'shop', name: 'c' }]);
  });

  it('that every member refuses is answered with the first member’s refusal', async () => {
    answer = (cluster) => ({ status: 403, body: status(403, `configmaps is forbidden on ${cluster}`) });
    const res = await send('DELETE', '/api/v1/namespaces/shop/configmaps', undefined, { accept: 'application/json' });
    expect(res.statusCode).toBe(403);
    expect(res.json<{ message: string }>().message).toBe('configmaps is forbidden on east');
    expect(sent.map((s) => s.cluster).sort()).toEqual(['east', 'north', 'west']);
    expect(writes.deleted('alice', 'v1/configmaps')).toBeUndefined();
  });

  it('asks every member as the caller; one that cannot be reached is a 503 naming it', async () => {
    answer = (cluster) => {
      if (cluster === 'north') throw new Error('connect ECONNREFUSED 10.0.0.3:6443');
      return { status: 200, body: list('1') };
    };
    const res = await send('DELETE', '/api/v1/namespaces/shop/configmaps', undefined, { accept: 'application/json' });
    expect(res.statusCode).toBe(503);
    expect(res.json<{ message: string }>().message).toBe('cluster north did not answer DELETE /api/v1/namespaces/shop/configmaps: connect ECONNREFUSED 10.0.0.3:6443');
    expect(sent.map((s) => s.cluster).sort()).toEqual(['east', 'north', 'west']);
    for (const s of sent) expect(s.headers, s.cluster).toMatchObject({ 'Impersonate-User': 'alice', 'Impersonate-Group': ['team-a'], 'user-agent': 'kubectl/v1.34 via flotilla' });
  });
});

describe('CBOR, which flotilla does not serve', () => {
  it('a write sending it is 415 and one taking only it back 406, as the apiserver answers, and neither reaches a member (one serving CBOR would answer in it)', async () => {
    answer = () => ({ status: 200, body: configMap('cm', '9') });
    const cbor = '\u00a1';
    for (const [method, url, headers, code] of [
      ['POST', '/api/v1/namespaces/shop/configmaps', { 'content-type': 'application/cbor' }, 415],
      ['PUT', '/api/v1/namespaces/shop/configmaps/cm', { 'content-type': 'application/cbor' }, 415],
      ['PATCH', '/api/v1/namespaces/shop/configmaps/cm', { 'content-type': 'application/apply-patch+cbor' }, 415],
      ['DELETE', '/api/v1/namespaces/shop/configmaps/cm', { 'content-type': 'application/cbor' }, 415],
      ['POST', '/api/v1/namespaces/shop/configmaps', { 'content-type': 'application/json', accept: 'application/cbor' }, 406],
      ['DELETE', '/clusters/east/api/v1/namespaces/shop/configmaps', { 'content-type': 'application/json', accept: 'application/cbor-seq' }, 406],
    ] as const) {
      const res = await send(method, url, headers['content-type'] === 'application/json' ? JSON.stringify(configMap('cm', '')) : cbor, headers);
      expect(res.statusCode, `${method} ${url}`).toBe(code);
      expect(res.json(), `${method} ${url}`).toMatchObject({ kind: 'Status', reason: code === 415 ? 'UnsupportedMediaType' : 'NotAcceptable', code });
    }
    expect(sent).toEqual([]);
  });
});
