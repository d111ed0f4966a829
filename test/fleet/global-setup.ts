import { rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { TestProject } from 'vitest/node';
import { reapStalePids } from './processes.js';
import { startFleet, type Fleet, type FleetInfo } from './fleet.js';

declare module 'vitest' {
  export interface ProvidedContext {
    fleet: FleetInfo;
  }
}

export const TEST_MEMBERS = ['east', 'west', 'north'];

/**
 * One real fleet for the whole test run: three members on loopback, started in parallel, stopped
 * by PID afterwards (also when a test fails; on an interrupted run, the next run reaps them).
 */
let fleet: Fleet | undefined;

export async function setup(project: TestProject): Promise<void> {
  const dir = resolve(process.env.FLOTILLA_TEST_FLEET_DIR ?? join('.cache', 'test-fleet'));
  reapStalePids(join(dir, 'pids'));
  rmSync(dir, { recursive: true, force: true });
  fleet = await startFleet({ names: TEST_MEMBERS, dir });
  project.provide('fleet', fleet.info);
}

export async function teardown(): Promise<void> {
  await fleet?.stop();
}
