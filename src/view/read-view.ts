import { matchesLabels, type LabelSelector } from '../api/label-selector.js';
import { matchesFields, type FieldSelector } from '../api/field-selector.js';
import type { AccessSet } from '../api/rbac.js';
import type { MetaRecord } from '../store/meta-record.js';
import type { PlaceLookup, TokenMatch } from '../store/name-index.js';
import type { CutBytes } from '../util/byte-edits.js';

/**
 * What one caller's read may see of one resource: built once per request by the view steps
 * (steps.ts) and then asked by every read form, so lists, gets, watches, Tables, continue tokens,
 * resourceVersions and error messages agree on it and none names or counts what it hides.
 *
 * Clusters and namespaces are key ranges of the store (a list scans only those); selectors and
 * other predicates are tested per object, on its meta record only when one needs it.
 */
export interface ViewedObject {
  cluster: string;
  namespace: string;
  name: string;
}

/** What a view reads of a meta record (store/meta-record.ts): `created` is its creationTimestamp, `owners` its owner references. */
export type ViewedMeta = { labels?: Record<string, string>; fields?: Record<string, string>; created?: string; owners?: readonly string[] } | undefined;

export type ChangeKind = 'ADDED' | 'MODIFIED' | 'DELETED';

/**
 * A test an object must pass to be seen, added by a step; `needsMeta` if it reads the meta record.
 * Its name identifies it with its parameters (two predicates of one name must decide alike): views
 * that agree on everything, names included, are one view to the watch fan-out.
 */
export interface ObjectPredicate {
  readonly name: string;
  readonly needsMeta: boolean;
  test(o: ViewedObject, meta: () => ViewedMeta): boolean;
  /**
   * A label-index lookup (an index key, values any of which) whose entries in `resource` (its
   * gvrKey) hold every object the predicate admits there: a list reads those objects instead of
   * its whole range, and tests each as usual. Undefined: the predicate has none, or not now.
   */
  indexLookup?(resource: string): IndexLookup | undefined;
  /** Several lookups, each as `indexLookup` says (a name's words): the list reads the smallest. */
  indexLookups?(resource: string): readonly IndexLookup[];
  /** A range of one index key's values holding every object the predicate admits (a creation time's), used as `indexLookup` is. */
  indexRange?(resource: string): RangeLookup | undefined;
}

/**
 * A label-index lookup: the entries of index key `key` valued any of `values`; with `match`, the
 * name index's (store/name-index.ts) entries of every word starting with `values[0]` ('prefixed')
 * or holding it ('containing'), which the list finds in the store first; with `place`, the
 * objects the name index's places hold (long generated tokens, word pairs), which the store
 * answers with their keys.
 */
export interface IndexLookup {
  key: string;
  values: string[];
  match?: TokenMatch;
  place?: PlaceLookup;
}

/**
 * A label-index lookup over a range of values: the entries of index key `key` valued `from` or
 * above and below `to` (either open), compared as text (the creation-time index's timestamps).
 */
export interface RangeLookup {
  key: string;
  from?: string;
  to?: string;
}

/**
 * How a view shows a stored object when it is not as stored (the namespace tree's labels on a
 * namespace): its bytes and meta record as served. `name` identifies it (views that present alike
 * share encoded watch lines).
 */
export interface Presentation {
  readonly name: string;
  /**
   * `meta` is read only when asked (a list of objects in JSON never needs it). Undefined: the
   * object is not shown after all (a tenant's object that names another tenant's): lists leave
   * it out, a get is 404, a watch sends nothing of it. The bytes may come as pieces (a list
   * writes them one after the other, without joining them first).
   */
  present(o: PresentedObject, bytes: Buffer, meta: () => MetaRecord | undefined): Shown | undefined;
  /**
   * The label-index entry (a field's index key and value) that marks the objects `present` needs
   * to know about: a list looks them up once and tells `present` (`PresentedObject.marked`).
   */
  readonly marks?: { key: string; value: string };
  /**
   * The bytes alone, when they can be had without the meta record (a list of objects in JSON
   * needs nothing else); undefined: ask `present`.
   */
  presentBytes?(o: { cluster: string; name: string }, bytes: Buffer, marked: boolean | undefined): Buffer | CutBytes | undefined;
  /** A store key (a continue token's start) as the caller reads it, when the presentation renames. */
  shownKey?(key: string): string;
}

