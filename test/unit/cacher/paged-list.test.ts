import { describe, expect, it } from 'vitest';
import type { MemberClient } from '../../../src/members/member-client.js';
import { listInPages } from '../../../src/cacher/paged-list.js';
import { Semaphore } from '../../../src/util/semaphore.js';

/**
 * One member answering each page a tick later; a collection's path ends in its number of pages. Its
 * compaction is counted in pages served: a continue token issued more than `horizon` pages ago (by
 * any list) is answered 410, as a member whose compaction passed the token's snapshot; with
 * `refuseFirstContinue`, so is the first continue token asked for.
 */
function compactingMember(horizon: number, refuseFirstContinue = false) {
  let served = 0;
  let refused = 0;
  const member = {
    cluster: 'm',
    fetch: async (req: { path: string }) => {
      await new Promise((r) => setImmediate(r));
      const url = new URL(req.path, 'https://member');
      const token = url.searchParams.get('continue');
      const pages = Number(url.pathname.split('/')[2]);
      const [page, issuedAt] = token ? (token.split('.').map(Number) as [number, number]) : [0, served];
      if (token && (served - issuedAt > horizon || (refuseFirstContinue && refused === 0))) {
        refused++;
        return { status: 410, headers: {}, body: Buffer.from('{"kind":"Status","code":410,"reason":"Expired"}') };
      }
      served++;
      const next = page + 1 < pages ? `${page + 1}.${served}` : '';
      return { status: 200, headers: {}, body: Buffer.from(`{"metadata":{"continue":"${next}"},"rows":[]}`) };
    },
  } as unknown as MemberClient;
  return { member, served: () => served, refused: () => refused };
}

/** Lists `lists` collections of `pages` pages at once over `slots` page slots, as a first sync does. */
async function syncAll(lists: number, pages: number, slots: number, horizon: number) {
  const m = compactingMember(horizon);
  const pageSlots = new Semaphore(slots);
  let underWay = 0;
  let mostUnderWay = 0;
  const restarts: number[] = [];
  await Promise.all(Array.from({ length: lists }, (_, i) => {
    let begun = false;
    restarts[i] = 0;
    return listInPages({
      member: m.member,
      path: `/list-${i}/${pages}`,
      pageSize: 500,
      pageSlots,
      signal: new AbortController().signal,
      refusal: (status) => new Error(`refused ${status}`),
      name: `list ${i}`,
    }, {
      restart: () => {
        restarts[i]!++;
        // A member that never stops compacting under a list it cannot finish: give up as a test would.
        if (restarts[i]! > 20) throw new Error(`list ${i} started over 20 times`);
      },
      page: async (body, first) => {
        if (first && !begun) {
          begun = true;
          mostUnderWay = Math.max(mostUnderWay, ++underWay);
        }
        await new Promise((r) => setImmediate(r));
        const token = /"continue":"([^"]*)"/.exec(body.toString())![1] || undefined;
        if (!token) underWay--;
        return token;
      },
    });
  }));
  return { mostUnderWay, restarts: restarts.reduce((a, b) => a + b, 0), served: m.served(), refused: m.refused() };
}

describe('listInPages', () => {
  it('keeps a list under way ahead of lists not yet begun: no more lists under way than page slots', async () => {
    const r = await syncAll(24, 6, 4, Infinity);
    expect(r.mostUnderWay).toBeLessThanOrEqual(4);
    expect(r.served).toBe(24 * 6);
  });

  it('finishes a first sync of many lists whose member compacts continue tokens faster than the whole sync takes', async () => {
    // Each list's own pages take far less than the horizon; the whole sync takes far more. Lists
    // advanced in turn would each span the whole sync, every token would expire, and none would end.
    const r = await syncAll(40, 8, 4, 30);
    expect(r.restarts).toBe(0);
    expect(r.served).toBe(40 * 8);
  });

  it('starts a list over on its own slot when its continue token was compacted away, and finishes it', async () => {
    const m = compactingMember(Infinity, true);
    const pageSlots = new Semaphore(1);
    const firsts: boolean[] = [];
    let restarts = 0;
    await listInPages({
      member: m.member,
      path: '/list/3',
      pageSize: 500,
      pageSlots,
      signal: new AbortController().signal,
      refusal: (status) => new Error(`refused ${status}`),
      name: 'list',
    }, {
      restart: () => void restarts++,
      page: async (body, first) => {
        firsts.push(first);
        return /"continue":"([^"]*)"/.exec(body.toString())![1] || undefined;
      },
    });
    expect(m.refused()).toBe(1);
    expect(restarts).toBe(1);
    expect(firsts).toEqual([true, true, false, false]);
    expect(pageSlots.inUse).toBe(0);
  });
});
