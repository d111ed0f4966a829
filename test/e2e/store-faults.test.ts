import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { findProjectRoot, type MemberInfo } from '../fleet/fleet.js';
import { memberJson, memberRequest } from '../fleet/http.js';
import { expectConverged, flotillaView, inParallel, membersView } from '../support/compare.js';
import { startFlotillaProcess, waitReady, type FlotillaProcess, type FlotillaStart } from '../support/flotilla-process.js';
import { damageObjectPages } from '../support/store-damage.js';

/**
 * Disk and store faults, on the real fleet: a store file damaged while flotilla was stopped, an
 * unwritable data directory, and a data volume without room (at start, then filling up while
 * flotilla runs). Each is said in a log line and at /status, readiness is false while flotilla
 * cannot keep up, nothing wrong is ever served, and flotilla recovers by itself.
 */
const NS = 'store-faults';
const PATH = `/api/v1/namespaces/${NS}/configmaps`;
const PER_MEMBER = 1500;
const fleetInfo = inject('fleet');
const members: MemberInfo[] = fleetInfo.members.slice(0, 2);
const base = join(fleetInfo.dir, 'store-faults');
const running: FlotillaProcess[] = [];
const mounts: string[] = [];

/** Opens a store without the check (Store.open's verify: false) and counts what a list of NS would serve. */
const UNCHECKED_COUNT = `
  const { Store } = await import('./dist/src/store/store.js');
  const [dir, ns] = process.argv.slice(-2);
  const store = Store.open(dir, { verify: false });
  console.log([...store.entries('v1/configmaps', { namespace: ns })].length);
  await store.close();
`;

/** Root may mount a tmpfs of a given size: the real thing for a volume without room. */
const isRoot = process.getuid?.() === 0;

function start(name: string, extra: Partial<FlotillaStart> = {}): Promise<FlotillaProcess> {
  return startFlotillaProcess({ fleet: fleetInfo, dir: join(base, name), members, resources: [{ version: 'v1', resource: 'configmaps', namespaces: [NS] }], ...extra }).then((f) => {
    running.push(f);
    return f;
  });
}

async function status(f: FlotillaProcess): Promise<{ synced: boolean; store?: { writable: boolean; full?: { message: string }; rebuilt?: { fault: string; keptAt: string } } }> {
  return memberJson(f.endpoint, 'GET', '/status');
}

async function readyz(f: FlotillaProcess): Promise<number> {
  return (await memberRequest(f.endpoint, 'GET', '/readyz', undefined, { timeoutMs: 5000 })).status;
}

async function until(what: string, check: () => Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

const configMap = (name: string) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: NS }, data: { k: name } });

async function createConfigMaps(prefix: string, n: number): Promise<void> {
  for (const m of members) {
    await inParallel(Array.from({ length: n }, (_, i) => `${prefix}-${i}`), 16, async (name) => {
      const res = await memberRequest(m, 'POST', PATH, configMap(name));
      if (res.status !== 201) throw new Error(`create ${name} on ${m.name}: ${res.status} ${res.body.slice(0, 200)}`);
    });
  }
}