export interface PresentedObject {
  cluster: string;
  name: string;
  /** Whether the object carries the presentation's mark; undefined: not looked up (its meta record tells). */
  marked?: boolean;
}

export interface Shown {
  bytes: Buffer | readonly Buffer[];
  meta: () => MetaRecord | undefined;
}

export type { CutBytes };

/** A shown object's bytes as one buffer. */
export function joined(bytes: Buffer | readonly Buffer[]): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.concat(bytes as Buffer[]);
}

export interface ReadViewParts {
  /** The resource's cached clusters this view shows, in the resource's order. */
  clusters: readonly string[];
  /** Whether that is every cluster the resource is cached from. */
  allClusters: boolean;
  /** The namespaces it shows (sorted, each one key range), or undefined for all. */
  namespaces?: readonly string[];
  labelSelector: LabelSelector;
  fieldSelector: FieldSelector;
  predicates: readonly ObjectPredicate[];
  /** Clusters the request addressed where the caller may not read it. */
  denied?: readonly string[];
  /** The access it was built from (src/authz), kept for deciding it again. */
  access?: ReadonlyMap<string, AccessSet>;
  /** How objects are shown, when not as stored. */
  presentation?: Presentation;
  /**
   * What every object shown starts its namespace with (a namespaced resource) or its name (a
   * cluster-scoped one): a tenant's `acme-`. One key range, so pages still count right.
   */
  prefix?: { value: string; namespaced: boolean };
  /** Whether members were chosen by their fleet-file labels (cluster search terms): a reload that changes labels decides it again. */
  selectsByClusterLabels?: boolean;
}

const GENERIC_FIELDS = new Set(['metadata.name', 'metadata.namespace']);

export class ReadView {
  readonly clusters: readonly string[];
  readonly allClusters: boolean;
  readonly namespaces: readonly string[] | undefined;
  readonly labelSelector: LabelSelector;
  readonly fieldSelector: FieldSelector;
  readonly predicates: readonly ObjectPredicate[];
  /** Clusters taken away because the caller may not read there: named in a Warning, 403 if nothing is left. */
  readonly denied: readonly string[];
  readonly access: ReadonlyMap<string, AccessSet> | undefined;
  readonly presentation: Presentation | undefined;
  readonly prefix: { value: string; namespaced: boolean } | undefined;
  /** Whether deciding on an object reads its meta record (decoded on demand otherwise never). */
  readonly needsMeta: boolean;
  /** Whether members were chosen by their fleet-file labels: a reload that changes labels decides it again. */
  readonly selectsByClusterLabels: boolean;
  /**
   * Whether objects inside its key ranges can be hidden. Then a page gives no
   * remainingItemCount: a count of the range would count what the caller does not see.
   */
  readonly narrows: boolean;
  /**
   * What the view changes in an encoded watch line (today: which clusters a resourceVersion
   * names). Watchers share a line only when their keys are equal.
   */
  readonly lineKey: string;
  /**
   * Identifies what the view shows: views with equal keys decide alike on every object, so the
   * watch fan-out decides once per event for all their watchers.
   */
  readonly key: string;
  private readonly clusterSet: ReadonlySet<string>;
  private readonly namespaceSet: ReadonlySet<string> | undefined;
  private readonly needsLabels: boolean;
  private readonly fieldsNeedMeta: boolean;

