import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { execFile } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { MemberInfo } from '../fleet/fleet.js';
import { findProjectRoot } from '../fleet/fleet.js';
import { memberRequest } from '../fleet/http.js';
import { commandsOnPath } from '../support/commands-on-path.js';
import { DEFAULT_RESOURCES, startFlotillaProcess, type FlotillaProcess } from '../support/flotilla-process.js';
import { kubectl } from '../support/kubectl.js';

/**
 * The `flotilla` command and the `kubectl flotilla` plugin as users run them: the built binaries
 * against a flotilla in front of two members. The plugin is found by kubectl itself, on PATH as
 * `kubectl-flotilla`, a symlink to the built file (what `npm i -g` makes).
 */
const fleet = inject('fleet');
const [east, west] = fleet.members as [MemberInfo, MemberInfo];
const root = findProjectRoot();
const dir = join(fleet.dir, 'flotilla-cli');
const binDir = join(dir, 'bin');
const NAME = 'cli-which';
let flotilla: FlotillaProcess;

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function run(command: string, args: string[], env: NodeJS.ProcessEnv = {}): Promise<Run> {
  return new Promise((resolve) => {
    execFile(command, args, { env: { ...process.env, PATH: `${binDir}:${process.env.PATH}`, ...env }, timeout: 30_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr });
    });
  });
}
const flotillaCli = (args: string[]) => run(process.execPath, [join(root, 'dist', 'src', 'main.js'), ...args]);

const configMap = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: NAME }, data: { held: 'yes' } };

beforeAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  commandsOnPath(binDir);
  // The same name on east and west, the members flotilla is in front of.
  for (const m of [east, west]) {
    const res = await memberRequest(m, 'POST', '/api/v1/namespaces/default/configmaps', configMap);
    expect([201, 409], res.body).toContain(res.status);
  }
  flotilla = await startFlotillaProcess({ fleet, members: [east, west], dir, resources: [...DEFAULT_RESOURCES, { version: 'v1', resource: 'configmaps' }] });
});

afterAll(async () => {
  await flotilla?.stop();
  for (const m of [east, west]) await memberRequest(m, 'DELETE', `/api/v1/namespaces/default/configmaps/${NAME}`);
});

describe('flotilla check-config', () => {
  it('says ok for the running fleet file, and names a misspelt option by its path (exit 1)', async () => {
    const good = await flotillaCli(['check-config', flotilla.configPath]);
    expect(good.code, good.stderr).toBe(0);
    expect(good.stdout).toMatch(/^ok: /);
    const misspelt = join(dir, 'misspelt.yaml');
    writeFileSync(misspelt, `${readFileSync(flotilla.configPath, 'utf8')}options:\n  pageSzie: 100\n`);
    const bad = await flotillaCli(['check-config', misspelt]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/^misspelt\.yaml: options\.pageSzie: unknown field/m);
    expect(bad.stdout).toBe('');
  });
});

