import { describe, expect, it } from 'vitest';
import { PassThrough } from 'node:stream';
import type { IncomingMessage } from 'node:http';
import type { MemberClient, MemberRequest } from '../../../src/members/member-client.js';
import type { Store } from '../../../src/store/store.js';
import { MemberProgress, askMember, quietThrough, type ProgressScope } from '../../../src/cacher/member-progress.js';

/** A member whose watch answers `lines` (then stays open unless `end`), recording the paths asked. */
function fakeMember(lines: string[], opts: { status?: number; end?: boolean } = {}): MemberClient & { asked: string[] } {
  const asked: string[] = [];
  return {
    cluster: 'north',
    asked,
    send(req: MemberRequest): Promise<IncomingMessage> {
      asked.push(req.path);
      const res = new PassThrough() as unknown as IncomingMessage & PassThrough;
      res.statusCode = opts.status ?? 200;
      setImmediate(() => {
        for (const l of lines) res.write(l + '\n');
        if (opts.end) res.end();
      });
      return Promise.resolve(res);
    },
  } as unknown as MemberClient & { asked: string[] };
}

const bookmark = (rv: string) => JSON.stringify({ type: 'BOOKMARK', object: { kind: 'ConfigMap', metadata: { resourceVersion: rv } } });
const added = (rv: string) => JSON.stringify({ type: 'ADDED', object: { kind: 'ConfigMap', metadata: { name: 'a', resourceVersion: rv } } });

describe('askMember', () => {
  it('asks a short watch with bookmarks from the RV, and reads its first bookmark as "nothing up to here"', async () => {
    const m = fakeMember([bookmark('120')]);
    const answer = await askMember(m, '/api/v1/configmaps', '100');
    expect(answer).toEqual({ kind: 'quiet', from: '100', through: '120' });
    expect(m.asked[0]).toMatch(/^\/api\/v1\/configmaps\?watch=1&allowWatchBookmarks=true&resourceVersion=100&timeoutSeconds=3$/);
    expect(quietThrough(answer, '120')).toBe(true);
    expect(quietThrough(answer, '121')).toBe(false);
  });

  it('an event first: changed at its RV (quiet only below it)', async () => {
    const answer = await askMember(fakeMember([added('110'), bookmark('120')]), '/api/v1/configmaps', '100');
    expect(answer).toEqual({ kind: 'changed', from: '100', at: '110' });
    expect(quietThrough(answer, '109')).toBe(true);
    expect(quietThrough(answer, '110')).toBe(false);
  });

  it('a bookmark older than the start carries nothing; 410 in the stream or as the answer is expired; an end without a bookmark is unknown', async () => {
    expect((await askMember(fakeMember([bookmark('90'), bookmark('130')]), '/p', '100')).kind).toBe('quiet');
    expect((await askMember(fakeMember([JSON.stringify({ type: 'ERROR', object: { code: 410, message: 'too old' } })]), '/p', '100')).kind).toBe('expired');
    expect((await askMember(fakeMember([], { status: 410, end: true }), '/p', '100')).kind).toBe('expired');
    expect((await askMember(fakeMember([], { end: true }), '/p', '100')).kind).toBe('unknown');
    expect((await askMember(fakeMember([], { status: 500, end: true }), '/p', '100')).kind).toBe('unknown');
  });
});

/** A store of one resource whose clusters' RVs the scopes move; waitUntil is woken by their commits. */
function fakeStore(rvs: Record<string, string>) {
  const waiters = new Set<() => void>();
  const store = {
    latestRVs: () => ({ ...rvs }),
    waitUntil: (_r: string, reached: () => boolean, timeoutMs: number) => new Promise<boolean>((resolve) => {
      if (reached()) return resolve(true);
      const check = () => {
        if (reached()) done(true);
      };
      const done = (ok: boolean) => {
        waiters.delete(check);
        clearTimeout(timer);
        resolve(ok);
      };
      const timer = setTimeout(() => done(false), timeoutMs);
      waiters.add(check);
    }),
  } as unknown as Store;
  const commit = (cluster: string, rv: string) => {
    rvs[cluster] = rv;
    for (const w of [...waiters]) w();
  };
  return { store, commit };
}

function fakeScope(member: MemberClient, rvs: Record<string, string>, commit: (c: string, rv: string) => void): ProgressScope & { raised: string[] } {
  const raised: string[] = [];
  return {
    cluster: 'north',
    member,
    path: '/api/v1/configmaps',
    raised,
    watchingAt: () => rvs.north,
    advanceQuiet: (_from, to) => {
      raised.push(to);
      commit('north', to);
      return Promise.resolve(true);
    },
    holds: () => false,
  };
}

