import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startFleet, type Fleet, type MemberInfo } from '../fleet/fleet.js';
import { killProcess } from '../fleet/processes.js';
import { memberJson, memberRequest, type MemberResponse } from '../fleet/http.js';
import { freePort, startFlotillaProcess, writeProxyKubeconfig, type FlotillaProcess } from '../support/flotilla-process.js';
import { flotillaView, membersView } from '../support/compare.js';
import { startFaultRelay, type FaultRelay } from '../support/fault-relay.js';
import { apiserverPid, pause } from '../support/paused-member.js';
import { openWatch, type OpenWatch, type WatchEvent } from '../support/watch-client.js';
import { decodeGlobalRV } from '../../src/api/global-rv.js';

/**
 * The fault suite: faults fleets have, injected one after another into one member ("faulty",
 * reached through a relay the test controls) while a writer changes its configmaps, a client
 * watches them through flotilla (resuming from its last resourceVersion whenever its watch ends,
 * relisting only on a 410) and a prober reads the other member ("steady") every 250 ms. After
 * each fault:
 * - converged: flotilla serves exactly what each member holds (uids and resourceVersions);
 * - every change once: the watcher saw each write the writer made exactly once, in order (where
 *   the member still holds the history; where it does not, the watcher ends with the member's state);
 * - the other member was served throughout;
 * - the faulty one was named while it lasted (a Warning on reads, or /status);
 * - no relist where the member still had the events.
 * It prints every fault, every invariant and the counts, and fails on any violation.
 * FLOTILLA_FAULTS_HOLD_S sets how long a partition or pause lasts (CI: 6 s).
 */
const NS = 'faults';
const PATH = `/api/v1/namespaces/${NS}/configmaps`;
const CLUSTER_ANNOTATION = 'search.flotilla.io/cluster';
const HOLD_MS = Number(process.env.FLOTILLA_FAULTS_HOLD_S ?? 6) * 1000;
let fleet: Fleet;
let faulty: MemberInfo;
let steady: MemberInfo;
let relay: FaultRelay;
let flotilla: FlotillaProcess;
let flotillaPort: number;
let flotillaDir: string;
const report: string[] = [];
const violations: string[] = [];

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Write {
  type: 'ADDED' | 'MODIFIED' | 'DELETED';
  name: string;
  rv?: string;
}

/** Changes faulty's configmaps at a steady pace; records each write the member acknowledged. */
class Writer {
  readonly writes: Write[] = [];
  failed = 0;
  private running = false;
  private done?: Promise<void>;
  private n = 0;
  private readonly live = new Set<string>();

  start(): void {
    this.running = true;
    this.done = (async () => {
      while (this.running) {
        await this.step().catch(() => {
          this.failed++;
        });
        await sleep(100);
      }
    })();
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.done;
  }

  private async step(): Promise<void> {
    const names = [...this.live];
    const op = names.length < 5 ? 0 : this.n % 3;
    if (op === 0) {
      const name = `w-${Date.now().toString(36)}-${this.n++}`;
      const res = await memberRequest(faulty, 'POST', PATH, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data: { v: '0' } }, { timeoutMs: 5000 });
      if (res.status !== 201) throw new Error(String(res.status));
      this.live.add(name);
      this.writes.push({ type: 'ADDED', name, rv: (JSON.parse(res.body) as { metadata: { resourceVersion: string } }).metadata.resourceVersion });
    } else if (op === 1) {
      const name = names[this.n++ % names.length]!;
      const res = await memberRequest(faulty, 'PUT', `${PATH}/${name}`, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data: { v: String(this.n) } }, { timeoutMs: 5000 });
      if (res.status !== 200) throw new Error(String(res.status));
      this.writes.push({ type: 'MODIFIED', name, rv: (JSON.parse(res.body) as { metadata: { resourceVersion: string } }).metadata.resourceVersion });
    } else {
      const name = names[this.n++ % names.length]!;
      const res = await memberRequest(faulty, 'DELETE', `${PATH}/${name}`, undefined, { timeoutMs: 5000 });
      if (res.status !== 200) throw new Error(String(res.status));
      this.live.delete(name);
      this.writes.push({ type: 'DELETED', name });
    }
  }
}

/** A client watch of PATH through flotilla that resumes from its last RV whenever it ends, and relists on 410. */
class ResumingWatch {
  readonly events: WatchEvent[] = [];
  relists = 0;
  resumes = 0;
  private rv = '';
  private current?: OpenWatch;
  private running = true;
  private done?: Promise<void>;
  initial: WatchEvent['object'][] = [];

