import { parseLabelSelector } from '../api/label-selector.js';
import { TREE_LABEL_SUFFIX } from '../hierarchy/namespace-tree.js';
import type { ViewRequest, ViewStep } from './view-step.js';

/**
 * `?labelSelector=` on lists and watches (a get ignores it, as the apiserver does). Where
 * hierarchy selectors apply, their requirements are step-hierarchy.ts's.
 */
export const labelSelection: ViewStep = {
  name: 'label-selector',
  apply(view, req) {
    if (!req.labelSelector || isGet(req)) return;
    const selector = parseLabelSelector(req.labelSelector);
    view.requireLabels(req.hierarchy && hierarchyApplies(req) ? selector.filter((r) => !r.key.endsWith(TREE_LABEL_SUFFIX)) : selector);
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
