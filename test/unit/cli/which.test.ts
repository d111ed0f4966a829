import { describe, expect, it } from 'vitest';
import { holders, resolveResource } from '../../../src/cli/which.js';
import type { DiscoveryDocuments, DiscoveryResource } from '../../../src/resources/discovery.js';

const resource = (r: Partial<DiscoveryResource> & Pick<DiscoveryResource, 'resource' | 'singularResource'>): DiscoveryResource => ({ scope: 'Namespaced', verbs: ['get', 'list'], ...r });

const DOCS: DiscoveryDocuments = {
  legacy: [{ metadata: {}, versions: [{ version: 'v1', resources: [resource({ resource: 'pods', singularResource: 'pod', shortNames: ['po'] }), resource({ resource: 'nodes', singularResource: 'node', shortNames: ['no'], scope: 'Cluster' })] }] }],
  groups: [
    { metadata: { name: 'apps' }, versions: [{ version: 'v1', resources: [resource({ resource: 'deployments', singularResource: 'deployment', shortNames: ['deploy'] })] }] },
    { metadata: { name: 'example.com' }, versions: [{ version: 'v2', resources: [resource({ resource: 'pods', singularResource: 'pod' })] }, { version: 'v1', resources: [] }] },
  ],
};

describe('which: the resource named as kubectl names it', () => {
  it.each([
    ['pods', { group: '', version: 'v1', resource: 'pods', namespaced: true }],
    ['pod', { group: '', version: 'v1', resource: 'pods', namespaced: true }],
    ['PO', { group: '', version: 'v1', resource: 'pods', namespaced: true }],
    ['no', { group: '', version: 'v1', resource: 'nodes', namespaced: false }],
    ['deploy', { group: 'apps', version: 'v1', resource: 'deployments', namespaced: true }],
    ['deployments.apps', { group: 'apps', version: 'v1', resource: 'deployments', namespaced: true }],
    ['pods.example.com', { group: 'example.com', version: 'v2', resource: 'pods', namespaced: true }],
  ])('%s', (name, want) => {
    expect(resolveResource(DOCS, name)).toEqual(want);
  });

  it('is undefined for a name nobody serves', () => {
    expect(resolveResource(DOCS, 'widgets')).toBeUndefined();
    expect(resolveResource(DOCS, 'deployments.example.com')).toBeUndefined();
  });
});

describe('which: the members holding it', () => {
  it('are read from each item\'s cluster annotation, never from anything else', () => {
    const items: { metadata: { name: string; namespace: string; annotations?: Record<string, string> } }[] = [
      { metadata: { name: 'web', namespace: 'shop', annotations: { 'search.flotilla.io/cluster': 'west', other: 'east' } } },
      { metadata: { name: 'web', namespace: 'shop', annotations: { 'search.flotilla.io/cluster': 'east' } } },
      { metadata: { name: 'web', namespace: 'shop' } },
    ];
    expect(holders(items)).toEqual([
      { cluster: '(unknown)', namespace: 'shop', name: 'web' },
      { cluster: 'east', namespace: 'shop', name: 'web' },
      { cluster: 'west', namespace: 'shop', name: 'web' },
    ]);
  });
});