  async start(): Promise<void> {
    await this.list();
    this.done = this.loop();
  }

  private async list(): Promise<void> {
    const l = await memberJson<{ metadata: { resourceVersion: string }; items: WatchEvent['object'][] }>(flotilla.endpoint, 'GET', PATH);
    this.initial = l.items;
    this.events.length = 0;
    this.rv = l.metadata.resourceVersion;
  }

  private async loop(): Promise<void> {
    while (this.running) {
      try {
        const w = await openWatch(flotilla.endpoint, `${PATH}?watch=1&allowWatchBookmarks=true&resourceVersion=${encodeURIComponent(this.rv)}`);
        this.current = w;
        let seen = 0;
        const take = () => {
          for (; seen < w.events.length; seen++) {
            const e = w.events[seen]!;
            if (e.type === 'ERROR') continue;
            if (e.object.metadata?.resourceVersion) this.rv = e.object.metadata.resourceVersion;
            if (e.type !== 'BOOKMARK') this.events.push(e);
          }
        };
        const timer = setInterval(take, 50);
        await w.ended;
        clearInterval(timer);
        take();
        const gone = w.status === 410 || w.events.some((e) => e.type === 'ERROR' && (e.object as { code?: number }).code === 410);
        if (gone && this.running) {
          this.relists++;
          await this.list();
        } else if (this.running) this.resumes++;
      } catch {
        // flotilla not answering (it is being restarted): try again
      }
      if (this.running) await sleep(200);
    }
  }

  async stop(): Promise<void> {
    this.running = false;
    this.current?.close();
    await this.done;
  }

  /** What the watcher holds for a cluster: its initial list and every event after. */
  state(cluster: string): string[] {
    const state = new Map<string, string>();
    for (const e of [...this.initial.map((object): WatchEvent => ({ type: 'ADDED', object })), ...this.events]) {
      const md = e.object.metadata as { name: string; uid?: string; resourceVersion: string; annotations?: Record<string, string> };
      if (md.annotations?.[CLUSTER_ANNOTATION] !== cluster) continue;
      if (e.type === 'DELETED') state.delete(md.name);
      else state.set(md.name, `${cluster}/${NS}/${md.name}@${md.uid}@${decodeGlobalRV(md.resourceVersion)[cluster]}`);
    }
    return [...state.values()].sort();
  }

  /** The events of one cluster's objects, as writes: type, name, and the member RV (not for DELETED). */
  seen(cluster: string): Write[] {
    return this.events
      .filter((e) => e.object.metadata?.annotations?.[CLUSTER_ANNOTATION] === cluster)
      .map((e) => ({ type: e.type as Write['type'], name: e.object.metadata!.name!, ...(e.type === 'DELETED' ? {} : { rv: decodeGlobalRV(e.object.metadata!.resourceVersion!)[cluster] }) }));
  }
}

/** Reads steady through flotilla every 250 ms; counts what was not a 200. */
class Prober {
  failures = 0;
  probes = 0;
  private running = true;
  private readonly done: Promise<void>;
  constructor() {
    this.done = (async () => {
      while (this.running) {
        const res = await memberRequest(flotilla.endpoint, 'GET', `/clusters/steady${PATH}/s-0`, undefined, { timeoutMs: 10_000 }).catch(() => undefined);
        this.probes++;
        if (res?.status !== 200) this.failures++;
        await sleep(250);
      }
    })();
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.done;
  }
}

const warnings = (res: MemberResponse): string => {
  const w = res.headers['warning'];
  return w === undefined ? '' : Array.isArray(w) ? w.join('\n') : String(w);
};

/** Whether flotilla names faulty as stale right now: a Warning on a read, or /status. */
async function faultyNamed(): Promise<boolean> {
  const res = await memberRequest(flotilla.endpoint, 'GET', PATH, undefined, { timeoutMs: 5000 }).catch(() => undefined);
  if (res && warnings(res).includes('cluster faulty')) return true;
  const status = await memberRequest(flotilla.endpoint, 'GET', '/status', undefined, { timeoutMs: 5000 }).catch(() => undefined);
  if (!status || status.status !== 200) return false;
  const s = JSON.parse(status.body) as { members: { cluster: string; silent: boolean }[]; cachers: { cluster: string; lastError?: string; rewriting?: string }[] };
  return s.members.some((m) => m.cluster === 'faulty' && m.silent) || s.cachers.some((c) => c.cluster === 'faulty' && (c.lastError !== undefined || c.rewriting !== undefined));
}