  constructor(parts: ReadViewParts) {
    this.clusters = parts.clusters;
    this.allClusters = parts.allClusters;
    this.namespaces = parts.namespaces;
    this.labelSelector = parts.labelSelector;
    this.fieldSelector = parts.fieldSelector;
    this.predicates = parts.predicates;
    this.denied = parts.denied ?? [];
    this.access = parts.access;
    this.presentation = parts.presentation;
    this.prefix = parts.prefix;
    this.selectsByClusterLabels = parts.selectsByClusterLabels === true;
    this.clusterSet = new Set(parts.clusters);
    this.namespaceSet = parts.namespaces ? new Set(parts.namespaces) : undefined;
    this.needsLabels = parts.labelSelector.length > 0;
    this.fieldsNeedMeta = parts.fieldSelector.some((r) => !GENERIC_FIELDS.has(r.field));
    this.needsMeta = this.needsLabels || this.fieldsNeedMeta || parts.predicates.some((p) => p.needsMeta);
    this.narrows = this.needsLabels || parts.fieldSelector.length > 0 || parts.predicates.length > 0 || (!parts.allClusters && parts.clusters.length !== 1);
    this.lineKey = (parts.allClusters ? '' : parts.clusters.join(',')) + (parts.presentation ? `|${parts.presentation.name}` : '');
    this.key = JSON.stringify([this.lineKey, parts.namespaces ?? null, parts.labelSelector, parts.fieldSelector, parts.predicates.map((p) => p.name), parts.prefix ?? null]);
  }

  showsCluster(cluster: string): boolean {
    return this.clusterSet.has(cluster);
  }

  showsNamespace(namespace: string): boolean {
    if (this.prefix?.namespaced && !namespace.startsWith(this.prefix.value)) return false;
    return this.namespaceSet === undefined || this.namespaceSet.has(namespace);
  }

  /** Whether some namespaces are not shown (the rest need not be read). */
  get narrowsNamespaces(): boolean {
    return this.namespaceSet !== undefined || this.prefix?.namespaced === true;
  }

  /**
   * The view's clusters whose objects in this namespace it can show: where the caller's access
   * (each member's own) grants the namespace. Where members grant different namespaces, a read
   * of one namespace then reads only those members' objects.
   */
  clustersIn(namespace: string): readonly string[] {
    const access = this.access;
    if (access === undefined) return this.clusters;
    return this.clusters.filter((c) => {
      const a = access.get(c);
      return a === undefined || a.everywhere || a.namespaces.has(namespace);
    });
  }

  /** Whether the caller sees this object; `meta` is called only when a selector or predicate needs it. */
  admits(o: ViewedObject, meta: () => ViewedMeta): boolean {
    if (!this.clusterSet.has(o.cluster)) return false;
    if (this.namespaceSet !== undefined && !this.namespaceSet.has(o.namespace)) return false;
    if (this.prefix !== undefined && !(this.prefix.namespaced ? o.namespace : o.name).startsWith(this.prefix.value)) return false;
    if (this.fieldSelector.length > 0) {
      const own = this.fieldsNeedMeta ? meta()?.fields : undefined;
      if (!matchesFields(this.fieldSelector, { ...own, 'metadata.name': o.name, 'metadata.namespace': o.namespace })) return false;
    }
    if (this.needsLabels && !matchesLabels(this.labelSelector, meta()?.labels)) return false;
    for (const p of this.predicates) if (!p.test(o, meta)) return false;
    return true;
  }

  /**
   * The event this view's watch gets for a change, as the apiserver decides it: a MODIFIED object
   * that starts being seen is ADDED, one that stops is DELETED (with its new state), one seen
   * neither before nor after is nothing (undefined). Only what reads the meta record can change
   * its verdict on a modification; without the previous meta record (an event logged before it
   * was kept) the verdict on the new state decides alone.
   */
  eventType(ev: ViewedObject & { type: ChangeKind }, meta: () => ViewedMeta, prevMeta: (() => ViewedMeta) | undefined): ChangeKind | undefined {
    const now = this.admits(ev, meta);
    if (ev.type !== 'MODIFIED' || !prevMeta || !this.needsMeta) return now ? ev.type : undefined;
    const was = this.admits(ev, prevMeta);
    if (now) return was ? 'MODIFIED' : 'ADDED';
    return was ? 'DELETED' : undefined;
  }
}
