import { afterEach, describe, expect, it, vi } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CacheManager } from '../../../src/cacher/cache-manager.js';
import { parseFleetConfig } from '../../../src/registry/config.js';
import { Store } from '../../../src/store/store.js';

// No object is ingested here: the worker pool (a compiled worker file) is not started.
vi.mock('../../../src/ingest/pool.js', () => ({ IngestPool: class { async close(): Promise<void> {} } }));

/** A fleet file of one member that answers nobody (nothing here needs it to), labelled as given. */
function fleetWith(labels: string): string {
  return `clusters:
  - name: east
    server: https://127.0.0.1:1
    insecureSkipTLSVerify: true
    authorization: subjectAccessReview
    labels: ${labels}
resources:
  # Selects no member: no cacher to start, whose discovery would wait for one.
  - { version: v1, resource: pods, clusterSelector: { matchLabels: { tier: none } } }
options:
  memberHeartbeatMilliseconds: 60000
`;
}

describe('a reload that changes only a cluster\'s labels', () => {
  let dir: string | undefined;
  let stop: (() => Promise<void>) | undefined;
  afterEach(async () => {
    await stop?.();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('takes effect at once and keeps the member\'s client (its cachers and watches go on)', async () => {
    dir = mkdtempSync(join(tmpdir(), 'flotilla-labels-'));
    const store = Store.open(dir);
    const manager = new CacheManager(store);
    stop = async () => {
      await manager.stop();
      await store.close();
    };
    const told: string[][] = [];
    manager.onLabelsChange((clusters) => told.push([...clusters, ...Object.values(manager.clusterLabels('east'))]));
    await manager.apply(parseFleetConfig(fleetWith('{ region: eu, env: staging }'), 'fleet.yaml'));
    const client = manager.member('east');
    expect(manager.clusterLabels('east')).toEqual({ region: 'eu', env: 'staging' });

    const result = await manager.apply(parseFleetConfig(fleetWith('{ region: eu, env: prod }'), 'fleet.yaml'));
    expect(result).toEqual({ started: [], stopped: [] });
    expect(manager.member('east')).toBe(client);
    expect(manager.clusterLabels('east')).toEqual({ region: 'eu', env: 'prod' });
    expect(manager.clusterLabels('nowhere')).toEqual({});
    // Told once, after the labels changed (not when the member joined, nor for a reload that changes none).
    await manager.apply(parseFleetConfig(fleetWith('{ env: prod, region: eu }'), 'fleet.yaml'));
    expect(told).toEqual([['east', 'eu', 'prod']]);
  });
});
