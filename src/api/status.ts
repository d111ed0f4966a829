import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import { CLUSTER_ANNOTATION } from './fleet-object/cluster-annotation.js';
/**
 * Kubernetes `Status` errors. Clients (kubectl, client-go) branch on `reason` and `code`, not on the
 * message, so every factory pairs a code with the reason the apiserver uses for it.
 */
export interface StatusCause {
  reason?: string;
  message?: string;
  field?: string;
}

export interface StatusDetails {
  name?: string;
  group?: string;
  /** For NotFound and AlreadyExists the apiserver puts the resource plural here, not the Kind. */
  kind?: string;
  causes?: StatusCause[];
  retryAfterSeconds?: number;
}

/** The wire form of a failure `Status`. */
export interface StatusBody {
  kind: 'Status';
  apiVersion: 'v1';
  metadata: { continue?: string; resourceVersion?: string };
  status: 'Failure';
  message: string;
  reason: string;
  details?: StatusDetails;
  code: number;
}

/** A resource as the apiserver names it in messages: `pods`, `deployments.apps`. */
export interface GroupResource {
  group: string;
  resource: string;
}

export class StatusError extends Error {
  override readonly name = 'StatusError';
  /** Why flotilla refused a request with this 429 itself, in a word (`live_busy`), for its metrics and log. */
  refusal?: RefusalReason;

  constructor(
    readonly code: number,
    readonly reason: string,
    message: string,
    readonly details?: StatusDetails,
    /** Sent as the Retry-After header as well as in details, as the apiserver does. */
    readonly retryAfterSeconds?: number,
    /** A 410 for an expired continue token carries a fresh token in the Status's list metadata. */
    readonly listMeta?: { continue?: string; resourceVersion?: string },
  ) {
    super(message);
  }

  toStatus(): StatusBody {
    return {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: this.listMeta ? { ...this.listMeta } : {},
      status: 'Failure',
      message: this.message,
      reason: this.reason,
      ...(this.details !== undefined ? { details: this.details } : {}),
      code: this.code,
    };
  }
}

function qualified(r: GroupResource): string {
  return r.group ? `${r.resource}.${r.group}` : r.resource;
}

function resourceDetails(r: GroupResource, name: string): StatusDetails {
  return { name, ...(r.group ? { group: r.group } : {}), kind: r.resource };
}

export function badRequest(message: string): StatusError {
  return new StatusError(400, 'BadRequest', message);
}

export function unauthorized(message: string): StatusError {
  return new StatusError(401, 'Unauthorized', message);
}

/** A path flotilla (and no member) serves, worded as the apiserver words it. */
export function notServed(): StatusError {
  return new StatusError(404, 'NotFound', 'the server could not find the requested resource');
}

export function forbidden(message: string, details?: StatusDetails): StatusError {
  return new StatusError(403, 'Forbidden', message, details);
}

/** Worded as the apiserver words it (`deployments.apps "web" not found`): users and scripts grep for it. */
export function notFound(resourceWithGroup: GroupResource, name: string): StatusError {
  return new StatusError(404, 'NotFound', `${qualified(resourceWithGroup)} "${name}" not found`, resourceDetails(resourceWithGroup, name));
}

/** A `/clusters/<name>/` (or a cluster a request resolved to) that the fleet does not have. */
export function unknownCluster(cluster: string): StatusError {
  return new StatusError(404, 'NotFound', `cluster "${cluster}" is not a member of this fleet`);
}

export function methodNotAllowed(message: string): StatusError {
  return new StatusError(405, 'MethodNotAllowed', message);
}

export function notAcceptable(message: string): StatusError {
  return new StatusError(406, 'NotAcceptable', message);
}

export function conflict(message: string, details?: StatusDetails): StatusError {
  return new StatusError(409, 'Conflict', message, details);
}

/** A write (or an owner lookup) naming an object several clusters hold: pick one by its prefix or its annotation. */
export function heldBySeveral(r: GroupResource, namespace: string | undefined, name: string, clusters: readonly string[]): StatusError {
  const what = `${r.resource}${r.group ? '.' + r.group : ''} "${name}"`;
  // 400, not 409: kubectl and client-go read a 409 Conflict as a stale resourceVersion and retry
  // it (kubectl scale for minutes); a choice only the caller can make is shown to it at once.
  return new StatusError(
    400,
    'BadRequest',
    `${what}${namespace ? ` in namespace "${namespace}"` : ''} exists in clusters ${clusters.join(', ')}: flotilla cannot tell which one is meant. ` +
      `Choose one with the /clusters/<name>/ path prefix (kubectl --server <flotilla URL>/clusters/${clusters[0]}), ` +
      `or write the object with its ${CLUSTER_ANNOTATION} annotation naming one (as \`kubectl get -o yaml\` shows it)`,
    { name, group: r.group, kind: r.resource },
  );
}

/** `pods "x" already exists`, with the same details as NotFound, as the apiserver answers a create. */
export function alreadyExists(resourceWithGroup: GroupResource, name: string): StatusError {
  return new StatusError(409, 'AlreadyExists', `${qualified(resourceWithGroup)} "${name}" already exists`, resourceDetails(resourceWithGroup, name));
}

/** A resourceVersion or continue token older than what is kept: clients relist on this reason. */
export function expired(message: string): StatusError {
  return new StatusError(410, 'Expired', message);
}

export function gone(message: string): StatusError {
  return new StatusError(410, 'Gone', message);
}

export function tooLarge(message: string): StatusError {
  return new StatusError(413, 'RequestEntityTooLarge', message);
}

