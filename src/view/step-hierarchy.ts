import { createHash } from 'node:crypto';
import { matchesLabels, parseLabelSelector, type LabelSelector } from '../api/label-selector.js';
import { TREE_LABEL_SUFFIX, type NamespaceTree } from '../hierarchy/namespace-tree.js';
import { hierarchyApplies, isGet } from './step-label-selector.js';
import type { ViewStep } from './view-step.js';
import type { Presentation } from './read-view.js';
import { TREE_SELECTIONS_MAX } from '../registry/defaults.js';

/**
 * Hierarchy selectors (HNC's): a label requirement on `<ancestor>.tree.hnc.x-k8s.io/depth`
 * selects by the object's namespace's place in its member's tree, so
 * `-l team-a.tree.hnc.x-k8s.io/depth` lists the whole subtree of team-a in every member. The
 * requirements are tested on the namespace's tree labels in that member (a namespace object on
 * its own), combined with the other label and field requirements (step-label-selector.ts leaves
 * these to this step).
 *
 * The view holds what the trees select when it is built: the selected namespaces per member
 * are part of its key, so when a tree changes, a running watch's view decided again differs
 * exactly when the selection does, and the watch hub sends ADDED and DELETED for what entered
 * and left (as for an RBAC change). When every requirement needs an ancestor, the view reads
 * only the selected namespaces, one key range each, before paging: limit, continue and
 * remainingItemCount stay right, and a list of a small subtree reads only it.
 */
export function isTreeRequirement(key: string): boolean {
  return key.endsWith(TREE_LABEL_SUFFIX);
}

/** The predicate name of every hierarchy selection starts so (reads.ts tells such views by it). */
export const HIERARCHY_PREDICATE = 'hierarchy:';

/** Whether a view selects by the namespace tree. */
export function selectsByHierarchy(view: { predicates: readonly { name: string }[] }): boolean {
  return view.predicates.some((p) => p.name.startsWith(HIERARCHY_PREDICATE));
}

interface Selection {
  namespaces: ReadonlySet<string>;
  digest: string;
}

/** What a tree selects, kept with the tree (a changed member has a new tree) per requirement set. */
const selections = new WeakMap<NamespaceTree, Map<string, Selection>>();

function selectionOf(tree: NamespaceTree, wanted: LabelSelector, wantedKey: string): Selection {
  let byKey = selections.get(tree);
  if (!byKey) selections.set(tree, (byKey = new Map()));
  let s = byKey.get(wantedKey);
  if (s) return s;
  // Bounded: a caller sending ever new selectors must not grow what a tree keeps.
  if (byKey.size >= TREE_SELECTIONS_MAX) byKey.clear();
  // Only a subtree can meet a requirement that needs its ancestor: test those candidates alone.
  const anchor = wanted.find(needsAncestor);
  const candidates = anchor ? tree.subtree(ancestorOf(anchor.key)) : [...tree.namespaces()];
  const namespaces = new Set<string>();
  for (const ns of candidates) if (matchesLabels(wanted, tree.depthLabels(ns))) namespaces.add(ns);
  const digest = createHash('sha256').update([...namespaces].sort().join('\n')).digest('base64url').slice(0, 16);
  byKey.set(wantedKey, (s = { namespaces, digest }));
  return s;
}

export const hierarchySelection: ViewStep = {
  name: 'hierarchy',
  apply(view, req) {
    const trees = req.hierarchy;
    if (!trees || !hierarchyApplies(req)) return;
    if (!req.resource.info.namespaced) view.present(treeLabels(trees));
    if (!req.labelSelector || isGet(req)) return;
    const wanted = parseLabelSelector(req.labelSelector).filter((r) => isTreeRequirement(r.key));
    if (wanted.length === 0) return;
    const ofNamespaces = !req.resource.info.namespaced;
    const wantedKey = JSON.stringify(wanted);
    const byCluster = new Map<string, { tree: NamespaceTree; selection: Selection }>();
    for (const c of view.clustersLeft) {
      const tree = trees.tree(c);
      byCluster.set(c, { tree, selection: selectionOf(tree, wanted, wantedKey) });
    }
    const selects = (cluster: string, namespace: string): boolean => {
      const t = byCluster.get(cluster);
      if (!t) return false;
      // A namespace its tree does not know (its objects came first) is a root of its own.
      return t.tree.has(namespace) ? t.selection.namespaces.has(namespace) : matchesLabels(wanted, { [namespace + TREE_LABEL_SUFFIX]: '0' });
    };
    const digests = [...byCluster].map(([c, t]) => `${c}=${t.selection.digest}`).join(',');
    view.require({
      name: `${HIERARCHY_PREDICATE}${createHash('sha256').update(`${wantedKey}\n${digests}`).digest('base64url')}`,
      needsMeta: false,
      test: (o) => selects(o.cluster, ofNamespaces ? o.name : o.namespace),
    });
    if (ofNamespaces || !wanted.every(needsAncestor)) return;
    const namespaces = new Set<string>();
    for (const [c, t] of byCluster) {
      for (const ns of t.selection.namespaces) namespaces.add(ns);
      for (const r of wanted) {
        const ancestor = ancestorOf(r.key);
        if (!t.tree.has(ancestor) && selects(c, ancestor)) namespaces.add(ancestor);
      }
    }
    view.keepNamespaces([...namespaces]);
  },
};

function ancestorOf(key: string): string {
  return key.slice(0, -TREE_LABEL_SUFFIX.length);
}

/** Requirements only a namespace under that ancestor can meet. */
function needsAncestor(r: LabelSelector[number]): boolean {
  return r.operator === 'Exists' || r.operator === 'Equals' || r.operator === 'In' || r.operator === 'GreaterThan' || r.operator === 'LessThan';
}

/**
 * Namespaces in a tree shown with their tree labels, as HNC would have set them (a namespace that
 * carries HNC's own labels is shown as it is, one with neither parent nor children as stored):
 * `kubectl get ns --show-labels` shows where each sits.
 * Only the metadata is parsed and written again; the rest of the bytes are the stored ones.
 */
function treeLabels(trees: { tree(cluster: string): NamespaceTree }): Presentation {
  return {
    name: 'tree-labels',
    present(o, bytes, metaOf) {
      const tree = trees.tree(o.cluster);
      // A namespace alone (no parent, no children) is shown as stored, as in a fleet without trees.
      if (!tree.has(o.name) || !tree.inTree(o.name)) return { bytes, meta: metaOf };
      const meta = metaOf();
      const span = meta?.metadataSpan;
      if (!span) return { bytes, meta: metaOf };
      const md = JSON.parse(bytes.toString('utf8', span[0], span[0] + span[1])) as { labels?: Record<string, string> };
      const own = md.labels ?? {};
      if (Object.keys(own).some(isTreeRequirement)) return { bytes, meta: metaOf };
      const labels = { ...own, ...tree.depthLabels(o.name) };
      md.labels = labels;
      const text = Buffer.from(JSON.stringify(md));
      return {
        bytes: [bytes.subarray(0, span[0]), text, bytes.subarray(span[0] + span[1])],
        meta: () => ({ ...meta, labels, metadataSpan: [span[0], text.length] }),
      };
    },
  };
}
