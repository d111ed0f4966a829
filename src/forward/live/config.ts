import type { IncomingMessage } from 'node:http';
import type { FleetMembers } from '../../cacher/cache-roles.js';
import type { LiveReadStats } from '../../metrics/metrics.js';
import type { LiveReadsConfig } from '../../registry/fleet-config.js';
import type { TenantNames } from '../../tenancy/answers.js';
import type { LiveBufferHold, LiveReadLimits } from '../live-read-limits.js';

/**
 * Live reads: a get, list or watch of a resource flotilla does not cache is asked of the members
 * themselves, as the caller (member-fan-out.ts), and the answers merged as a cached list is shown
 * (live-read.ts). This is what they are configured with and given, and whether a resource is read
 * live at all (its configuration: LiveReadsConfig, registry/fleet-config.ts).
 */
export interface LiveReadDeps {
  fleet: FleetMembers;
  config: LiveReadsConfig;
  /** The caller's Impersonate-* headers (401 when flotilla does not know the caller). */
  callerHeaders(req: IncomingMessage): Promise<Record<string, string | string[]>>;
  /** The caller's tenant's names (src/tenancy): answers are shown in them, with nothing of anyone else. */
  tenant?: TenantNames;
  /**
   * What flotilla selects itself rather than the members (src/view: hierarchy selectors, search
   * terms): the members get `rest` of the label selector and no search parameters, only those
   * `showsCluster` are asked (all of them when it shows none, so the answer still has its kind),
   * and answers keep the objects `admits` does.
   */
  selection?: LiveSelection;
  /** This read's share of the bytes live reads may hold (released when its response is done). */
  hold?: LiveBufferHold;
  /** A member's namespaces (member names), when flotilla caches them from it. */
  namespacesOf?: (cluster: string) => readonly string[] | undefined;
}

/** An object of a live answer, as a live selection decides on it. */
export interface LiveObject {
  cluster: string;
  namespace: string;
  name: string;
  /** Its creationTimestamp. */
  created?: string;
}

export interface LiveSelection {
  rest: string;
  showsCluster(cluster: string): boolean;
  admits(o: LiveObject): boolean;
}

/** Whether a resource (not cached) is read live from the members under this configuration. */
export function servedLive(config: LiveReadsConfig, group: string, resource: string): boolean {
  if (!config.enabled) return false;
  const name = group ? `${resource}.${group}` : resource;
  return !config.exclude.includes(name);
}

/** What /status says of live reads. */
export function liveStatus(config: LiveReadsConfig, limits?: LiveReadLimits): { enabled: boolean; served: string; exclude: string[]; concurrency: number } & Partial<LiveReadStats> {
  return {
    enabled: config.enabled,
    served: config.enabled ? 'every resource the members serve that flotilla does not cache, except those excluded' : 'none',
    exclude: [...config.exclude],
    concurrency: config.concurrency,
    ...(limits ? limits.stats() : {}),
  };
}
