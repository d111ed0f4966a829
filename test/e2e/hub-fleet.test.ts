import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseYaml, stringify as toYaml } from 'yaml';
import { EXAMPLE_FLEET_FILE } from '../../scripts/config-reference.js';
import { findProjectRoot, type MemberInfo } from '../fleet/fleet.js';
import { installChart, startHub, type Hub, type InstalledChart } from '../fleet/hub.js';
import { memberJson, memberRequest } from '../fleet/http.js';
import { freePort, startFlotillaProcess, type FlotillaProcess } from '../support/flotilla-process.js';
import { helmBinary } from '../support/helm.js';
import { until } from '../support/poll.js';
import { parseFleetConfig } from '../../src/registry/config.js';
import type { FleetStatus } from '../../src/hub/fleet-status.js';

/**
 * The fleet configuration from a Fleet custom resource on a hub (issue 30, part 3): flotilla reads
 * the Fleet and the Secrets holding its members' kubeconfigs, and edits of the Fleet add and remove
 * members without a restart; an invalid edit is refused with the file's message (status
 * Accepted=False) while the running configuration keeps serving; a missing Secret is that
 * member's lastError, not a crash. Status says per member whether it answers and what has synced.
 */
const fleet = inject('fleet');
const [east, west, north] = fleet.members as [MemberInfo, MemberInfo, MemberInfo];
const NAME = 'test-fleet';
const NS = 'hub-fleet';
const SECRETS_NS = 'flotilla-system';
const FLEET_PATH = `/apis/flotilla.io/v1alpha1/fleets/${NAME}`;
const CLUSTER = 'search.flotilla.io/cluster';
let hub: Hub;
let flotilla: FlotillaProcess;
let chart: InstalledChart;
let chartPort: number;

/** A member's kubeconfig as a Secret would hold it: the CA embedded, nothing read from flotilla's disk. */
function memberKubeconfig(m: MemberInfo): string {
  return toYaml({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: m.name, cluster: { server: m.server, 'certificate-authority-data': readFileSync(m.caFile).toString('base64') } }],
    users: [{ name: m.name, user: { token: m.token } }],
    contexts: [{ name: m.name, context: { cluster: m.name, user: m.name } }],
    'current-context': m.name,
  });
}

const member = (name: string, secret = `${name}-kubeconfig`) => ({ name, kubeconfigSecretRef: { namespace: SECRETS_NS, name: secret } });
const spec = (clusters: object[]) => ({
  clusters,
  resources: [{ version: 'v1', resource: 'pods', namespaces: [NS] }],
  authentication: { tokenReviewCluster: 'east' },
  options: { memberHeartbeatMilliseconds: 200 },
});

async function editFleet(clusters: object[]): Promise<number> {
  const res = await memberRequest(hub.apiserver, 'PATCH', FLEET_PATH, { spec: { clusters } }, { contentType: 'application/merge-patch+json' });
  expect(res.status, res.body).toBe(200);
  return (JSON.parse(res.body) as { metadata: { generation: number } }).metadata.generation;
}

const fleetStatus = async () => (await memberJson<{ status?: FleetStatus }>(hub.apiserver, 'GET', FLEET_PATH)).status;
const condition = (s: FleetStatus | undefined, type: string) => s?.conditions?.find((c) => c.type === type);

async function podClusters(): Promise<string[]> {
  const list = await memberJson<{ items: { metadata: { name: string; annotations?: Record<string, string> } }[] }>(flotilla.endpoint, 'GET', `/api/v1/namespaces/${NS}/pods`);
  return [...new Set(list.items.map((p) => p.metadata.annotations?.[CLUSTER] ?? '?'))].sort();
}

/** Waits until the status is written for `generation` and `check` holds of it. */
async function statusFor(generation: number, what: string, check: (s: FleetStatus) => boolean, timeoutMs = 45_000): Promise<FleetStatus> {
  let last: FleetStatus | undefined;
  await until(`${what} (status of generation ${generation})`, async () => {
    last = await fleetStatus();
    return last?.observedGeneration === generation && check(last);
  }, timeoutMs).catch((e: Error) => {
    throw new Error(`${e.message}; last status: ${JSON.stringify(last)}`);
  });
  return last!;
}

const synced = (s: FleetStatus, names: string[]) =>
  names.every((n) => s.members.some((m) => m.name === n && m.connected && m.resources > 0 && m.syncedResources === m.resources));

