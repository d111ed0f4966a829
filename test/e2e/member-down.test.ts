import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { join } from 'node:path';
import { startFleet, type Fleet } from '../fleet/fleet.js';
import { memberRequest } from '../fleet/http.js';
import { startFlotillaProcess, type FlotillaProcess } from '../support/flotilla-process.js';
import { cacherStatus, expectConverged } from '../support/compare.js';
import { kubectl } from '../support/kubectl.js';

/**
 * A member that goes down does not fail the fleet: flotilla keeps serving every member's cached
 * state, and says which cluster is stale in a Warning header (kubectl prints it).
 */
const PATH = '/api/v1/namespaces/default/configmaps';
let fleet: Fleet;
let flotilla: FlotillaProcess;

beforeAll(async () => {
  fleet = await startFleet({ names: ['up', 'down'], dir: join(inject('fleet').dir, 'member-down-fleet'), workloads: false });
  for (const m of fleet.info.members) {
    const res = await memberRequest(m, 'POST', PATH, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `cm-${m.name}` }, data: { a: 'b' } });
    expect(res.status).toBe(201);
  }
  flotilla = await startFlotillaProcess({ fleet: fleet.info, dir: join(fleet.info.dir, 'flotilla'), resources: [{ version: 'v1', resource: 'configmaps' }] });
  await expectConverged(flotilla.endpoint, fleet.info.members, PATH);
});

afterAll(async () => {
  await flotilla?.stop();
  await fleet?.stop();
});

describe('a member that is down', () => {
  it('keeps its cached objects served, with a warning naming it', async () => {
    const before = JSON.parse((await memberRequest(flotilla.endpoint, 'GET', PATH)).body) as { items: { metadata: { name: string } }[] };
    await fleet.stopApiserver('down');
    const deadline = Date.now() + 20_000;
    while (Date.now() < deadline) {
      const s = await cacherStatus(flotilla.endpoint);
      if (s.find((c) => c.cluster === 'down')?.phase === 'backoff') break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const res = await memberRequest(flotilla.endpoint, 'GET', PATH);
    expect(res.status).toBe(200);
    const after = JSON.parse(res.body) as { items: { metadata: { name: string } }[] };
    expect(after.items.map((i) => i.metadata.name)).toEqual(before.items.map((i) => i.metadata.name));
    expect(after.items.map((i) => i.metadata.name)).toContain('cm-down');
    expect(String(res.headers.warning)).toContain('cluster down is not reachable');
    expect(String(res.headers.warning)).not.toContain('cluster up ');

    // A get of the down member's object still answers from the cache.
    expect((await memberRequest(flotilla.endpoint, 'GET', `${PATH}/cm-down`)).status).toBe(200);
    // The healthy member's own view carries no warning.
    expect((await memberRequest(flotilla.endpoint, 'GET', `/clusters/up${PATH}`)).headers.warning).toBeUndefined();
    // kubectl shows the warning and the objects.
    const k = await kubectl(flotilla.kubeconfig, ['get', 'configmaps', '-n', 'default', '-o', 'name']);
    expect(k.code).toBe(0);
    expect(k.stdout).toContain('configmap/cm-down');
    expect(k.stderr).toContain('Warning: flotilla: cluster down is not reachable');
    // Still ready: one member down does not take the fleet down.
    expect((await memberRequest(flotilla.endpoint, 'GET', '/readyz')).status).toBe(200);
  });

  it('restarted while every member is down, serves the cached state from what it saved of discovery', async () => {
    await flotilla.stop();
    await fleet.stopApiserver('up');
    // Token review needs a member; the fleet's static token file does not.
    flotilla = await startFlotillaProcess({
      fleet: fleet.info,
      dir: join(fleet.info.dir, 'flotilla'),
      resources: [{ version: 'v1', resource: 'configmaps' }],
      authentication: { tokenFile: join(fleet.info.dir, 'tokens.csv') },
      waitReady: false,
    });
    const res = await memberRequest(flotilla.endpoint, 'GET', PATH);
    expect(res.status).toBe(200);
    const names = (JSON.parse(res.body) as { items: { metadata: { name: string } }[] }).items.map((i) => i.metadata.name);
    expect(names).toEqual(expect.arrayContaining(['cm-up', 'cm-down']));
    expect(String(res.headers.warning)).toContain('cluster down is not reachable');
    expect(String(res.headers.warning)).toContain('cluster up is not reachable');
    expect((await memberRequest(flotilla.endpoint, 'GET', `${PATH}/cm-up`)).status).toBe(200);
  });
});
