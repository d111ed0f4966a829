import type { ResourceCatalog } from '../cacher/cache-roles.js';
import { gvrKey, namesResource } from '../api/resource-info.js';
import { OWNERS_FIELD, fieldIndexKey, ownerKind, ownerUid, ownerValue } from '../store/meta-record.js';
import { KEY_SEP, type Store } from '../store/store.js';
import { OWNER_SEARCH_MAX_DEPTH, OWNER_SEARCH_MEMO_MAX, OWNER_SEARCH_WALK_MAX_OBJECTS } from '../registry/defaults.js';
import type { ObjectPredicate, ViewedMeta, ViewedObject } from './read-view.js';
import type { FoundOwner, OwnerRef, OwnerSearch } from './owner-search.js';

/**
 * Owner search over the store's owner index (meta-record.ts, OWNERS_FIELD and UID_FIELD): the
 * owner found by uid or by kind and name, then a predicate that admits an object when its chain of
 * owners reaches the owner within `depth` levels, inside the owner's member and namespace.
 *
 * The predicate walks up from each object it is asked about (its owners from its meta record,
 * their owners through the uid index), so an object that appears after the view was built (a new
 * ReplicaSet's pods, on a watch) is admitted too. A list walks down once instead (the owner's
 * descendants through the owner index) and reads only the objects those own.
 *
 * Every owner on the way must be cached: a Deployment's pods are found through its ReplicaSets
 * only when replicasets are cached from that member. Both walks read the store as it is now, not a
 * paged list's snapshot: an owner chain that changed between pages is followed as it is now.
 */

/** The store's owner lookups, with what they found kept until the store's next commit. */
class OwnerLookups {
  private memoAt = -1;
  /** Per `<cluster>/<ownerValue>`: that owner's own owners, or null when it is not cached there. */
  private readonly ownersMemo = new Map<string, readonly string[] | null>();
  private kinds: { resource: string; groupKind: string }[] | undefined;

  constructor(
    readonly store: Store,
    private readonly catalog: ResourceCatalog,
  ) {}

  /** The memos are of the store as of one commit: forgotten at the next (or when they grow past their bound). */
  private fresh(): void {
    const at = this.store.commitCount;
    if (at === this.memoAt && this.ownersMemo.size < OWNER_SEARCH_MEMO_MAX) return;
    this.memoAt = at;
    this.ownersMemo.clear();
    this.kinds = undefined;
  }

  /** Every cached resource (gvrKey) with the `<group>/<Kind>` of its objects. */
  cachedKinds(): readonly { resource: string; groupKind: string }[] {
    this.fresh();
    return (this.kinds ??= this.catalog.cachedResources().map((r) => ({ resource: gvrKey(r.info), groupKind: `${r.info.group}/${r.info.kind}` })));
  }

  /** Whether an object of `<group>/<Kind>` owns something cached (one index probe per cached resource). */
  ownsAnything(groupKind: string): boolean {
    return this.cachedKinds().some((c) => this.store.hasOwnersOfKind(c.resource, groupKind));
  }

  /** The cached resources holding objects of `<group>/<Kind>`: one per version cached. */
  resourcesOfKind(groupKind: string): string[] {
    return this.cachedKinds()
      .filter((k) => k.groupKind === groupKind)
      .map((k) => k.resource);
  }

  /** The owners (ownerValues) of the owner `owner` in `cluster`; null when it is not cached there. */
  ownersOf(cluster: string, owner: string): readonly string[] | null {
    this.fresh();
    const memoKey = `${cluster}/${owner}`;
    const known = this.ownersMemo.get(memoKey);
    if (known !== undefined) return known;
    let found: readonly string[] | null = null;
    const uid = ownerUid(owner);
    for (const resource of this.resourcesOfKind(ownerKind(owner))) {
      for (const key of this.store.keysWithUid(resource, uid)) {
        if (!key.endsWith(KEY_SEP + cluster)) continue;
        const meta = this.store.metaAt(key);
        if (meta) found = meta.owners ?? [];
      }
      if (found) break;
    }
    this.ownersMemo.set(memoKey, found);
    return found;
  }
}

export class StoreOwnerSearch implements OwnerSearch {
  private readonly lookups: OwnerLookups;

