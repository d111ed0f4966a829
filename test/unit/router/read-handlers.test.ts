import { describe, expect, it } from 'vitest';
import { defaultLiveReads } from '../../../src/registry/defaults.js';
import Fastify, { type FastifyReply, type FastifyRequest } from 'fastify';
import type { ResourceTarget } from '../../../src/forward/owner.js';
import type { LiveReadsConfig } from '../../../src/registry/fleet-config.js';
import { readHandlers, readsPlugin, type ReadsOptions } from '../../../src/router/plugins/reads.js';
import { errorsPlugin } from '../../../src/router/plugins/errors.js';
import type { CachedResource, FleetMembers, ResourceCatalog } from '../../../src/cacher/cache-roles.js';
import { chooseReadHandler, type ReadContext } from '../../../src/router/reads/read-handler.js';

const PROTOBUF = 'application/vnd.kubernetes.protobuf';

// Choosing a handler reads the path, the catalog's entry and the headers only: the parts of
// flotilla a handler serves with are never touched here.
function handlersWith(live?: LiveReadsConfig) {
  return readHandlers({ ...(live ? { live } : {}) } as unknown as ReadsOptions);
}

const LIVE: LiveReadsConfig = { ...defaultLiveReads(), enabled: true, exclude: ['secrets'] };

/** A cached resource: pods unless `info` says otherwise (what handlers read of it: its name, scope, clusters, namespaces). */
function pods(over: { info?: { group: string; resource: string; kind: string; namespaced: boolean }; clusters?: string[]; namespaces?: string[] } = {}): CachedResource {
  return { info: { group: '', resource: 'pods', kind: 'Pod', namespaced: true }, clusters: ['a', 'b'], ...over } as CachedResource;
}

function readOf(target: Partial<ResourceTarget>, opts: { resource?: CachedResource; accept?: string; query?: Record<string, string> } = {}): ReadContext {
  const req = { query: opts.query ?? {}, headers: opts.accept ? { accept: opts.accept } : {} } as unknown as FastifyRequest;
  return {
    req,
    reply: {} as FastifyReply,
    target: { type: 'resource', group: '', version: 'v1', resource: 'pods', ...target } as ResourceTarget,
    ...(opts.resource ? { resource: opts.resource } : {}),
  };
}

/** null: live reads not configured. */
function chosen(read: ReadContext, live: LiveReadsConfig | null = LIVE): string | undefined {
  return chooseReadHandler(handlersWith(live ?? undefined), read)?.name;
}

