import type { CachedResource } from '../cacher/cache-manager.js';

/** Per `clusters` array (a configuration change replaces it), the same names as a set. */
const clusterSets = new WeakMap<string[], Set<string>>();

/**
 * Whether flotilla caches `cluster`'s copy of the resource. Asked once per object a list reads and
 * per event a watch is sent: a set, where the array's `includes` compared up to a hundred names.
 */
export function cachesCluster(resource: CachedResource, cluster: string): boolean {
  let set = clusterSets.get(resource.clusters);
  if (!set) {
    set = new Set(resource.clusters);
    clusterSets.set(resource.clusters, set);
  }
  return set.has(cluster);
}
