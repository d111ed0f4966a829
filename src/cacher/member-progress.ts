import type { IncomingMessage } from 'node:http';
import type { MemberClient } from '../members/member-client.js';
import { compareMemberRV } from '../api/global-rv.js';
import { WatchLines, splitWatchLines } from '../api/json-watch.js';
import type { Store } from '../store/store.js';
import type { MemberObjectRV } from './metadata-page.js';
import { MEMBER_PROGRESS_GRACE_MS, MEMBER_PROGRESS_MAX_EVENTS, MEMBER_PROGRESS_MAX_IN_FLIGHT, MEMBER_PROGRESS_RETRY_MS, MEMBER_PROGRESS_WATCH_SECONDS } from '../registry/defaults.js';

/**
 * Asks a member, through its own watch, whether it holds events of a scope after a
 * resourceVersion: a watch from `from` replays at once every event the member holds after it, and
 * the bookmark the apiserver sends before the watch's deadline says how far that replay reached.
 *
 * Replicas keep stores of their own over the same members, so the member RV one replica put in a
 * client's resourceVersion may be one the other never saw for a quiet resource (the etcd revision
 * moves with every write in the member; each replica saw its own list and bookmarks). The member
 * says whether anything happened in between: when nothing did, this replica's state is already the
 * state at that RV, and it answers at once instead of a 504 or a 410 the member would not give.
 */

/**
 * What the member holds after `from`:
 * - `quiet`: no event in (from, through] (a bookmark at `through` came first);
 * - `changed`: its first event is at `at` (none in (from, at));
 * - `expired`: the member no longer holds its history after `from` (410);
 * - `unknown`: not decided (no bookmark in time, an error, too many questions at once).
 */
export type MemberAnswer =
  | { kind: 'quiet'; from: string; through: string }
  | { kind: 'changed'; from: string; at: string }
  | { kind: 'expired'; from: string; message: string }
  | { kind: 'unknown'; from: string; reason: string };

/** One cached scope of a member, as the cacher keeping it shows it to the questions asked here. */
export interface ProgressScope {
  readonly cluster: string;
  readonly member: MemberClient;
  /** The scope's collection path on the member. */
  readonly path: string;
  /** The RV the stored state is complete up to while the cacher watches; undefined while it lists or fails. */
  watchingAt(): string | undefined;
  /** Raises the stored RV from `from` to `to` as a bookmark would (false: the scope moved elsewhere meanwhile). */
  advanceQuiet(from: string, to: string): Promise<boolean>;
  /** Whether the store holds exactly `objects` for the scope, each at its resourceVersion. */
  holds(objects: readonly MemberObjectRV[]): boolean;
}

/** Whether an answer says the member holds no event of the scope in (answer.from, rv]. */
export function quietThrough(answer: MemberAnswer, rv: string): boolean {
  if (answer.kind === 'quiet') return compareMemberRV(answer.through, rv) >= 0;
  return answer.kind === 'changed' && compareMemberRV(answer.at, rv) > 0;
}

// Metadata is all a question reads; a member that cannot send it sends whole objects.
const PROBE_ACCEPT = 'application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io,application/json';

/** How a question's watch ended without its reader deciding: the member's status, or the error. */
type WatchEnd = { status: number } | { error: Error } | { ended: true };

/**
 * Opens the member's short watch from `from` (bookmarks on) and hands it line by line to `decide`
 * until that returns an answer; else `ended` says how the watch ended (a status, an error, its end).
 */
async function readMemberWatch<T>(member: MemberClient, path: string, from: string, signal: AbortSignal | undefined, decide: (line: Buffer) => T | undefined, ended: (end: WatchEnd) => T): Promise<T> {
  const q = new URLSearchParams({ watch: '1', allowWatchBookmarks: 'true', resourceVersion: from, timeoutSeconds: String(MEMBER_PROGRESS_WATCH_SECONDS) });
  const abort = new AbortController();
  const onAbort = () => abort.abort();
  signal?.addEventListener('abort', onAbort, { once: true });
  const timer = setTimeout(onAbort, MEMBER_PROGRESS_WATCH_SECONDS * 1000 + MEMBER_PROGRESS_GRACE_MS);
  let res: IncomingMessage | undefined;
  try {
    res = await member.send({ path: `${path}${path.includes('?') ? '&' : '?'}${q}`, headers: { accept: PROBE_ACCEPT }, signal: abort.signal, lane: 'long-running' });
    if (res.statusCode !== 200) return ended({ status: res.statusCode ?? 0 });
    const lines = new WatchLines();
    for await (const chunk of res) {
      for (const line of splitWatchLines(lines.push(chunk as Buffer))) {
        const answer = decide(line);
        if (answer !== undefined) return answer;
      }
    }
    return ended({ ended: true });
  } catch (e) {
    return ended({ error: e as Error });
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener('abort', onAbort);
    res?.destroy();
    abort.abort();
  }
}

