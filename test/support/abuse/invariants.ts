import { parse as parseYaml } from 'yaml';
import { headerValues, type RecordedParseError, type RecordedRequest } from '../recording-relay.js';

/**
 * The invariants the abuse suite holds flotilla to, as plain functions over what a recording relay
 * saw reach a member and what flotilla answered its client. No I/O here: the unit tests feed them
 * hand-made records, the e2e suite real ones.
 */
export interface Violation {
  /** A stable class name (`member:dot-segment`, `answer:5xx:500`): cases are grouped and shrunk by it. */
  kind: string;
  detail: string;
}

export interface CallerIdentity {
  user: string;
  uid?: string;
  groups: string[];
  extra?: Record<string, string[]>;
}

export interface CachedResource {
  group: string;
  version: string;
  resource: string;
}

export interface MemberTrafficPolicy {
  /** The only Authorization flotilla may send members: its own (`Bearer <admin token>`). */
  flotillaAuthorization: string;
  /** What flotilla caches: the only collections it lists and watches with its own identity. */
  cachedResources: CachedResource[];
  /** Every identity the suite's callers have (an impersonated request must be exactly one). */
  callers: CallerIdentity[];
  /** A string the suite puts in every request it hides in a body; no member may ever see it. */
  smuggleMarker: string;
  /**
   * Set when the suite's callers may impersonate on the members (tenant admins): whom a request
   * they asked to impersonate with may reach a member as; the reason when not. Unset: nobody.
   */
  impersonable?: (sent: CallerIdentity) => string | undefined;
}

/** What the suite knows about the case a member request came from (matched by its User-Agent). */
export interface CaseContext {
  /** Who the case authenticated as; null: nobody (anonymous or credentials that do not hold). */
  caller: CallerIdentity | null;
  /** The case sent Impersonate-* headers of its own. */
  sentImpersonation: boolean;
}

const DNS_LABEL = '[a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?';
const GROUP = '[a-z0-9](?:[-a-z0-9.]*[a-z0-9])?';
const VERSION = 'v[0-9]+(?:(?:alpha|beta)[0-9]+)?';
const NAME = '[a-z0-9](?:[-a-z0-9.]*[a-z0-9])?';

const FIXED_READS = [
  '/version',
  '/api',
  '/apis',
  `/api/${VERSION}`,
  // A member's own discovery, under /clusters/<name>/ (src/router/plugins/discovery.ts).
  `/apis/${GROUP}`,
  `/apis/${GROUP}/${VERSION}`,
  '/openapi/v2',
  '/openapi/v3',
  '/openapi/v3/api/v1',
  `/openapi/v3/apis/${GROUP}/${VERSION}`,
  // The namespace existence check before a create.
  `/api/v1/namespaces/${NAME}`,
  // The member heartbeat (src/members/heartbeat.ts): whether the member answers at all.
  '/readyz',
];

const REVIEW_POSTS = new Map([
  ['/apis/authentication.k8s.io/v1/tokenreviews', 'TokenReview'],
  ['/apis/authorization.k8s.io/v1/subjectaccessreviews', 'SubjectAccessReview'],
]);

