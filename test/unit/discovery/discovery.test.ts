import { describe, expect, it } from 'vitest';
import { aggregatedDiscovery, group, groupList, legacyVersions, resourceList } from '../../../src/discovery/documents.js';
import { fleetDocuments } from '../../../src/discovery/union.js';
import type { CachedResource } from '../../../src/cacher/cache-roles.js';
import type { DiscoveryDocuments } from '../../../src/resources/discovery.js';

const pods = (verbs: string[], extra: object = {}) => ({
  resource: 'pods', responseKind: { group: '', version: 'v1', kind: 'Pod' }, scope: 'Namespaced' as const, singularResource: 'pod', verbs, shortNames: ['po'], categories: ['all'],
  subresources: [{ subresource: 'log', responseKind: { group: '', version: 'v1', kind: 'Pod' }, verbs: ['get'] }],
  ...extra,
});
const east: DiscoveryDocuments = {
  legacy: [{ metadata: {}, versions: [{ version: 'v1', resources: [pods(['get', 'list', 'watch', 'delete'])], freshness: 'Current' }] }],
  groups: [{
    metadata: { name: 'apps' },
    versions: [{ version: 'v1', resources: [{
      resource: 'deployments', responseKind: { group: 'apps', version: 'v1', kind: 'Deployment' }, scope: 'Namespaced', singularResource: 'deployment', verbs: ['get', 'create'],
      subresources: [{ subresource: 'scale', responseKind: { group: 'autoscaling', version: 'v1', kind: 'Scale' }, verbs: ['get', 'update'] }],
    }], freshness: 'Current' }],
  }],
};
const west: DiscoveryDocuments = {
  legacy: [{ metadata: {}, versions: [{ version: 'v1', resources: [pods(['get', 'create'], { scope: 'Cluster', shortNames: ['p'], subresources: [{ subresource: 'exec', verbs: ['create'] }, { subresource: 'log', verbs: ['list'] }] })], freshness: 'Current' }] }],
  groups: [
    { metadata: { name: 'example.com' }, versions: [{ version: 'v1', resources: [{ resource: 'widgets', responseKind: { group: 'example.com', version: 'v1', kind: 'Widget' }, scope: 'Cluster', singularResource: 'widget', verbs: ['get'] }] }] },
    { metadata: { name: 'apps' }, versions: [{ version: 'v2', resources: [] }, { version: 'v1', resources: [] }] },
  ],
};

describe('fleet discovery', () => {
  const docs = fleetDocuments([east, west], []);

  it('is the union of the members\' groups, versions, resources, verbs and subresources; the first member\'s kind and scope', () => {
    const v1 = docs.legacy[0]!.versions[0]!;
    expect(v1.resources).toHaveLength(1);
    expect(v1.resources[0]).toMatchObject({ scope: 'Namespaced', verbs: ['get', 'list', 'watch', 'delete', 'create'], shortNames: ['po', 'p'] });
    expect(v1.resources[0]!.subresources).toEqual([
      { subresource: 'log', responseKind: { group: '', version: 'v1', kind: 'Pod' }, verbs: ['get', 'list'] },
      { subresource: 'exec', verbs: ['create'] },
    ]);
    expect(docs.groups.map((g) => g.metadata.name)).toEqual(['apps', 'example.com']);
    expect(docs.groups[0]!.versions.map((v) => v.version)).toEqual(['v1', 'v2']);
    expect(aggregatedDiscovery(docs, false)).toMatchObject({ kind: 'APIGroupDiscoveryList', apiVersion: 'apidiscovery.k8s.io/v2', items: docs.groups });
  });

  it('derives the legacy documents, subresources listed as <resource>/<sub>', () => {
    expect(legacyVersions(docs, 'h:1')).toMatchObject({ kind: 'APIVersions', versions: ['v1'] });
    expect(groupList(docs)).toMatchObject({ groups: [{ name: 'apps', preferredVersion: { groupVersion: 'apps/v1' } }, { name: 'example.com' }] });
    expect(group(docs, 'nope')).toBeUndefined();
    expect(resourceList(docs, '', 'v2')).toBeUndefined();
    expect(resourceList(docs, '', 'v1')).toEqual({
      kind: 'APIResourceList', apiVersion: 'v1', groupVersion: 'v1',
      resources: [
        { name: 'pods', singularName: 'pod', namespaced: true, kind: 'Pod', verbs: ['get', 'list', 'watch', 'delete', 'create'], shortNames: ['po', 'p'], categories: ['all'] },
        { name: 'pods/log', singularName: '', namespaced: true, kind: 'Pod', verbs: ['get', 'list'] },
        { name: 'pods/exec', singularName: '', namespaced: true, kind: '', verbs: ['create'] },
      ],
    });
    expect((resourceList(docs, 'apps', 'v1') as { resources: object[] }).resources[1]).toEqual({ name: 'deployments/scale', singularName: '', namespaced: true, group: 'autoscaling', version: 'v1', kind: 'Scale', verbs: ['get', 'update'] });
  });

  it('lists the cached resources with the verbs of the cache when no member has answered', () => {
    const cached = { info: { group: '', version: 'v1', resource: 'nodes', kind: 'Node', namespaced: false, singularName: 'node', shortNames: ['no'], categories: [], memberVerbs: ['get', 'list', 'watch', 'delete'] } } as unknown as CachedResource;
    const alone = fleetDocuments([], [cached]);
    expect(resourceList(alone, '', 'v1')).toMatchObject({ resources: [{ name: 'nodes', namespaced: false, verbs: ['get', 'list', 'watch'], shortNames: ['no'] }] });
    expect(fleetDocuments([east], [cached]).legacy[0]!.versions[0]!.resources.map((r) => r.resource)).toEqual(['pods', 'nodes']);
  });
});

describe('fleet discovery and live reads', () => {
  it('leaves out the read verbs of resources flotilla neither caches nor reads live', () => {
    const cached = { info: { group: '', version: 'v1', resource: 'pods', kind: 'Pod', namespaced: true, singularName: 'pod', shortNames: [], categories: [], memberVerbs: ['get', 'list', 'watch'] } } as unknown as CachedResource;
    const docs = fleetDocuments([east], [cached], (group, resource) => !(group === 'apps' && resource === 'deployments'));
    expect(docs.legacy[0]!.versions[0]!.resources[0]!.verbs).toEqual(['get', 'list', 'watch', 'delete']);
    expect(docs.groups[0]!.versions[0]!.resources[0]!.verbs).toEqual(['create']);
    const none = fleetDocuments([east], [], () => false);
    expect(none.legacy[0]!.versions[0]!.resources[0]!.verbs).toEqual(['delete']);
  });
});
