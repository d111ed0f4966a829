import fc from 'fast-check';
import type { RecordedRequest, RecordingRelay } from '../recording-relay.js';
import { headerValues } from '../recording-relay.js';
import { parseRequestPath } from '../../../src/api/request-info.js';
import { checkAnswer, checkMemberRequest, checkParseError, isNote, passedThrough, type Answer, type CallerIdentity, type CaseContext, type MemberTrafficPolicy, type Violation } from './invariants.js';
import { authenticatedCaller, caseArb, describeCase, isStreaming, presentedCaller, render, renderRaw, sentImpersonation, sentRaw, type AbuseCase, type RenderContext } from './generators.js';
import { sendNode, sendRaw, type Endpoint } from './raw-client.js';

/**
 * Runs generated cases against a running flotilla whose members sit behind recording relays, and
 * checks every answer and every request that reached a member. Exploration runs cases in parallel
 * (chunks of fast-check samples, each chunk's seed and index kept, so any case can be replayed);
 * then each kind of violation found is replayed alone and shrunk by fast-check from that exact
 * case (`fc.check` with its seed and path), within a time budget.
 */
export interface AbuseEnv {
  flotilla: Endpoint;
  relays: RecordingRelay[];
  policy: MemberTrafficPolicy;
  identities: Record<string, CallerIdentity>;
  tokens: Record<string, string>;
  /** The cases to run (default: the fleet-wide hostile callers' `caseArb`). */
  arb?: fc.Arbitrary<AbuseCase>;
  /** Suite-specific invariants of one answer (beside the common ones). */
  checkAnswer?: (c: AbuseCase, answer: Answer) => Violation[];
  /** Suite-specific invariants of one request a member got; `c` is its case when the suite could tell. */
  checkMemberRequest?: (rec: RecordedRequest, c: AbuseCase | undefined, caseId: number | undefined) => Violation[];
  timeoutMs: number;
  concurrency: number;
  /** Why flotilla can no longer answer (its process exited), or undefined while it runs. */
  dead(): string | undefined;
  /** Whether answers of 2xx to reads of resources by callers without RBAC count as violations. */
  readAuthorization: boolean;
  log(line: string): void;
  /** When set, one line per case (request head, answer status, start of its body). */
  trace?: (line: string) => void;
}

export interface Origin {
  seed: number;
  index: number;
}

export interface FoundKind {
  kind: string;
  count: number;
  detail: string;
  /** The case that showed it (or, for a member request no case could be matched to, the cases in flight then). */
  origins: Origin[];
  example?: AbuseCase;
  exampleId: number;
  shrunk?: { case: AbuseCase; steps: number; detail: string };
  reproduced?: boolean;
}

export interface ExploreResult {
  tried: number;
  unsendable: number;
  answered: number;
  /** Requests that reached a member on behalf of a case (matched by User-Agent). */
  reachedForCases: number;
  /** Requests members got with no case's User-Agent: flotilla's own (cachers, reviews, openapi, …). */
  otherMemberRequests: number;
  elapsedMs: number;
  stoppedEarly?: string;
  found: Map<string, FoundKind>;
  /** Status codes of the answers, with counts. */
  statuses: Map<string, number>;
}

const PUBLIC_PATHS = new Set(['/healthz', '/livez', '/readyz', '/version']);
const SETTLE_MS = 120;

let nextCaseId = 0;

interface Window {
  id: number;
  origin: Origin;
  c: AbuseCase;
  start: number;
  end: number;
  answer?: Answer;
  memberAnswers: { status?: number; bodyHead?: Buffer }[];
}

function ctxFor(env: AbuseEnv, c: AbuseCase): CaseContext {
  const who = presentedCaller(c);
  return { caller: (who ? env.identities[who] : undefined) ?? null, sentImpersonation: sentImpersonation(c) };
}

function publicPath(target: string): boolean {
  return PUBLIC_PATHS.has(target.split('?')[0]!);
}

/** A GET of an API resource (not discovery): the apiserver would ask RBAC, and the suite's callers have none. */
function isResourceRead(c: AbuseCase): boolean {
  if (c.method !== 'GET' && c.method !== 'HEAD') return false;
  try {
    return parseRequestPath(c.target).type === 'resource';
  } catch {
    return false;
  }
}

export function answerViolations(env: AbuseEnv, c: AbuseCase, answer: Answer): Violation[] {
  // Callers who may impersonate on the members get what they asked for: no refusal is owed.
  const refusable = sentImpersonation(c) && !env.policy.impersonable;
  const out = checkAnswer({ method: c.method, authenticated: authenticatedCaller(c) !== undefined, sentImpersonation: refusable, publicPath: publicPath(c.target) }, answer);
  if (env.checkAnswer) out.push(...env.checkAnswer(c, answer));
  if (env.readAuthorization && answer.type === 'response' && answer.status >= 200 && answer.status < 300 && authenticatedCaller(c) && isResourceRead(c)) {
    out.push({ kind: `answer:read-without-rbac:${c.method}`, detail: `HTTP ${answer.status} to a ${c.method} of a resource by ${authenticatedCaller(c)}, who may not get, list or watch anything (a member would answer 403)` });
  }
  return out;
}

