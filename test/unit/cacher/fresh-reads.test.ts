import { describe, expect, it } from 'vitest';
import { FreshReads, type FreshSources } from '../../../src/cacher/fresh-reads.js';
import type { ProgressScope } from '../../../src/cacher/member-progress.js';

const RESOURCE = 'v1/configmaps';
const scope = (cluster: string): ProgressScope => ({ cluster, member: {} as ProgressScope['member'], path: '/api/v1/configmaps', watchingAt: () => undefined, advanceQuiet: () => Promise.resolve(true) });

/**
 * A fleet of fake members: each one's current revision, the store's committed RVs (moved by
 * `commit`, which wakes waitFor), and what its watch says when asked (`probe`: the RV the member
 * confirms quiet through, or undefined for no answer).
 */
function fakeFleet(opts: { revisions: Record<string, string>; held: Record<string, string>; probe?: Record<string, string | undefined>; silent?: Set<string>; failing?: Set<string> }) {
  const held = { ...opts.held };
  const waiters = new Set<() => void>();
  const asked: string[] = [];
  const reached = (rvs: Record<string, string>) => Object.entries(rvs).every(([c, rv]) => held[c] !== undefined && BigInt(held[c]!) >= BigInt(rv));
  const waitFor = (_r: string, rvs: Record<string, string>, timeoutMs: number) => new Promise<boolean>((resolve) => {
    if (reached(rvs)) return resolve(true);
    const check = () => { if (reached(rvs)) { waiters.delete(check); clearTimeout(timer); resolve(true); } };
    const timer = setTimeout(() => { waiters.delete(check); resolve(false); }, timeoutMs);
    waiters.add(check);
  });
  const commit = (cluster: string, rv: string) => {
    held[cluster] = rv;
    for (const w of [...waiters]) w();
  };
  let revisionLists = 0;
  const sources: FreshSources = {
    revision: (s) => {
      revisionLists++;
      return opts.failing?.has(s.cluster) ? Promise.reject(Object.assign(new Error('refused'), { code: 'ECONNREFUSED' })) : Promise.resolve(opts.revisions[s.cluster]!);
    },
    latestRVs: () => ({ ...held }),
    waitFor,
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
const scopes = clusters.map(scope);

describe('FreshReads.confirm', () => {
  it('a member whose revision the cache already holds is confirmed at once, without asking its watch', async () => {
    const f = fakeFleet({ revisions: { east: '100', west: '7' }, held: { east: '100', west: '9' } });
    const fresh = new FreshReads(f.sources);
    expect(await fresh.confirm(RESOURCE, scopes, clusters, 1000)).toEqual([]);
    expect(f.asked).toEqual([]);
    expect(fresh.stats()).toEqual({ outcomes: { current: 2, caught_up: 0, probed: 0, unconfirmed: 0, silent: 0 }, revisionLists: 2 });
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