/** Opens the member's watch from `from` and reads it until its first event or bookmark. */
export function askMember(member: MemberClient, path: string, from: string, signal?: AbortSignal): Promise<MemberAnswer> {
  return readMemberWatch<MemberAnswer>(member, path, from, signal, (line) => readLine(line, from), (end): MemberAnswer => {
    if ('status' in end) return end.status === 410 ? { kind: 'expired', from, message: `${member.cluster} no longer holds the events after ${from}` } : { kind: 'unknown', from, reason: `HTTP ${end.status}` };
    if ('error' in end) return { kind: 'unknown', from, reason: end.error.message };
    return { kind: 'unknown', from, reason: 'the watch ended without a bookmark' };
  });
}

/**
 * What the member holds of a scope in (from, target]: every event's RV there, read from its watch
 * from `from` until a bookmark at or past `target` or an event past it (each line in order, so all
 * before it have come).
 */
export interface EventsThrough {
  from: string;
  target: string;
  /** The RVs of the scope's events in (from, target], in order. */
  within: string[];
}

/**
 * Opens the member's watch from `from` and reads it until it has told every event up to `target`;
 * undefined when the watch ended or failed first, or the member answered 410.
 */
export function askThrough(member: MemberClient, path: string, from: string, target: string, signal?: AbortSignal): Promise<EventsThrough | undefined> {
  const within: string[] = [];
  const told = { from, target, within };
  return readMemberWatch<EventsThrough | null>(member, path, from, signal, (line) => {
    const answer = readLine(line, from);
    if (!answer) return undefined;
    if (answer.kind === 'quiet') return compareMemberRV(answer.through, target) >= 0 ? told : undefined;
    if (answer.kind !== 'changed') return null;
    if (compareMemberRV(answer.at, target) > 0) return told;
    if (within.length >= MEMBER_PROGRESS_MAX_EVENTS) return null;
    within.push(answer.at);
    return undefined;
  }, () => null).then((r) => r ?? undefined);
}

/** What one line of the member's watch decides, if anything. */
function readLine(line: Buffer, from: string): MemberAnswer | undefined {
  let event: { type?: string; object?: { code?: number; message?: string; metadata?: { resourceVersion?: string } } };
  try {
    event = JSON.parse(line.toString('utf8')) as typeof event;
  } catch {
    return { kind: 'unknown', from, reason: 'a watch line that is not JSON' };
  }
  if (event.type === 'ERROR') {
    const status = event.object ?? {};
    return status.code === 410 ? { kind: 'expired', from, message: status.message ?? 'expired' } : { kind: 'unknown', from, reason: status.message ?? 'watch error' };
  }
  const rv = event.object?.metadata?.resourceVersion;
  if (!rv || !/^[0-9]+$/.test(rv)) return { kind: 'unknown', from, reason: 'an event without a numeric resourceVersion' };
  // A bookmark older than the watch's start carries nothing: the apiserver's cacher skips those.
  if (event.type === 'BOOKMARK') return compareMemberRV(rv, from) >= 0 ? { kind: 'quiet', from, through: rv } : undefined;
  return { kind: 'changed', from, at: rv };
}

/**
 * The questions a process asks its members: one open at a time per scope (requests that need the
 * same answer share it), MEMBER_PROGRESS_MAX_IN_FLIGHT at most at once.
 */
export class MemberProgress {
  private readonly asking = new Map<ProgressScope, { from: string; answer: Promise<MemberAnswer> }>();
  /** Fresh reads' questions open now, one per scope (settle). */
  private readonly telling = new Map<ProgressScope, { from: string; target: string; answer: Promise<EventsThrough | undefined> }>();
  /** Fresh reads' questions open now, those a later one replaced in `telling` included. */
  private openTells = 0;

  constructor(private readonly signal?: AbortSignal) {}

  /** The member's answer for `scope` after `from`, shared with any request asking the same now. */
  ask(scope: ProgressScope, from: string): Promise<MemberAnswer> {
    const open = this.asking.get(scope);
    if (open?.from === from) return open.answer;
    // One watch per scope: a question from another RV waits for the open one to end.
    if (open) return open.answer.then(() => this.ask(scope, from));
    if (this.asking.size >= MEMBER_PROGRESS_MAX_IN_FLIGHT) return Promise.resolve({ kind: 'unknown', from, reason: 'too many questions to members at once' });
    const answer = askMember(scope.member, scope.path, from, this.signal).finally(() => {
      if (this.asking.get(scope)?.answer === answer) this.asking.delete(scope);
    });
    this.asking.set(scope, { from, answer });
    return answer;
  }

