import { describe, expect, it, vi } from 'vitest';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MemberClient } from '../../../src/members/member-client.js';
import { TOKEN_FILE_REREAD_MS } from '../../../src/registry/defaults.js';
import { stringify as toYaml } from 'yaml';
import { ConfigError, parseFleetConfig } from '../../../src/registry/config.js';
import { fleetConfigFromSpec, secretRefs, type SecretRef, type SpecContext } from '../../../src/hub/fleet-spec.js';
import { computeFleetStatus, sameStatus, type StatusInputs } from '../../../src/hub/fleet-status.js';
import { hubClusterConfig, inClusterServer } from '../../../src/hub/hub-client.js';
import type { CacherStatus } from '../../../src/cacher/cacher-status.js';

/** Secrets by `ns/name`, each a map of keys; stored credentials recorded by path. */
function context(secrets: Record<string, Record<string, string>>): SpecContext & { stored: Map<string, string> } {
  const stored = new Map<string, string>();
  return {
    name: 'prod',
    stored,
    secret: (ref: SecretRef) => {
      const s = secrets[`${ref.namespace}/${ref.name}`];
      if (!s) return { error: `Secret ${ref.namespace}/${ref.name} not found` };
      const v = s[ref.key];
      return v === undefined ? { error: `Secret ${ref.namespace}/${ref.name} has no key ${JSON.stringify(ref.key)}` } : { value: Buffer.from(v) };
    },
    store: (cluster, kind, value) => {
      const path = `/data/hub/${cluster}-${value.toString()}.${kind}`;
      stored.set(path, value.toString());
      return path;
    },
  };
}

const RESOURCES = [{ version: 'v1', resource: 'pods' }];
const AUTH = { tokenReviewCluster: 'east' };