describe('Fleet from the hub', () => {
  let pid: number;

  beforeAll(async () => {
    hub = await startHub({ fleet, dir: join(fleet.dir, 'hub-fleet') });
    // The chart with the hub as the fleet's source (the CRD, flotilla's RBAC for Fleets and its
    // namespace's Secrets): flotilla then runs as the chart's ServiceAccount, so that RBAC must do.
    const port = await freePort();
    chart = await installChart(hub, { helm: helmBinary(), chart: join(findProjectRoot(), 'deploy', 'helm', 'flotilla'), port, dir: join(fleet.dir, 'hub-fleet-chart'), set: ['fleet.source=hub', `fleet.name=${NAME}`] });
    chartPort = port;
    await until('the Fleet CRD is served', async () => (await memberRequest(hub.apiserver, 'GET', '/apis/flotilla.io/v1alpha1/fleets')).status === 200, 30_000);
    hub.apply(
      [
        { apiVersion: 'v1', kind: 'Namespace', metadata: { name: SECRETS_NS } },
        ...[east, west, north].map((m) => ({ apiVersion: 'v1', kind: 'Secret', metadata: { name: `${m.name}-kubeconfig`, namespace: SECRETS_NS }, stringData: { kubeconfig: memberKubeconfig(m) } })),
      ].map((d) => toYaml(d)).join('---\n'),
    );
    for (const m of [east, west, north]) {
      const ns = await memberRequest(m, 'POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
      expect([201, 409]).toContain(ns.status);
      const pod = await memberRequest(m, 'POST', `/api/v1/namespaces/${NS}/pods`, {
        apiVersion: 'v1', kind: 'Pod', metadata: { name: `on-${m.name}` }, spec: { containers: [{ name: 'c', image: 'example.com/c:1' }] },
      });
      expect([201, 409]).toContain(pod.status);
    }
    const created = await memberRequest(hub.apiserver, 'POST', '/apis/flotilla.io/v1alpha1/fleets', {
      apiVersion: 'flotilla.io/v1alpha1', kind: 'Fleet', metadata: { name: NAME }, spec: spec([member('east'), member('west')]),
    });
    expect(created.status, created.body).toBe(201);
    flotilla = await startFlotillaProcess({ fleet, dir: join(fleet.dir, 'hub-fleet-flotilla'), port: chartPort, tls: chart, hubFleet: { name: NAME, hubKubeconfig: chart.kubeconfig } });
    pid = flotilla.proc.pid;
  });

  afterAll(async () => {
    await flotilla?.stop();
    await hub?.stop();
  });

  const stillRunning = () => {
    expect(flotilla.proc.exited).toBe(false);
    expect(flotilla.proc.pid).toBe(pid);
  };

  it("serves both members' pods and says so in the Fleet's status, written only when it changes", async () => {
    expect(await podClusters()).toEqual(['east', 'west']);
    const s = await statusFor(1, 'east and west connected and synced, Ready', (st) => synced(st, ['east', 'west']) && condition(st, 'Ready')?.status === 'True');
    expect(s.members.map((m) => m.name)).toEqual(['east', 'west']);
    expect(condition(s, 'Accepted')).toMatchObject({ status: 'True', observedGeneration: 1 });
    // Nothing changes, nothing is written: the object stays at its resourceVersion across status ticks (2 s).
    const rv = async () => (await memberJson<{ metadata: { resourceVersion: string } }>(hub.apiserver, 'GET', FLEET_PATH)).metadata.resourceVersion;
    const before = await rv();
    await new Promise((r) => setTimeout(r, 5_000));
    expect(await rv()).toBe(before);
  }, 60_000);

  it('does not start on an invalid Fleet (exit 2, the message named Fleet/<name>); one without authentication starts, the hub reviewing tokens', async () => {
    const cases = [
      { name: 'bad', spec: spec([member('east'), member('east')]), message: 'Fleet/bad: clusters[1].name: duplicate cluster name "east"' },
      { name: 'no-auth', spec: { ...spec([member('east')]), authentication: undefined } },
    ];
    const outcomes: string[] = [];
    for (const c of cases) {
      const created = await memberRequest(hub.apiserver, 'POST', '/apis/flotilla.io/v1alpha1/fleets', { apiVersion: 'flotilla.io/v1alpha1', kind: 'Fleet', metadata: { name: c.name }, spec: c.spec });
      expect(created.status, created.body).toBe(201);
      const dir = join(fleet.dir, `hub-fleet-${c.name}`);
      outcomes.push(await startFlotillaProcess({ fleet, dir, hubFleet: { name: c.name, hubKubeconfig: hub.kubeconfig } }).then(
        async (f) => {
          // The hub vouches for the fleet's users: a member admin's token reads the cache.
          const read = await memberRequest(f.endpoint, 'GET', '/api/v1/pods?limit=1');
          await f.stop();
          return `started, read ${read.status}`;
        },
        (e: Error) => e.message,
      ));
      if (c.message) expect(readFileSync(join(dir, 'flotilla.log'), 'utf8')).toContain(c.message);
    }
    expect(outcomes[0]).toMatch(/^flotilla exited with 2:/);
    expect(outcomes[1]).toBe('started, read 200');
    // The invalid one says why in its status too.
    const bad = (await memberJson<{ status?: FleetStatus }>(hub.apiserver, 'GET', '/apis/flotilla.io/v1alpha1/fleets/bad')).status;
    expect(condition(bad, 'Accepted')).toMatchObject({ status: 'False', reason: 'Invalid', message: cases[0]!.message });
  });

  it('adds a member when the Fleet is edited, without a restart', async () => {
    const gen = await editFleet([member('east'), member('west'), member('north')]);
    await until('north pods served', async () => (await podClusters()).includes('north'), 30_000);
    expect(await podClusters()).toEqual(['east', 'north', 'west']);
    const s = await statusFor(gen, 'north listed, connected and synced', (st) => synced(st, ['east', 'west', 'north']));
    expect(s.members.map((m) => m.name)).toEqual(['east', 'west', 'north']);
    stillRunning();
  }, 90_000);

  it('removes a member when the Fleet is edited', async () => {
    const gen = await editFleet([member('east'), member('north')]);
    await until('west pods gone', async () => !(await podClusters()).includes('west'), 30_000);
    expect(await podClusters()).toEqual(['east', 'north']);
    const s = await statusFor(gen, 'west no longer listed', (st) => st.members.length === 2);
    expect(s.members.map((m) => m.name)).toEqual(['east', 'north']);
    stillRunning();
  }, 90_000);

  it('checks a Fleet against the schema the file is checked with (the CRD is generated from it)', async () => {
    const create = (name: string, fleetSpec: unknown, validation: 'Strict' | 'Warn') =>
      memberRequest(hub.apiserver, 'POST', `/apis/flotilla.io/v1alpha1/fleets?fieldValidation=${validation}`, { apiVersion: 'flotilla.io/v1alpha1', kind: 'Fleet', metadata: { name }, spec: fleetSpec });
    // Every field of the reference's example is in the CRD: stored as sent, nothing pruned, no warning.
    const example = parseYaml(EXAMPLE_FLEET_FILE) as Record<string, unknown>;
    const full = await create('schema-full', example, 'Strict');
    expect(full.status, full.body).toBe(201);
    expect(full.headers.warning).toBeUndefined();
    expect((JSON.parse(full.body) as { spec: unknown }).spec).toEqual(example);
    // A misspelt option: refused under strict field validation (kubectl's default), else pruned with a warning.
    const misspelt = { ...spec([member('east')]), options: { watchBufferSize: 4 } };
    const strict = await create('schema-misspelt', misspelt, 'Strict');
    expect(strict.status, strict.body).toBe(400);
    expect(strict.body).toContain('unknown field \\"spec.options.watchBufferSize\\"');
    const warned = await create('schema-misspelt', misspelt, 'Warn');
    expect(warned.status, warned.body).toBe(201);
    expect(String(warned.headers.warning)).toMatch(/unknown field \\?"spec\.options\.watchBufferSize/);
    expect((JSON.parse(warned.body) as { spec: { options: unknown } }).spec.options).toEqual({});
    // A wrong type or a bound passed: refused whatever the field validation.
    const wrong = await create('schema-wrong', { ...spec([member('east')]), options: { listPageSize: 'lots', eventLogSize: 5 } }, 'Warn');
    expect(wrong.status).toBe(422);
    expect(wrong.body).toContain('spec.options.listPageSize');
    expect(wrong.body).toContain('spec.options.eventLogSize');
    for (const name of ['schema-full', 'schema-misspelt']) expect((await memberRequest(hub.apiserver, 'DELETE', `/apis/flotilla.io/v1alpha1/fleets/${name}`)).status).toBe(200);
  });

  it("refuses an invalid edit with the file's message and keeps serving the running configuration", async () => {
    const invalid = [member('east'), member('north'), member('east', 'west-kubeconfig')];
    // What the same fleet gets as a file: the Secret references as kubeconfig paths, the messages named by the file.
    let fileMessage = '';
    try {
      parseFleetConfig(toYaml({ ...spec(invalid.map((c) => ({ name: c.name, kubeconfig: `/k/${c.name}` }))) }), '/etc/flotilla/fleet.yaml');
    } catch (e) {
      fileMessage = (e as Error).message;
    }
    expect(fileMessage).toBe('fleet.yaml: clusters[2].name: duplicate cluster name "east"');
    const gen = await editFleet(invalid);
    const s = await statusFor(gen, 'Accepted=False', (st) => condition(st, 'Accepted')?.status === 'False');
    expect(condition(s, 'Accepted')).toMatchObject({ reason: 'Invalid', message: fileMessage.replace('fleet.yaml:', `Fleet/${NAME}:`) });
    expect(s.members.map((m) => m.name)).toEqual(['east', 'north']);
    expect(await podClusters()).toEqual(['east', 'north']);
    const log = readFileSync(join(fleet.dir, 'hub-fleet-flotilla', 'flotilla.log'), 'utf8');
    expect(log).toContain(`configuration not reloaded, keeping the previous one:\nFleet/${NAME}: clusters[2].name: duplicate cluster name "east"`);
    // Made valid again: accepted again.
    const fixed = await editFleet([member('east'), member('north')]);
    await statusFor(fixed, 'Accepted=True again', (st) => condition(st, 'Accepted')?.status === 'True');
    stillRunning();
  }, 90_000);

  it('reports a missing Secret as the member\'s lastError and serves the others', async () => {
    const gen = await editFleet([member('east'), member('north'), member('west', 'no-such-secret')]);
    const s = await statusFor(gen, 'west with a lastError', (st) => st.members.some((m) => m.name === 'west' && m.lastError !== undefined));
    expect(s.members.find((m) => m.name === 'west')).toEqual({
      name: 'west', connected: false, syncedResources: 0, resources: 0, lastError: `kubeconfigSecretRef: Secret ${SECRETS_NS}/no-such-secret not found`,
    });
    expect(condition(s, 'Accepted')?.status).toBe('True');
    expect(condition(s, 'Ready')).toMatchObject({ status: 'False', reason: 'MissingCredentials' });
    expect(await podClusters()).toEqual(['east', 'north']);
    // The Secret appears: the member is connected, without an edit of the Fleet.
    hub.apply(toYaml({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'no-such-secret', namespace: SECRETS_NS }, stringData: { kubeconfig: memberKubeconfig(west) } }));
    await until('west pods served once its Secret exists', async () => (await podClusters()).includes('west'), 30_000);
    await statusFor(gen, 'west connected and synced', (st) => synced(st, ['east', 'north', 'west']) && condition(st, 'Ready')?.status === 'True');
    stillRunning();
  }, 90_000);

  it('reloads a rotated member credential, kept in one 0600 file per value', async () => {
    const credentials = () => readdirSync(join(flotilla.dataDir, 'hub')).sort();
    const before = credentials();
    expect(before.map((f) => f.replace(/-[0-9a-f]{16}\./, '.'))).toEqual(['east.kubeconfig', 'north.kubeconfig', 'west.kubeconfig']);
    for (const f of before) expect(statSync(join(flotilla.dataDir, 'hub', f)).mode & 0o777).toBe(0o600);
    // The same member, its kubeconfig Secret rewritten (as a rotation would): a new file, a new connection.
    hub.apply(toYaml({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'north-kubeconfig', namespace: SECRETS_NS }, stringData: { kubeconfig: `# rotated\n${memberKubeconfig(north)}` } }));
    await until('north on a new credential file', () => {
      const now = credentials().filter((f) => f.startsWith('north-'));
      return now.length === 1 && !before.includes(now[0]!);
    }, 30_000);
    await until('north pods served again', async () => (await podClusters()).includes('north'), 30_000);
    const log = readFileSync(join(fleet.dir, 'hub-fleet-flotilla', 'flotilla.log'), 'utf8');
    expect(log).toMatch(/configuration reloaded: 5 cacher\(s\) started, 5 stopped \(\+north\//);
    stillRunning();
  }, 90_000);
});