async function faultyRelists(): Promise<number> {
  const res = await memberRequest(flotilla.endpoint, 'GET', '/status');
  return (JSON.parse(res.body) as { cachers: { cluster: string; resource: string; relists: number }[] }).cachers.find((c) => c.cluster === 'faulty' && c.resource === 'v1/configmaps')!.relists;
}

async function served(member: MemberInfo): Promise<string[]> {
  return (await flotillaView(flotilla.endpoint, PATH)).filter((k) => k.startsWith(`${member.name}/`));
}

async function converge(member: MemberInfo, timeoutMs: number): Promise<{ ok: boolean; ms: number; held: string[]; cached: string[] }> {
  const start = Date.now();
  for (;;) {
    const held = await membersView([member], PATH);
    const cached = await served(member);
    if (JSON.stringify(held) === JSON.stringify(cached)) return { ok: true, ms: Date.now() - start, held, cached };
    if (Date.now() - start > timeoutMs) return { ok: false, ms: Date.now() - start, held, cached };
    await sleep(250);
  }
}

/**
 * Each name's writes, as the watcher saw them: nothing repeated, and (`every`) every acknowledged
 * write in order; a write whose answer was lost (`unacknowledged` of them) may show besides.
 */
function compareChanges(writes: readonly Write[], seen: readonly Write[], every: boolean, unacknowledged: number): string[] {
  const byName = (ws: readonly Write[]) => {
    const m = new Map<string, string[]>();
    for (const w of ws) m.set(w.name, [...(m.get(w.name) ?? []), `${w.type}${w.rv ? `@${w.rv}` : ''}`]);
    return m;
  };
  const want = byName(writes);
  const got = byName(seen);
  const problems: string[] = [];
  let extra = 0;
  for (const [name, gs] of got) {
    // The same change twice in a row; an object a restore brings back is ADDED again after its DELETED.
    const repeated = gs.filter((g, i) => i > 0 && g === gs[i - 1]);
    if (repeated.length > 0) problems.push(`${name}: the watcher saw ${repeated.join(' ')} twice`);
    if (!every) continue;
    const ws = want.get(name) ?? [];
    let j = 0;
    for (const g of gs) {
      if (j < ws.length && g === ws[j]) j++;
      else extra++;
    }
    if (j < ws.length) problems.push(`${name}: wrote ${ws.join(' ')}, watcher saw ${gs.join(' ') || 'nothing'}`);
  }
  if (every) for (const [name, ws] of want) if (!got.has(name)) problems.push(`${name}: wrote ${ws.join(' ')}, watcher saw nothing`);
  if (extra > unacknowledged) problems.push(`the watcher saw ${extra} changes the writer did not make (${unacknowledged} writes went unanswered)`);
  return problems;
}

interface Fault {
  name: string;
  /** The member still holds every event: the watcher sees each write once, and flotilla does not relist. */
  historyKept: boolean;
  /** It lasts long enough that flotilla must name the member meanwhile. */
  named: boolean;
  /** Flotilla itself is down for a while: the other member is not served meanwhile, and counters start again. */
  restartsFlotilla?: boolean;
  inject(writer: Writer): Promise<void>;
  /** More checks of this fault's own (violations as text). */
  check?(): Promise<string[]>;
}

async function startFlotilla(): Promise<void> {
  const kubeconfig = join(fleet.info.dir, 'faulty-relayed.kubeconfig');
  writeProxyKubeconfig(kubeconfig, `https://127.0.0.1:${relay.port}`, faulty.caFile, faulty.token, 'faulty');
  flotilla = await startFlotillaProcess({
    fleet: fleet.info,
    dir: flotillaDir,
    port: flotillaPort,
    members: [{ ...faulty, kubeconfig }, steady],
    resources: [{ version: 'v1', resource: 'configmaps' }, { version: 'v1', resource: 'namespaces' }],
    options: { memberHeartbeatMilliseconds: 200 },
  });
}

async function etcdRequest(path: string, body: object): Promise<{ header: { revision: string } }> {
  const res = await fetch(`${fleet.info.etcdEndpoint}${path}`, { method: 'POST', body: JSON.stringify(body) });
  if (!res.ok) throw new Error(`etcd ${path}: ${res.status} ${await res.text()}`);
  return (await res.json()) as { header: { revision: string } };
}

