import { describe, expect, it } from 'vitest';
import { authenticationProblem } from '../../../src/registry/authentication-required.js';
import { ConfigError, parseFleetConfig } from '../../../src/registry/config.js';
import { selectClusters } from '../../../src/registry/select-clusters.js';

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
    expect(c.clusters[0]).toEqual({ name: 'east', kubeconfig: '/etc/flotilla/east.kubeconfig', labels: { region: 'eu' }, authorization: 'rbac', priority: 0 });
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
  - name: d
    kubeconfig: d
    authorization: abac
    priority: 1.5
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
      'fleet.yaml: clusters[3].authorization: must be rbac or subjectAccessReview, got "abac"',
      'fleet.yaml: clusters[3].priority: must be an integer from -1000 to 1000, got number 1.5',
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

describe('authentication', () => {
  const base = 'clusters: [{ name: east, kubeconfig: k }]\nresources: [{ version: v1, resource: pods }]\n';

  it('refuses anonymous callers unless the file says anonymous: true', () => {
    expect(parse(base).authentication).toEqual({ cacheTTLSeconds: 10, tokenReviewStaleSeconds: 120, anonymous: false });
    expect(parse(`${base}authentication: { tokenFile: t.csv }`).authentication).toEqual({ tokenFile: '/etc/flotilla/t.csv', cacheTTLSeconds: 10, tokenReviewStaleSeconds: 120, anonymous: false });
    expect(parse(`${base}authentication: { anonymous: true }`).authentication.anonymous).toBe(true);
    expect(parse(`${base}authentication: { anonymous: false, tokenReviewCluster: east }`).authentication).toEqual({ tokenReviewCluster: 'east', cacheTTLSeconds: 10, tokenReviewStaleSeconds: 120, anonymous: false });
  });

  it('reports an anonymous that is not a boolean with the other problems', () => {
    expect(() => parse(`${base}authentication: { anonymous: "yes", cacheTTLSeconds: -1 }`)).toThrow(
      'fleet.yaml: authentication.cacheTTLSeconds: must be an integer from 0 to 3600, got number -1\nfleet.yaml: authentication.anonymous: must be true or false',
    );
    expect(() => parse(`${base}authentication: { anonymus: true }`)).toThrow('authentication.anonymus: unknown field (did you mean authentication.anonymous?)');
  });

  it('reads how long a positive verdict outlives a reviewer that cannot answer (0: not at all)', () => {
    expect(parse(`${base}authentication: { tokenReviewCluster: east, tokenReviewStaleSeconds: 0 }`).authentication.tokenReviewStaleSeconds).toBe(0);
    expect(parse(`${base}authentication: { tokenReviewCluster: east, tokenReviewStaleSeconds: 600 }`).authentication.tokenReviewStaleSeconds).toBe(600);
    expect(() => parse(`${base}authentication: { tokenReviewStaleSeconds: -1 }`)).toThrow('fleet.yaml: authentication.tokenReviewStaleSeconds: must be an integer from 0 to 86400, got number -1');
  });

  it('is a problem, naming the fields and flag that fix it, when no caller could authenticate', () => {
    const problem = (text: string, clientCertificates = false) => authenticationProblem(parse(text), 'fleet.yaml', { clientCertificates });
    for (const [fix, text] of [
      ['tokenReviewCluster', `${base}authentication: { tokenReviewCluster: east }`],
      ['tokenFile', `${base}authentication: { tokenFile: t.csv }`],
      ['anonymous', `${base}authentication: { anonymous: true }`],
    ] as const) {
      expect(problem(text), fix).toBeUndefined();
    }
    expect(problem(base, true)).toBeUndefined();
    const message = problem(`${base}authentication: { cacheTTLSeconds: 5, anonymous: false }`);
    expect(message).toBe(problem(base));
    expect(message).toMatch(/^fleet\.yaml: authentication: flotilla has no way to authenticate callers/);
    for (const fix of ['authentication.tokenReviewCluster', 'authentication.tokenFile', '--client-ca-file', 'authentication.anonymous: true']) expect(message).toContain(fix);
  });
});

describe('member heartbeat', () => {
  const base = 'clusters: [{ name: east, kubeconfig: k }]\nresources: [{ version: v1, resource: pods }]\n';

  it('probes every 500 ms unless the options say otherwise, from 50 ms to a minute', () => {
    expect(parse(base).options.memberHeartbeatMilliseconds).toBe(2000);
    expect(parse(`${base}options: { memberHeartbeatMilliseconds: 200 }`).options.memberHeartbeatMilliseconds).toBe(200);
    expect(() => parse(`${base}options: { memberHeartbeatMilliseconds: 10 }`)).toThrow('fleet.yaml: options.memberHeartbeatMilliseconds: must be an integer from 50 to 60000, got number 10');
    expect(() => parse(`${base}options: { memberHeartbeatMilliseconds: 1.5 }`)).toThrow(/memberHeartbeatMilliseconds: must be an integer/);
  });
});

