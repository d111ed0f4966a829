import type { MemberClient } from '../members/member-client.js';
import type { Semaphore } from '../util/semaphore.js';
import { LIST_PAGE_IDLE_TIMEOUT_MS } from '../registry/defaults.js';
import { peekContinue } from './list-metadata.js';

/**
 * A member's list, page after page, one page ahead when a page slot is free: the next page is on
 * its way while this one is decoded and committed. Each page holds one of the process's page
 * slots from its request until it is handed over and committed; a continue token the member
 * compacted away (410) starts the list over.
 *
 * A list under way keeps a slot from page to page: a page not prefetched takes the slot of the page
 * before it. Were slots given back between pages, a first sync of many clusters would advance every
 * list in turn, a page at a time, each spanning the whole sync: past the member's compaction (5 to
 * 10 minutes by default) every continue token expires, every list starts over, and the sync never
 * ends. Kept, at most as many lists are under way as there are slots, each as short as its pages.
 */

/**
 * What a cacher asks its member for, lists and watches alike: Table rows with the whole object.
 * The member prints the cells (exactly what kubectl shows for every kind, CRD columns included),
 * and the object rides along.
 */
export const TABLE_ACCEPT = 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json';

export interface PagedListSource {
  member: MemberClient;
  /** The collection's path, without a query. */
  path: string;
  pageSize: number;
  pageSlots: Semaphore;
  signal: AbortSignal;
  /** What a refusal of the list (not 200, not 410 of a continue token) throws. */
  refusal(status: number, body: string): Error;
  /** Names the list in an error: `list <resource> from <cluster>`. */
  name: string;
}

export interface PagedListSink {
  /** Commits a page (the first of the list when `first`); returns the continue token it read. */
  page(body: Buffer, first: boolean): Promise<string | undefined>;
  /** The list starts over from its first page: what the pages before said is void. */
  restart(): void;
}

export async function listInPages(source: PagedListSource, sink: PagedListSink): Promise<void> {
  const { pageSlots, signal } = source;
  /** A page request holding one of the process's page slots until the page is committed. */
  const fetchPage = (slot: () => void, token?: string) => {
    const q = new URLSearchParams({ limit: String(source.pageSize), includeObject: 'Object' });
    if (token) q.set('continue', token);
    const response = source.member.fetch({ path: `${source.path}?${q}`, headers: { accept: TABLE_ACCEPT }, signal, idleTimeoutMs: LIST_PAGE_IDLE_TIMEOUT_MS });
    // A prefetched page nobody awaits any more (the list failed or stopped) must not crash the
    // process with an unhandled rejection; whoever awaits it still sees the error.
    response.catch(() => undefined);
    return { response, release: slot };
  };
  let continueToken: string | undefined;
  // Waiting for a slot happens only here, with none held, so holders always finish.
  let inFlight = fetchPage(await pageSlots.acquire(signal));
  try {
    for (;;) {
      const current = inFlight;
      let handedOn = false;
      try {
        const res = await current.response;
        if (res.status === 410 && continueToken) {
          // The snapshot behind the continue token was compacted away: start the list over.
          sink.restart();
          continueToken = undefined;
          // Nothing is prefetched past a page not yet read: its slot serves the new first page.
          inFlight = fetchPage(current.release);
          handedOn = true;
          continue;
        }
        if (res.status !== 200) throw source.refusal(res.status, res.body.toString('utf8', 0, 2000));
        const nextToken = peekContinue(res.body);
        const slot = nextToken ? pageSlots.tryAcquire() : undefined;
        if (slot) inFlight = fetchPage(slot, nextToken);
        continueToken = await sink.page(res.body, !continueToken);
        if (continueToken !== nextToken) throw new Error(`${source.name}: continue token misread`);
        if (continueToken && inFlight === current) {
          // Not prefetched (no slot was free then): the next page takes this page's slot.
          inFlight = fetchPage(current.release, continueToken);
          handedOn = true;
        }
      } finally {
        if (!handedOn) current.release();
      }
      if (!continueToken) break;
    }
  } finally {
    // A failed list's prefetched page gives its slot back (releasing twice is harmless).
    inFlight.release();
  }
}
