import { compareMemberRV, isRevision } from '../api/global-rv.js';
import { GenerationFlight } from '../util/generation-flight.js';
import { FRESH_READ_COMPARE_MAX, FRESH_READ_COMPARE_SCOPES, FRESH_READ_CONFIRM_MS, FRESH_READ_EVENT_WAIT_MS, FRESH_READ_SILENCE_CHECK_MS } from '../registry/defaults.js';
import type { ProgressScope } from './member-progress.js';
import { readMetadataPage, type MemberObjectRV } from './metadata-page.js';

/**
 * Fresh reads (docs/fresh-reads.md): before a read with resourceVersion unset is served from the
 * cache, each member it addresses confirms that the cache holds every write the member had
 * acknowledged when the read arrived, as KEP-2340's consistent reads from the watch cache do for
 * one apiserver. Per (member, resource):
 * 1. the member's current revision R: one consistent list of up to FRESH_READ_COMPARE_MAX objects'
 *    metadata (its list resourceVersion is etcd's revision then, not older than any acknowledged
 *    write), shared by the reads that arrived before it started (GenerationFlight); one per
 *    namespace for a resource cached in up to FRESH_READ_COMPARE_SCOPES namespaces;
 * 2. the cache's committed resourceVersion at R or past it: confirmed; so is a scope that came whole
 *    in that list and that the cache holds exactly, each object at the member's resourceVersion (the
 *    member's state at R, however quiet the resource: no bookmark to wait for); else the resource's
 *    own event is likely on its way (the write was to this resource), waited for briefly;
 * 3. else the member is asked whether any event of the resource lies between the cache's
 *    resourceVersion and R (member-progress.ts: a short watch from the cache's resourceVersion,
 *    answered by its events or its bookmark); none, and the cache is raised to what the member
 *    confirmed, so later reads up to there are confirmed at step 2.
 * A member that is silent (the heartbeat's word) is not waited for; one that does not confirm in
 * time is reported, and the read serves its cached state with a Warning.
 */

/** How a member's confirmation ended, for /metrics: the cache already there, holding the member's listed state, its event waited for, the member's watch asked, or not confirmed. */
export type FreshOutcome = 'current' | 'matched' | 'caught_up' | 'probed' | 'unconfirmed' | 'silent';

export interface FreshReadCounts {
  /** Members' confirmations by outcome, since start. */
  outcomes: Record<FreshOutcome, number>;
  /** Lists sent to members for their current revision (step 1), since start: fewer than the confirmations when reads share them. */
  revisionLists: number;
}

/** No confirmation yet: every outcome at 0. */
export function emptyFreshReadCounts(): FreshReadCounts {
  return { outcomes: { current: 0, matched: 0, caught_up: 0, probed: 0, unconfirmed: 0, silent: 0 }, revisionLists: 0 };
}

/** A member the read addresses whose cache could not be confirmed, and why (for its Warning). */
export interface Unconfirmed {
  cluster: string;
  reason: string;
}

/** A member's answer for its current revision: the revision, and the scope's objects when the whole scope fit in the answer. */
export interface MemberRevision {
  rv: string;
  /** Every object of the scope at `rv`; undefined when the scope holds more than FRESH_READ_COMPARE_MAX. */
  objects?: MemberObjectRV[];
}

/** What the confirmation reads and asks: the store's committed RVs, the member, its heartbeat (fakes in the unit tests). */
export interface FreshSources {
  /** The member's current revision for the scope's resource (its list resourceVersion), with the scope's objects when few. */
  revision(scope: ProgressScope, signal: AbortSignal): Promise<MemberRevision>;
  /** The resource's committed RV per cluster (the oldest of its scopes), as readers see the store. */
  latestRVs(resource: string): Record<string, string>;
  /** Resolves true once `reached()` holds, checked after each commit of `resource`; false at `timeoutMs`. */
  waitUntil(resource: string, reached: () => boolean, timeoutMs: number): Promise<boolean>;
  /** The same, asking the scopes' members for their events up to `rvs` (member-progress.ts `settle`). */
  settle(resource: string, scopes: readonly ProgressScope[], rvs: Record<string, string>, timeoutMs: number): Promise<boolean>;
  /** Whether the heartbeat finds the member silent. */
  silent(cluster: string): boolean;
}

/** A member's current revision for a scope: its list resourceVersion, from a consistent list of a few objects' metadata; with those objects when they are the whole scope. */
export async function memberRevision(scope: ProgressScope, signal: AbortSignal): Promise<MemberRevision> {
  const page = await readMetadataPage(scope.member, scope.path, FRESH_READ_COMPARE_MAX, signal);
  if (!page.rv) throw new Error('a list without a resourceVersion');
  return page.whole ? { rv: page.rv, objects: page.objects } : { rv: page.rv };
}

export class FreshReads {
  /** One revision request at a time per scope (the first of a member's, or each of a few). */
  private readonly flights = new WeakMap<ProgressScope, GenerationFlight<MemberRevision>>();
  private readonly counts = emptyFreshReadCounts();

  constructor(private readonly sources: FreshSources, private readonly signal?: AbortSignal) {}

  stats(): FreshReadCounts {
    return { outcomes: { ...this.counts.outcomes }, revisionLists: this.counts.revisionLists };
  }

