import { describe, expect, it } from 'vitest';
import { ConfigError, parseFleetConfig, selectClusters } from '../../src/registry/config.js';

const parse = (text: string) => parseFleetConfig(text, '/etc/flotilla/fleet.yaml');

describe('fleet configuration', () => {
  it('reads clusters, rules and options, resolving paths against the file', () => {
    const c = parse(`
clusters:
  - name: east
    kubeconfig: east.kubeconfig
    labels: { region: eu }
  - name: west
    server: https://10.0.0.2:6443
    caFile: /abs/ca.crt
    tokenFile: west.token
resources:
  - version: v1
    resource: pods
  - group: apps
    version: v1
    resource: deployments
    namespaces: [shop]
    clusterSelector: { matchLabels: { region: eu } }
options:
  listPageSize: 100
`);
    expect(c.clusters[0]).toEqual({ name: 'east', kubeconfig: '/etc/flotilla/east.kubeconfig', labels: { region: 'eu' }, authorization: 'rbac' });
    expect(c.clusters[1]).toMatchObject({ server: 'https://10.0.0.2:6443', caFile: '/abs/ca.crt', tokenFile: '/etc/flotilla/west.token' });
    expect(c.resources[0]).toEqual({ group: '', version: 'v1', resource: 'pods' });
    expect(c.options).toMatchObject({ dropManagedFields: true, listPageSize: 100, maxInflightListsPerMember: 4, maxInflightListPages: 8, eventLogSize: 100000 });
    expect(selectClusters(c.resources[1]!, c.clusters).map((x) => x.name)).toEqual(['east']);
    expect(selectClusters(c.resources[0]!, c.clusters).map((x) => x.name)).toEqual(['east', 'west']);
  });

  it('reports every problem at once, each with the file and field path', () => {
    let err: ConfigError | undefined;
    try {
      parse(`
clusters:
  - name: East_1
    kubeconfig: a
  - name: b
    kubeconfig: a
    server: https://x
  - name: b
    kubeconfig: c
    colour: red
resources:
  - version: one
    resource: pods
    clusters: [nowhere]
  - version: v1
    resource: pods
  - version: v1
    resource: pods
options:
  listPageSize: 0
  maxInflightListPages: 0
`);
    } catch (e) {
      err = e as ConfigError;
    }
    expect(err).toBeInstanceOf(ConfigError);
    const lines = err!.message.split('\n');
    expect(lines).toEqual(expect.arrayContaining([
      expect.stringMatching(/^fleet\.yaml: clusters\[0\]\.name: must be a DNS-1123 label .*"East_1"/),
      'fleet.yaml: clusters[1]: needs exactly one of kubeconfig or server',
      'fleet.yaml: clusters[2].name: duplicate cluster name "b"',
      expect.stringMatching(/^fleet\.yaml: clusters\[2\]\.colour: unknown field; allowed: name, kubeconfig/),
      expect.stringMatching(/^fleet\.yaml: resources\[0\]\.version: must be an API version/),
      'fleet.yaml: resources[0].clusters[0]: no cluster named "nowhere" in clusters',
      expect.stringMatching(/^fleet\.yaml: resources\[2\]: duplicate rule for pods\/v1/),
      expect.stringMatching(/^fleet\.yaml: options\.listPageSize: must be an integer from 1 to 10000/),
      'fleet.yaml: options.maxInflightListPages: must be an integer from 1 to 10000, got number 0',
    ]));
  });

  it('rejects an empty or non-YAML file clearly', () => {
    expect(() => parse('')).toThrow(/clusters: must list at least one cluster/);
    expect(() => parse('clusters: [')).toThrow(/not valid YAML/);
  });
});
