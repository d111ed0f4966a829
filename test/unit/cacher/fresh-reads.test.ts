import { describe, expect, it } from 'vitest';
import { FreshReads, type FreshSources } from '../../../src/cacher/fresh-reads.js';
import type { ProgressScope } from '../../../src/cacher/member-progress.js';
import type { MemberObjectRV } from '../../../src/cacher/metadata-page.js';
import { FRESH_READ_EVENT_WAIT_MS } from '../../../src/registry/defaults.js';

const RESOURCE = 'v1/configmaps';
/** A scope whose store holds `stored` (name → the member RV it is stored at), when given. */
const scope = (cluster: string, stored?: Map<string, string>, path = '/api/v1/configmaps'): ProgressScope => ({
  cluster,
  member: {} as ProgressScope['member'],
  path,
  watchingAt: () => undefined,
  advanceQuiet: () => Promise.resolve(true),
  holds: (objects) => stored !== undefined && stored.size === objects.length && objects.every((o) => stored.get(o.name) === o.rv),
});

/**
 * A fleet of fake members: each one's current revision, the store's committed RVs (moved by
 * `commit`, which wakes waitUntil), and what its watch says when asked (`probe`: the RV the member
 * confirms quiet through, or undefined for no answer).
 */
function fakeFleet(opts: { revisions: Record<string, string>; held: Record<string, string>; listed?: Record<string, MemberObjectRV[]>; probe?: Record<string, string | undefined>; silent?: Set<string>; failing?: Set<string> }) {
  const held = { ...opts.held };
  const waiters = new Set<() => void>();
  const asked: string[] = [];
  const reached = (rvs: Record<string, string>) => Object.entries(rvs).every(([c, rv]) => held[c] !== undefined && BigInt(held[c]!) >= BigInt(rv));
  const waitUntil = (_r: string, ok: () => boolean, timeoutMs: number) => new Promise<boolean>((resolve) => {
    if (ok()) return resolve(true);
    const check = () => { if (ok()) { waiters.delete(check); clearTimeout(timer); resolve(true); } };
    const timer = setTimeout(() => { waiters.delete(check); resolve(false); }, timeoutMs);
    waiters.add(check);
  });
  const waitFor = (r: string, rvs: Record<string, string>, timeoutMs: number) => waitUntil(r, () => reached(rvs), timeoutMs);
  const commit = (cluster: string, rv: string) => {
    held[cluster] = rv;
    for (const w of [...waiters]) w();
  };
  let revisionLists = 0;
  const sources: FreshSources = {
    revision: (s) => {
      revisionLists++;
      if (opts.failing?.has(s.cluster)) return Promise.reject(Object.assign(new Error('refused'), { code: 'ECONNREFUSED' }));
      // By the scope's path where a test gives one (a member's namespaces), else by its cluster.
      const objects = opts.listed?.[s.path] ?? opts.listed?.[s.cluster];
      return Promise.resolve({ rv: opts.revisions[s.path] ?? opts.revisions[s.cluster]!, ...(objects ? { objects } : {}) });
    },
    latestRVs: () => ({ ...held }),
    waitUntil,
    settle: async (r, scopes, rvs, timeoutMs) => {
      for (const s of scopes) {
        asked.push(s.cluster);
        const through = opts.probe?.[s.cluster];
        // The member's watch confirms nothing happened up to `through`: the scope is raised there.
        if (through !== undefined) setTimeout(() => commit(s.cluster, through), 5);
      }
      return waitFor(r, rvs, timeoutMs);
    },
    silent: (c) => opts.silent?.has(c) ?? false,
  };
  return { sources, commit, asked, revisionLists: () => revisionLists };
}

const clusters = ['east', 'west'];
const scopes = clusters.map((c) => scope(c));