describe('read handlers: which one serves a read, in their order', () => {
  it('are asked live, subresource, protobuf-only, cached', () => {
    expect(handlersWith(LIVE).map((h) => h.name)).toEqual(['live', 'subresource', 'protobuf-only', 'cached']);
    // Without live reads, nothing is asked of the members for a read.
    expect(handlersWith().map((h) => h.name)).toEqual(['subresource', 'cached']);
  });

  it('an uncached resource is read live, its subresources too; without live reads none serves (404)', () => {
    expect(chosen(readOf({ resource: 'configmaps' }))).toBe('live');
    expect(chosen(readOf({ resource: 'configmaps', name: 'x', subresource: 'status' }))).toBe('live');
    expect(chosen(readOf({ resource: 'configmaps' }), null)).toBeUndefined();
  });

  it('a cached resource is served from the cache, a subresource of it by its member', () => {
    expect(chosen(readOf({ namespace: 'ns' }, { resource: pods() }))).toBe('cached');
    expect(chosen(readOf({ namespace: 'ns', name: 'p' }, { resource: pods() }))).toBe('cached');
    expect(chosen(readOf({ namespace: 'ns', name: 'p', subresource: 'status' }, { resource: pods() }))).toBe('subresource');
    expect(chosen(readOf({ namespace: 'ns', name: 'p', subresource: 'status' }, { resource: pods() }), null)).toBe('subresource');
  });

  it("a partly cached resource's read outside the cache goes live, before a subresource or the cache is asked", () => {
    const some = pods({ clusters: ['a'], namespaces: ['kept'] });
    expect(chosen(readOf({ namespace: 'other' }, { resource: some }))).toBe('live');
    expect(chosen(readOf({ cluster: 'b' }, { resource: some }))).toBe('live');
    expect(chosen(readOf({ namespace: 'other', name: 'p', subresource: 'status' }, { resource: some }))).toBe('live');
    expect(chosen(readOf({ namespace: 'kept' }, { resource: some }))).toBe('cached');
    expect(chosen(readOf({ cluster: 'a', namespace: 'kept' }, { resource: some }))).toBe('cached');
    // Where live reads do not serve the resource, the cache answers for what it holds.
    const secrets = pods({ info: { group: '', resource: 'secrets', kind: 'Secret', namespaced: true }, namespaces: ['kept'] });
    expect(chosen(readOf({ resource: 'secrets', namespace: 'other' }, { resource: secrets }))).toBe('cached');
    expect(chosen(readOf({ namespace: 'other' }, { resource: some }), null)).toBe('cached');
  });

  it('a cluster-scoped resource under a namespace names nothing: no handler serves it, outside the cache aside', () => {
    const nodes = pods({ info: { group: '', resource: 'nodes', kind: 'Node', namespaced: false } });
    expect(chosen(readOf({ resource: 'nodes', namespace: 'ns' }, { resource: nodes }))).toBeUndefined();
    expect(chosen(readOf({ resource: 'nodes', namespace: 'ns', name: 'n', subresource: 'status' }, { resource: nodes }))).toBeUndefined();
    expect(chosen(readOf({ resource: 'nodes', cluster: 'c', namespace: 'ns' }, { resource: nodes }))).toBe('live');
  });

  it('protobuf alone goes live only where live reads serve the resource, after a subresource', () => {
    expect(chosen(readOf({ namespace: 'ns' }, { resource: pods(), accept: PROTOBUF }))).toBe('protobuf-only');
    expect(chosen(readOf({ namespace: 'ns', name: 'p' }, { resource: pods(), accept: PROTOBUF }))).toBe('protobuf-only');
    expect(chosen(readOf({ namespace: 'ns' }, { resource: pods(), accept: PROTOBUF, query: { watch: 'true' } }))).toBe('protobuf-only');
    expect(chosen(readOf({ namespace: 'ns', name: 'p', subresource: 'status' }, { resource: pods(), accept: PROTOBUF }))).toBe('subresource');
    // JSON also taken: the cache answers.
    expect(chosen(readOf({ namespace: 'ns' }, { resource: pods(), accept: `${PROTOBUF}, application/json` }))).toBe('cached');
    const secrets = pods({ info: { group: '', resource: 'secrets', kind: 'Secret', namespaced: true } });
    expect(chosen(readOf({ resource: 'secrets', namespace: 'ns' }, { resource: secrets, accept: PROTOBUF }))).toBe('cached');
    expect(chosen(readOf({ namespace: 'ns' }, { resource: pods(), accept: PROTOBUF }), null)).toBe('cached');
    expect(chosen(readOf({ namespace: 'ns' }, { resource: pods(), accept: PROTOBUF }), { ...defaultLiveReads(), enabled: false, exclude: [] })).toBe('cached');
  });
});

describe('the reads plugin', () => {
  it('answers 404 Status where no handler serves: not a resource, a cluster-scoped one under a namespace, no live reads', async () => {
    const fleet = { clusterNames: () => ['a'] } as unknown as FleetMembers;
    const nodes = pods({ info: { group: '', resource: 'nodes', kind: 'Node', namespaced: false } });
    const catalog = { resource: (key: string) => (key === 'nodes' ? nodes : undefined) } as unknown as ResourceCatalog;
    const app = Fastify();
    await app.register(errorsPlugin, { fleet });
    await app.register(readsPlugin, { fleet, catalog } as unknown as ReadsOptions);
    for (const url of ['/api/v1', '/api/v1/namespaces/ns/nodes', '/api/v1/configmaps', '/clusters/a/api/v1/namespaces/ns/nodes/n']) {
      const res = await app.inject({ url });
      expect(res.statusCode, url).toBe(404);
      expect(res.json(), url).toMatchObject({ kind: 'Status', code: 404, reason: 'NotFound' });
    }
    await app.close();
  });
});