function escapeRe(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** The read-only paths flotilla may GET with its own identity. */
export function readOnlyAllowlist(cached: CachedResource[]): RegExp {
  const alternatives = [...FIXED_READS];
  for (const r of cached) {
    const base = r.group ? `/apis/${escapeRe(r.group)}/${escapeRe(r.version)}` : `/api/${escapeRe(r.version)}`;
    alternatives.push(`${base}(?:/namespaces/${DNS_LABEL})?/${escapeRe(r.resource)}`);
  }
  return new RegExp(`^(?:${alternatives.join('|')})$`);
}

function pathOf(url: string): string {
  const q = url.indexOf('?');
  return q < 0 ? url : url.slice(0, q);
}

/** Path hygiene: what a member must never be handed, whoever the request is for. */
export function pathViolations(url: string): Violation[] {
  const out: Violation[] = [];
  if (!url.startsWith('/')) {
    out.push({ kind: 'member:not-origin-form', detail: `request target ${JSON.stringify(url.slice(0, 200))} is not an absolute path` });
    return out;
  }
  const path = pathOf(url);
  if (path.includes('//')) out.push({ kind: 'member:double-slash', detail: `"//" in ${JSON.stringify(path.slice(0, 300))}` });
  if (/%2f/i.test(path)) out.push({ kind: 'member:encoded-slash', detail: `%2F in ${JSON.stringify(path.slice(0, 300))}` });
  if (/%2e/i.test(path)) out.push({ kind: 'member:encoded-dot', detail: `%2E in ${JSON.stringify(path.slice(0, 300))}` });
  if (/%5c|\\/i.test(path)) out.push({ kind: 'member:backslash', detail: `a backslash in ${JSON.stringify(path.slice(0, 300))}` });
  const dots = path.split('/').some((seg) => {
    const plain = seg.replace(/%2e/gi, '.');
    return plain === '.' || plain === '..';
  });
  if (dots) out.push({ kind: 'member:dot-segment', detail: `a "." or ".." segment in ${JSON.stringify(path.slice(0, 300))}` });
  return out;
}

function identityFromHeaders(rawHeaders: readonly string[]): CallerIdentity & { users: string[]; uids: string[] } {
  const users = headerValues(rawHeaders, 'impersonate-user');
  const uids = headerValues(rawHeaders, 'impersonate-uid');
  const extra: Record<string, string[]> = {};
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]!.toLowerCase();
    if (name.startsWith('impersonate-extra-')) (extra[name.slice('impersonate-extra-'.length)] ??= []).push(rawHeaders[i + 1]!);
  }
  return { user: users[0] ?? '', users, uids, ...(uids[0] !== undefined ? { uid: uids[0] } : {}), groups: headerValues(rawHeaders, 'impersonate-group'), extra };
}

/** Whether an impersonated identity is the caller's (groups a subset: system:authenticated may be left out). */
export function sameIdentity(sent: CallerIdentity & { uids?: string[] }, caller: CallerIdentity): string | undefined {
  if (sent.user !== caller.user) return `user ${JSON.stringify(sent.user)} instead of ${JSON.stringify(caller.user)}`;
  if ((sent.uids?.length ?? 0) > 1) return `several Impersonate-Uid values ${JSON.stringify(sent.uids)}`;
  if (sent.uid !== undefined && sent.uid !== caller.uid) return `uid ${JSON.stringify(sent.uid)} instead of ${JSON.stringify(caller.uid)}`;
  const allowed = new Set([...caller.groups, 'system:authenticated']);
  const foreign = sent.groups.filter((g) => !allowed.has(g));
  if (foreign.length) return `groups ${JSON.stringify(foreign)} the caller is not in`;
  for (const [k, vs] of Object.entries(sent.extra ?? {})) {
    const own = caller.extra?.[k] ?? [];
    const decodedKey = safeDecode(k);
    const ownDecoded = caller.extra?.[decodedKey] ?? [];
    const foreignValues = vs.filter((v) => !own.includes(v) && !ownDecoded.includes(v));
    if (foreignValues.length) return `extra ${JSON.stringify(k)}=${JSON.stringify(foreignValues)} the caller does not have`;
  }
  return undefined;
}

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

function describe(rec: Pick<RecordedRequest, 'method' | 'url' | 'relay'>): string {
  return `${rec.method} ${rec.url.length > 300 ? `${rec.url.slice(0, 300)}…` : rec.url} (to ${rec.relay})`;
}

/**
 * What may reach a member. `ctx` is the case the request came from when the suite could tell
 * (its User-Agent); without it an impersonated identity must still be one of the suite's callers.
 */
