import type { LabelSelector } from '../api/label-selector.js';
import type { FieldSelector } from '../api/field-selector.js';
import type { AccessSet } from '../api/rbac.js';
import type { NamespaceTree } from '../hierarchy/namespace-tree.js';
import type { ObjectNaming } from '../tenancy/naming-direction.js';
import type { SearchTerms } from '../api/search-terms.js';
import type { FoundOwner, OwnerSearch } from './owner-search.js';
import { ReadView, joined, type ObjectPredicate, type Presentation } from './read-view.js';

/**
 * One request's view under construction. Steps only narrow it: each can take clusters and
 * namespaces away and add requirements, none can widen what an earlier step left.
 */
export interface ViewRequest {
  resource: {
    info: { group: string; version?: string; resource: string; kind: string; namespaced: boolean };
    clusters: readonly string[];
    /** The fields a member's CRD makes selectable, as cached (none for a built-in resource). */
    selectableFields?(cluster: string): readonly string[];
  };
  /** `/clusters/<name>/`: one member addressed. */
  cluster?: string;
  namespace?: string;
  /** A get's or a single-object watch's name. */
  name?: string;
  watching: boolean;
  labelSelector?: string;
  fieldSelector?: string;
  /**
   * Where the caller may read, per cluster the request addresses, as its members decide
   * (src/authz); undefined only where nobody calls (benchmarks and tests of other steps).
   */
  access?: ReadonlyMap<string, AccessSet>;
  /** The caller's tenant and how its names are rewritten (src/tenancy); absent: the caller sees the fleet as it is. */
  tenant?: ObjectNaming;
  /** Each member's namespace tree, for hierarchy selectors (step-hierarchy.ts); absent: none. */
  hierarchy?: { tree(cluster: string): NamespaceTree };
  /** Search terms given as query parameters (api/list-options.ts); those in the label selector are read with it. */
  search?: SearchTerms;
  /** A member's labels in the fleet file as they are now, for `cluster.search.flotilla.io/<label>` terms; absent: none. */
  clusterLabels?: (cluster: string) => Readonly<Record<string, string>>;
  /** Owner search (owner-search.ts); absent: no owner is found, so an owner term selects nothing. */
  owners?: OwnerSearch;
  /**
   * The owners the request's owner term names that the caller may read (found and asked about by
   * the router, which can wait for the members' answers); absent or empty: nothing is owned.
   */
  ownersFound?: readonly FoundOwner[];
}

/** One step of building a view: one file each, run in the order of steps.ts. */
export interface ViewStep {
  readonly name: string;
  apply(view: ViewBuilder, req: ViewRequest): void;
}

export class ViewBuilder {
  private clusters: string[];
  private readonly allOf: readonly string[];
  private namespaces: string[] | undefined;
  private readonly labelSelector: LabelSelector = [];
  private readonly fieldSelector: FieldSelector = [];
  private readonly predicates: ObjectPredicate[] = [];
  private readonly denied: string[] = [];
  private presentation?: Presentation;
  private prefix?: { value: string; namespaced: boolean };
  private byClusterLabels = false;

  constructor(cachedClusters: readonly string[]) {
    this.allOf = cachedClusters;
    this.clusters = [...cachedClusters];
  }

  keepClusters(keep: (cluster: string) => boolean): void {
    this.clusters = this.clusters.filter(keep);
  }

  /** Keeps the members `keep` picks by their fleet-file labels: a reload that changes labels decides the view again. */
  keepLabelledClusters(keep: (cluster: string) => boolean): void {
    this.keepClusters(keep);
    this.byClusterLabels = true;
  }

  /** Narrows to these namespaces (an intersection with what earlier steps kept). */
  keepNamespaces(namespaces: readonly string[]): void {
    const wanted = [...new Set(namespaces)].sort();
    this.namespaces = this.namespaces === undefined ? wanted : wanted.filter((n) => this.namespaces!.includes(n));
  }

  /** Takes a cluster away because the caller may not read there (the answer says so, and 403 if that is all). */
  deny(cluster: string): void {
    this.clusters = this.clusters.filter((c) => c !== cluster);
    if (!this.denied.includes(cluster)) this.denied.push(cluster);
  }

  get clustersLeft(): readonly string[] {
    return this.clusters;
  }

  requireLabels(selector: LabelSelector): void {
    this.labelSelector.push(...selector);
  }

  requireFields(selector: FieldSelector): void {
    this.fieldSelector.push(...selector);
  }

  require(predicate: ObjectPredicate): void {
    this.predicates.push(predicate);
  }

  /** Keeps only objects whose namespace (namespaced) or name (cluster-scoped) starts with `value`. */
  keepPrefixed(value: string, namespaced: boolean): void {
    this.prefix = { value, namespaced };
  }

  /**
   * Shows objects otherwise than as stored. Presentations compose: the first step's has the last
   * word (a tenant's names go over the tree labels, which are computed on the member's names).
   */
  present(presentation: Presentation): void {
    const outer = this.presentation;
    this.presentation = outer === undefined ? presentation : {
      name: `${outer.name}+${presentation.name}`,
      present: (o, bytes, meta) => {
        const inner = presentation.present(o, bytes, meta);
        return inner && outer.present(o, joined(inner.bytes), inner.meta);
      },
      ...(outer.shownKey ? { shownKey: (key: string) => outer.shownKey!(key) } : {}),
      ...(outer.marks ? { marks: outer.marks } : {}),
      // Composed, only `present` knows what both do.
    };
  }

  build(access?: ReadonlyMap<string, AccessSet>): ReadView {
    return new ReadView({
      access,
      clusters: this.clusters,
      allClusters: this.clusters.length === this.allOf.length,
      // Namespaces named one by one are exact ranges: those outside the prefix are not read at all.
      namespaces: this.prefix?.namespaced && this.namespaces ? this.namespaces.filter((n) => n.startsWith(this.prefix!.value)) : this.namespaces,
      labelSelector: this.labelSelector,
      fieldSelector: this.fieldSelector,
      predicates: this.predicates,
      denied: this.denied,
      ...(this.presentation ? { presentation: this.presentation } : {}),
      ...(this.prefix ? { prefix: this.prefix } : {}),
      ...(this.byClusterLabels ? { selectsByClusterLabels: true } : {}),
    });
  }
}
