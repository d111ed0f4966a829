import { parseLabelSelector } from '../api/label-selector.js';
import { TREE_LABEL_SUFFIX } from '../hierarchy/namespace-tree.js';
import { isSearchKey } from '../api/search-terms.js';
import type { ViewRequest, ViewStep } from './view-step.js';

/**
 * `?labelSelector=` on lists and watches (a get ignores it, as the apiserver does). Where
 * hierarchy selectors apply, their requirements are step-hierarchy.ts's; search terms are
 * step-search.ts's.
 */
export const labelSelection: ViewStep = {
  name: 'label-selector',
  apply(view, req) {
    if (!req.labelSelector || isGet(req)) return;
    const trees = req.hierarchy !== undefined && hierarchyApplies(req);
    view.requireLabels(parseLabelSelector(req.labelSelector).filter((r) => !isSearchKey(r.key) && !(trees && r.key.endsWith(TREE_LABEL_SUFFIX))));
  },
};

/** Whether a resource's objects are selected by their namespace's place in the tree (namespaced ones, and namespaces). */
export function hierarchyApplies(req: ViewRequest): boolean {
  const { info } = req.resource;
  return info.namespaced || (info.group === '' && info.kind === 'Namespace');
}

export function isGet(req: { name?: string; watching: boolean }): boolean {
  return req.name !== undefined && !req.watching;
}