  /**
   * Confirms, for each of `clusters` (those the read addresses), that the cache of `resource` holds
   * what the member had acknowledged when this was called; within `timeoutMs`. Returns the members
   * not confirmed. A silent member is left to the read's stale-cluster Warning; a cluster the
   * resource is not cached from has nothing to confirm.
   */
  async confirm(resource: string, scopes: readonly ProgressScope[], clusters: readonly string[], timeoutMs: number): Promise<Unconfirmed[]> {
    const deadline = Date.now() + timeoutMs;
    const results = await Promise.all(clusters.map(async (cluster) => {
      const own = scopes.filter((s) => s.cluster === cluster);
      if (own.length === 0) return undefined;
      const outcome = this.sources.silent(cluster) ? { kind: 'silent' as const } : await this.confirmWhileHeard(resource, cluster, own, deadline, timeoutMs);
      this.counts.outcomes[outcome.kind]++;
      return outcome.kind === 'unconfirmed' ? { cluster, reason: outcome.reason } : undefined;
    }));
    return results.filter((r): r is Unconfirmed => r !== undefined);
  }

  /**
   * The member's confirmation, given up as soon as the heartbeat finds the member silent, or at the
   * deadline. The deadline's reason is the confirmation's own at that point, so the deadline and a
   * step that ends at it report the same.
   */
  private async confirmWhileHeard(resource: string, cluster: string, scopes: readonly ProgressScope[], deadline: number, timeoutMs: number): Promise<Outcome> {
    const giveUp = new AbortController();
    const pending: PendingReason = { reason: `did not answer within ${(timeoutMs / 1000).toFixed(1)} s` };
    const watchSilence = new Promise<Outcome>((resolve) => {
      const timer = setInterval(() => {
        if (this.sources.silent(cluster)) resolve({ kind: 'silent' });
        else if (Date.now() >= deadline) resolve({ kind: 'unconfirmed', reason: pending.reason });
        else return;
        clearInterval(timer);
      }, FRESH_READ_SILENCE_CHECK_MS);
      giveUp.signal.addEventListener('abort', () => clearInterval(timer), { once: true });
    });
    try {
      return await Promise.race([this.confirmCluster(resource, cluster, scopes, deadline, pending), watchSilence]);
    } finally {
      giveUp.abort();
    }
  }

  private async confirmCluster(resource: string, cluster: string, scopes: readonly ProgressScope[], deadline: number, pending: PendingReason): Promise<Outcome> {
    // A resource cached in a few namespaces of the member: each scope's own page, so that each can be compared.
    const asked = scopes.length <= FRESH_READ_COMPARE_SCOPES ? scopes : scopes.slice(0, 1);
    let answers: MemberRevision[];
    try {
      answers = await Promise.all(asked.map((s) => this.revision(s)));
    } catch (e) {
      const err = e as Error & { code?: string };
      const timedOut = err.name === 'TimeoutError' || err.name === 'AbortError';
      return { kind: 'unconfirmed', reason: timedOut ? 'did not tell its current resourceVersion in time' : `could not tell its current resourceVersion (${err.code ?? err.message})` };
    }
    const target = answers.map((a) => a.rv).reduce((a, b) => (isRevision(a) && isRevision(b) && compareMemberRV(b, a) > 0 ? b : a));
    const held = () => this.sources.latestRVs(resource)[cluster];
    if (!isRevision(target)) {
      // An aggregated API's resourceVersions: only an equal one can be told to be current.
      return held() === target ? { kind: 'current' } : { kind: 'unconfirmed', reason: 'has resourceVersions flotilla cannot order' };
    }
    const unconfirmed = `did not confirm that flotilla holds its writes up to resourceVersion ${target}`;
    pending.reason = unconfirmed;
    const current = () => {
      const rv = held();
      return rv !== undefined && isRevision(rv) && compareMemberRV(rv, target) >= 0;
    };
    // Each scope came whole in its answer and is held exactly: the cache is at the member's state there.
    const matches = () => asked.length === scopes.length && answers.every((a, i) => a.objects !== undefined && asked[i]!.holds(a.objects));
    if (current()) return { kind: 'current' };
    if (matches()) return { kind: 'matched' };
    if (await this.sources.waitUntil(resource, () => current() || matches(), Math.min(FRESH_READ_EVENT_WAIT_MS, deadline - Date.now()))) return { kind: 'caught_up' };
    const want = { [cluster]: target };
    if (await this.sources.settle(resource, scopes, want, deadline - Date.now())) return { kind: 'probed' };
    return { kind: 'unconfirmed', reason: unconfirmed };
  }

  /** The member's current revision, from a request started after this call (shared with the calls that arrive with it). */
  private revision(scope: ProgressScope): Promise<MemberRevision> {
    let flight = this.flights.get(scope);
    if (!flight) {
      flight = new GenerationFlight(() => {
        this.counts.revisionLists++;
        // Bounded on its own: the reads sharing it each give up at their own deadline.
        const signal = AbortSignal.any([AbortSignal.timeout(FRESH_READ_CONFIRM_MS), ...(this.signal ? [this.signal] : [])]);
        return this.sources.revision(scope, signal);
      });
      this.flights.set(scope, flight);
    }
    return flight.get();
  }
}

type Outcome = { kind: Exclude<FreshOutcome, 'unconfirmed'> } | { kind: 'unconfirmed'; reason: string };

/** Why the member is unconfirmed if the deadline comes now: moved on by each step the confirmation passes. */
interface PendingReason {
  reason: string;
}