beforeAll(async () => {
  rmSync(base, { recursive: true, force: true });
  mkdirSync(base, { recursive: true });
  for (const m of members) {
    const res = await memberRequest(m, 'POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
    if (res.status !== 201 && res.status !== 409) throw new Error(`namespace on ${m.name}: ${res.status}`);
  }
  await createConfigMaps('cm', PER_MEMBER);
}, 300_000);

afterAll(async () => {
  for (const f of running) await f.stop();
  for (const dir of mounts) execFileSync('umount', ['-l', dir]);
  for (const m of members) await memberRequest(m, 'DELETE', `/api/v1/namespaces/${NS}`);
});

describe('store faults', () => {
  it('a store file damaged while flotilla was stopped is set aside and rebuilt from the members; ready only once they are listed again, never serving the damage', async () => {
    const first = await start('damaged');
    await expectConverged(first.endpoint, members, PATH);
    await first.stop();
    running.splice(running.indexOf(first), 1);
    // A clean stop: a crash here would be flotilla's own, not the damage's (which comes next).
    expect(first.proc.exitCode, readFileSync(first.proc.logPath, 'utf8').slice(-2000)).toBe(0);

    // Bad sectors in the middle of the objects: leaf pages holding configmaps' JSON, from the middle
    // on (some are stale copies LMDB keeps for reuse: the check below makes sure the live tree was hit).
    const data = join(first.dataDir, 'data.mdb');
    expect(damageObjectPages(data, '"uid":"', { kind: 'count', pages: 8 })).toBeGreaterThan(0);
    // What a store that does not check (flotilla before) serves from these files: a short list (or,
    // on some damage, lmdb-js dies in the walk), its sync records intact. In a process of its own.
    const unchecked = spawnSync(process.execPath, ['--input-type=module', '-e', UNCHECKED_COUNT, first.dataDir, NS], { cwd: findProjectRoot(), encoding: 'utf8' });
    const servedUnchecked = unchecked.status === 0 ? Number(unchecked.stdout.trim()) : `died (${unchecked.signal ?? unchecked.status})`;
    const expected = (await membersView(members, PATH)).length;
    expect(servedUnchecked).not.toBe(expected);

    const again = await start('damaged', { waitReady: false });
    // Ready means synced again: at that moment the list is the members' own (uids, resourceVersions).
    await waitReady(again.endpoint, again.proc, 120_000);
    expect(await flotillaView(again.endpoint, PATH)).toEqual(await membersView(members, PATH));
    const { store } = await status(again);
    // The counts differ, or the walk over the damage crashed the check's own process (not flotilla).
    expect(store?.rebuilt?.fault).toMatch(/objects, .* meta records, .* index entries|reading the store crashed the check|reading the store failed/);
    expect(existsSync(join(store!.rebuilt!.keptAt, 'data.mdb'))).toBe(true);
    const log = readFileSync(again.proc.logPath, 'utf8');
    expect(log).toMatch(/store: found damaged at start \(.*\); set aside in .*corrupt-.*, rebuilding from the members/);
    console.log(`store-faults: damaged store: ${expected} objects on the members, ${servedUnchecked} served without the check; rebuilt: ${store!.rebuilt!.fault}`);
  }, 240_000);

  it('an unwritable data directory is one line saying which path, why and for whom, without a stack trace', async () => {
    const parent = join(base, 'locked');
    mkdirSync(parent, { recursive: true });
    if (isRoot) {
      // Root ignores file modes: a read-only filesystem is what it cannot write.
      execFileSync('mount', ['-t', 'tmpfs', '-o', 'ro,size=1m', 'tmpfs', parent]);
      mounts.push(parent);
    } else {
      chmodSync(parent, 0o555);
    }
    const dataDir = join(parent, 'data');
    let failure = '';
    try {
      await start('unwritable', { args: [`--data-dir=${dataDir}`], waitReady: false });
    } catch (e) {
      failure = (e as Error).message;
    } finally {
      if (!isRoot) chmodSync(parent, 0o755);
    }
    expect(failure).toMatch(/flotilla exited with 1/);
    const log = readFileSync(join(base, 'unwritable', 'flotilla.log'), 'utf8');
    const why = isRoot ? 'is on a read-only filesystem' : `is not writable by uid ${process.getuid?.()}`;
    expect(log).toContain(`flotilla: data directory ${dataDir} cannot be created: ${parent} ${why}`);
    expect(log).not.toMatch(/\n\s+at /);
  }, 60_000);

  it.skipIf(!isRoot)('a data volume without room: not ready and saying so, at start and while running, and back by itself once there is room', async () => {
    // A real size-limited volume (tmpfs, as root): flotilla keeps 256 MiB free, so 64 MiB is no room at all.
    const volume = join(base, 'volume');
    mkdirSync(volume, { recursive: true });
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=64m', 'tmpfs', volume]);
    mounts.push(volume);
    const dataDir = join(volume, 'data');
    const f = await start('small-volume', { args: [`--data-dir=${dataDir}`], waitReady: false });
    await until('the store refusing writes', async () => (await status(f)).store?.writable === false);
    expect(await readyz(f)).toBe(503);
    expect((await status(f)).store?.full?.message).toMatch(/cache volume nearly full: \d+ MiB free at .*, 256 MiB kept free/);
    expect(f.proc.exited).toBe(false);
    expect(readFileSync(f.proc.logPath, 'utf8')).toMatch(/store: cache volume nearly full: .* not ready, cachers retry/);

    // Room again (the volume grown): flotilla syncs and is ready without being restarted.
    execFileSync('mount', ['-o', 'remount,size=600m', volume]);
    await waitReady(f.endpoint, f.proc, 90_000);
    await expectConverged(f.endpoint, members, PATH);
    expect((await status(f)).store).toMatchObject({ writable: true });

    // The volume fills while flotilla runs: changes on the members are not stored, readiness says so.
    const filler = join(volume, 'filler');
    execFileSync('dd', ['if=/dev/zero', `of=${filler}`, 'bs=1M', 'count=420'], { stdio: 'ignore' });
    await createConfigMaps('while-full', 20);
    await until('readiness false on a full volume', async () => (await readyz(f)) === 503, 30_000);
    expect((await status(f)).store?.full?.message).toMatch(/nearly full/);
    const duringFull = await flotillaView(f.endpoint, PATH);
    expect(duringFull.some((k) => k.includes('/while-full-'))).toBe(false);

    rmSync(filler);
    await waitReady(f.endpoint, f.proc, 90_000);
    await expectConverged(f.endpoint, members, PATH, 30_000);
    const log = readFileSync(f.proc.logPath, 'utf8');
    expect(log).toMatch(/store: the cache volume has room again/);
    expect(log).not.toMatch(/MaxListenersExceededWarning/);
  }, 360_000);
});