  constructor(
    private readonly store: Store,
    private readonly catalog: ResourceCatalog,
  ) {
    this.lookups = new OwnerLookups(store, catalog);
  }

  find(owner: OwnerRef, clusters: readonly string[], namespace: string | undefined): FoundOwner[] {
    return 'uid' in owner ? this.ownersByUid(owner.uid, clusters, namespace) : this.ownersByName(owner.kind, owner.name, clusters, namespace);
  }

  ownedBy(found: readonly FoundOwner[], depth: number | undefined): ObjectPredicate {
    const levels = Math.max(1, Math.min(depth ?? OWNER_SEARCH_MAX_DEPTH, OWNER_SEARCH_MAX_DEPTH));
    return new OwnedBy(this.lookups, found, levels);
  }

  /** Every cached object with this uid in the clusters (one, unless members share restored state), in the namespace or cluster-scoped. */
  private ownersByUid(uid: string, clusters: readonly string[], namespace: string | undefined): FoundOwner[] {
    const found = new Map<string, FoundOwner>();
    for (const r of this.catalog.cachedResources()) {
      for (const key of this.store.keysWithUid(gvrKey(r.info), uid)) {
        const [, ns = '', name = '', cluster = ''] = key.split(KEY_SEP);
        if (!clusters.includes(cluster) || (namespace !== undefined && ns !== '' && ns !== namespace)) continue;
        found.set(`${cluster}/${uid}`, { cluster, namespace: ns, group: r.info.group, resource: r.info.resource, namespaced: r.info.namespaced, name, owner: ownerValue(r.info.group, r.info.kind, uid) });
      }
    }
    return [...found.values()];
  }

  /**
   * Every cached object of this kind and name in the clusters: in the namespace given, or in any
   * namespace without one. `kind` is a Kind or a resource name, either with `.<group>` to choose
   * between groups, case aside.
   */
  private ownersByName(kind: string, name: string, clusters: readonly string[], namespace: string | undefined): FoundOwner[] {
    const found = new Map<string, FoundOwner>();
    for (const r of this.catalog.cachedResources()) {
      const { info } = r;
      if (!namesResource(kind, info)) continue;
      const resource = gvrKey(info);
      for (const cluster of r.clusters) {
        if (!clusters.includes(cluster)) continue;
        const namespaces = !info.namespaced ? [''] : namespace !== undefined ? [namespace] : this.store.namespacesOfName(resource, cluster, name);
        for (const ns of namespaces) {
          const uid = this.store.metaOf(resource, { namespace: ns, name, cluster })?.uid;
          if (uid) found.set(`${cluster}/${uid}`, { cluster, namespace: ns, group: info.group, resource: info.resource, namespaced: info.namespaced, name, owner: ownerValue(info.group, info.kind, uid) });
        }
      }
    }
    return [...found.values()];
  }
}

/** Admits the objects the owners found own, through up to `depth` levels, each within its owner's member and namespace. */
export class OwnedBy implements ObjectPredicate {
  readonly name: string;
  readonly needsMeta = true;
  /** Per cluster, the owners found there: their namespaces and uids. */
  private readonly byCluster = new Map<string, { namespace: string; uid: string }[]>();

  constructor(
    private readonly lookups: OwnerLookups,
    private readonly owners: readonly FoundOwner[],
    private readonly depth: number,
  ) {
    for (const o of owners) this.byCluster.set(o.cluster, [...(this.byCluster.get(o.cluster) ?? []), { namespace: o.namespace, uid: ownerUid(o.owner) }]);
    this.name = `owner:${owners.map((o) => `${o.cluster}/${ownerUid(o.owner)}`).sort().join(',')}:${depth}`;
  }

  test(o: ViewedObject, meta: () => ViewedMeta): boolean {
    return this.reaches(o, meta, undefined);
  }

  /** The `<group>/<Kind>` of `resource`'s objects (a gvrKey), as the owner index names owners; undefined when it is not cached or its objects own nothing cached. */
  ownerKindOf(resource: string): string | undefined {
    const kind = this.lookups.cachedKinds().find((k) => k.resource === resource)?.groupKind;
    return kind !== undefined && this.lookups.ownsAnything(kind) ? kind : undefined;
  }

  /** Whether `o` would be admitted were `skipped` (an ownerValue) not cached: whether it was before that owner arrived. */
  admitsWithout(o: ViewedObject, meta: () => ViewedMeta, skipped: string): boolean {
    return this.reaches(o, meta, skipped);
  }

