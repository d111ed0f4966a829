import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { execFile } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify as toYaml } from 'yaml';
import { findProjectRoot, type MemberInfo } from '../fleet/fleet.js';
import { memberRequest } from '../fleet/http.js';
import { startFlotillaProcess, type FlotillaProcess } from '../support/flotilla-process.js';
import { cacherStatus } from '../support/compare.js';
import { until } from '../support/poll.js';

/**
 * Members' labels from the fleet file, shown by /status, `flotilla status` and
 * `kubectl flotilla clusters`, and a change of labels alone applied by a reload at once: no
 * restart, no cacher started, stopped or listed again.
 */
const fleet = inject('fleet');
const [east, west] = fleet.members as [MemberInfo, MemberInfo];
const root = findProjectRoot();
const dir = join(fleet.dir, 'cluster-labels');
let flotilla: FlotillaProcess;

function fleetFile(eastEnv: string): string {
  return toYaml({
    clusters: [
      { name: east.name, kubeconfig: east.kubeconfig, labels: { region: 'eu', env: eastEnv } },
      { name: west.name, kubeconfig: west.kubeconfig, labels: { region: 'us' } },
    ],
    resources: [{ version: 'v1', resource: 'namespaces' }],
    authentication: { tokenReviewCluster: east.name },
  });
}

/** A built command (`dist/src/main.js`, `dist/src/cli/kubectl-plugin.js`) as users run it. */
function run(script: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [join(root, 'dist', 'src', script), ...args], { timeout: 30_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr });
    });
  });
}

async function memberLabels(): Promise<Record<string, Record<string, string> | undefined>> {
  const status = JSON.parse((await memberRequest(flotilla.endpoint, 'GET', '/status')).body) as { members: { cluster: string; labels?: Record<string, string> }[] };
  return Object.fromEntries(status.members.map((m) => [m.cluster, m.labels]));
}

beforeAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  flotilla = await startFlotillaProcess({ fleet, dir, fleetFile: fleetFile('staging') });
});

afterAll(async () => {
  await flotilla?.stop();
});

describe('cluster labels', () => {
  it('are shown by /status, flotilla status and kubectl flotilla clusters', async () => {
    expect(await memberLabels()).toEqual({ [east.name]: { region: 'eu', env: 'staging' }, [west.name]: { region: 'us' } });
    const status = await run('main.js', ['status', '--kubeconfig', flotilla.kubeconfig]);
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toMatch(/^MEMBER +HEALTH +LAST ANSWER +LABELS +ERROR$/m);
    expect(status.stdout).toMatch(new RegExp(`^${east.name} +ok +\\d+s ago +env=staging,region=eu`, 'm'));
    const clusters = await run('cli/kubectl-plugin.js', ['clusters', '--kubeconfig', flotilla.kubeconfig]);
    expect(clusters.code, clusters.stderr).toBe(0);
    expect(clusters.stdout).toMatch(new RegExp(`^${west.name} +ok +.* region=us`, 'm'));
  });

  it('a change of labels alone is applied at once: nothing restarted, started, stopped or listed again', async () => {
    const before = await cacherStatus(flotilla.endpoint);
    writeFileSync(flotilla.configPath, fleetFile('prod'));
    await until('the new labels at /status', async () => (await memberLabels())[east.name]?.env === 'prod', 10_000);
    expect(await memberLabels()).toEqual({ [east.name]: { region: 'eu', env: 'prod' }, [west.name]: { region: 'us' } });
    expect(readFileSync(flotilla.proc.logPath, 'utf8')).toContain('configuration reloaded: 0 cacher(s) started, 0 stopped');
    const after = await cacherStatus(flotilla.endpoint);
    expect(after.map((c) => [c.cluster, c.resource, c.watches, c.relists]).sort()).toEqual(before.map((c) => [c.cluster, c.resource, c.watches, c.relists]).sort());
  });
});