describe('flotilla status', () => {
  it('prints /status through the kubeconfig with -o json, and as tables without colour off a TTY', async () => {
    const json = await flotillaCli(['status', '--kubeconfig', flotilla.kubeconfig, '-o', 'json']);
    expect(json.code, json.stderr).toBe(0);
    const status = JSON.parse(json.stdout) as { members: { cluster: string; silent: boolean }[]; cachers: { cluster: string; resource: string; phase: string }[] };
    expect(status.members.map((m) => [m.cluster, m.silent]).sort()).toEqual([[east.name, false], [west.name, false]]);
    expect(status.cachers.filter((c) => c.resource === 'v1/configmaps').map((c) => c.cluster).sort()).toEqual([east.name, west.name]);

    const table = await flotillaCli(['status', '--kubeconfig', flotilla.kubeconfig, '--context', 'flotilla']);
    expect(table.code, table.stderr).toBe(0);
    expect(table.stdout).not.toContain('\u001b[');
    expect(table.stdout).toMatch(new RegExp(`^${east.name} +ok +\\d+s ago`, 'm'));
    expect(table.stdout).toMatch(new RegExp(`^${west.name} +v1/configmaps +watching +yes +\\d+ +`, 'm'));
  });

  it('says why it cannot read /status (a context the kubeconfig lacks; a caller refused)', async () => {
    const noContext = await flotillaCli(['status', '--kubeconfig', flotilla.kubeconfig, '--context', 'nowhere']);
    expect(noContext.code).toBe(1);
    expect(noContext.stderr).toBe('flotilla: context "nowhere" is not in the kubeconfig\n');
    const alice = fleet.users.find((u) => u.name === 'alice')!;
    const kubeconfig = join(dir, 'alice.kubeconfig');
    const written = await flotillaCli(['kubeconfig', '--user', 'alice', '--server', flotilla.url, '--ca-file', flotilla.endpoint.caFile, '--token', alice.token]);
    writeFileSync(kubeconfig, written.stdout);
    const refused = await flotillaCli(['status', '--kubeconfig', kubeconfig]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toBe(`flotilla: ${flotilla.url}/status: HTTP 403: forbidden: User "alice" cannot get path "/status"\n`);
  });
});

describe('kubectl flotilla', () => {
  it('is found by kubectl plugin list', async () => {
    const list = await run('kubectl', ['plugin', 'list']);
    expect(list.stdout).toContain(join(binDir, 'kubectl-flotilla'));
    expect(list.stderr).not.toMatch(/kubectl-flotilla.*(not executable|overshadow)/);
  });

  it('clusters: each member healthy, through kubectl\'s $KUBECONFIG', async () => {
    const res = await run('kubectl', ['flotilla', 'clusters'], { KUBECONFIG: flotilla.kubeconfig });
    expect(res.code, res.stderr).toBe(0);
    const rows = res.stdout.trimEnd().split('\n');
    expect(rows[0]).toMatch(/^NAME +HEALTH +SYNCED +OBJECTS +LAST EVENT/);
    expect(rows.slice(1).map((r) => r.split(/ +/).slice(0, 2))).toEqual([[east.name, 'ok'], [west.name, 'ok']]);
    for (const row of rows.slice(1)) expect(row).toMatch(/^\S+ +ok +(\d+)\/\1 +\d+ +/);
  });

  it('which: the members holding a name, read from each object\'s cluster annotation', async () => {
    const res = await run('kubectl', ['flotilla', 'which', 'cm', NAME, '-n', 'default', '--kubeconfig', flotilla.kubeconfig]);
    expect(res.code, res.stderr).toBe(0);
    expect(res.stdout).toBe(`CLUSTER   NAMESPACE   NAME\n${[east.name, west.name].sort().map((c) => `${c.padEnd(7)}   default     ${NAME}`).join('\n')}\n`);
    const none = await run('kubectl', ['flotilla', 'which', 'configmaps', 'no-such-name', '--kubeconfig', flotilla.kubeconfig]);
    expect(none.code).toBe(1);
    expect(none.stderr).toBe('configmaps "no-such-name" is on no member in namespace default\n');
  });
});

describe('flotilla kubeconfig', () => {
  it('writes a kubeconfig kubectl lists pods with, for the fleet and one member', async () => {
    const out = await flotillaCli(['kubeconfig', '--user', 'admin', '--server', flotilla.url, '--ca-file', flotilla.endpoint.caFile, '--token', flotilla.endpoint.token, '--members', east.name]);
    expect(out.code, out.stderr).toBe(0);
    const file = join(dir, 'user.kubeconfig');
    writeFileSync(file, out.stdout);
    const all = await kubectl(file, ['get', 'pods', '-A', '-o', 'name']);
    expect(all.code, all.stderr).toBe(0);
    const one = await kubectl(file, ['--context', `flotilla-${east.name}`, 'get', 'configmap', NAME, '-n', 'default', '-o', 'jsonpath={.metadata.annotations.search\\.flotilla\\.io/cluster}']);
    expect(one.code, one.stderr).toBe(0);
    expect(one.stdout).toBe(east.name);
  });
});