  /**
   * The keys of `resource`'s objects in `cluster` that `owner` (an ownerValue) owns, through up to
   * depth − 1 levels below it: those that may have entered this predicate when it was committed.
   */
  dependentsOf(resource: string, cluster: string, owner: string): string[] {
    const { store } = this.lookups;
    const values = this.descendants([{ cluster, owner }], new Set([owner]), this.depth);
    if (!values) return [];
    const out: string[] = [];
    for (const v of values) {
      if (!store.hasOwnersOfKind(resource, ownerKind(v))) continue;
      for (const key of store.keysOwnedBy(resource, v)) if (key.endsWith(KEY_SEP + cluster)) out.push(key);
    }
    return out;
  }

  private reaches(o: ViewedObject, meta: () => ViewedMeta, skipped: string | undefined): boolean {
    const here = this.byCluster.get(o.cluster)?.filter((f) => f.namespace === '' || f.namespace === o.namespace);
    if (!here || here.length === 0) return false;
    let level = meta()?.owners;
    const seen = new Set<string>();
    for (let d = 1; level && level.length > 0; d++) {
      for (const v of level) if (v !== skipped && here.some((f) => f.uid === ownerUid(v))) return true;
      if (d >= this.depth) return false;
      const next: string[] = [];
      for (const v of level) {
        // A cycle of owner references comes back to an owner already followed.
        if (seen.has(v) || v === skipped) continue;
        seen.add(v);
        const up = this.lookups.ownersOf(o.cluster, v);
        if (up) next.push(...up);
      }
      level = next;
    }
    return false;
  }

  /**
   * The owners of everything this predicate admits in `resource`: the owners found and their
   * descendants down to depth − 1, walked down the owner index. A level's objects are read (for
   * their uids) only when something cached is owned by their kind; undefined when the walk would
   * read more than OWNER_SEARCH_WALK_MAX_OBJECTS (the list then scans its range).
   */
  indexLookup(resource: string): { key: string; values: string[] } | undefined {
    const { store } = this.lookups;
    const values = this.descendants(this.owners.map((o) => ({ cluster: o.cluster, owner: o.owner })), new Set(this.owners.map((o) => o.owner)), this.depth);
    if (!values) return undefined;
    // Only the owners whose kind owns something in the resource listed: each value is a range read.
    return { key: fieldIndexKey(OWNERS_FIELD), values: [...values].filter((v) => store.hasOwnersOfKind(resource, ownerKind(v))) };
  }

  /**
   * `values` with the descendants of `from` down to `levels` − 1 levels below it, walked down the
   * owner index; undefined past OWNER_SEARCH_WALK_MAX_OBJECTS objects read.
   */
  private descendants(from: { cluster: string; owner: string }[], values: Set<string>, levels: number): Set<string> | undefined {
    const { store } = this.lookups;
    const cached = this.lookups.cachedKinds();
    const owning = new Map<string, boolean>();
    const ownsSomething = (groupKind: string): boolean => {
      let known = owning.get(groupKind);
      if (known === undefined) owning.set(groupKind, (known = this.lookups.ownsAnything(groupKind)));
      return known;
    };
    let frontier = from;
    let budget = OWNER_SEARCH_WALK_MAX_OBJECTS;
    for (let d = 1; d < levels && frontier.length > 0; d++) {
      const next: { cluster: string; owner: string }[] = [];
      for (const f of frontier) {
        const kind = ownerKind(f.owner);
        for (const c of cached) {
          // Children that own nothing cached add no owner to look for; neither do resources owned by no such kind.
          if (!ownsSomething(c.groupKind) || !store.hasOwnersOfKind(c.resource, kind)) continue;
          for (const key of store.keysOwnedBy(c.resource, f.owner)) {
            if (!key.endsWith(KEY_SEP + f.cluster)) continue;
            if (--budget < 0) return undefined;
            const uid = store.metaAt(key)?.uid;
            const child = uid ? `${c.groupKind}/${uid}` : undefined;
            if (child === undefined || values.has(child)) continue;
            values.add(child);
            next.push({ cluster: f.cluster, owner: child });
          }
        }
      }
      frontier = next;
    }
    return values;
  }
}
