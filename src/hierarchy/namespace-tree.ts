/**
 * One member's namespace hierarchy, as HNC defines it: each namespace has at most one parent,
 * and carries `<ancestor>.tree.hnc.x-k8s.io/depth: "<n>"` for itself ("0") and every ancestor.
 *
 * Where a member runs HNC, its namespaces already carry those labels and they are taken as they
 * are. Elsewhere the parent comes from the namespace's `HierarchyConfiguration` (`spec.parent`)
 * or its `hnc.x-k8s.io/subnamespace-of` annotation, and flotilla computes the labels. A parent
 * that does not exist, or an edge that closes a cycle, is cut there (the namespace becomes a
 * root of its own) and reported: the tree never loops and every namespace stays selectable.
 */

export const TREE_LABEL_SUFFIX = '.tree.hnc.x-k8s.io/depth';
export const SUBNAMESPACE_OF = 'hnc.x-k8s.io/subnamespace-of';

/** What a namespace says of its place in the tree. */
export interface NamespaceFacts {
  /** The parent it names (HierarchyConfiguration first, else the annotation), if any. */
  parent?: string;
  /** Its HNC tree labels when the member's HNC set them (ancestor → depth). */
  hncDepths?: ReadonlyMap<string, number>;
}

export interface TreeProblem {
  namespace: string;
  parent: string;
  problem: 'missing parent' | 'cycle';
}

/** The tree labels a namespace's own labels carry (HNC's), undefined when none. */
export function hncDepthsOf(labels: Record<string, string> | undefined): Map<string, number> | undefined {
  let out: Map<string, number> | undefined;
  for (const [k, v] of Object.entries(labels ?? {})) {
    if (!k.endsWith(TREE_LABEL_SUFFIX) || !/^[0-9]{1,4}$/.test(v)) continue;
    (out ??= new Map()).set(k.slice(0, -TREE_LABEL_SUFFIX.length), Number(v));
  }
  return out;
}

let trees = 0;

export class NamespaceTree {
  /** Each namespace's ancestors, itself first, its root last. */
  private readonly chains = new Map<string, readonly string[]>();
  /** Each namespace's descendants, itself included (built on first need). */
  private subtrees?: Map<string, string[]>;
  readonly problems: readonly TreeProblem[];
  /** Tells trees apart: a member's tree is built anew after every change. */
  readonly id = ++trees;

  constructor(namespaces: ReadonlyMap<string, NamespaceFacts>) {
    const problems: TreeProblem[] = [];
    const parentOf = new Map<string, string>();
    for (const [name, facts] of namespaces) {
      if (facts.hncDepths) continue;
      if (facts.parent === undefined || facts.parent === '') continue;
      if (!namespaces.has(facts.parent)) problems.push({ namespace: name, parent: facts.parent, problem: 'missing parent' });
      else parentOf.set(name, facts.parent);
    }
    // A cycle is cut at the edge out of its smallest name, whichever namespace the walk starts at.
    for (const start of [...parentOf.keys()].sort()) {
      const seen = new Set<string>();
      let at: string | undefined = start;
      while (at !== undefined && !seen.has(at)) {
        seen.add(at);
        at = parentOf.get(at);
      }
      if (at === undefined) continue;
      const cycle: string[] = [];
      let c = at;
      do {
        cycle.push(c);
        c = parentOf.get(c)!;
      } while (c !== at);
      const cut = cycle.sort()[0]!;
      problems.push({ namespace: cut, parent: parentOf.get(cut)!, problem: 'cycle' });
      parentOf.delete(cut);
    }
    // HNC's own chains first: a computed chain that reaches one continues with it.
    for (const [name, facts] of namespaces) {
      if (facts.hncDepths) this.chains.set(name, [...facts.hncDepths].sort((a, b) => a[1] - b[1]).map(([n]) => n));
    }
    for (const [name, facts] of namespaces) {
      if (facts.hncDepths) continue;
      const chain: string[] = [];
      for (let at: string | undefined = name; at !== undefined; at = parentOf.get(at)) {
        const known = this.chains.get(at);
        if (known && at !== name) {
          chain.push(...known);
          break;
        }
        chain.push(at);
      }
      this.chains.set(name, chain);
    }
    this.problems = problems.sort((a, b) => a.namespace.localeCompare(b.namespace));
  }

  has(namespace: string): boolean {
    return this.chains.has(namespace);
  }

  /** The namespace's ancestors, itself first; a namespace the tree does not know is a root. */
  ancestors(namespace: string): readonly string[] {
    return this.chains.get(namespace) ?? [namespace];
  }

  /** Its tree labels, as HNC writes them: itself "0", its parent "1", … */
  depthLabels(namespace: string): Record<string, string> {
    const out: Record<string, string> = {};
    this.ancestors(namespace).forEach((a, depth) => (out[a + TREE_LABEL_SUFFIX] = String(depth)));
    return out;
  }

  namespaces(): IterableIterator<string> {
    return this.chains.keys();
  }

  /** Whether a namespace is part of a tree: it has a parent or children (else it stands alone). */
  inTree(namespace: string): boolean {
    return this.ancestors(namespace).length > 1 || this.subtree(namespace).length > 1;
  }

  /** The namespaces under `ancestor` (itself first when the tree knows it), from the chains. */
  subtree(ancestor: string): readonly string[] {
    if (!this.subtrees) {
      this.subtrees = new Map();
      for (const [name, chain] of this.chains) {
        for (const a of chain) {
          let under = this.subtrees.get(a);
          if (!under) this.subtrees.set(a, (under = []));
          under.push(name);
        }
      }
    }
    return this.subtrees.get(ancestor) ?? [];
  }
}