export function checkMemberRequest(rec: RecordedRequest, policy: MemberTrafficPolicy, ctx?: CaseContext): Violation[] {
  const out: Violation[] = [];
  const what = describe(rec);
  const h = (name: string) => headerValues(rec.rawHeaders, name);

  // Framing: a body the member reads must have told it where it ends.
  if (rec.body.length > 0 && !rec.upgrade && h('content-length').length === 0 && h('transfer-encoding').length === 0) {
    out.push({ kind: 'member:unframed-body', detail: `${what} carries ${rec.body.length} body bytes with neither Content-Length nor Transfer-Encoding` });
  }
  const marker = policy.smuggleMarker;
  if (rec.url.includes(marker) || rec.rawHeaders.some((v) => v.includes(marker))) {
    out.push({ kind: 'member:smuggled-request', detail: `${what}: a request the suite hid in a request body reached the member as a request of its own (connection ${rec.connection}, request #${rec.indexOnConnection})` });
  }

  const auth = h('authorization');
  if (auth.length !== 1 || auth[0] !== policy.flotillaAuthorization) {
    out.push({
      kind: 'member:foreign-credentials',
      detail: `${what}: ${auth.length === 0 ? 'no Authorization' : auth.length > 1 ? `${auth.length} Authorization headers` : `an Authorization that is not flotilla's own (${auth[0]!.slice(0, 40)}…)`}`,
    });
  }
  const frontProxy = rec.rawHeaders.filter((_, i) => i % 2 === 0 && /^x-remote-/i.test(rec.rawHeaders[i]!));
  if (frontProxy.length) out.push({ kind: 'member:front-proxy-headers', detail: `${what}: the caller's ${frontProxy.join(', ')} reached the member` });

  out.push(...pathViolations(rec.url).map((v) => ({ ...v, detail: `${v.detail}: ${what}` })));

  const sent = identityFromHeaders(rec.rawHeaders);
  const anyImpersonation = rec.rawHeaders.some((v, i) => i % 2 === 0 && /^impersonate-/i.test(v));
  if (sent.users.length === 0) {
    if (anyImpersonation) out.push({ kind: 'member:impersonation-without-user', detail: `${what}: Impersonate-* headers without Impersonate-User` });
    // Flotilla's own identity: reads of what it caches and serves, and its reviews.
    const path = pathOf(rec.url);
    const review = REVIEW_POSTS.get(path);
    if (rec.method === 'POST' && review !== undefined && rec.url === path) {
      let kind: unknown;
      try {
        kind = (JSON.parse(rec.body.toString('utf8')) as { kind?: unknown }).kind;
      } catch {
        kind = undefined;
      }
      if (kind !== review) out.push({ kind: 'member:own-identity-review-body', detail: `${what}: the body is not a ${review}: ${rec.body.toString('utf8', 0, 200)}` });
    } else if (rec.method !== 'GET' || rec.upgrade || !readOnlyAllowlist(policy.cachedResources).test(path)) {
      out.push({ kind: 'member:own-identity-not-allowlisted', detail: `${what} went out with flotilla's own identity (no Impersonate-User) and is not a read of what flotilla caches or serves` });
    }
    return out;
  }

  if (sent.users.length > 1) {
    out.push({ kind: 'member:impersonation-mismatch', detail: `${what}: ${sent.users.length} Impersonate-User headers ${JSON.stringify(sent.users)}` });
    return out;
  }
  if (ctx) {
    if (ctx.caller === null) {
      out.push({ kind: 'member:impersonation-without-caller', detail: `${what} impersonates ${JSON.stringify(sent.user)} for a case whose caller flotilla could not know` });
    } else {
      const wrong = sameIdentity(sent, ctx.caller);
      const outside = wrong && ctx.sentImpersonation && policy.impersonable ? policy.impersonable(sent) : undefined;
      if (wrong && ctx.sentImpersonation && policy.impersonable) {
        if (outside) out.push({ kind: 'member:impersonation-outside-tenant', detail: `${what} impersonates ${JSON.stringify({ user: sent.user, groups: sent.groups })}: ${outside}` });
      } else if (wrong) out.push({ kind: 'member:impersonation-mismatch', detail: `${what} impersonates ${wrong}` });
      else if (ctx.sentImpersonation && !policy.impersonable) {
        out.push({ kind: 'member:caller-impersonation-ignored', detail: `${what}: the caller asked to impersonate someone (Impersonate-* headers) and may not; the request reached the member as the caller instead of being refused` });
      }
    }
  } else if (!policy.callers.some((c) => sameIdentity(sent, c) === undefined) && !(policy.impersonable && policy.impersonable(sent) === undefined)) {
    out.push({ kind: 'member:impersonation-mismatch', detail: `${what} impersonates ${JSON.stringify({ user: sent.user, uid: sent.uid, groups: sent.groups, extra: sent.extra })}, none of the suite's callers` });
  }
  return out;
}

