import { badRequest, invalid } from './status.js';

/**
 * List and watch options read from a request's query as the apiserver reads them: one reader
 * for every read path (cached reads in router/plugins/reads.ts, live reads in
 * forward/live-reads.ts, the request-timeout check), so that a request is answered alike
 * whichever path serves it. Each takes a parameter's first value; undefined or null is a
 * parameter not given.
 */
export type QueryValue = string | null | undefined;

const INT64_MAX = 2n ** 63n - 1n;

/** A non-negative integer query parameter as the apiserver reads it (an int64); 400 otherwise. */
export function int64Param(name: string, text: QueryValue): number | undefined {
  if (text === undefined || text === null) return undefined;
  if (!/^[0-9]{1,19}$/.test(text) || BigInt(text) > INT64_MAX) throw badRequest(`invalid ${name}: ${JSON.stringify(text)}`);
  return Number(text);
}

/** Whether the `watch` parameter asks for a watch. */
export function watchRequested(text: QueryValue): boolean {
  return text === 'true' || text === '1';
}

/**
 * A list that continues from a token and names a resourceVersion (other than "0") is 422, as the
 * apiserver answers it: the token already names the snapshot the list reads.
 */
export function refuseVersionWithContinue(resourceVersion: QueryValue): void {
  if (!resourceVersion || resourceVersion === '0') return;
  const message = 'specifying resource version is not allowed when using continue';
  throw invalid(`ListOptions.meta.k8s.io "" is invalid: resourceVersion: ${message}`, [{ reason: 'FieldValueInvalid', field: 'resourceVersion', message }]);
}
