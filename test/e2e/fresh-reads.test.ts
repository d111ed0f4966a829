import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { join } from 'node:path';
import { startFleet, type Fleet, type MemberInfo } from '../fleet/fleet.js';
import { memberRequest, type MemberResponse } from '../fleet/http.js';
import { startFlotillaProcess, type FlotillaProcess } from '../support/flotilla-process.js';
import { openWatch } from '../support/watch-client.js';
import { apiserverPid, pause } from '../support/paused-member.js';
import { FRESH_READ_COMPARE_MAX, FRESH_READ_CONFIRM_MS } from '../../src/registry/defaults.js';

/**
 * Fresh reads (docs/fresh-reads.md): a write made straight to a member, followed at once by a
 * read through flotilla with resourceVersion unset, is in the answer. A fleet of its own (two
 * apiservers on one etcd, nothing else writing), so the test can stop a member, and a write to one
 * member moves the other's revision on as other resources' writes do in a real cluster.
 */
const NS = 'default';
const CM = `/api/v1/namespaces/${NS}/configmaps`;
const LR = `/api/v1/namespaces/${NS}/limitranges`;
let fleet: Fleet;
let a: MemberInfo;
let b: MemberInfo;
let flotilla: FlotillaProcess;

type List = { metadata: { resourceVersion: string }; items: { metadata: { name: string }; data?: Record<string, string> }[] };
const json = <T>(res: MemberResponse): T => {
  if (res.status !== 200) throw new Error(`HTTP ${res.status}: ${res.body.slice(0, 300)}`);
  return JSON.parse(res.body) as T;
};
const via = (path: string) => memberRequest(flotilla.endpoint, 'GET', path, undefined, { timeoutMs: 15_000 });
const write = async (m: MemberInfo, method: string, path: string, body: unknown) => {
  const res = await memberRequest(m, method, path, body, method === 'PATCH' ? { contentType: 'application/merge-patch+json' } : {});
  if (res.status >= 300) throw new Error(`${method} ${path}: HTTP ${res.status}: ${res.body.slice(0, 300)}`);
};
const configMap = (name: string, n: number) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data: { n: String(n) } });

/** flotilla's fresh-read counters (/metrics). */
async function counters(): Promise<{ revisionLists: number; outcomes: Record<string, number> }> {
  const text = (await memberRequest(flotilla.endpoint, 'GET', '/metrics', undefined, { accept: 'text/plain' })).body;
  const outcomes: Record<string, number> = {};
  for (const m of text.matchAll(/^flotilla_fresh_read_members_total\{outcome="(\w+)"\} (\d+)/gm)) outcomes[m[1]!] = Number(m[2]);
  return { revisionLists: Number(/^flotilla_fresh_read_revision_lists_total (\d+)/m.exec(text)?.[1] ?? NaN), outcomes };
}

const percentile = (xs: number[], p: number) => [...xs].sort((x, y) => x - y)[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))]!;

beforeAll(async () => {
  fleet = await startFleet({ names: ['fresh-a', 'fresh-b'], dir: join(inject('fleet').dir, 'fresh-reads-fleet'), workloads: false });
  [a, b] = fleet.info.members as [MemberInfo, MemberInfo];
  flotilla = await startFlotillaProcess({
    fleet: fleet.info,
    dir: join(fleet.info.dir, 'flotilla'),
    // Fresh reads are the default: the file does not ask for them.
    resources: [{ version: 'v1', resource: 'configmaps' }, { version: 'v1', resource: 'limitranges' }],
  });
});

afterAll(async () => {
  await flotilla?.stop();
  await fleet?.stop();
});