/** Bytes a member could not read as a request: only ever an unframed (or mangled) body. */
export function checkParseError(err: RecordedParseError): Violation {
  return {
    kind: 'member:unparseable-bytes',
    detail: `relay ${err.relay}, connection ${err.connection}: ${err.code} ${err.message}${err.rawPacket ? `: ${JSON.stringify(err.rawPacket.slice(0, 200))}` : ''}`,
  };
}

/** Flotilla's answer to one request of the suite. */
export type Answer =
  | { type: 'response'; status: number; headers: Record<string, string[]>; body: Buffer; ms: number; streaming: boolean }
  | { type: 'timeout'; ms: number; gotHead: boolean; status?: number; note?: string }
  /**
   * phase: `sending` the connection broke while the request (a large body) was still being
   * written, `waiting` after it was written and before any answer, `reading` inside the answer.
   */
  | { type: 'error'; ms: number; message: string; phase: 'connecting' | 'sending' | 'waiting' | 'reading' };

export interface AnswerContext {
  method: string;
  /** The caller authenticated (its token holds). */
  authenticated: boolean;
  /** The caller sent Impersonate-* headers (and may not impersonate anyone). */
  sentImpersonation: boolean;
  /** A path anyone may read without authentication (/healthz, /version, …). */
  publicPath: boolean;
}

export interface AnswerLimits {
  timeoutMs: number;
}

/** Kubernetes' own 504 for a resourceVersion the cache has not reached: the apiserver answers it too. */
function isTooLargeRV(doc: unknown): boolean {
  const d = doc as { reason?: unknown; details?: { causes?: { reason?: unknown }[] } };
  return d?.reason === 'Timeout' && (d.details?.causes ?? []).some((c) => c?.reason === 'ResourceVersionTooLarge');
}