describe('cluster priority', () => {
  it('orders a rule’s clusters by priority, higher first, then as configured', () => {
    const c = parseFleetConfig(`
clusters:
  - { name: a, server: https://a }
  - { name: b, server: https://b, priority: 5 }
  - { name: c, server: https://c }
  - { name: d, server: https://d, priority: -1 }
resources:
  - { version: v1, resource: pods }
`, '/etc/flotilla/fleet.yaml');
    expect(selectClusters(c.resources[0]!, c.clusters).map((x) => x.name)).toEqual(['b', 'a', 'c', 'd']);
  });
});

describe('tenants', () => {
  const base = 'clusters: [{ name: east, kubeconfig: k }]\nresources: [{ version: v1, resource: pods }]\n';
  const problems = (tenants: string) => {
    try {
      parseFleetConfig(`${base}tenants:\n${tenants}`, '/x/fleet.yaml');
      return '';
    } catch (e) {
      return (e as Error).message;
    }
  };

  it('reads ids, users, groups and cluster-scoped policies', () => {
    const c = parseFleetConfig(`${base}tenants:\n  - { id: acme, users: [admin@acme], groups: [acme-devs], clusterScoped: { persistentvolumes: owned, nodes: hidden } }\n  - { id: globex, groups: [globex-admins] }\n`, '/x/fleet.yaml');
    expect(c.tenants).toEqual([
      { id: 'acme', users: ['admin@acme'], groups: ['acme-devs'], clusterScoped: { persistentvolumes: 'owned', nodes: 'hidden' } },
      { id: 'globex', users: [], groups: ['globex-admins'], clusterScoped: {} },
    ]);
    expect(parseFleetConfig(base, '/x/fleet.yaml').tenants).toEqual([]);
  });

  it('refuses ids that cannot be told apart, bad ids, callers in two tenants, unknown policies', () => {
    // `ab-c-x` would be both tenants' namespace; `ab` and `abc` are told apart by the separator.
    expect(problems('  - { id: ab, users: [a] }\n  - { id: ab-c, users: [b] }\n')).toContain('tenant ids "ab" and "ab-c" clash');
    expect(problems('  - { id: ab, users: [a] }\n  - { id: abc, users: [b] }\n')).toBe('');
    expect(problems('  - { id: Acme, users: [a] }\n')).toContain('tenants[0].id: must be a DNS-1123 label of at most 20 characters');
    expect(problems('  - { id: a-very-long-tenant-id-1, users: [a] }\n')).toContain('tenants[0].id');
    expect(problems('  - { id: acme, users: [a] }\n  - { id: globex, users: [a] }\n')).toContain('user "a" is already in tenant "acme"');
    expect(problems('  - { id: acme }\n')).toContain('names no users and no groups');
    expect(problems('  - { id: acme, users: [a], clusterScoped: { nodes: writable } }\n')).toContain('tenants[0].clusterScoped.nodes: must be owned, shared or hidden');
    expect(problems('  - { id: acme, users: [a] }\n  - { id: acme, users: [b] }\n')).toContain('duplicate tenant id "acme"');
  });

  it('reads admins among the tenant\'s own users and groups', () => {
    const c = parseFleetConfig(`${base}tenants:\n  - { id: acme, users: [admin@acme, dev@acme], groups: [acme-admins], admins: { groups: [acme-admins] } }\n`, '/x/fleet.yaml');
    expect(c.tenants[0]!.admins).toEqual({ users: [], groups: ['acme-admins'] });
    expect(parseFleetConfig(`${base}tenants:\n  - { id: acme, users: [a] }\n`, '/x/fleet.yaml').tenants[0]).not.toHaveProperty('admins');
  });

  it('refuses admins who are not the tenant\'s, and admins naming nobody', () => {
    expect(problems('  - { id: acme, users: [a], admins: { users: [bob] } }\n')).toContain('tenants[0].admins.users[0]: user "bob" is not one of this tenant\'s users');
    expect(problems('  - { id: acme, users: [a], groups: [acme-devs], admins: { groups: [system:masters] } }\n')).toContain('tenants[0].admins.groups[0]: group "system:masters" is not one of this tenant\'s groups');
    expect(problems('  - { id: acme, users: [a], admins: { users: [a], roles: [x] } }\n')).toContain('tenants[0].admins.roles: unknown field');
    expect(problems('  - { id: acme, users: [a], admins: {} }\n')).toContain('tenants[0].admins: names no users and no groups');
    expect(problems('  - { id: acme, users: [a], admins: [a] }\n')).toContain('tenants[0].admins: must be a mapping');
  });
});