describe('Fleet spec to FleetConfig', () => {
  it('turns Secret references into credential files and keeps every other field of the file', () => {
    const ctx = context({ 'fs/east': { kubeconfig: 'K1' }, 'fs/west-ca': { 'ca.crt': 'CA' }, 'fs/west-token': { value: 'T' } });
    const spec = {
      clusters: [
        { name: 'east', kubeconfigSecretRef: { namespace: 'fs', name: 'east' }, labels: { region: 'eu' }, priority: 5 },
        { name: 'west', server: 'https://10.0.0.2:6443', caSecretRef: { namespace: 'fs', name: 'west-ca' }, tokenSecretRef: { namespace: 'fs', name: 'west-token', key: 'value' }, authorization: 'subjectAccessReview' },
      ],
      resources: RESOURCES,
      options: { listPageSize: 100 },
      authentication: AUTH,
      tenants: [{ id: 'acme', groups: ['acme'] }],
    };
    const { config, memberErrors } = fleetConfigFromSpec(spec, ctx);
    expect(memberErrors.size).toBe(0);
    expect(config.clusters).toEqual([
      { name: 'east', kubeconfig: '/data/hub/east-K1.kubeconfig', labels: { region: 'eu' }, authorization: 'rbac', priority: 5 },
      { name: 'west', server: 'https://10.0.0.2:6443', caFile: '/data/hub/west-CA.ca', tokenFile: '/data/hub/west-T.token', labels: {}, authorization: 'subjectAccessReview', priority: 0 },
    ]);
    expect(config.options.listPageSize).toBe(100);
    expect(config.authentication.tokenReviewCluster).toBe('east');
    expect(config.tenants.map((t) => t.id)).toEqual(['acme']);
    expect(secretRefs(spec).map((r) => `${r.namespace}/${r.name}:${r.key}`)).toEqual(['fs/east:kubeconfig', 'fs/west-ca:ca.crt', 'fs/west-token:value']);
  });

  it("gives the file's own messages, named Fleet/<name>", () => {
    const clusters = [
      { name: 'east', kubeconfig: '/k/east' },
      { name: 'east', kubeconfig: '/k/east2' },
    ];
    const doc = { clusters, resources: [{ version: 'one', resource: 'pods' }], authentication: AUTH };
    let fileMessage = '';
    try {
      parseFleetConfig(toYaml(doc), '/etc/flotilla/fleet.yaml');
    } catch (e) {
      fileMessage = (e as Error).message;
    }
    expect(fileMessage).toContain('fleet.yaml: clusters[1].name: duplicate cluster name "east"');
    expect(() => fleetConfigFromSpec(doc, context({}))).toThrow(ConfigError);
    try {
      fleetConfigFromSpec(doc, context({}));
    } catch (e) {
      expect((e as Error).message).toBe(fileMessage.replaceAll('fleet.yaml:', 'Fleet/prod:'));
    }
  });

  it('refuses relative paths (no file to be relative to) and malformed references, naming the field as written', () => {
    const spec = {
      clusters: [
        { name: 'east', kubeconfig: 'east.kubeconfig' },
        { name: 'west', kubeconfigSecretRef: { name: 'w' } },
        { name: 'north', kubeconfig: '/k', kubeconfigSecretRef: { namespace: 'fs', name: 'n' } },
        { name: 'south', kubeconfigSecretRef: { namespace: 'fs', name: 's' }, caSecretRef: { namespace: 'fs', name: 's' } },
      ],
      resources: RESOURCES,
      authentication: AUTH,
    };
    const messages = (() => {
      try {
        fleetConfigFromSpec(spec, context({ 'fs/s': { kubeconfig: 'K', 'ca.crt': 'C' } }));
        return [];
      } catch (e) {
        return (e as Error).message.split('\n');
      }
    })();
    expect(messages).toEqual(expect.arrayContaining([
      'Fleet/prod: clusters[0].kubeconfig: must be an absolute path (there is no file to be relative to), got "east.kubeconfig"',
      'Fleet/prod: clusters[1].kubeconfigSecretRef.namespace: is required',
      'Fleet/prod: clusters[2]: give kubeconfig or kubeconfigSecretRef, not both',
      'Fleet/prod: clusters[3].caSecretRef: only goes with server (the kubeconfig has its own)',
    ]));
  });

  it('leaves out a member whose Secret is missing, with its error, and serves the others', () => {
    const spec = {
      clusters: [
        { name: 'east', kubeconfigSecretRef: { namespace: 'fs', name: 'east' } },
        { name: 'west', kubeconfigSecretRef: { namespace: 'fs', name: 'west' } },
        { name: 'north', kubeconfigSecretRef: { namespace: 'fs', name: 'north' } },
      ],
      resources: [{ version: 'v1', resource: 'pods', clusters: ['west'] }],
      authentication: AUTH,
    };
    const { config, memberErrors } = fleetConfigFromSpec(spec, context({ 'fs/east': { kubeconfig: 'K' }, 'fs/north': { other: 'x' } }));
    expect(config.clusters.map((c) => c.name)).toEqual(['east']);
    expect(Object.fromEntries(memberErrors)).toEqual({
      west: 'kubeconfigSecretRef: Secret fs/west not found',
      north: 'kubeconfigSecretRef: Secret fs/north has no key "kubeconfig"',
    });
  });
});