export function checkAnswer(ctx: AnswerContext, answer: Answer): Violation[] {
  if (answer.type === 'timeout') {
    return [{ kind: 'answer:timeout', detail: `${answer.gotHead ? `HTTP ${answer.status}: the body did not end within ${answer.ms} ms` : `no response within ${answer.ms} ms`}${answer.note ? ` (${answer.note})` : ''}` }];
  }
  if (answer.type === 'error') {
    const kind = {
      connecting: 'answer:connection-error',
      // The server answered early (a 413, a 400 for the path) and closed with the body unread: the
      // reset may cost the client the answer. Worth knowing; no broken invariant of flotilla's own.
      sending: 'note:reset-while-sending-body',
      waiting: 'answer:closed-without-answer',
      reading: 'answer:answer-cut-off',
    }[answer.phase];
    return [{ kind, detail: `after ${answer.ms} ms: ${answer.message}` }];
  }
  const out: Violation[] = [];
  const { status } = answer;
  let doc: unknown;
  let parsed = false;
  const contentType = answer.headers['content-type']?.[0] ?? '';
  // A client that asked for protobuf gets the Status in protobuf, as from the apiserver.
  const protobufStatus = /^application\/vnd\.kubernetes\.protobuf\b/i.test(contentType) && answer.body.subarray(0, 4).equals(Buffer.from('k8s\0', 'latin1')) && answer.body.includes('\u0012\u0006Status');
  if (status >= 400 && ctx.method !== 'HEAD' && !protobufStatus) {
    try {
      // A client that asked for YAML gets the Status in YAML.
      doc = /^application\/yaml\b/i.test(contentType) ? parseYaml(answer.body.toString('utf8')) : JSON.parse(answer.body.toString('utf8'));
      parsed = true;
    } catch {
      parsed = false;
    }
    const d = doc as { kind?: unknown; code?: unknown } | undefined;
    if (!parsed || typeof d !== 'object' || d === null || d.kind !== 'Status') {
      out.push({ kind: `answer:not-status:${status}`, detail: `HTTP ${status} (${contentType || 'no content type'}) with a body that is not a Status: ${JSON.stringify(answer.body.toString('utf8', 0, 200))}` });
    } else if (d.code !== status) {
      out.push({ kind: 'answer:status-code-mismatch', detail: `HTTP ${status} with a Status whose code is ${JSON.stringify(d.code)}` });
    } else if (!/^application\/(json|yaml)\b/i.test(contentType)) {
      out.push({ kind: 'answer:status-content-type', detail: `HTTP ${status}: a Status sent as ${JSON.stringify(contentType)}` });
    }
  }
  // A HEAD's 504 has no body to tell its reason by: the Retry-After of a too-large RV stands for it.
  const tooLargeRV = status === 504 && (isTooLargeRV(doc) || (ctx.method === 'HEAD' && answer.headers['retry-after'] !== undefined));
  if (status >= 500 && !tooLargeRV) {
    const reason = (doc as { reason?: unknown } | undefined)?.reason;
    out.push({ kind: `answer:5xx:${status}${typeof reason === 'string' ? `:${reason}` : ''}`, detail: `HTTP ${status}: ${answer.body.toString('utf8', 0, 300)}` });
  }
  if (ctx.sentImpersonation && ctx.authenticated && !ctx.publicPath && status >= 200 && status < 300) {
    out.push({ kind: 'answer:caller-impersonation-ignored', detail: `HTTP ${status} to a caller that sent Impersonate-* headers without the right to impersonate (the apiserver answers 403)` });
  }
  return out;
}

/**
 * A member's own answer that flotilla passed on unchanged (same status, same first bytes): an
 * error body that is not a Status is then the member's way, not flotilla's.
 */
export function passedThrough(answer: Answer, memberAnswers: { status?: number; bodyHead?: Buffer }[]): boolean {
  if (answer.type !== 'response') return false;
  return memberAnswers.some((m) => m.status === answer.status && m.bodyHead !== undefined && m.bodyHead.equals(answer.body.subarray(0, m.bodyHead.length)) && (m.bodyHead.length > 0 || answer.body.length === 0));
}

/** Kinds that are reported but do not fail the suite. */
export function isNote(kind: string): boolean {
  return kind.startsWith('note:');
}

export interface ObjectSnapshot {
  /** `cluster/resource/namespace/name` → resourceVersion */
  [key: string]: string;
}

/** Objects that appeared, vanished or changed between two snapshots. */
export function snapshotDiff(before: ObjectSnapshot, after: ObjectSnapshot): Violation[] {
  const out: Violation[] = [];
  for (const [k, rv] of Object.entries(before)) {
    if (!(k in after)) out.push({ kind: 'member:object-deleted', detail: `${k} (rv ${rv}) is gone` });
    else if (after[k] !== rv) out.push({ kind: 'member:object-changed', detail: `${k} changed (rv ${rv} → ${after[k]})` });
  }
  for (const k of Object.keys(after)) {
    if (!(k in before)) out.push({ kind: 'member:object-created', detail: `${k} appeared (rv ${after[k]})` });
  }
  return out;
}
