import type { LabelSelector } from '../api/label-selector.js';
import type { FieldSelector } from '../api/field-selector.js';
import type { AccessSet } from '../api/rbac.js';
import type { NamespaceTree } from '../hierarchy/namespace-tree.js';
import { ReadView, type ObjectPredicate, type Presentation } from './read-view.js';

/**
 * One request's view under construction. Steps only narrow it: each can take clusters and
 * namespaces away and add requirements, none can widen what an earlier step left.
 */
export interface ViewRequest {
  resource: { info: { group: string; kind: string; namespaced: boolean }; clusters: readonly string[] };
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
  /** Each member's namespace tree, for hierarchy selectors (step-hierarchy.ts); absent: none. */
  hierarchy?: { tree(cluster: string): NamespaceTree };
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

  constructor(cachedClusters: readonly string[]) {
    this.allOf = cachedClusters;
    this.clusters = [...cachedClusters];
  }

  keepClusters(keep: (cluster: string) => boolean): void {
    this.clusters = this.clusters.filter(keep);
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

  /** Shows objects otherwise than as stored (one presentation per view). */
  present(presentation: Presentation): void {
    this.presentation = presentation;
  }

  build(access?: ReadonlyMap<string, AccessSet>): ReadView {
    return new ReadView({
      access,
      clusters: this.clusters,
      allClusters: this.clusters.length === this.allOf.length,
      namespaces: this.namespaces,
      labelSelector: this.labelSelector,
      fieldSelector: this.fieldSelector,
      predicates: this.predicates,
      denied: this.denied,
      ...(this.presentation ? { presentation: this.presentation } : {}),
    });
  }
}
