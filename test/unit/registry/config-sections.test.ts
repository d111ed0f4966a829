import { describe, expect, it } from 'vitest';
import { parseAuthentication } from '../../../src/registry/config-authentication.js';
import { Checker } from '../../../src/registry/config-checker.js';
import { parseClusters } from '../../../src/registry/config-clusters.js';
import { parseOptions } from '../../../src/registry/config-options.js';
import { parseResources } from '../../../src/registry/config-resources.js';
import { parseTenants } from '../../../src/registry/config-tenants.js';
import { defaultFleetOptions } from '../../../src/registry/defaults.js';

/** Each section of the fleet document parsed alone: what it returns, and the problems it names. */
function section<T>(parse: (c: Checker) => T, baseDir?: string): { value: T; problems: string[] } {
  const c = new Checker('f.yaml', baseDir);
  const value = parse(c);
  return { value, problems: c.errors };
}

describe('clusters', () => {
  it('resolves relative paths against the document, and refuses them when it has no directory', () => {
    const raw = [{ name: 'east', server: 'https://e', caFile: 'ca.crt', insecureSkipTLSVerify: true }];
    expect(section((c) => parseClusters(c, raw), '/etc/flotilla').value).toEqual([{ name: 'east', server: 'https://e', caFile: '/etc/flotilla/ca.crt', insecureSkipTLSVerify: true, labels: {}, authorization: 'rbac', priority: 0 }]);
    expect(section((c) => parseClusters(c, raw)).problems).toEqual(['f.yaml: clusters[0].caFile: must be an absolute path (there is no file to be relative to), got "ca.crt"']);
  });

  it('names fields that do not go with how the cluster is reached', () => {
    expect(section((c) => parseClusters(c, [{ name: 'a', server: 'https://a', context: 'x', insecureSkipTLSVerify: 'no' }, { name: 'b', kubeconfig: '/k', tokenFile: '/t' }])).problems).toEqual([
      'f.yaml: clusters[0].context: only goes with kubeconfig',
      'f.yaml: clusters[0].insecureSkipTLSVerify: must be true or false',
      'f.yaml: clusters[1].tokenFile: only goes with server (the kubeconfig has its own)',
    ]);
  });
});

describe('resources', () => {
  it('checks a cluster selector’s expressions as a LabelSelector’s', () => {
    const { value, problems } = section((c) => parseResources(c, [
      { version: 'v1', resource: 'pods', clusterSelector: { matchExpressions: [{ key: 'tier', operator: 'In', values: [] }, { key: 'zone', operator: 'Exists' }, { key: 'k', operator: 'Near' }] } },
      { version: 'v1', resource: 'secrets', clusters: ['east'], clusterSelector: { matchLabels: { a: 'b' } } },
    ], new Set(['east'])));
    expect(problems).toEqual([
      'f.yaml: resources[0].clusterSelector.matchExpressions[0].values: must not be empty for In',
      'f.yaml: resources[0].clusterSelector.matchExpressions[2].operator: must be one of In, NotIn, Exists, DoesNotExist, got "Near"',
      'f.yaml: resources[1]: give clusters or clusterSelector, not both',
    ]);
    expect(value[0]).toEqual({ group: '', version: 'v1', resource: 'pods', clusterSelector: { matchExpressions: [{ key: 'tier', operator: 'In', values: [] }, { key: 'zone', operator: 'Exists', values: [] }] } });
  });
});

describe('options', () => {
  it('are the defaults when absent, and each one given replaces its own', () => {
    expect(section((c) => parseOptions(c, undefined)).value).toEqual(defaultFleetOptions());
    const { value, problems } = section((c) => parseOptions(c, { dropManagedFields: false, maxInflightListsPerMember: 'many', liveReads: { enabled: false, maxWatches: 5 } }));
    // Bounds are the schema's (fleet-schema.ts, checked before the sections: defaults.test.ts).
    expect(problems).toEqual(['f.yaml: options.maxInflightListsPerMember: must be an integer, got string "many"']);
    expect(value).toEqual({ ...defaultFleetOptions(), dropManagedFields: false, liveReads: { ...defaultFleetOptions().liveReads, enabled: false, maxWatches: 5 } });
  });

  it('read operators as lists of user and group names, each list optional', () => {
    expect(section((c) => parseOptions(c, { operators: { users: ['ops@example.com'] } })).value.operators).toEqual({ users: ['ops@example.com'], groups: [] });
    expect(section((c) => parseOptions(c, { operators: { groups: ['sre'] } })).value.operators).toEqual({ users: [], groups: ['sre'] });
  });

  it('names a dropManagedFields that is not a boolean', () => {
    expect(section((c) => parseOptions(c, { dropManagedFields: 'yes' })).problems).toEqual(['f.yaml: options.dropManagedFields: must be true or false']);
  });
});

describe('authentication', () => {
  it('names a token reviewer that is not one of the clusters', () => {
    const { value, problems } = section((c) => parseAuthentication(c, { tokenReviewCluster: 'west', tokenFile: 't.csv' }, [{ name: 'east', labels: {}, authorization: 'rbac', priority: 0 }]), '/etc');
    expect(problems).toEqual(['f.yaml: authentication.tokenReviewCluster: names no cluster of this file: "west"']);
    expect(value).toEqual({ tokenReviewCluster: 'west', tokenFile: '/etc/t.csv', cacheTTLSeconds: 10, tokenReviewStaleSeconds: 120, anonymous: false });
  });
});

describe('tenants', () => {
  it('names ids that clash, callers in two tenants, and admins from outside', () => {
    expect(section((c) => parseTenants(c, [{ id: 'ab', users: ['u'] }, { id: 'ab-c', users: ['u'], admins: { groups: ['g'] } }])).problems).toEqual([
      'f.yaml: tenants[1].users: user "u" is already in tenant "ab": a caller belongs to one tenant',
      'f.yaml: tenants[1].admins.groups[0]: group "g" is not one of this tenant\'s groups',
      'f.yaml: tenants[1].id: tenant ids "ab" and "ab-c" clash: names of the second start with the first\'s id and separator',
    ]);
  });
});
