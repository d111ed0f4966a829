import type { FastifyReply } from 'fastify';
import { isProtobuf } from '../../api/protobuf-object.js';
import { answerMessage, isStatusObject, notServed, serviceUnavailable } from '../../api/status.js';
import { warningHeader as warning } from '../../api/warning.js';
import type { MemberResult } from '../member-fan-out.js';

/**
 * What a live read says of the members that did not answer it: a Warning naming each one left out
 * of an answer the others gave, and when none answered, the answer that tells the caller most.
 */

const PASSED_ERROR_HEADERS = ['content-type', 'retry-after', 'warning'];

const UNREADABLE = 'answered 200 with a body flotilla could not read';

/** The start of a member's answer, as its message (a Status's) or its text. */
export function bodyText(r: MemberResult): string {
  return answerMessage(r.body, 300);
}

/**
 * A member's answer once flotilla has tried to read it: a 200 it could not read (`read` undefined)
 * counts as a member that failed, so it is named in a Warning rather than left out unsaid, and
 * is never passed on unedited when no other member answers (503 naming it).
 */
export function settled(r: MemberResult, read: unknown): MemberResult {
  return r.status === 200 && read === undefined ? { cluster: r.cluster, error: UNREADABLE } : r;
}

/**
 * A Warning for a member left out of an answer, or undefined when its leaving out needs none: a
 * 404 (a list: it does not serve the resource; a get: it has no such object).
 */
export function leftOutWarning(r: MemberResult): string | undefined {
  if (r.error !== undefined) return warning(`cluster ${r.cluster} is left out: ${r.error.slice(0, 200)}`);
  if (r.status === 404) return undefined;
  if (r.status === 403) return warning(`cluster ${r.cluster} refused: ${bodyText(r).slice(0, 300)}`);
  return warning(`cluster ${r.cluster} is left out: it answered ${r.status}: ${bodyText(r).slice(0, 200)}`);
}

/** The Warnings for those of `results` that did not answer 200. */
export function leftOutWarnings(results: readonly MemberResult[]): string[] {
  return results.filter((r) => r.status !== 200).map((r) => leftOutWarning(r)).filter((w): w is string => w !== undefined);
}

/**
 * The answer when no member gave one: a member's refusal of the request itself (400, 422) first,
 * then a refusal of the caller (403), a member's own failure (5xx), members that could not be
 * reached (503), and last "not found" (404, as the member words it).
 */
export function noAnswer(reply: FastifyReply, results: readonly MemberResult[]): FastifyReply {
  const answered = results.filter((r) => r.status !== undefined);
  const rank = (s: number) => (s === 404 ? 4 : s === 403 ? 1 : s >= 500 ? 2 : 0);
  const unreachable = results.filter((r) => r.error !== undefined);
  const pick = [...answered].sort((a, b) => rank(a.status!) - rank(b.status!))[0];
  if (unreachable.length > 0 && (!pick || pick.status === 404)) {
    throw serviceUnavailable(unreachable.map((r) => `cluster ${r.cluster} ${r.error}`).join('; '));
  }
  if (!pick) throw serviceUnavailable('no member cluster to ask');
  // A path no member serves is a bare 404 page from each: flotilla's every error is a Status.
  if (pick.status === 404 && !isStatusBody(pick)) throw notServed();
  const others = results.filter((r) => r !== pick).map((r) => leftOutWarning(r)).filter((w): w is string => w !== undefined);
  for (const h of PASSED_ERROR_HEADERS) {
    const v = pick.headers?.[h];
    if (h === 'warning') {
      const own = v === undefined ? [] : Array.isArray(v) ? v : [v];
      if (own.length + others.length > 0) reply.header('warning', [...own, ...others]);
    } else if (v !== undefined) reply.header(h, v);
  }
  return reply.code(pick.status!).send(pick.body);
}

function isStatusBody(r: MemberResult): boolean {
  // A member's Status in protobuf (to a client that takes only that): a 404 page is never one.
  if (isProtobuf(r.headers?.['content-type'])) return true;
  try {
    return r.body !== undefined && isStatusObject(JSON.parse(r.body.toString('utf8')));
  } catch {
    return false;
  }
}
