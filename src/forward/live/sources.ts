import type { ResourceTarget } from '../owner.js';
import type { FanOutBounds, MemberAsk } from '../member-fan-out.js';
import type { LiveReadDeps } from './config.js';

/**
 * Where a live read asks: a source is a member (`east`), or one namespace of it (`east/acme-web`)
 * for a tenant's list across its namespaces.
 */

/** How a live read asks its sources: each source's request (with its own query), and the fan-out's bounds. */
export interface LiveAsk {
  request(source: string, query: URLSearchParams): MemberAsk;
  bounds: FanOutBounds;
}

/**
 * What a list asks: each member, or for a tenant's list across its namespaces each of its
 * namespaces on each member (`east/acme-web`), where flotilla knows them (namespaces cached): the
 * member-side policy makes a tenant's admins admins of their namespaces alone, so a member refuses
 * them the cluster-wide list. A member none of whose namespaces is the tenant's is not asked.
 */
export function sourcesOf(deps: LiveReadDeps, target: ResourceTarget, clusters: readonly string[]): string[] {
  const tenant = deps.tenant;
  if (!tenant || target.namespace !== undefined || !tenant.resource(target.group, target.resource)?.namespaced) return [...clusters];
  const sources = clusters.flatMap((c) => {
    const namespaces = deps.namespacesOf?.(c);
    return namespaces === undefined ? [c] : namespaces.filter((ns) => tenant.naming.tenant.ownsNamespace(ns)).map((ns) => `${c}/${ns}`);
  });
  // No namespace of the tenant anywhere: the members' own (empty, or refused) answer.
  return sources.length > 0 ? sources : [...clusters];
}

export function clusterOf(source: string): string {
  const slash = source.indexOf('/');
  return slash < 0 ? source : source.slice(0, slash);
}

export function namespaceOf(source: string): string | undefined {
  const slash = source.indexOf('/');
  return slash < 0 ? undefined : source.slice(slash + 1);
}