describe('Fleet status', () => {
  const cacher = (cluster: string, resource: string, synced: boolean, extra: Partial<CacherStatus> = {}): CacherStatus => ({
    cluster, resource, phase: synced ? 'watching' : 'listing', synced, objects: 1, relists: 0, watches: 0, historyResets: 0, ...extra,
  });
  const base = (over: Partial<StatusInputs> = {}): StatusInputs => ({
    outcome: { generation: 3, members: ['east', 'west', 'north'], memberErrors: new Map([['north', 'kubeconfigSecretRef: Secret fs/north not found']]) },
    cachers: [cacher('east', 'v1/pods', true), cacher('east', 'v1/nodes', true), cacher('west', 'v1/pods', true), cacher('west', 'v1/nodes', false, { phase: 'backoff', lastError: 'HTTP 503' })],
    heartbeats: [
      { cluster: 'east', silent: false, lastAnswerAt: '2025-01-01T00:00:00Z' },
      { cluster: 'west', silent: true, lastError: 'connect ECONNREFUSED' },
    ],
    synced: false,
    now: '2025-01-01T00:00:10Z',
    ...over,
  });

  it('says per member whether it answers, how much of it has listed, and its last error', () => {
    const s = computeFleetStatus(base());
    expect(s.observedGeneration).toBe(3);
    expect(s.members).toEqual([
      { name: 'east', connected: true, syncedResources: 2, resources: 2 },
      { name: 'west', connected: false, syncedResources: 1, resources: 2, lastError: 'connect ECONNREFUSED' },
      { name: 'north', connected: false, syncedResources: 0, resources: 0, lastError: 'kubeconfigSecretRef: Secret fs/north not found' },
    ]);
    expect(s.conditions.map((c) => [c.type, c.status, c.reason])).toEqual([['Accepted', 'True', 'Valid'], ['Ready', 'False', 'MissingCredentials']]);
  });

  it('is Ready when everything has listed, Accepted=False with the messages when refused', () => {
    const ok = computeFleetStatus(base({ synced: true, outcome: { generation: 4, members: ['east'], memberErrors: new Map() }, cachers: [cacher('east', 'v1/pods', true)] }));
    expect(ok.conditions.find((c) => c.type === 'Ready')).toMatchObject({ status: 'True', reason: 'Synced', observedGeneration: 4 });
    const refused = computeFleetStatus(base({ outcome: { generation: 5, members: ['east'], memberErrors: new Map(), rejected: 'Fleet/prod: clusters[1].name: duplicate cluster name "east"' } }));
    expect(refused.conditions[0]).toMatchObject({ type: 'Accepted', status: 'False', reason: 'Invalid', message: 'Fleet/prod: clusters[1].name: duplicate cluster name "east"' });
  });

  it('keeps transition times while a condition says the same, so replicas that agree write nothing', () => {
    const first = computeFleetStatus(base());
    const later = computeFleetStatus(base({ now: '2025-01-01T00:05:00Z', current: first }));
    expect(sameStatus(later, first)).toBe(true);
    const changed = computeFleetStatus(base({ now: '2025-01-01T00:05:00Z', current: first, synced: true, outcome: { generation: 3, members: ['east'], memberErrors: new Map() } }));
    expect(changed.conditions.find((c) => c.type === 'Ready')!.lastTransitionTime).toBe('2025-01-01T00:05:00Z');
    expect(changed.conditions.find((c) => c.type === 'Accepted')!.lastTransitionTime).toBe('2025-01-01T00:00:10Z');
  });
});

describe('hub client', () => {
  it('in a pod: the service account files and the apiserver the kubelet names', () => {
    expect(inClusterServer({ KUBERNETES_SERVICE_HOST: '10.96.0.1', KUBERNETES_SERVICE_PORT: '443' })).toBe('https://10.96.0.1:443');
    expect(inClusterServer({ KUBERNETES_SERVICE_HOST: 'fd00::1', KUBERNETES_SERVICE_PORT: '443' })).toBe('https://[fd00::1]:443');
    expect(inClusterServer({})).toBe('https://kubernetes.default.svc');
    expect(hubClusterConfig({ inCluster: true }, {}, '/sa')).toMatchObject({ name: 'hub', server: 'https://kubernetes.default.svc', caFile: '/sa/ca.crt', tokenFile: '/sa/token' });
    expect(hubClusterConfig({ kubeconfig: '/k' })).toMatchObject({ kubeconfig: '/k' });
    expect(() => hubClusterConfig({})).toThrow(/exactly one/);
  });
});

describe('a token file (the in-cluster projected token)', () => {
  it('is read again once its token is a minute old, as client-go does', async () => {
    const seen: string[] = [];
    const server = createServer((req, res) => {
      seen.push(req.headers.authorization ?? '');
      res.end('{}');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const dir = mkdtempSync(join(tmpdir(), 'hub-token-'));
    const tokenFile = join(dir, 'token');
    writeFileSync(tokenFile, 'first\n');
    vi.useFakeTimers({ toFake: ['Date'] });
    try {
      const client = await MemberClient.create({ name: 'hub', server: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, tokenFile, insecureSkipTLSVerify: true, labels: {}, authorization: 'rbac', priority: 0 });
      await client.fetch({ path: '/a' });
      writeFileSync(tokenFile, 'second\n');
      await client.fetch({ path: '/b' });
      vi.advanceTimersByTime(TOKEN_FILE_REREAD_MS);
      await client.fetch({ path: '/c' });
      client.close();
    } finally {
      vi.useRealTimers();
      server.close();
    }
    expect(seen).toEqual(['Bearer first', 'Bearer first', 'Bearer second']);
  });
});
