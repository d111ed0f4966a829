import { describe, expect, it } from 'vitest';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkConfig } from '../../../src/cli/check-config.js';
import { capturedIo } from './io.js';

const dir = mkdtempSync(join(tmpdir(), 'flotilla-check-config-'));
function file(name: string, text: string): string {
  writeFileSync(join(dir, name), text);
  return join(dir, name);
}
const GOOD = 'clusters: [{ name: east, kubeconfig: k }]\nresources: [{ version: v1, resource: pods }]\nauthentication: { tokenReviewCluster: east }\n';

describe('flotilla check-config', () => {
  it('says ok (exit 0) for a valid file', async () => {
    const io = capturedIo();
    expect(await checkConfig(file('good.yaml', GOOD), io)).toBe(0);
    expect(io.stdout()).toMatch(/^ok: .*good\.yaml: 1 clusters, 1 resources, 0 tenants\n$/);
    expect(io.stderr()).toBe('');
  });

  it('names each problem by its field path, a line each (exit 1)', async () => {
    const io = capturedIo();
    const bad = file('bad.yaml', `${GOOD}options:\n  pageSzie: 100\n  memberHeartbeatMilliseconds: fast\n`);
    expect(await checkConfig(bad, io)).toBe(1);
    const lines = io.stderr().trimEnd().split('\n');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/^bad\.yaml: options\.pageSzie: unknown field/);
    expect(lines[1]).toMatch(/^bad\.yaml: options\.memberHeartbeatMilliseconds: /);
    expect(io.stdout()).toBe('');
  });

  it('fails on a file it cannot read', async () => {
    const io = capturedIo();
    expect(await checkConfig(join(dir, 'missing.yaml'), io)).toBe(1);
    expect(io.stderr()).toMatch(/missing\.yaml: cannot read the fleet configuration/);
  });

  it('warns, exit 0, when callers would be authenticated only by flags', async () => {
    const io = capturedIo();
    expect(await checkConfig(file('noauth.yaml', 'clusters: [{ name: east, kubeconfig: k }]\nresources: [{ version: v1, resource: pods }]\n'), io)).toBe(0);
    expect(io.stderr()).toMatch(/^warning: noauth\.yaml: authentication: flotilla has no way to authenticate callers/);
  });
});
