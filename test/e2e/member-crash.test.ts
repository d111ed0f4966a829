import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { join } from 'node:path';
import { startFleet, type Fleet } from '../fleet/fleet.js';
import { memberJson, memberRequest } from '../fleet/http.js';
import { startFlotillaProcess, writeProxyKubeconfig, type FlotillaProcess } from '../support/flotilla-process.js';
import { cacherStatus } from '../support/compare.js';
import { openWatch, type OpenWatch } from '../support/watch-client.js';
import { startFaultRelay, type FaultRelay } from '../support/fault-relay.js';

/**
 * A member connection that fails mid-watch (a network cut, the member's apiserver killed) ends
 * flotilla's watch on it with an error, not as a watch that ended. The cacher watches again from
 * the last event it committed, so a client watching through flotilla sees every change once.
 * Flotilla reaches the member through a TCP relay here, so that the test can cut its connections
 * while the apiserver (and its watch cache) stays up.
 */
const PATH = '/api/v1/namespaces/default/configmaps';
const CLUSTER = 'crashing';
let fleet: Fleet;
let flotilla: FlotillaProcess;
let relay: FaultRelay;

beforeAll(async () => {
  fleet = await startFleet({ names: [CLUSTER], dir: join(inject('fleet').dir, 'member-crash-fleet'), workloads: false });
  const member = fleet.info.members[0]!;
  relay = await startFaultRelay(member.port);
  const kubeconfig = join(fleet.info.dir, 'relayed-kubeconfig');
  writeProxyKubeconfig(kubeconfig, `https://127.0.0.1:${relay.port}`, member.caFile, member.token, CLUSTER);
  flotilla = await startFlotillaProcess({
    fleet: fleet.info,
    dir: join(fleet.info.dir, 'flotilla'),
    members: [{ ...member, kubeconfig }],
    resources: [{ version: 'v1', resource: 'configmaps' }],
  });
});

afterAll(async () => {
  await flotilla?.stop();
  await relay?.close();
  await fleet?.stop();
});

const watchesMade = async () => (await cacherStatus(flotilla.endpoint)).find((c) => c.cluster === CLUSTER)!.watches;
const added = (watch: OpenWatch) => watch.events.filter((e) => e.type === 'ADDED').map((e) => e.object.metadata?.name);

/** Changes before `fault`, then after it; a watcher through flotilla must see each exactly once. */
async function eachChangeOnceAcross(prefix: string, fault: () => Promise<void>): Promise<void> {
  const list = await memberJson<{ metadata: { resourceVersion: string } }>(flotilla.endpoint, 'GET', PATH);
  const watch = await openWatch(flotilla.endpoint, `${PATH}?watch=1&resourceVersion=${encodeURIComponent(list.metadata.resourceVersion)}`);
  expect(watch.status).toBe(200);
  try {
    const before = [1, 2, 3, 4, 5].map((i) => `${prefix}-before-${i}`);
    for (const name of before) await create(name);
    await watch.until(() => before.every((n) => added(watch).includes(n)));
    const watchesBefore = await watchesMade();

    await fault();
    const after = [1, 2, 3].map((i) => `${prefix}-after-${i}`);
    for (const name of after) await create(name);
    // The cacher backs off while the member is unreachable (up to several seconds by then).
    await watch.until(() => after.every((n) => added(watch).includes(n)), 60_000);

    expect(await watchesMade()).toBeGreaterThan(watchesBefore);
    // Watched again from the failed watch's start RV, the member would send the before-* again.
    expect(added(watch)).toEqual([...before, ...after]);
    expect(watch.events.filter((e) => e.type !== 'ADDED' && e.type !== 'BOOKMARK')).toEqual([]);
  } finally {
    watch.close();
  }
}

async function create(name: string): Promise<void> {
  const member = fleet.info.members[0]!;
  const res = await memberRequest(member, 'POST', PATH, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data: { a: 'b' } });
  expect(res.status).toBe(201);
}

describe('a member connection that fails mid-watch', () => {
  it('cut by the network: watched again from the last event committed, no change reaches a watcher twice', async () => {
    await eachChangeOnceAcross('cut', async () => relay.cut());
  }, 120_000);

  it('its apiserver killed and started again: no change reaches a watcher twice', async () => {
    await eachChangeOnceAcross('crash', () => fleet.crashApiserver(CLUSTER));
  }, 120_000);
});