async function send(env: AbuseEnv, c: AbuseCase, id: number): Promise<Answer | undefined> {
  const host = `${env.flotilla.host}:${env.flotilla.port}`;
  const rctx: RenderContext = { host, tokens: env.tokens, caseId: id };
  const opts = { timeoutMs: env.timeoutMs, streaming: isStreaming(c), head: c.method === 'HEAD' };
  if (!sentRaw(c)) {
    const r = render(c, rctx);
    const headers = r.headers.filter(([n]) => !/^(content-length|transfer-encoding|connection)$/i.test(n));
    // Explicitly framed: node sends a DELETE's body with no length at all.
    if (r.body !== undefined) headers.push(['Content-Length', String(r.body.length)]);
    return sendNode(env.flotilla, { method: r.method, path: r.target, headers: headers.flat(), ...(r.body ? { body: r.body } : {}) }, opts);
  }
  return sendRaw(env.flotilla, renderRaw(c, rctx), opts);
}

function caseIdOf(rec: RecordedRequest): number | undefined {
  for (const ua of headerValues(rec.rawHeaders, 'user-agent')) {
    const m = /\babuse-(\d+)\b/.exec(ua);
    if (m) return Number(m[1]);
  }
  return undefined;
}

interface Sighting {
  violation: Violation;
  windows: Window[];
}

/**
 * Checks what the relays recorded and forgets it. Each violation comes with the case(s) it belongs
 * to: the case named by the request's User-Agent, else every case in flight when it was sent. Each
 * window collects the member answers that may have been passed on to it.
 */
function drainRelays(env: AbuseEnv, windows: Map<number, Window>, all: Window[]): { sightings: Sighting[]; forCases: number; other: number } {
  const sightings: Sighting[] = [];
  let forCases = 0;
  let other = 0;
  // A member request a case caused is sent before that case's answer: only cases in flight then.
  const inFlightAt = (t: number) => all.filter((w) => w.start <= t && t <= w.end + 5);
  for (const relay of env.relays) {
    const recs = relay.requests();
    const errs = relay.parseErrors();
    relay.clear();
    for (const rec of recs) {
      const id = caseIdOf(rec);
      const w = id !== undefined ? windows.get(id) : undefined;
      if (w) forCases++;
      else other++;
      const owners = w ? [w] : inFlightAt(rec.at);
      for (const o of owners) o.memberAnswers.push({ status: rec.responseStatus, bodyHead: rec.responseBodyHead });
      for (const v of checkMemberRequest(rec, env.policy, w ? ctxFor(env, w.c) : undefined)) sightings.push({ violation: v, windows: owners });
      for (const v of env.checkMemberRequest?.(rec, w?.c, id) ?? []) sightings.push({ violation: v, windows: owners });
    }
    for (const e of errs) sightings.push({ violation: checkParseError(e), windows: inFlightAt(e.at) });
  }
  return { sightings, forCases, other };
}

/** The answer's violations; an error body that is a member's own answer passed on is only a note. */
function windowAnswerViolations(env: AbuseEnv, w: Window): Violation[] {
  if (!w.answer) return [];
  return answerViolations(env, w.c, w.answer).map((v) =>
    v.kind.startsWith('answer:not-status:') && passedThrough(w.answer!, w.memberAnswers)
      ? { kind: v.kind.replace('answer:not-status:', 'note:member-non-status-passed-through:'), detail: `${v.detail} (the member's own answer, passed on)` }
      : v,
  );
}

function note(found: Map<string, FoundKind>, v: Violation, windows: Window[]): void {
  const f = found.get(v.kind);
  if (f) {
    f.count++;
    return;
  }
  const first = windows[0];
  if (!first) {
    // Nothing in flight: flotilla's own traffic. Still a violation; no case to shrink.
    found.set(v.kind, { kind: v.kind, count: 1, detail: v.detail, origins: [], exampleId: -1 });
    return;
  }
  found.set(v.kind, { kind: v.kind, count: 1, detail: v.detail, origins: windows.slice(0, 12).map((w) => w.origin), example: first.c, exampleId: first.id });
}

export interface ExploreOptions {
  runs: number;
  seed: number;
  chunkSize?: number;
  /** Stop starting new cases after this many ms. */
  timeLimitMs: number;
}

