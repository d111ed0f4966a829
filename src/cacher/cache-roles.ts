import type { MemberClient } from '../members/member-client.js';
import type { MemberHeartbeat } from '../members/heartbeat.js';
import { NAMESPACES_KEY, type ResourceInfo } from '../api/resource-info.js';
import type { Store } from '../store/store.js';
import type { CacherStatus } from './cacher-status.js';
import type { MemberAnswer } from './member-progress.js';
import type { FreshReadCounts, Unconfirmed } from './fresh-reads.js';

/**
 * The roles the cache manager plays for the layers above it (FleetMembers, ResourceCatalog,
 * CacheHealth). Each reader or forwarder is given only the roles it needs, not the manager, and
 * imports them from here: what a part can reach is visible in its options and its imports.
 */

export interface CachedResource {
  info: ResourceInfo;
  /** The clusters whose copy of this resource flotilla caches. */
  clusters: string[];
  /** The namespaces cached of a namespaced resource, or undefined for all of them. */
  namespaces?: readonly string[];
  /** The fields a member's CRD makes selectable whose values its cached objects carry (none for a built-in resource). */
  selectableFields?(cluster: string): readonly string[];
}

/**
 * Whether a read or write names a cluster this resource is not cached from, or a namespace it is
 * not cached in: the cache cannot answer for it, the members can.
 */
export function outsideCache(resource: CachedResource, target: { cluster?: string; namespace?: string }): boolean {
  if (target.cluster !== undefined && !resource.clusters.includes(target.cluster)) return true;
  return target.namespace !== undefined && resource.namespaces !== undefined && !resource.namespaces.includes(target.namespace);
}

export interface FleetMembers {
  clusterNames(): string[];
  member(name: string): MemberClient | undefined;
  /** A member's labels as the configuration has them now (empty for one it does not know). */
  clusterLabels(name: string): Readonly<Record<string, string>>;
  /** Tells `listener` which members' labels a reload changed (they are changed when it is told); returns its unsubscribe. */
  onLabelsChange?(listener: (clusters: readonly string[]) => void): () => void;
}

export interface ResourceCatalog {
  resource(key: string): CachedResource | undefined;
  cachedResources(): CachedResource[];
}

/** A member's namespaces, when they are cached from it; undefined when they are not. */
export function cachedNamespaces(catalog: ResourceCatalog, store: Store, cluster: string): string[] | undefined {
  if (!catalog.resource(NAMESPACES_KEY)?.clusters.includes(cluster)) return undefined;
  return [...store.entries(NAMESPACES_KEY, { cluster })].map((e) => e.name);
}

/**
 * A cluster whose cached copy of a resource may be out of date: its cacher is failing (`since`,
 * `error`), or the member is silent (`silentForMs`, `error` for why its last probe failed).
 */
export interface StaleCluster {
  cluster: string;
  since?: string;
  error?: string;
  silentForMs?: number;
  /** Its history was rewritten (resourceVersions back, a new cluster): why; its state is being listed again. */
  rewritten?: string;
  /** A fresh read could not confirm that the cache holds its latest writes: why (fresh-reads.ts). */
  unconfirmed?: string;
}

export interface CacheHealth {
  isSynced(): boolean;
  status(): CacherStatus[];
  staleClusters(resource: string): StaleCluster[];
  /** Each member's heartbeat: whether it answers, since when it does not. */
  heartbeats(): MemberHeartbeat[];
  /**
   * Resolves true once the cache of `resource` holds each cluster's RV in `rvs`, asking a member
   * whether it holds events up to it when a scope is behind (member-progress.ts); false at `timeoutMs`.
   */
  reachResourceVersion(resource: string, rvs: Record<string, string>, timeoutMs: number): Promise<boolean>;
  /** What `cluster` holds of `resource` in (from, to]: no event (`quiet`), some, its history gone, or not known. */
  memberQuietBetween(resource: string, cluster: string, from: string, to: string): Promise<MemberAnswer['kind']>;
  /**
   * Confirms with each of `clusters` that the cache of `resource` holds every write the member had
   * acknowledged when this was called (fresh-reads.ts), within `timeoutMs`; returns those not
   * confirmed. A silent member is not waited for (it is a stale cluster already).
   */
  confirmFresh(resource: string, clusters: readonly string[], timeoutMs: number): Promise<Unconfirmed[]>;
  /** The confirmations' outcomes and the members' revision lists, since start (/metrics). */
  freshReadStats(): FreshReadCounts;
}
