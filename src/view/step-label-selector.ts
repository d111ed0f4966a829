import { parseLabelSelector } from '../api/label-selector.js';
import type { ViewStep } from './view-step.js';

/** `?labelSelector=` on lists and watches (a get ignores it, as the apiserver does). */
export const labelSelection: ViewStep = {
  name: 'label-selector',
  apply(view, req) {
    if (!req.labelSelector || isGet(req)) return;
    view.requireLabels(parseLabelSelector(req.labelSelector));
  },
};

export function isGet(req: { name?: string; watching: boolean }): boolean {
  return req.name !== undefined && !req.watching;
}