export function invalid(message: string, causes?: StatusCause[]): StatusError {
  return new StatusError(422, 'Invalid', message, causes ? { causes } : undefined);
}

/** Why flotilla refuses a request with 429 itself (a metric's label); a member's own 429 passed on is `member`. */
export const REFUSAL_REASONS = ['live_busy', 'live_too_large', 'live_watches', 'member'] as const;
export type RefusalReason = (typeof REFUSAL_REASONS)[number];

/** A 429; `refusal` says why flotilla refused it, for its metrics and log. */
export function tooManyRequests(message: string, retryAfterSeconds?: number, refusal?: RefusalReason): StatusError {
  const err = new StatusError(429, 'TooManyRequests', message, retryAfterSeconds === undefined ? undefined : { retryAfterSeconds }, retryAfterSeconds);
  if (refusal) err.refusal = refusal;
  return err;
}

export function serviceUnavailable(message: string): StatusError {
  return new StatusError(503, 'ServiceUnavailable', message);
}

/** 504 Timeout; with cause `ResourceVersionTooLarge` and a retry delay it tells clients to wait for the cache. */
export function timeout(message: string, causes?: StatusCause[], retryAfterSeconds?: number): StatusError {
  const details: StatusDetails = {
    ...(causes ? { causes } : {}),
    ...(retryAfterSeconds !== undefined ? { retryAfterSeconds } : {}),
  };
  return new StatusError(504, 'Timeout', message, Object.keys(details).length > 0 ? details : undefined, retryAfterSeconds);
}

export function internalError(message: string): StatusError {
  return new StatusError(500, 'InternalError', message);
}

/** A member's own Status (a JSON body it answered with), which is passed through unchanged. */
export function isStatusObject(x: unknown): boolean {
  if (typeof x !== 'object' || x === null || Array.isArray(x)) return false;
  const o = x as { kind?: unknown; apiVersion?: unknown };
  return o.kind === 'Status' && o.apiVersion === 'v1';
}

/**
 * A Status written straight on a connection no HTTP response object owns (an upgrade that fails,
 * a request the HTTP parser refused, CONNECT), with `Connection: close`; the connection is
 * destroyed once the answer has been handed to the kernel. An answer to HEAD has no body,
 * whatever its length says (RFC 9110 §9.3.2).
 */
export function writeRawStatus(socket: Duplex, err: StatusError, opts: { head?: boolean; reword?: (text: string) => string } = {}): void {
  if (socket.destroyed || !socket.writable) {
    socket.destroy();
    return;
  }
  const json = JSON.stringify(err.toStatus());
  const body = opts.reword ? rewordStatusBody(json, opts.reword) : json;
  const extra = err.retryAfterSeconds !== undefined ? `Retry-After: ${err.retryAfterSeconds}\r\n` : '';
  socket.end(
    `HTTP/1.1 ${err.code} ${STATUS_CODES[err.code] ?? ''}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n${extra}Connection: close\r\n\r\n${opts.head ? '' : body}`,
    () => socket.destroy(),
  );
}

/**
 * What a member's error answer says, for a Warning or a message: a Status's `message`, else the
 * first bytes of a text answer. Never the bytes of a protobuf or other binary answer, which a
 * header cannot carry and a reader cannot read.
 */
export function answerMessage(body: Buffer | undefined, limit = 200): string {
  if (!body || body.length === 0) return '';
  try {
    const doc = JSON.parse(body.toString('utf8')) as { message?: unknown } | null;
    if (typeof doc?.message === 'string') return doc.message.slice(0, limit);
  } catch {
    // Not JSON: a text answer is shown as it starts, a binary one not at all.
  }
  const head = body.subarray(0, limit).toString('utf8');
  return /^[\t\x20-\x7e\u00a0-\uffff]*$/.test(head) && !head.includes('\ufffd') ? head : `(${body.length} bytes not shown)`;
}

/**
 * A Status body (flotilla's own, or a member's passed on) with its words reworded: the message,
 * the details' name and group, each cause's message. Any other body comes back unchanged; so does
 * one that is not JSON.
 */
export function rewordStatusBody(body: string, reword: (text: string) => string): string {
  let doc: unknown;
  try {
    doc = JSON.parse(body);
  } catch {
    return body;
  }
  if (!isStatusObject(doc)) return body;
  const status = doc as StatusBody;
  const d = status.details;
  const details = d && {
    ...d,
    ...(typeof d.name === 'string' ? { name: reword(d.name) } : {}),
    ...(typeof d.group === 'string' ? { group: reword(d.group) } : {}),
    ...(Array.isArray(d.causes) ? { causes: d.causes.map((c) => ({ ...c, ...(typeof c.message === 'string' ? { message: reword(c.message) } : {}) })) } : {}),
  };
  return JSON.stringify({ ...status, ...(typeof status.message === 'string' ? { message: reword(status.message) } : {}), ...(details ? { details } : {}) });
}

const REASONS: Record<number, string> = { 400: 'BadRequest', 401: 'Unauthorized', 403: 'Forbidden', 404: 'NotFound', 405: 'MethodNotAllowed', 406: 'NotAcceptable', 409: 'Conflict', 410: 'Gone', 413: 'RequestEntityTooLarge', 415: 'UnsupportedMediaType', 422: 'Invalid', 429: 'TooManyRequests', 503: 'ServiceUnavailable', 504: 'Timeout' };

/** A Status for an HTTP error code, with the reason the apiserver gives that code. */
export function statusForCode(code: number, message: string): StatusError {
  return new StatusError(code, REASONS[code] ?? (code >= 500 ? 'InternalError' : 'BadRequest'), message);
}
