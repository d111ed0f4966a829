import type { ReadView } from '../view/read-view.js';
import type { Watcher } from './watcher.js';
import { OwnedBy } from '../view/owner-predicate.js';

/** A view's owner terms' predicates. */
export function ownerTerms(view: ReadView): OwnedBy[] {
  return view.predicates.filter((p): p is OwnedBy => p instanceof OwnedBy);
}

/** Watchers whose views are alike (equal keys): the fan-out decides on an event once for them all. */
export interface ViewGroup {
  view: ReadView;
  watchers: Set<Watcher>;
}

/**
 * One resource's watchers, grouped by view and indexed by the namespaces their views show: a live
 * event is offered only to the groups of its namespace and to those whose views show every
 * namespace, so watchers in views of other namespaces cost it nothing, and a thousand watchers in
 * ten views cost ten decisions.
 */
export class ResourceWatchers implements Iterable<Watcher> {
  private readonly all = new Set<Watcher>();
  private readonly groups = new Map<string, ViewGroup>();
  private readonly anyNamespace = new Set<ViewGroup>();
  private readonly byNamespace = new Map<string, Set<ViewGroup>>();
  /** The groups whose views have owner terms (an owner arriving may bring them objects: view-revision.ts). */
  readonly owned = new Set<ViewGroup>();

  get size(): number {
    return this.all.size;
  }

  [Symbol.iterator](): Iterator<Watcher> {
    return this.all[Symbol.iterator]();
  }

  add(w: Watcher): void {
    this.all.add(w);
    const view = w.opts.view;
    let group = this.groups.get(view.key);
    if (!group) {
      this.groups.set(view.key, (group = { view, watchers: new Set() }));
      if (ownerTerms(view).length > 0) this.owned.add(group);
      if (view.namespaces === undefined) this.anyNamespace.add(group);
      else for (const ns of view.namespaces) {
        let set = this.byNamespace.get(ns);
        if (!set) this.byNamespace.set(ns, (set = new Set()));
        set.add(group);
      }
    }
    group.watchers.add(w);
  }

  delete(w: Watcher): void {
    if (!this.all.delete(w)) return;
    const view = w.opts.view;
    const group = this.groups.get(view.key);
    if (!group) return;
    group.watchers.delete(w);
    if (group.watchers.size > 0) return;
    this.groups.delete(view.key);
    this.anyNamespace.delete(group);
    this.owned.delete(group);
    for (const ns of view.namespaces ?? []) {
      const set = this.byNamespace.get(ns);
      set?.delete(group);
      if (set?.size === 0) this.byNamespace.delete(ns);
    }
  }

  /** Calls `f` for each group whose view may show an object of `namespace`, each once. */
  forNamespace(namespace: string, f: (g: ViewGroup) => void): void {
    const own = this.byNamespace.get(namespace);
    if (own) for (const g of own) f(g);
    for (const g of this.anyNamespace) f(g);
  }
}