describe('MemberProgress.settle (fresh reads)', () => {
  it('events on the way are read past: one member watch, the scope raised to the RV once its own watch brought the last of them', async () => {
    const rvs = { north: '100' };
    const { store, commit } = fakeStore(rvs);
    // Written every second: two events before the RV, one after it, then (never reached) a bookmark.
    const member = fakeMember([added('110'), added('120'), added('145'), bookmark('150')]);
    const scope = fakeScope(member, rvs, commit);
    const settled = new MemberProgress().settle(store, 'configmaps', [scope], { north: '140' }, 3000);
    await new Promise((r) => setTimeout(r, 100));
    expect(scope.raised).toEqual([]);
    commit('north', '110');
    await new Promise((r) => setTimeout(r, 50));
    expect(scope.raised).toEqual([]);
    // The cacher's own watch brings the event at 120, the last one up to 140.
    commit('north', '120');
    expect(await settled).toBe(true);
    expect(scope.raised).toEqual(['140']);
    expect(member.asked).toHaveLength(1);
  });

  it('a bookmark at or past the RV with no event before it: raised at once; below the RV it reads on', async () => {
    const rvs = { north: '100' };
    const { store, commit } = fakeStore(rvs);
    const member = fakeMember([bookmark('130'), bookmark('160')]);
    const scope = fakeScope(member, rvs, commit);
    expect(await new MemberProgress().settle(store, 'configmaps', [scope], { north: '140' }, 3000)).toBe(true);
    expect(scope.raised).toEqual(['140']);
  });

  it('no answer: asks again within the bound, then says false', async () => {
    const rvs = { north: '100' };
    const { store, commit } = fakeStore(rvs);
    const member = fakeMember([], { end: true });
    const scope = fakeScope(member, rvs, commit);
    expect(await new MemberProgress().settle(store, 'configmaps', [scope], { north: '140' }, 700)).toBe(false);
    expect(scope.raised).toEqual([]);
    expect(member.asked.length).toBeGreaterThan(1);
    expect(member.asked.length).toBeLessThan(8);
  });
});

describe('MemberProgress.reach', () => {
  it('a scope behind whose member holds nothing up to the RV is raised to the member\'s bookmark at once', async () => {
    const rvs = { north: '100' };
    const { store, commit } = fakeStore(rvs);
    const member = fakeMember([bookmark('150')]);
    const scope = fakeScope(member, rvs, commit);
    const started = Date.now();
    expect(await new MemberProgress().reach(store, 'configmaps', [scope], { north: '140' }, 3000)).toBe(true);
    expect(Date.now() - started).toBeLessThan(1000);
    expect(scope.raised).toEqual(['150']);
  });

  it('events in between are not skipped: the scope waits for its own watch to commit them, then asks again from there', async () => {
    const rvs = { north: '100' };
    const { store, commit } = fakeStore(rvs);
    let asks = 0;
    const member = {
      cluster: 'north',
      send: (req: MemberRequest) => {
        asks++;
        return fakeMember(req.path.includes('resourceVersion=100') ? [added('120')] : [bookmark('150')]).send(req);
      },
    } as unknown as MemberClient;
    const scope = fakeScope(member, rvs, commit);
    const reached = new MemberProgress().reach(store, 'configmaps', [scope], { north: '140' }, 3000);
    await new Promise((r) => setTimeout(r, 100));
    expect(scope.raised).toEqual([]);
    // The cacher's own watch brings the event at 120.
    commit('north', '120');
    expect(await reached).toBe(true);
    expect(scope.raised).toEqual(['150']);
    expect(asks).toBe(2);
  });

  it('no answer: waits, and says false at the timeout (the read answers 504)', async () => {
    const rvs = { north: '100' };
    const { store, commit } = fakeStore(rvs);
    const scope = fakeScope(fakeMember([], { end: true }), rvs, commit);
    expect(await new MemberProgress().reach(store, 'configmaps', [scope], { north: '140' }, 300)).toBe(false);
    expect(scope.raised).toEqual([]);
  });

  it('requests asking the same scope from the same RV share one member watch', async () => {
    const member = fakeMember([bookmark('150')]);
    const rvs = { north: '100' };
    const { commit } = fakeStore(rvs);
    const scope = fakeScope(member, rvs, commit);
    const progress = new MemberProgress();
    const [a, b] = await Promise.all([progress.ask(scope, '100'), progress.ask(scope, '100')]);
    expect(a).toBe(b);
    expect(member.asked).toHaveLength(1);
  });

  it('quietBetween: quiet only when every scope of the cluster is quiet through the log start', async () => {
    const rvs = { north: '100' };
    const { commit } = fakeStore(rvs);
    const progress = new MemberProgress();
    expect(await progress.quietBetween([fakeScope(fakeMember([bookmark('150')]), rvs, commit)], '50', '140')).toBe('quiet');
    expect(await progress.quietBetween([fakeScope(fakeMember([added('60')]), rvs, commit)], '50', '140')).toBe('changed');
    expect(await progress.quietBetween([fakeScope(fakeMember([added('141')]), rvs, commit)], '50', '140')).toBe('quiet');
    expect(await progress.quietBetween([fakeScope(fakeMember([], { status: 410, end: true }), rvs, commit)], '50', '140')).toBe('expired');
    expect(await progress.quietBetween([], '50', '140')).toBe('unknown');
  });
});
