import type { ObjectPredicate } from './read-view.js';

/**
 * Owner search (`search.flotilla.io/owner-uid`, `owner-kind` with `owner-name`, `owner-depth`):
 * the interface step-search.ts asks; implemented over the store's owner index (owner-predicate.ts).
 * The router finds the owners first and keeps those the caller may read (ViewRequest.ownersFound):
 * an owner it may not read is not found, so a search never tells that it exists.
 */
export type OwnerRef = { uid: string } | { kind: string; name: string };

/** An owner an owner term names, as found in the store: enough to ask whether the caller may read it. */
export interface FoundOwner {
  readonly cluster: string;
  /** '' for a cluster-scoped owner, whose dependents may be in any namespace of its member. */
  readonly namespace: string;
  readonly group: string;
  readonly resource: string;
  readonly namespaced: boolean;
  readonly name: string;
  /** How the owner index names it (store/meta-record.ts ownerValue). */
  readonly owner: string;
}

export interface OwnerSearch {
  /** The owners `owner` names in the clusters given, in the namespace or cluster-scoped (any namespace without one). */
  find(owner: OwnerRef, clusters: readonly string[], namespace: string | undefined): FoundOwner[];
  /** A predicate admitting objects owned by these owners (through up to `depth` levels; undefined = every level), each within its owner's member and namespace. */
  ownedBy(found: readonly FoundOwner[], depth: number | undefined): ObjectPredicate;
}
