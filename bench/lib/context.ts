import { existsSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { startFleet, type Fleet, type MemberInfo } from '../../test/fleet/fleet.js';
import { memberRequest } from '../../test/fleet/http.js';
import { reapStalePids } from '../../test/fleet/processes.js';
import { startFlotillaProcess, type FlotillaProcess } from '../../test/support/flotilla-process.js';
import { flotillaStatus, sumOf, watchUntilReady, type ReadyWatch } from './flotilla.js';
import { BenchClient } from './http.js';
import { makePod } from './pods.js';

/** The sizes a run works at. */
export interface Profile {
  name: 'quick' | 'full';
  /** Pods seeded into the one real member. */
  pods: number;
  /** Cluster names the member is registered under in flotilla: cached objects = pods × names. */
  names: number;
  /** The fleet-wide list's members: pods × listNames objects, fetched directly in listNames parallel lists. */
  listNames: number;
  namespaces: number;
  /** Create requests in flight while seeding. */
  seedConcurrency: number;
  /** Timed rounds of the fleet-wide list (after one warm-up). */
  listRounds: number;
  /** Label-selected lists: this many, or as many as fit in `selectorBudgetMs`, at least 20. */
  selectorRuns: number;
  selectorBudgetMs: number;
  /** How long a flotilla start may take to become ready. */
  readyTimeoutMs: number;
  /** The whole run's bound; past it the run stops everything and fails. */
  runBudgetMs: number;
  /** Size of the container log the logs scenario streams. */
  logBytes: number;
  /** The watchers scenario: clients watching, patches a second, seconds measured. */
  watchers: number;
  watchEventsPerSecond: number;
  /** A second, lighter writer rate the watchers scenario also measures (none: only the first). */
  watchEventsPerSecondLight?: number;
  watchSeconds: number;
  /** The watch floor's window at the writer's rate (shorter than watchSeconds keeps the quick run short). */
  watchFloorSeconds: number;
  /** Writer rates the watch floor is ramped through, up to the last its watchers keep up with (none: the writer's rate only). */
  watchRampRates: number[];
}

export const PROFILES: Record<Profile['name'], Profile> = {
  quick: {
    name: 'quick', pods: 10_000, names: 2, listNames: 2, namespaces: 4, seedConcurrency: 64,
    listRounds: 5, selectorRuns: 200, selectorBudgetMs: 15_000, readyTimeoutMs: 120_000, runBudgetMs: 20 * 60_000,
    logBytes: 16 * 1024 * 1024,
    watchers: 100, watchEventsPerSecond: 50, watchSeconds: 10, watchFloorSeconds: 3, watchRampRates: [],
  },
  full: {
    // The shapes: 1M cached pods as one apiserver under 100 names × 10k pods, and the
    // fleet list as 100k pods in 10 members. The run's budget includes the karmada scenario's
    // live karmada-search at both sizes, slower than flotilla at every read.
    name: 'full', pods: 10_000, names: 100, listNames: 10, namespaces: 10, seedConcurrency: 64,
    listRounds: 5, selectorRuns: 200, selectorBudgetMs: 90_000, readyTimeoutMs: 20 * 60_000, runBudgetMs: 120 * 60_000,
    logBytes: 128 * 1024 * 1024,
    // 200/s is the load; on a 2-CPU machine neither side keeps up with it (1000 watchers
    // parsing 200k events/s), so the scenario measures 20/s as well.
    watchers: 1000, watchEventsPerSecond: 200, watchEventsPerSecondLight: 20, watchSeconds: 20, watchFloorSeconds: 20,
    watchRampRates: [10, 20, 50, 100, 200, 400],
  },
};

export const PODS_RESOURCE = [{ version: 'v1', resource: 'pods' }];

export interface SeedInfo {
  pods: number;
  namespaces: string[];
  /** Average JSON size of the pod as the member stored it (the create response). */
  memberBytesAvg: number;
  /** Average JSON size of the create request. */
  requestBytesAvg: number;
  seconds: number;
}

export interface FlotillaStart extends ReadyWatch {
  flotilla: FlotillaProcess;
}

type Log = (line: string) => void;

/**
 * What scenarios share: the fleet (one etcd + one bare kube-apiserver), the seeded pods, and the
 * running flotilla process. Each piece is made on first need, so any scenario also runs alone.
 */
export class BenchContext {
  fleet?: Fleet;
  seed?: SeedInfo;
  flotilla?: FlotillaProcess;
  readonly flotillaDir: string;
  /** What the running flotilla caches: every pod under this many names, or a scaling point's part (NaN). */
  private runningNames = NaN;
  /** flotillaClient's client, and the flotilla process it talks to. */
  private client?: { of: FlotillaProcess; http: BenchClient };
  /** When set, flotilla is CPU-profiled (lib/cpu-profile.ts) and writes its profiles here on exit. */
  cpuProfDir?: string;
  /** What scenarios started on their own (another fleet, another flotilla): stopped by stopAll, last first. */
  private readonly adopted: (() => Promise<void>)[] = [];

  constructor(readonly profile: Profile, readonly dir: string, readonly log: Log) {
    this.flotillaDir = join(dir, 'flotilla');
  }

  /** Removes what an earlier run left (stopping its processes by PID first). */
  static prepareDir(dir: string): void {
    // Each fleet a run starts (the bench fleet, a scenario's own) keeps a PID file in its folder.
    for (const sub of existsSync(dir) ? readdirSync(dir) : []) {
      const pidFile = join(dir, sub, 'pids');
      if (existsSync(pidFile)) reapStalePids(pidFile);
    }
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
  }

  get member(): MemberInfo {
    const m = this.fleet?.info.members[0];
    if (!m) throw new Error('no fleet');
    return m;
  }

  /** The one member under `names` (default `profile.names`) cluster names. */
  registered(names = this.profile.names): MemberInfo[] {
    const width = String(names).length;
    return Array.from({ length: names }, (_, i) => ({ ...this.member, name: `c${String(i).padStart(Math.max(3, width), '0')}` }));
  }

  async ensureFleet(): Promise<Fleet> {
    if (this.fleet) return this.fleet;
    this.fleet = await startFleet({
      names: ['bench'],
      dir: join(this.dir, 'fleet'),
      workloads: false,
      // A direct list of 100k pods per name, ten at once, outlasts the apiserver's default 60 s
      // request timeout; the baseline is what the member can serve, not where it gives up.
      apiserverArgs: ['--max-requests-inflight=3000', '--max-mutating-requests-inflight=2000', '--request-timeout=10m'],
      log: this.log,
    });
    return this.fleet;
  }

  async ensureSeeded(): Promise<SeedInfo> {
    if (this.seed) return this.seed;
    await this.ensureFleet();
    const ep = this.member;
    const started = performance.now();
    const namespaces = Array.from({ length: this.profile.namespaces }, (_, i) => `bench-${String(i).padStart(2, '0')}`);
    for (const ns of namespaces) {
      await expectCreated(memberRequest(ep, 'POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } }), `namespace ${ns}`);
      // No controller manager here: pods are admitted only once the default ServiceAccount exists.
      await expectCreated(memberRequest(ep, 'POST', `/api/v1/namespaces/${ns}/serviceaccounts`, { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'default' } }), `serviceaccount ${ns}/default`);
    }
    const total = this.profile.pods;
    let next = 0;
    let done = 0;
    let memberBytes = 0;
    let memberSized = 0;
    let requestBytes = 0;
    let lastReport = performance.now();
    const worker = async () => {
      while (true) {
        const i = next++;
        if (i >= total) return;
        const ns = namespaces[i % namespaces.length]!;
        const body = JSON.stringify(makePod(i, ns));
        requestBytes += Buffer.byteLength(body);
        for (let attempt = 1; ; attempt++) {
          let res;
          try {
            res = await memberRequest(ep, 'POST', `/api/v1/namespaces/${ns}/pods`, body, { timeoutMs: 30_000 });
          } catch (e) {
            if (attempt >= 6) throw new Error(`creating pod ${i}: ${(e as Error).message}`);
            await new Promise((r) => setTimeout(r, 200 * attempt));
            continue;
          }
          if (res.status === 201) {
            memberBytes += Buffer.byteLength(res.body);
            memberSized++;
            break;
          }
          if (res.status === 409 && attempt > 1) break; // an earlier attempt got through
          if ((res.status === 429 || res.status >= 500) && attempt < 6) {
            await new Promise((r) => setTimeout(r, 200 * attempt));
            continue;
          }
          throw new Error(`creating pod ${i} in ${ns}: ${res.status} ${res.body.slice(0, 300)}`);
        }
        done++;
        if (performance.now() - lastReport > 10_000) {
          lastReport = performance.now();
          this.log(`seed: ${done}/${total} pods (${Math.round(done / ((lastReport - started) / 1000))}/s)`);
        }
      }
    };
    await Promise.all(Array.from({ length: this.profile.seedConcurrency }, worker));
    const seconds = (performance.now() - started) / 1000;
    this.seed = {
      pods: total,
      namespaces,
      memberBytesAvg: Math.round(memberBytes / Math.max(1, memberSized)),
      requestBytesAvg: Math.round(requestBytes / total),
      seconds,
    };
    this.log(`seed: ${total} pods in ${namespaces.length} namespaces in ${seconds.toFixed(1)} s (${Math.round(total / seconds)}/s), ${this.seed.memberBytesAvg} B each as stored`);
    return this.seed;
  }

  /**
   * Starts flotilla (fresh data dir unless `reuseData`) and waits for /readyz, sampling on the way.
   * By default it caches every pod under `profile.names` names; `names` and `namespaces` shrink it.
   */
  async startFlotilla(opts: { reuseData: boolean; names?: number; namespaces?: string[]; onSpawn?: (pid: number) => void }): Promise<FlotillaStart> {
    const fleet = await this.ensureFleet();
    if (this.flotilla && !this.flotilla.proc.exited) throw new Error('flotilla is already running');
    if (!opts.reuseData) rmSync(join(this.flotillaDir, 'data'), { recursive: true, force: true });
    // The harness starts flotilla with this process's environment: NODE_OPTIONS reaches it alone.
    const priorNodeOptions = process.env.NODE_OPTIONS;
    if (this.cpuProfDir) {
      const preload = new URL('./cpu-profile.js', import.meta.url).href;
      process.env.NODE_OPTIONS = `${priorNodeOptions ?? ''} --import=${preload}`.trim();
      process.env.FLOTILLA_BENCH_CPU_PROF_DIR = this.cpuProfDir;
    }
    const startedAt = performance.now();
    let flotilla: FlotillaProcess;
    try {
      flotilla = await startFlotillaProcess({
        fleet: fleet.info,
        dir: this.flotillaDir,
        members: this.registered(opts.names),
        resources: opts.namespaces ? PODS_RESOURCE.map((r) => ({ ...r, namespaces: opts.namespaces })) : PODS_RESOURCE,
        waitReady: false,
        ...(opts.onSpawn ? { onSpawn: opts.onSpawn } : {}),
      });
    } finally {
      if (priorNodeOptions === undefined) delete process.env.NODE_OPTIONS;
      else process.env.NODE_OPTIONS = priorNodeOptions;
      delete process.env.FLOTILLA_BENCH_CPU_PROF_DIR;
    }
    this.flotilla = flotilla;
    this.runningNames = opts.namespaces ? NaN : (opts.names ?? this.profile.names);
    const watch = await watchUntilReady(flotilla.endpoint, flotilla.proc, startedAt, this.profile.readyTimeoutMs);
    return { flotilla, ...watch };
  }

  /**
   * A synced flotilla caching every seeded pod under `names` cluster names (default: all of the
   * profile's), started without measuring when the running one caches anything else.
   */
  async ensureFlotilla(names = this.profile.names): Promise<FlotillaProcess> {
    await this.ensureSeeded();
    if (this.flotilla && !this.flotilla.proc.exited && this.runningNames === names) return this.flotilla;
    await this.stopFlotilla();
    this.log(`flotilla: starting under ${names} cluster name(s) (not measured here)`);
    const { flotilla } = await this.startFlotilla({ reuseData: false, names });
    return flotilla;
  }

  /**
   * A keep-alive client of ensureFlotilla(names): the same one while that flotilla runs, a new one
   * (the old closed) once another has taken its place.
   */
  async flotillaClient(names = this.profile.names): Promise<BenchClient> {
    const flotilla = await this.ensureFlotilla(names);
    if (this.client?.of !== flotilla) {
      this.client?.http.close();
      this.client = { of: flotilla, http: new BenchClient(flotilla.endpoint) };
    }
    return this.client.http;
  }

  /** Cached objects flotilla reports, checked against what was seeded. */
  async cachedObjects(): Promise<{ objects: number; relists: number; errors: string[] }> {
    const f = this.flotilla;
    if (!f) throw new Error('flotilla is not running');
    const st = await flotillaStatus(f.endpoint);
    return {
      objects: sumOf(st.cachers, 'objects'),
      relists: sumOf(st.cachers, 'relists'),
      errors: st.cachers.filter((c) => c.lastError).map((c) => `${c.cluster}/${c.resource}: ${c.lastError}`),
    };
  }

  async stopFlotilla(): Promise<void> {
    const f = this.flotilla;
    this.flotilla = undefined;
    if (f) await f.stop();
  }

  /** Registers a stop for something a scenario started; it runs in stopAll even if the scenario fails. */
  adopt(stop: () => Promise<void>): void {
    this.adopted.push(stop);
  }

  async stopAll(): Promise<void> {
    this.client?.http.close();
    this.client = undefined;
    try {
      for (const stop of this.adopted.splice(0).reverse()) await stop().catch((e: unknown) => this.log(`stopping: ${(e as Error).message}`));
      await this.stopFlotilla();
    } finally {
      const fleet = this.fleet;
      this.fleet = undefined;
      if (fleet) await fleet.stop();
    }
  }
}

async function expectCreated(p: Promise<{ status: number; body: string }>, what: string): Promise<void> {
  const res = await p;
  if (res.status !== 201 && res.status !== 409) throw new Error(`creating ${what}: ${res.status} ${res.body.slice(0, 300)}`);
}
