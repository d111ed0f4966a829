import type { ViewStep } from './view-step.js';

/** `/clusters/<name>/…`: that member's objects only. */
export const addressedCluster: ViewStep = {
  name: 'addressed-cluster',
  apply(view, req) {
    if (req.cluster !== undefined) view.keepClusters((c) => c === req.cluster);
  },
};