/** The cases of one chunk: fast-check's own sample for that seed, so `fc.check({ seed, path })` replays any. */
export function chunkCases(seed: number, n: number, arb: fc.Arbitrary<AbuseCase> = caseArb): AbuseCase[] {
  return fc.sample(arb, { seed, numRuns: n });
}

export function chunkSeed(seed: number, chunk: number): number {
  return (seed + chunk * 7919) | 0;
}

export async function explore(env: AbuseEnv, opts: ExploreOptions): Promise<ExploreResult> {
  const started = Date.now();
  const chunkSize = opts.chunkSize ?? 500;
  const found = new Map<string, FoundKind>();
  const statuses = new Map<string, number>();
  const result: ExploreResult = { tried: 0, unsendable: 0, answered: 0, reachedForCases: 0, otherMemberRequests: 0, elapsedMs: 0, found, statuses };
  for (const r of env.relays) r.clear();
  let lastReport = Date.now();
  for (let chunk = 0; result.tried < opts.runs; chunk++) {
    if (Date.now() - started > opts.timeLimitMs) {
      result.stoppedEarly = `time limit of ${Math.round(opts.timeLimitMs / 1000)} s reached`;
      break;
    }
    const seed = chunkSeed(opts.seed, chunk);
    const cases = chunkCases(seed, Math.min(chunkSize, opts.runs - result.tried), env.arb);
    const windows = new Map<number, Window>();
    const all: Window[] = [];
    let next = 0;
    const worker = async () => {
      while (next < cases.length) {
        if (Date.now() - started > opts.timeLimitMs || env.dead()) return;
        const index = next++;
        const c = cases[index]!;
        const id = ++nextCaseId;
        const w: Window = { id, origin: { seed, index }, c, start: Date.now(), end: Number.POSITIVE_INFINITY, memberAnswers: [] };
        windows.set(id, w);
        all.push(w);
        result.tried++;
        const answer = await send(env, c, id);
        w.end = Date.now();
        if (answer) w.answer = answer;
        if (!answer) {
          result.unsendable++;
          continue;
        }
        if (env.trace) {
          const r = render(c, { host: '', tokens: env.tokens, caseId: id });
          const what = answer.type === 'response' ? `${answer.status} ${answer.body.toString('utf8', 0, 160).replace(/\s+/g, ' ')}` : `${answer.type} ${'message' in answer ? answer.message : ''}`;
          env.trace(`${id} [${seed}/${index}] ${c.transport} ${r.method} ${r.target.slice(0, 200)} -> ${what}`);
        }
        if (answer.type === 'response') {
          result.answered++;
          const key = String(answer.status);
          statuses.set(key, (statuses.get(key) ?? 0) + 1);
        } else {
          statuses.set(answer.type, (statuses.get(answer.type) ?? 0) + 1);
        }
      }
    };
    await Promise.all(Array.from({ length: env.concurrency }, worker));
    await new Promise((r) => setTimeout(r, SETTLE_MS));
    const drained = drainRelays(env, windows, all);
    result.reachedForCases += drained.forCases;
    result.otherMemberRequests += drained.other;
    for (const s of drained.sightings) note(found, s.violation, s.windows);
    for (const w of all) for (const v of windowAnswerViolations(env, w)) note(found, v, [w]);
    const dead = env.dead();
    if (dead) {
      note(found, { kind: 'flotilla:crashed', detail: dead }, all.filter((w) => w.end >= Date.now() - 2000));
      result.stoppedEarly = 'flotilla exited';
      break;
    }
    if (Date.now() - lastReport > 15_000) {
      lastReport = Date.now();
      env.log(`abuse: ${result.tried} cases in ${((Date.now() - started) / 1000).toFixed(0)} s, ${found.size} kinds of violation so far`);
    }
  }
  result.elapsedMs = Date.now() - started;
  return result;
}

/** Runs one case with nothing else in flight and returns every violation it causes. */
export async function runAlone(env: AbuseEnv, c: AbuseCase): Promise<Violation[]> {
  for (const r of env.relays) r.clear();
  const id = ++nextCaseId;
  const w: Window = { id, origin: { seed: 0, index: 0 }, c, start: Date.now(), end: Number.POSITIVE_INFINITY, memberAnswers: [] };
  const answer = await send(env, c, id);
  w.end = Date.now();
  if (answer) w.answer = answer;
  await new Promise((r) => setTimeout(r, SETTLE_MS));
  const drained = drainRelays(env, new Map([[id, w]]), [w]);
  const out = drained.sightings.map((s) => s.violation);
  out.push(...windowAnswerViolations(env, w));
  const dead = env.dead();
  if (dead) out.push({ kind: 'flotilla:crashed', detail: dead });
  return out;
}

