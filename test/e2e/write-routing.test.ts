import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseYaml, stringify as toYaml } from 'yaml';
import { memberJson, memberRequest } from '../fleet/http.js';
import { startFlotillaProcess, type FlotillaProcess } from '../support/flotilla-process.js';
import { kubectl, kubectlOk } from '../support/kubectl.js';
import { until } from '../support/poll.js';
import { CLUSTER_ANNOTATION } from '../../src/api/fleet-object/index.js';

/**
 * A name two members hold, written with real kubectl (the oldest minor the fleet installs, 1.27, and
 * the newest): a write that does not say which copy is refused at once with flotilla's message (a
 * 409 Conflict would be retried, `kubectl scale` for five minutes), and one whose object carries
 * flotilla's cluster annotation (a `get -o yaml` applied back) lands on that member, without it.
 */
const fleet = inject('fleet');
const east = fleet.members.find((m) => m.name === 'east')!;
const west = fleet.members.find((m) => m.name === 'west')!;
const NS = 'write-routing';
const VERSIONS = ['1.27', undefined] as const;
let flotilla: FlotillaProcess;

const deployment = { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'twin' }, spec: { replicas: 1, selector: { matchLabels: { app: 'twin' } }, template: { metadata: { labels: { app: 'twin' } }, spec: { containers: [{ name: 'c', image: 'example.com/c:1' }] } } } };
const configMap = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'twin' }, data: { v: '0' } };

beforeAll(async () => {
  for (const m of [east, west]) {
    await memberJson(m, 'POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
    await memberJson(m, 'POST', `/apis/apps/v1/namespaces/${NS}/deployments`, deployment);
    await memberJson(m, 'POST', `/api/v1/namespaces/${NS}/configmaps`, configMap);
  }
  flotilla = await startFlotillaProcess({
    fleet, dir: join(fleet.dir, 'flotilla-write-routing'), members: [east, west],
    resources: [{ version: 'v1', resource: 'namespaces' }, { version: 'v1', resource: 'configmaps' }, { group: 'apps', version: 'v1', resource: 'deployments' }],
  });
  await until('both copies cached', async () => {
    const res = await memberRequest(flotilla.endpoint, 'GET', `/apis/apps/v1/namespaces/${NS}/deployments/twin`);
    return String(res.headers['warning'] ?? '').includes('east, west');
  });
}, 120_000);

afterAll(async () => {
  await flotilla?.stop();
});

/** A write request kubectl made, as its -v=6 log shows it (the older and the structured form). */
interface Sent {
  verb: string;
  status: number;
  ms: number;
}

function writesSent(stderr: string): Sent[] {
  const sent: Sent[] = [];
  for (const m of stderr.matchAll(/\] (PATCH|PUT|POST) \S+ (\d{3})[^\n]* in (\d+) milliseconds/g)) sent.push({ verb: m[1]!, status: Number(m[2]), ms: Number(m[3]) });
  for (const m of stderr.matchAll(/verb="(PATCH|PUT|POST)" url="[^"]*" status="(\d{3})[^"]*" milliseconds=(\d+)/g)) sent.push({ verb: m[1]!, status: Number(m[2]), ms: Number(m[3]) });
  return sent;
}

/**
 * A kubectl run with its requests logged: the write flotilla answered, how fast, and whether
 * kubectl tried it again (its own start, discovery and OpenAPI schema take seconds of their own).
 */
async function run(args: string[], version?: string, input?: string): Promise<{ code: number; stderr: string; writes: Sent[]; ms: number }> {
  const start = Date.now();
  const r = await kubectl(flotilla.kubeconfig, ['-v=6', ...args], { ...(version ? { version } : {}), ...(input !== undefined ? { input } : {}), timeoutMs: 30_000 });
  return { code: r.code, stderr: r.stderr, writes: writesSent(r.stderr), ms: Date.now() - start };
}

/** One write, answered `status` within a second: refused once, not retried. */
function answeredOnce(r: { writes: Sent[]; stderr: string }, status: number): void {
  expect(r.writes.map((w) => w.status), r.stderr.slice(-2000)).toEqual([status]);
  expect(r.writes[0]!.ms).toBeLessThan(1000);
}

describe.each(VERSIONS)('kubectl %s', (version) => {
  beforeAll(async () => {
    // Discovery cached first: what is timed is the write.
    await kubectlOk(flotilla.kubeconfig, ['get', 'deployments', '-n', NS], version ? { version } : {});
  });

  it('scale of a deployment both members hold answers within a second with flotilla’s message', async () => {
    const r = await run(['scale', '-n', NS, 'deployment/twin', '--replicas=2'], version);
    expect(r.code).not.toBe(0);
    answeredOnce(r, 400);
    expect(r.stderr).toMatch(/exists in clusters east, west: flotilla cannot tell which one is meant/);
    expect(r.stderr).toContain('/clusters/<name>/');
    expect(r.stderr).toContain(CLUSTER_ANNOTATION);
    // kubectl scale retries a 409 Conflict for five minutes: the whole command ends at once.
    expect(r.ms).toBeLessThan(3000);
    for (const m of [east, west]) expect((await memberJson<typeof deployment>(m, 'GET', `/apis/apps/v1/namespaces/${NS}/deployments/twin`)).spec.replicas).toBe(1);
  });

  it('apply of a manifest without the annotation answers within a second with flotilla’s message', async () => {
    const r = await run(['apply', '-f', '-'], version, toYaml({ ...configMap, metadata: { name: 'twin', namespace: NS }, data: { v: `unrouted-${version}` } }));
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/exists in clusters east, west: flotilla cannot tell which one is meant/);
    answeredOnce(r, 400);
  });

  it('apply of what `get -o yaml` showed lands on the member its annotation names, without the annotation', async () => {
    for (const m of [east, west]) {
      // Each member's copy as flotilla shows it (its annotation names the member), changed, applied to the fleet.
      const shown = parseYaml(await kubectlOk(flotilla.kubeconfig, ['--server', `${flotilla.url}/clusters/${m.name}`, 'get', 'configmap', 'twin', '-n', NS, '-o', 'yaml'], version ? { version } : {})) as typeof configMap & { metadata: { annotations: Record<string, string> } };
      expect(shown.metadata.annotations[CLUSTER_ANNOTATION]).toBe(m.name);
      shown.data.v = `${m.name}-${version ?? 'newest'}`;
      const file = join(fleet.dir, 'flotilla-write-routing', `twin-${m.name}.yaml`);
      writeFileSync(file, toYaml(shown));
      const r = await run(['apply', '-f', file], version);
      expect(r.code, r.stderr.slice(-2000)).toBe(0);
      answeredOnce(r, 200);
    }
    for (const m of [east, west]) {
      const held = await memberJson<{ data: { v: string }; metadata: { annotations?: Record<string, string> } }>(m, 'GET', `/api/v1/namespaces/${NS}/configmaps/twin`);
      expect(held.data.v).toBe(`${m.name}-${version ?? 'newest'}`);
      expect(held.metadata.annotations?.[CLUSTER_ANNOTATION]).toBeUndefined();
    }
  });
});