describe('FreshReads.confirm', () => {
  it('a member whose revision the cache already holds is confirmed at once, without asking its watch', async () => {
    const f = fakeFleet({ revisions: { east: '100', west: '7' }, held: { east: '100', west: '9' } });
    const fresh = new FreshReads(f.sources);
    expect(await fresh.confirm(RESOURCE, scopes, clusters, 1000)).toEqual([]);
    expect(f.asked).toEqual([]);
    expect(fresh.stats()).toEqual({ outcomes: { current: 2, matched: 0, caught_up: 0, probed: 0, unconfirmed: 0, silent: 0 }, revisionLists: 2 });
  });

  it("the resource's own event arriving is waited for; the member's watch is not asked", async () => {
    const f = fakeFleet({ revisions: { east: '120' }, held: { east: '100' } });
    const fresh = new FreshReads(f.sources);
    setTimeout(() => f.commit('east', '120'), 20);
    expect(await fresh.confirm(RESOURCE, scopes, ['east'], 1000)).toEqual([]);
    expect(f.asked).toEqual([]);
    expect(fresh.stats().outcomes.caught_up).toBe(1);
  });

  it("a quiet resource (the member's revision moved by others) is confirmed by its watch, and only the addressed members are asked", async () => {
    const f = fakeFleet({ revisions: { east: '150', west: '150' }, held: { east: '100', west: '100' }, probe: { east: '155', west: '155' } });
    const fresh = new FreshReads(f.sources);
    expect(await fresh.confirm(RESOURCE, scopes, ['west'], 2000)).toEqual([]);
    expect(f.asked).toEqual(['west']);
    expect(fresh.stats()).toMatchObject({ outcomes: { probed: 1 }, revisionLists: 1 });
  });

  it("a quiet scope small enough to come whole in the revision list, held exactly, is confirmed without asking the member's watch; one object off is not", async () => {
    const stored = new Map([['a', '40'], ['b', '90']]);
    const listed = { east: [{ namespace: 'ns', name: 'a', rv: '40' }, { namespace: 'ns', name: 'b', rv: '90' }] };
    const f = fakeFleet({ revisions: { east: '150' }, held: { east: '100' }, listed, probe: { east: '155' } });
    const fresh = new FreshReads(f.sources);
    const started = Date.now();
    expect(await fresh.confirm(RESOURCE, [scope('east', stored)], ['east'], 2000)).toEqual([]);
    // Sooner than the wait for the resource's own event, which a match skips.
    expect(Date.now() - started).toBeLessThan(FRESH_READ_EVENT_WAIT_MS);
    expect(f.asked).toEqual([]);
    expect(fresh.stats().outcomes.matched).toBe(1);
    // The member holds b at a newer resourceVersion than the cache: its event is waited for, then the member's watch asked.
    const behind = fakeFleet({ revisions: { east: '150' }, held: { east: '100' }, listed: { east: [listed.east[0]!, { namespace: 'ns', name: 'b', rv: '120' }] }, probe: { east: '155' } });
    const again = new FreshReads(behind.sources);
    expect(await again.confirm(RESOURCE, [scope('east', stored)], ['east'], 2000)).toEqual([]);
    expect(behind.asked).toEqual(['east']);
    expect(again.stats().outcomes).toMatchObject({ matched: 0, probed: 1 });
    // An object the cache holds that the member no longer does is not a match either.
    const gone = fakeFleet({ revisions: { east: '150' }, held: { east: '100' }, listed: { east: [listed.east[0]!] }, probe: { east: '155' } });
    await new FreshReads(gone.sources).confirm(RESOURCE, [scope('east', stored)], ['east'], 2000);
    expect(gone.asked).toEqual(['east']);
  });

  it("a resource cached in two namespaces of a member: each namespace's page compared with its scope", async () => {
    const [a, b] = ['/api/v1/namespaces/a/configmaps', '/api/v1/namespaces/b/configmaps'];
    const scopesOf = [scope('east', new Map([['x', '40']]), a), scope('east', new Map([['y', '150']]), b)];
    const listed = { [a]: [{ namespace: 'a', name: 'x', rv: '40' }], [b]: [{ namespace: 'b', name: 'y', rv: '150' }] };
    // The quiet namespace a holds the cluster's RV back at 100; the write at 150 was in b.
    const f = fakeFleet({ revisions: { [a]: '150', [b]: '150' }, held: { east: '100' }, listed, probe: {} });
    const fresh = new FreshReads(f.sources);
    expect(await fresh.confirm(RESOURCE, scopesOf, ['east'], 2000)).toEqual([]);
    expect(f.asked).toEqual([]);
    expect(fresh.stats()).toMatchObject({ outcomes: { matched: 1 }, revisionLists: 2 });
    // b's page shows y newer than b's scope holds: no match.
    const behind = fakeFleet({ revisions: { [a]: '150', [b]: '160' }, held: { east: '100' }, listed: { ...listed, [b]: [{ namespace: 'b', name: 'y', rv: '160' }] }, probe: {} });
    expect(await new FreshReads(behind.sources).confirm(RESOURCE, scopesOf, ['east'], 300)).toEqual([{ cluster: 'east', reason: expect.stringContaining('160') }]);
  });

  it('a member that told its revision but whose watch is still being asked at the deadline is reported by that revision, whichever ends first', async () => {
    const f = fakeFleet({ revisions: { east: '160' }, held: { east: '100' } });
    // The member's watch answers only after the deadline: the deadline's own reason is what is reported.
    const late = { ...f.sources, settle: () => new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 1000)) };
    expect(await new FreshReads(late).confirm(RESOURCE, scopes, ['east'], 200)).toEqual([{ cluster: 'east', reason: 'did not confirm that flotilla holds its writes up to resourceVersion 160' }]);
    // A member that never tells its revision is reported as not answering.
    const mute = { ...f.sources, revision: () => new Promise<never>(() => undefined) };
    expect(await new FreshReads(mute).confirm(RESOURCE, scopes, ['east'], 200)).toEqual([{ cluster: 'east', reason: 'did not answer within 0.2 s' }]);
  });

  it('a member that does not confirm in time, or cannot be asked, is returned (named in the Warning); the others are confirmed', async () => {
    const f = fakeFleet({ revisions: { east: '150', west: '150' }, held: { east: '100', west: '150' } });
    const fresh = new FreshReads(f.sources);
    const started = Date.now();
    expect(await fresh.confirm(RESOURCE, scopes, clusters, 300)).toEqual([{ cluster: 'east', reason: expect.stringContaining('did not') }]);
    expect(Date.now() - started).toBeLessThan(600);
    const down = fakeFleet({ revisions: { west: '1' }, held: { west: '1' }, failing: new Set(['east']) });
    expect(await new FreshReads(down.sources).confirm(RESOURCE, scopes, clusters, 300)).toEqual([{ cluster: 'east', reason: 'could not tell its current resourceVersion (ECONNREFUSED)' }]);
  });

  it('a silent member is not asked (its stale Warning says it); one found silent while asked is let go at once', async () => {
    const silent = new Set(['east']);
    const f = fakeFleet({ revisions: { east: '150', west: '5' }, held: { east: '100', west: '5' }, silent });
    const fresh = new FreshReads(f.sources);
    expect(await fresh.confirm(RESOURCE, scopes, clusters, 2000)).toEqual([]);
    expect(f.revisionLists()).toBe(1);
    silent.clear();
    const started = Date.now();
    setTimeout(() => silent.add('east'), 100);
    expect(await fresh.confirm(RESOURCE, scopes, ['east'], 3000)).toEqual([]);
    expect(Date.now() - started).toBeLessThan(1000);
    expect(fresh.stats().outcomes.silent).toBe(2);
  });

  it('a cluster the resource is not cached from has nothing to confirm', async () => {
    const f = fakeFleet({ revisions: {}, held: {} });
    expect(await new FreshReads(f.sources).confirm(RESOURCE, scopes, ['north'], 100)).toEqual([]);
    expect(f.revisionLists()).toBe(0);
  });
});