describe('fresh reads', () => {
  it('a write straight to a member is in the list (and the get) that follows it through flotilla, 1,000 times in a row', async () => {
    const before = await counters();
    const took: number[] = [];
    let inARow = 0;
    for (let i = 0; i < 1000; i++) {
      // Creates and updates of a set of 50 names, in turn.
      const name = `row-${i % 50}`;
      if (i < 50) await write(a, 'POST', CM, configMap(name, i));
      else await write(a, 'PATCH', `${CM}/${name}`, { data: { n: String(i) } });
      const started = performance.now();
      const list = json<List>(await via(`/clusters/${a.name}${CM}`));
      took.push(performance.now() - started);
      const seen = list.items.find((c) => c.metadata.name === name)?.data?.n;
      expect(seen, `read ${i} after ${inARow} in a row`).toBe(String(i));
      if (i % 10 === 9) expect(json<{ data: { n: string } }>(await via(`/clusters/${a.name}${CM}/${name}`)).data.n, `get ${i}`).toBe(String(i));
      inARow++;
    }
    const after = await counters();
    const outcome = (k: string) => (after.outcomes[k] ?? 0) - (before.outcomes[k] ?? 0);
    console.log(`fresh-reads: ${inARow} in a row; list p50 ${percentile(took, 50).toFixed(1)} ms, p99 ${percentile(took, 99).toFixed(1)} ms; members current ${outcome('current')}, matched ${outcome('matched')}, caught_up ${outcome('caught_up')}, probed ${outcome('probed')}, unconfirmed ${outcome('unconfirmed')}; revision lists ${after.revisionLists - before.revisionLists}`);
    expect(outcome('unconfirmed')).toBe(0);
  }, 900_000);

  it("a quiet resource, while the member's other resources are written: compared with the member's short list when small, confirmed by the member's watch when not; a watch-list too", async () => {
    const limitRange = (name: string) => ({ apiVersion: 'v1', kind: 'LimitRange', metadata: { name }, spec: { limits: [{ type: 'Container', max: { cpu: '2' } }] } });
    await write(a, 'POST', LR, limitRange('quiet'));
    // Reads each confirmed by `outcome`, while writes to another resource of the member, and to the other member on the same etcd, move the revision on.
    const quietReads = async (outcome: string, names: string[]) => {
      const took: number[] = [];
      for (let i = 0; i < 5; i++) {
        await write(a, 'POST', CM, configMap(`moving-${outcome}-${i}`, i));
        await write(b, 'POST', CM, configMap(`moving-${outcome}-${i}`, i));
        const before = await counters();
        const started = performance.now();
        const list = json<List>(await via(`/clusters/${a.name}${LR}`));
        took.push(performance.now() - started);
        expect(list.items.map((l) => l.metadata.name).sort()).toEqual(names);
        const after = await counters();
        expect((after.outcomes[outcome] ?? 0) - (before.outcomes[outcome] ?? 0), `list ${i} confirmed: ${outcome}`).toBe(1);
      }
      console.log(`fresh-reads: quiet resource of ${names.length}, ${outcome}: ${took.map((t) => t.toFixed(0)).join(', ')} ms`);
      return took;
    };
    // One object: the member's revision list holds all of it, and the cache holds exactly that, so no bookmark is waited for.
    const small = await quietReads('matched', ['quiet']);
    // More than the revision list holds: the member's watch is asked.
    const bulk = Array.from({ length: FRESH_READ_COMPARE_MAX }, (_, i) => `bulk-${String(i).padStart(3, '0')}`);
    for (const name of bulk) await write(a, 'POST', LR, limitRange(name));
    const large = await quietReads('probed', [...bulk, 'quiet'].sort());
    expect(percentile(small, 50)).toBeLessThan(percentile(large, 50));
    // A limit range made now is in a watch-list opened at once.
    await write(a, 'POST', LR, limitRange('new'));
    const watch = await openWatch(flotilla.endpoint, `/clusters/${a.name}${LR}?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true`);
    try {
      const events = await watch.until((es) => es.some((e) => e.type === 'BOOKMARK'), 10_000);
      expect(events.filter((e) => e.type === 'ADDED').map((e) => e.object.metadata?.name).sort()).toEqual([...bulk, 'new', 'quiet'].sort());
    } finally {
      watch.close();
    }
  }, 120_000);

  it('a resource cached in two namespaces: after a write in one, the quiet other is confirmed by comparison, with no Warning', async () => {
    const [quiet, busy] = ['fresh-quiet-ns', 'fresh-busy-ns'];
    for (const name of [quiet, busy]) await write(a, 'POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
    const namespaced = await startFlotillaProcess({
      fleet: fleet.info,
      dir: join(fleet.info.dir, 'flotilla-namespaced'),
      members: [a],
      resources: [{ version: 'v1', resource: 'configmaps', namespaces: [quiet, busy] }],
    });
    try {
      await write(a, 'POST', `/api/v1/namespaces/${quiet}/configmaps`, configMap('still', 0));
      for (let i = 0; i < 5; i++) {
        await write(a, 'POST', `/api/v1/namespaces/${busy}/configmaps`, configMap(`moved-${i}`, i));
        const started = performance.now();
        const res = await memberRequest(namespaced.endpoint, 'GET', `/api/v1/namespaces/${busy}/configmaps`, undefined, { timeoutMs: 15_000 });
        const took = performance.now() - started;
        expect(res.headers['warning'], `read ${i}`).toBeUndefined();
        expect(json<List>(res).items.map((c) => c.metadata.name)).toContain(`moved-${i}`);
        // Not the member's bookmark (a namespace's short watch gets none while the last write, in the other namespace, is the revision).
        expect(took, `read ${i}`).toBeLessThan(FRESH_READ_CONFIRM_MS / 4);
      }
    } finally {
      await namespaced.stop();
    }
  }, 120_000);

  it('resourceVersion=0 asks no member; nor does a watch without initial events', async () => {
    const before = await counters();
    for (let i = 0; i < 20; i++) expect((await via(`${CM}?resourceVersion=0`)).status).toBe(200);
    expect((await via(`${CM}/row-1?resourceVersion=0`)).status).toBe(200);
    const watch = await openWatch(flotilla.endpoint, `${CM}?watch=1`);
    watch.close();
    expect((await counters()).revisionLists).toBe(before.revisionLists);
    // The counter does count: a fresh list asks each member once.
    expect((await via(CM)).status).toBe(200);
    expect((await counters()).revisionLists).toBe(before.revisionLists + 2);
  });

  it('a stopped member does not fail a fresh read or hang it: its cached state, with a Warning naming it, within the bound', async () => {
    const pid = apiserverPid(fleet.info, b);
    try {
      await pause(pid, `${b.name}'s kube-apiserver`);
      const started = performance.now();
      const res = await via(CM);
      const took = performance.now() - started;
      const warning = String(res.headers['warning'] ?? '');
      console.log(`fresh-reads: a fleet list with ${b.name} stopped: ${res.status} in ${took.toFixed(0)} ms: ${warning}`);
      expect(res.status).toBe(200);
      expect(took).toBeLessThan(FRESH_READ_CONFIRM_MS + 2000);
      expect(warning).toContain(`cluster ${b.name} `);
      expect(warning).not.toContain(`cluster ${a.name} `);
      const clusters = new Set(json<{ items: { metadata: { annotations: Record<string, string> } }[] }>(res).items.map((c) => c.metadata.annotations['search.flotilla.io/cluster']));
      expect([...clusters].sort()).toEqual([a.name, b.name]);
    } finally {
      process.kill(pid, 'SIGCONT');
    }
  }, 60_000);
});
