import type { IncomingMessage } from 'node:http';
import type { FleetMembers } from '../cacher/cache-roles.js';
import { AnswerRefusedError, type AnswerSink, type MemberLane } from '../members/member-client.js';
import { mapBounded } from '../util/map-bounded.js';

/**
 * Asking members on a caller's behalf, the one way live reads and forwarded writes do it: the
 * caller's Impersonate-* headers (asCaller), at most `concurrency` members at once, each within a
 * timeout the caller names (registry/defaults.ts), and one result a member, in the order asked,
 * saying why a member that did not answer is left out. A member beyond the bound waits for an
 * earlier one's answer first, so members that do not answer add up their timeouts, one per wave.
 */

/** One member's answer, or why there is none. */
export interface MemberResult {
  cluster: string;
  status?: number;
  headers?: IncomingMessage['headers'];
  body?: Buffer;
  error?: string;
  /** The member did not answer within the timeout (`error` says so, naming it). */
  timedOut?: true;
  /** Where the body went as it arrived (MemberAsk.sinkFor), read as it was. */
  sink?: AnswerSink;
}

/** A request to one member. */
export interface MemberAsk {
  cluster: string;
  method?: string;
  /** The member's path, query included. */
  path: string;
  headers: Record<string, string | string[]>;
  body?: Buffer;
  /** Where the answer's body goes as it arrives, chosen by its head (MemberClient.fetch). */
  sinkFor?: (res: IncomingMessage) => AnswerSink | undefined;
}

/**
 * The bytes the answers may take, as they arrive (live-read-limits.ts's LiveBufferHold): a
 * refused read fails whole with the budget's refusal rather than leave members out, for
 * flotilla's own load is no member's failure.
 */
export interface AnswerBudget {
  readonly isRefused: boolean;
  take(bytes: number): boolean;
  refusal(): Error;
}

export interface FanOutBounds {
  /** Members asked at once. */
  concurrency: number;
  /** How long each member may take (its headers, for a long-running request). */
  timeoutMs: number;
  budget?: AnswerBudget;
}

/** Why a member that did not answer in time is left out. */
export function unansweredWithin(timeoutMs: number): string {
  return `did not answer within ${timeoutMs / 1000} s`;
}

const NOT_A_MEMBER = 'not a member of the fleet';

/**
 * The headers a member is asked with as the caller: its Impersonate-* headers, the request's own
 * (`headers`), and its user agent, said to come through flotilla.
 */
export function asCaller(identity: Record<string, string | string[]>, userAgent: string | string[] | undefined, headers: Record<string, string> = {}): Record<string, string | string[]> {
  return { ...identity, ...headers, 'user-agent': `${typeof userAgent === 'string' ? userAgent : 'unknown'} via flotilla` };
}

/** One member's answer within `timeoutMs`, or why there is none. */
export async function askMember(fleet: FleetMembers, ask: MemberAsk, timeoutMs: number, budget?: AnswerBudget): Promise<MemberResult> {
  const { cluster } = ask;
  const member = fleet.member(cluster);
  if (!member) return { cluster, error: NOT_A_MEMBER };
  if (budget?.isRefused) throw budget.refusal();
  try {
    const res = await member.fetch(
      { method: ask.method ?? 'GET', path: ask.path, headers: ask.headers, ...(ask.body !== undefined ? { body: ask.body } : {}), signal: AbortSignal.timeout(timeoutMs) },
      budget && ((n) => budget.take(n)),
      ask.sinkFor,
    );
    return { cluster, status: res.status, headers: res.headers, body: res.body, ...(res.sink ? { sink: res.sink } : {}) };
  } catch (e) {
    if (e instanceof AnswerRefusedError && budget) throw budget.refusal();
    const err = e as Error;
    return err.name === 'TimeoutError' || err.name === 'AbortError' ? { cluster, error: unansweredWithin(timeoutMs), timedOut: true } : { cluster, error: err.message };
  }
}

/**
 * Asks a member for each item (a member, or a part of one), bounded as `bounds` says; `read`
 * turns each answer into what the caller keeps as it arrives, while slower members are still
 * answering. A request `request` cannot make (it throws) fails the whole fan-out.
 */
export function askMembers<T>(fleet: FleetMembers, items: readonly T[], bounds: FanOutBounds, request: (item: T) => MemberAsk): Promise<MemberResult[]>;
export function askMembers<T, R>(fleet: FleetMembers, items: readonly T[], bounds: FanOutBounds, request: (item: T) => MemberAsk, read: (answer: MemberResult, item: T) => R): Promise<R[]>;
export function askMembers<T, R>(fleet: FleetMembers, items: readonly T[], bounds: FanOutBounds, request: (item: T) => MemberAsk, read?: (answer: MemberResult, item: T) => R): Promise<(R | MemberResult)[]> {
  return mapBounded(items, bounds.concurrency, async (item) => {
    const answer = await askMember(fleet, request(item), bounds.timeoutMs, bounds.budget);
    return read ? read(answer, item) : answer;
  });
}

/** A member's long-running answer: its stream when it answered 200, else its answer read whole. */
export interface OpenedMember extends MemberResult {
  stream?: IncomingMessage;
}

/**
 * Opens a long-running request (a watch) on each member, bounded as `bounds` says: each member
 * must send its headers within the timeout, and then streams as long as it likes. `signal` ends
 * them all (the request opening them is done).
 */
export function openMembers(fleet: FleetMembers, clusters: readonly string[], bounds: Omit<FanOutBounds, 'budget'>, request: (cluster: string) => MemberAsk, signal: AbortSignal): Promise<OpenedMember[]> {
  const lane: MemberLane = 'long-running';
  return mapBounded(clusters, bounds.concurrency, async (cluster): Promise<OpenedMember> => {
    const member = fleet.member(cluster);
    if (!member) return { cluster, error: NOT_A_MEMBER };
    const ask = request(cluster);
    const own = new AbortController();
    const stop = () => own.abort();
    signal.addEventListener('abort', stop, { once: true });
    // Not AbortSignal.timeout: the timeout is the headers', the stream itself lasts.
    const headerTimer = setTimeout(() => own.abort(), bounds.timeoutMs);
    try {
      const res = await member.send({ method: ask.method ?? 'GET', path: ask.path, headers: ask.headers, signal: own.signal, lane });
      clearTimeout(headerTimer);
      if (res.statusCode === 200) return { cluster, status: 200, headers: res.headers, stream: res };
      const chunks: Buffer[] = [];
      for await (const c of res) chunks.push(c as Buffer);
      return { cluster, status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) };
    } catch (e) {
      return own.signal.aborted ? { cluster, error: unansweredWithin(bounds.timeoutMs), timedOut: true } : { cluster, error: (e as Error).message };
    } finally {
      clearTimeout(headerTimer);
    }
  });
}
