/** Kubernetes `Status` errors: every error flotilla answers is one of these, with the matching reason. */
export interface StatusCause {
  reason?: string;
  message?: string;
  field?: string;
}

export interface StatusDetails {
  name?: string;
  group?: string;
  kind?: string;
  causes?: StatusCause[];
  retryAfterSeconds?: number;
}

export class StatusError extends Error {
  constructor(
    readonly code: number,
    readonly reason: string,
    message: string,
    readonly details?: StatusDetails,
    readonly retryAfterSeconds?: number,
    /** The Status's ListMeta: a 410 for an expired continue token carries a fresh token here. */
    readonly listMeta?: { continue?: string; resourceVersion?: string },
  ) {
    super(message);
  }

  toStatus(): Record<string, unknown> {
    return {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: this.listMeta ?? {},
      status: 'Failure',
      message: this.message,
      reason: this.reason,
      ...(this.details ? { details: this.details } : {}),
      code: this.code,
    };
  }
}

export const badRequest = (message: string) => new StatusError(400, 'BadRequest', message);
export const unauthorized = (message: string) => new StatusError(401, 'Unauthorized', message);
export const forbidden = (message: string, details?: StatusDetails) => new StatusError(403, 'Forbidden', message, details);

/** `pods "x" not found`, `deployments.apps "x" not found`: the apiserver's wording and details. */
export function notFound(r: { group: string; resource: string }, name: string): StatusError {
  const qualified = r.group ? `${r.resource}.${r.group}` : r.resource;
  return new StatusError(404, 'NotFound', `${qualified} "${name}" not found`, { name, ...(r.group ? { group: r.group } : {}), kind: r.resource });
}

export const methodNotAllowed = (message: string) => new StatusError(405, 'MethodNotAllowed', message);
export const notAcceptable = (message: string) => new StatusError(406, 'NotAcceptable', message);
export const conflict = (message: string, details?: StatusDetails) => new StatusError(409, 'Conflict', message, details);
export const alreadyExists = (message: string, details?: StatusDetails) => new StatusError(409, 'AlreadyExists', message, details);
export const expired = (message: string) => new StatusError(410, 'Expired', message);
export const gone = (message: string) => new StatusError(410, 'Gone', message);
export const tooLarge = (message: string) => new StatusError(413, 'RequestEntityTooLarge', message);
export const invalid = (message: string, causes?: StatusCause[]) => new StatusError(422, 'Invalid', message, causes ? { causes } : undefined);
export const tooManyRequests = (message: string, retryAfterSeconds: number) =>
  new StatusError(429, 'TooManyRequests', message, { retryAfterSeconds }, retryAfterSeconds);
export const serviceUnavailable = (message: string) => new StatusError(503, 'ServiceUnavailable', message);
export const timeout = (message: string, causes?: StatusCause[], retryAfterSeconds?: number) =>
  new StatusError(504, 'Timeout', message, causes || retryAfterSeconds !== undefined ? { ...(causes ? { causes } : {}), ...(retryAfterSeconds !== undefined ? { retryAfterSeconds } : {}) } : undefined, retryAfterSeconds);
export const internalError = (message: string) => new StatusError(500, 'InternalError', message);

export function isStatusObject(x: unknown): boolean {
  return typeof x === 'object' && x !== null && (x as { kind?: unknown }).kind === 'Status' && (x as { apiVersion?: unknown }).apiVersion === 'v1';
}