async function runFault(fault: Fault): Promise<void> {
  let relistsBefore = await faultyRelists();
  const watch = new ResumingWatch();
  await watch.start();
  const writer = new Writer();
  const prober = new Prober();
  writer.start();
  await sleep(1000);
  let named = false;
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      if (await faultyNamed()) named = true;
      await sleep(300);
    }
  })();
  const t0 = Date.now();
  await fault.inject(writer);
  const injectedMs = Date.now() - t0;
  if (fault.restartsFlotilla) {
    relistsBefore = 0;
    prober.failures = 0;
    prober.probes = 0;
  }
  sampling = false;
  await sampler;
  await sleep(1500);
  await writer.stop();
  const problems: string[] = [];
  const faultyState = await converge(faulty, 60_000);
  if (!faultyState.ok) problems.push(`faulty not converged in ${faultyState.ms} ms: flotilla serves ${faultyState.cached.length} objects, the member holds ${faultyState.held.length}; first difference: ${JSON.stringify(faultyState.cached.filter((k) => !faultyState.held.includes(k)).slice(0, 2))} / ${JSON.stringify(faultyState.held.filter((k) => !faultyState.cached.includes(k)).slice(0, 2))}`);
  const steadyState = await converge(steady, 10_000);
  if (!steadyState.ok) problems.push('steady not converged');
  // The watcher catches up with the member's state, then is judged.
  const deadline = Date.now() + 20_000;
  while (JSON.stringify(watch.state('faulty')) !== JSON.stringify(faultyState.held) && Date.now() < deadline) await sleep(200);
  await watch.stop();
  await prober.stop();
  if (JSON.stringify(watch.state('faulty')) !== JSON.stringify(faultyState.held)) problems.push(`the watcher ends with ${watch.state('faulty').length} objects of faulty, the member holds ${faultyState.held.length}`);
  problems.push(...compareChanges(writer.writes, watch.seen('faulty'), fault.historyKept, writer.failed).slice(0, 5));
  if (fault.historyKept && watch.relists > 0) problems.push(`the watcher relisted ${watch.relists} time(s)`);
  if (prober.failures > 0) problems.push(`steady failed ${prober.failures} of ${prober.probes} probes`);
  if (fault.named && !named) problems.push('faulty was not named (Warning or /status) while the fault lasted');
  const relists = (await faultyRelists()) - relistsBefore;
  if (fault.historyKept && relists > 0) problems.push(`flotilla relisted faulty ${relists} time(s) though the member kept its events`);
  problems.push(...((await fault.check?.()) ?? []));
  report.push(
    `fault "${fault.name}": injected in ${(injectedMs / 1000).toFixed(1)} s; ${writer.writes.length} writes acknowledged (${writer.failed} failed), ` +
    `${watch.seen('faulty').length} events seen, ${watch.resumes} resumes, ${watch.relists} client relists; flotilla relists ${relists}; ` +
    `converged in ${(faultyState.ms / 1000).toFixed(1)} s; steady ${prober.probes - prober.failures}/${prober.probes} probes served; ` +
    `named: ${named ? 'yes' : 'no'}${fault.named ? '' : ' (not required)'}; invariants: converged, ${fault.historyKept ? 'every change once, no relist, ' : 'no change twice, watcher ends with the member state, '}steady served${fault.restartsFlotilla ? ' after the restart' : ''}${fault.named ? ', named' : ''}: ` +
    (problems.length === 0 ? '0 violations' : `${problems.length} violation(s):\n    ${problems.join('\n    ')}`),
  );
  violations.push(...problems.map((p) => `${fault.name}: ${p}`));
}

