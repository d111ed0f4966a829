import type { ObjectPredicate } from './read-view.js';

export type OwnerRef = { uid: string } | { kind: string; name: string };
export interface OwnerSearch {
  /** A predicate admitting objects owned (through up to `depth` levels; undefined = every level) by the owner,
   *  within the owner's member and namespace; null when no such owner is found in the clusters given. */
  owned(owner: OwnerRef, clusters: readonly string[], namespace: string | undefined, depth: number | undefined): ObjectPredicate | null;
}