  /**
   * Waits until the stored state of `resource` reaches each cluster's RV in `rvs` (true), or
   * `timeoutMs` passes (false). A scope behind the RV it needs asks its member from its stored RV:
   * no event up to there, and the scope is raised to it (as a bookmark would raise it); events,
   * and they come through the cacher's own watch (asked again once the scope has moved).
   */
  async reach(store: Store, resource: string, scopes: readonly ProgressScope[], rvs: Record<string, string>, timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    const reached = () => {
      const latest = store.latestRVs(resource);
      return Object.entries(rvs).every(([c, rv]) => latest[c] !== undefined && compareMemberRV(latest[c]!, rv) >= 0);
    };
    // Each scope is asked once from each RV it is stored at.
    const askedFrom = new Map<ProgressScope, string>();
    for (;;) {
      if (reached()) return true;
      const left = deadline - Date.now();
      if (left <= 0) return false;
      const asks: Promise<unknown>[] = [];
      for (const scope of scopes) {
        const target = rvs[scope.cluster];
        const at = scope.watchingAt();
        if (target === undefined || at === undefined || compareMemberRV(at, target) >= 0 || askedFrom.get(scope) === at) continue;
        askedFrom.set(scope, at);
        asks.push(this.ask(scope, at).then(async (answer) => {
          if (answer.kind === 'quiet') await scope.advanceQuiet(at, answer.through);
          else if (quietThrough(answer, target)) await scope.advanceQuiet(at, target);
        }));
      }
      // Woken by an answer, or by any scope's progress (a commit of the resource).
      const moved = () => reached() || scopes.some((s) => {
        const at = s.watchingAt();
        return at !== undefined && askedFrom.has(s) && askedFrom.get(s) !== at;
      });
      await Promise.race([store.waitUntil(resource, moved, left), ...asks]);
    }
  }

  /**
   * As `reach`, for a fresh read: each scope behind its cluster's RV in `rvs` asks its member for
   * every event up to that RV (one watch, read on past events to a bookmark there: askThrough),
   * waits until the cacher's own watch has brought the last of them, and is then raised to the RV,
   * its state being the member's there. A resource written every second settles in one question,
   * where `reach` would ask again after each event. True when every scope got there in `timeoutMs`.
   */
  async settle(store: Store, resource: string, scopes: readonly ProgressScope[], rvs: Record<string, string>, timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    const settled = await Promise.all(scopes.map((scope) => {
      const target = rvs[scope.cluster];
      return target === undefined ? true : this.settleScope(store, resource, scope, target, deadline);
    }));
    return settled.every(Boolean);
  }

  /** The member's events of `scope` from `at` through `target`, shared with reads asking as much or less from the same RV now. */
  private tell(scope: ProgressScope, at: string, target: string, timeoutMs: number): Promise<EventsThrough | undefined> {
    const open = this.telling.get(scope);
    if (open && open.from === at && compareMemberRV(open.target, target) >= 0) return open.answer;
    // The same bound as the other questions' (settleScope asks again shortly, within its deadline).
    if (this.openTells + this.asking.size >= MEMBER_PROGRESS_MAX_IN_FLIGHT) return Promise.resolve(undefined);
    this.openTells++;
    const answer = askThrough(scope.member, scope.path, at, target, AbortSignal.any([AbortSignal.timeout(timeoutMs), ...(this.signal ? [this.signal] : [])])).finally(() => {
      this.openTells--;
      if (this.telling.get(scope)?.answer === answer) this.telling.delete(scope);
    });
    this.telling.set(scope, { from: at, target, answer });
    return answer;
  }

  private async settleScope(store: Store, resource: string, scope: ProgressScope, target: string, deadline: number): Promise<boolean> {
    const holds = (rv: string) => () => {
      const at = scope.watchingAt();
      return at !== undefined && compareMemberRV(at, rv) >= 0;
    };
    for (;;) {
      if (holds(target)()) return true;
      const left = deadline - Date.now();
      if (left <= 0) return false;
      const at = scope.watchingAt();
      if (at === undefined) {
        // Listing or failing: the cacher's own progress is all there is to wait for.
        if (!(await store.waitUntil(resource, () => scope.watchingAt() !== undefined, left))) return false;
        continue;
      }
      const told = await this.tell(scope, at, target, left);
      if (!told) {
        // No answer (an error, a 410, the watch ended first): asked again shortly, within the bound.
        await new Promise((r) => setTimeout(r, Math.min(MEMBER_PROGRESS_RETRY_MS, Math.max(0, deadline - Date.now()))));
        continue;
      }
      const last = told.within.filter((rv) => compareMemberRV(rv, target) <= 0).at(-1) ?? at;
      // The events the member told come through the cacher's own watch: wait for the last of them.
      if (!(await store.waitUntil(resource, holds(last), deadline - Date.now()))) return false;
      const now = scope.watchingAt();
      // No event in (last, target]: the state at `now` (at or past `last`) is the member's at `target`.
      if (now !== undefined && compareMemberRV(now, target) < 0 && (await scope.advanceQuiet(now, target))) return true;
    }
  }

  /**
   * Whether the member holds no event of any of `scopes` in (from, to]: what lets a watch resumed
   * from `from` be served from an event log that starts at `to`.
   */
  async quietBetween(scopes: readonly ProgressScope[], from: string, to: string): Promise<MemberAnswer['kind']> {
    const answers = await Promise.all(scopes.map((s) => this.ask(s, from)));
    if (answers.some((a) => a.kind === 'expired')) return 'expired';
    if (answers.some((a) => a.kind === 'changed' && !quietThrough(a, to))) return 'changed';
    if (answers.length > 0 && answers.every((a) => quietThrough(a, to))) return 'quiet';
    return 'unknown';
  }
}