const FAULTS: Fault[] = [
  { name: 'network cut (connections reset)', historyKept: true, named: false, inject: async () => relay.cut() },
  {
    name: 'network partition (nothing forwarded, nothing closed)',
    historyKept: true,
    named: true,
    inject: async () => {
      relay.hold();
      await sleep(HOLD_MS);
      relay.release();
    },
  },
  // A restarted apiserver's watch cache starts at its restart: a watch from before is 410, as to any client.
  { name: 'apiserver SIGKILLed mid-watch under writes, restarted', historyKept: false, named: true, inject: () => fleet.crashApiserver('faulty') },
  {
    name: 'apiserver paused (SIGSTOP)',
    historyKept: true,
    named: true,
    inject: async () => {
      const pid = apiserverPid(fleet.info, faulty);
      await pause(pid, 'faulty apiserver');
      try {
        await sleep(HOLD_MS);
      } finally {
        process.kill(pid, 'SIGCONT');
      }
    },
  },
  {
    name: 'flotilla SIGKILLed under writes, restarted on its store',
    historyKept: true,
    named: false,
    restartsFlotilla: true,
    inject: async () => {
      await killProcess(flotilla.proc);
      await sleep(1000);
      await startFlotilla();
    },
  },
  {
    name: "etcd compacted past the cacher's resourceVersion while cut off",
    historyKept: false,
    named: true,
    inject: async () => {
      relay.hold();
      await sleep(HOLD_MS / 2);
      const { header } = await etcdRequest('/v3/kv/range', { key: Buffer.from('/').toString('base64') });
      await etcdRequest('/v3/kv/compaction', { revision: header.revision, physical: true });
      relay.cut();
      relay.release();
    },
  },
  {
    name: 'etcd restored from an older backup (resourceVersions go back)',
    historyKept: false,
    named: true,
    inject: async (writer) => {
      const backup = await fleet.backupEtcd();
      // What the restore takes back: writes acknowledged after the backup, and served by flotilla.
      const acknowledged = writer.writes.length;
      const deadline = Date.now() + 30_000;
      while (writer.writes.length < acknowledged + 10 && Date.now() < deadline) await sleep(200);
      if (writer.writes.length < acknowledged + 10) throw new Error('the member took no writes after the backup');
      await sleep(HOLD_MS / 2);
      if (!(await converge(faulty, 20_000)).ok) throw new Error('flotilla did not serve the writes after the backup');
      await fleet.restoreEtcd(backup);
    },
    check: async () => {
      const res = await memberRequest(flotilla.endpoint, 'GET', '/status');
      const c = (JSON.parse(res.body) as { cachers: { cluster: string; resource: string; historyResets: number; lastHistoryReset?: { reason: string } }[] }).cachers.find((x) => x.cluster === 'faulty' && x.resource === 'v1/configmaps')!;
      const out: string[] = [];
      if (!c.lastHistoryReset?.reason.includes('went back')) out.push(`/status does not say faulty's history went back: ${JSON.stringify(c.lastHistoryReset)}`);
      if (!readFileSync(join(flotillaDir, 'flotilla.log'), 'utf8').includes('member history rewritten')) out.push('no log line says the member history was rewritten');
      return out;
    },
  },
  {
    name: 'member replaced by a new cluster under the same name',
    historyKept: false,
    named: false,
    inject: async () => {
      await fleet.replaceMember('faulty');
      const ns = await memberRequest(faulty, 'POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
      if (ns.status !== 201 && ns.status !== 409) throw new Error(`namespace: ${ns.status}`);
    },
    check: async () => {
      const deadline = Date.now() + 45_000;
      const reason = async () => {
        const res = await memberRequest(flotilla.endpoint, 'GET', '/status');
        return (JSON.parse(res.body) as { cachers: { cluster: string; resource: string; lastHistoryReset?: { reason: string } }[] }).cachers.find((x) => x.cluster === 'faulty' && x.resource === 'v1/configmaps')?.lastHistoryReset?.reason ?? '';
      };
      while (!(await reason()).includes('new cluster') && Date.now() < deadline) await sleep(500);
      return (await reason()).includes('new cluster') ? [] : ['/status does not say faulty is a new cluster'];
    },
  },
];

beforeAll(async () => {
  fleet = await startFleet({ names: ['faulty', 'steady'], dir: join(inject('fleet').dir, 'faults-fleet'), workloads: false });
  [faulty, steady] = fleet.info.members as [MemberInfo, MemberInfo];
  for (const m of [faulty, steady]) {
    const ns = await memberRequest(m, 'POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
    expect([201, 409]).toContain(ns.status);
    for (let i = 0; i < 10; i++) await memberRequest(m, 'POST', PATH, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `s-${i}` }, data: { v: '0' } });
  }
  relay = await startFaultRelay(faulty.port);
  flotillaPort = await freePort();
  flotillaDir = join(fleet.info.dir, 'flotilla');
  await startFlotilla();
}, 180_000);

afterAll(async () => {
  await flotilla?.stop();
  await relay?.close();
  await fleet?.stop();
});

describe('the fault suite', () => {
  it(`survives ${FAULTS.length} faults with every invariant holding`, async () => {
    for (const fault of FAULTS) {
      await runFault(fault).catch((e: Error) => {
        report.push(`fault "${fault.name}": the run failed: ${e.message}`);
        violations.push(`${fault.name}: ${e.message}`);
      });
      console.log(report[report.length - 1]);
    }
    const text = `faults: ${FAULTS.length} injected, ${violations.length} violation(s)\n${report.join('\n')}`;
    console.log(text);
    writeFileSync(join(fleet.info.dir, 'faults-report.txt'), `${text}\n`);
    expect(violations, text).toEqual([]);
  }, 20 * 60_000);
});