export interface ShrinkOptions {
  /** Time for one kind: replays stop counting after it and the best case so far stands. */
  perKindMs: number;
  /** Time for all kinds together. */
  totalMs: number;
}

/**
 * Replays each kind's case alone (the in-flight candidates one by one, when a member request
 * could not be matched to a case), then lets fast-check shrink it from its exact seed and path.
 */
export async function shrinkAll(env: AbuseEnv, found: Map<string, FoundKind>, opts: ShrinkOptions): Promise<void> {
  const deadline = Date.now() + opts.totalMs;
  // Cheap kinds first: a kind whose case hangs costs a whole timeout per replay.
  const kinds = [...found.values()].filter((f) => f.origins.length > 0 && !isNote(f.kind)).sort((a, b) => Number(a.kind === 'answer:timeout') - Number(b.kind === 'answer:timeout'));
  for (const f of kinds) {
    if (Date.now() > deadline || env.dead()) break;
    const kindDeadline = Math.min(deadline, Date.now() + opts.perKindMs);
    let origin: Origin | undefined;
    for (const o of f.origins) {
      if (Date.now() > kindDeadline) break;
      const c = chunkCases(o.seed, o.index + 1, env.arb)[o.index]!;
      if ((await runAlone(env, c)).some((v) => v.kind === f.kind)) {
        origin = o;
        f.example = c;
        break;
      }
    }
    f.reproduced = origin !== undefined;
    if (!origin) continue;
    let last: { case: AbuseCase; detail: string } | undefined;
    const res = await fc.check(
      fc.asyncProperty(env.arb ?? caseArb, async (c) => {
        if (Date.now() > kindDeadline || env.dead()) return true;
        const hit = (await runAlone(env, c)).find((v) => v.kind === f.kind);
        if (hit) last = { case: c, detail: hit.detail };
        return hit === undefined;
      }),
      { seed: origin.seed, path: String(origin.index) },
    );
    if (res.failed && res.counterexample) {
      const c = res.counterexample[0];
      f.shrunk = { case: c, steps: res.numShrinks, detail: last && last.case === c ? last.detail : f.detail };
    }
  }
}

export function formatReport(env: AbuseEnv, r: ExploreResult, profile: string, seed: number): string {
  const ctx: RenderContext = { host: `${env.flotilla.host}:${env.flotilla.port}`, tokens: env.tokens, caseId: 0 };
  const lines = [
    `abuse (${profile} profile, seed ${seed}): ${r.tried} cases tried in ${(r.elapsedMs / 1000).toFixed(1)} s (${r.unsendable} not sendable by node's client, ${r.answered} answered)${r.stoppedEarly ? `; stopped: ${r.stoppedEarly}` : ''}`,
    `abuse: ${r.reachedForCases} requests reached a member on behalf of a case; ${r.otherMemberRequests} member requests were flotilla's own (cachers, token reviews, openapi, …)`,
    `abuse: answers: ${[...r.statuses.entries()].sort().map(([k, n]) => `${k}×${n}`).join(' ')}`,
  ];
  const violations = [...r.found.values()].filter((f) => !isNote(f.kind)).sort((a, b) => a.kind.localeCompare(b.kind));
  const notes = [...r.found.values()].filter((f) => isNote(f.kind)).sort((a, b) => a.kind.localeCompare(b.kind));
  lines.push(violations.length === 0 ? 'abuse: no violations' : `abuse: ${violations.length} kinds of violation:`);
  const describeKind = (f: FoundKind) => {
    lines.push(`  [${f.kind}] in ${f.count} ${f.count === 1 ? 'case' : 'cases'}: ${f.detail.slice(0, 600)}`);
    if (f.exampleId < 0 || !f.example) {
      lines.push("    (not tied to one case: flotilla's own traffic, or the members' state after the run)");
      return;
    }
    const o = f.origins[0];
    lines.push(`    first seen with (replay: seed ${o?.seed}, path ${o?.index}${f.reproduced === false ? '; did not recur when replayed alone' : ''}):`);
    lines.push(indent(describeCase(f.example, ctx), 6));
    if (f.shrunk) {
      lines.push(`    shrunk in ${f.shrunk.steps} steps to: ${f.shrunk.detail.slice(0, 400)}`);
      lines.push(indent(describeCase(f.shrunk.case, ctx), 6));
    }
  };
  violations.forEach(describeKind);
  if (notes.length) {
    lines.push(`abuse: ${notes.length} kinds of note (reported, not failing):`);
    notes.forEach(describeKind);
  }
  // The fleet's tokens are throwaway, but a report is no place for credentials.
  return lines.join('\n').replace(/(Bearer\s+)[0-9a-f]{32}/gi, '$1<token>');
}

function indent(s: string, n: number): string {
  return s.split('\n').map((l) => ' '.repeat(n) + l.trimStart()).join('\n');
}
