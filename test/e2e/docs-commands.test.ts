import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { execFile } from 'node:child_process';
import { copyFileSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { findProjectRoot, type MemberInfo } from '../fleet/fleet.js';
import { memberRequest } from '../fleet/http.js';
import { startFlotillaProcess, type FlotillaProcess } from '../support/flotilla-process.js';
import { taggedBlocks, type DocBlock } from '../support/doc-blocks.js';
import { commandsOnPath } from '../support/commands-on-path.js';

/**
 * The docs' runnable commands (```sh runnable blocks of README.md and docs/*.md), run in document
 * order against flotilla in front of the test fleet, set up as the README's quickstart says: its
 * fleet file, in a directory holding each member's kubeconfig as `<member>.kubeconfig`. Each block
 * runs with `sh -e` in that directory, with KUBECONFIG (the fleet admin's kubeconfig for flotilla),
 * FLOTILLA_URL and FLOTILLA_CA set, `flotilla` and `kubectl-flotilla` on PATH (as `npm i -g`
 * installs them), and `alice.token` holding the user alice's bearer token. A
 * command that exits non-zero fails the test, so the commands in the docs cannot rot.
 */
const fleet = inject('fleet');
const root = findProjectRoot();
const dir = join(fleet.dir, 'docs-commands');
const blocks = taggedBlocks(root, 'runnable');
let flotilla: FlotillaProcess;
let binDir: string;

/** The namespace the docs' commands create on the members (removed afterwards: the fleet is shared). */
const DOCS_NAMESPACE = 'quickstart';

beforeAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  binDir = commandsOnPath(join(dir, 'bin'));
  for (const m of fleet.members) copyFileSync(m.kubeconfig, join(dir, `${m.name}.kubeconfig`));
  writeFileSync(join(dir, 'alice.token'), fleet.users.find((u) => u.name === 'alice')!.token);
  const fleetFile = taggedBlocks(root, 'fleet-file').find((b) => b.file === 'README.md');
  if (!fleetFile) throw new Error('README.md shows no ```yaml fleet-file block');
  flotilla = await startFlotillaProcess({ fleet, dir, fleetFile: fleetFile.text });
});

afterAll(async () => {
  await flotilla?.stop();
  await Promise.all(fleet.members.map((m: MemberInfo) => memberRequest(m, 'DELETE', `/api/v1/namespaces/${DOCS_NAMESPACE}`)));
});

function run(block: DocBlock): Promise<{ code: number; stderr: string; stdout: string }> {
  const env = { ...process.env, KUBECONFIG: flotilla.kubeconfig, FLOTILLA_URL: flotilla.url, FLOTILLA_CA: flotilla.endpoint.caFile, PATH: `${binDir}:${process.env.PATH}` };
  return new Promise((resolve) => {
    // -x: the failing command is the last one echoed to stderr.
    execFile('sh', ['-ex', '-c', block.text], { cwd: dir, env, timeout: 30_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

describe('the runnable commands of the docs', () => {
  it('are there', () => {
    expect(blocks.length).toBeGreaterThan(3);
  });

  it.each(blocks.map((b) => [`${b.file}:${b.line}`, b] as const))('%s runs', async (where, block) => {
    const r = await run(block);
    expect(r.code, `${where} exited ${r.code}:\n${r.stderr.slice(-2000)}`).toBe(0);
  });
});
