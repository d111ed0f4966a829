import { canonicalUrl } from './request-info.js';
import { StatusError } from './status.js';
/**
 * Flotilla as an extension apiserver of a hub: the group it registers (APIService
 * `v1alpha1.search.flotilla.io`), and the path under which the whole fleet API is served, so a
 * kubeconfig whose server ends in FLEET_PATH makes every kubectl command work unchanged.
 * `…/fleet/clusters/<name>/…` is one member, as `/clusters/<name>/…` is at the root.
 */
export const FLEET_GROUP = 'search.flotilla.io';
export const FLEET_VERSION = 'v1alpha1';
export const FLEET_PATH = `/apis/${FLEET_GROUP}/${FLEET_VERSION}/fleet`;

/**
 * The request's URL with the fleet path taken off (`/` for the path itself), or undefined when it
 * is not under it. Matched on whole segments: `/…/fleetx` is not under `/…/fleet`.
 */
export function withoutFleetPath(url: string): string | undefined {
  if (!url.startsWith(FLEET_PATH)) return undefined;
  const rest = url.slice(FLEET_PATH.length);
  if (rest === '') return '/';
  if (rest.startsWith('/')) return rest;
  if (rest.startsWith('?')) return `/${rest}`;
  return undefined;
}

/**
 * A request's URL as every later step reads it: canonical (`canonicalUrl`: `/%61pis/…` is
 * `/apis/…`), then with the fleet path taken off. A URL that has no canonical form stays as it
 * came, and is answered 400 where its path is first read (`parseRequestPath`, a tenant's rewrite).
 */
export function edgeUrl(raw: string): string {
  const url = canonicalOrAsCame(raw);
  return withoutFleetPath(url) ?? url;
}

/** Whether a request came in under FLEET_PATH, in whichever encoding. */
export function cameUnderFleetPath(raw: string): boolean {
  return withoutFleetPath(canonicalOrAsCame(raw)) !== undefined;
}

function canonicalOrAsCame(raw: string): string {
  try {
    return canonicalUrl(raw);
  } catch (e) {
    if (!(e instanceof StatusError)) throw e;
    return raw;
  }
}
