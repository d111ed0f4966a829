import { describe, expect, it } from 'vitest';
import { findPath, foundRows } from '../../../src/cli/find.js';

describe('kubectl flotilla find', () => {
  it('asks the find with the text as q, the selector, kinds, namespace and the continue token', () => {
    const path = findPath('Checkout', { selector: 'cluster.search.flotilla.io/env=prod', kinds: 'pods', namespace: 'shop' }, 'tok');
    const url = new URL(path, 'https://x');
    expect(url.pathname).toBe('/apis/search.flotilla.io/v1alpha1/find');
    expect(Object.fromEntries(url.searchParams)).toEqual({ q: 'Checkout', labelSelector: 'cluster.search.flotilla.io/env=prod', kinds: 'pods', namespace: 'shop', continue: 'tok' });
  });

  it('prints kind with its group, cluster, namespace, name and age', () => {
    const now = Date.parse('2026-11-29T12:00:00Z');
    const rows = foundRows([
      { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'checkout', namespace: 'shop', creationTimestamp: '2026-11-29T11:00:00Z', annotations: { 'search.flotilla.io/cluster': 'east' } } },
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'checkout', creationTimestamp: '2026-11-27T12:00:00Z', annotations: { 'search.flotilla.io/cluster': 'west' } } },
    ], now);
    expect(rows).toEqual([
      ['Deployment.apps', 'east', 'shop', 'checkout', '60m'],
      ['Namespace', 'west', '', 'checkout', '2d'],
    ]);
  });
});
