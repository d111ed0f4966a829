import type { ViewStep } from './view-step.js';

/** `/namespaces/<ns>/…`: one namespace, one key range of the store. */
export const requestNamespace: ViewStep = {
  name: 'namespace',
  apply(view, req) {
    if (req.namespace !== undefined) view.keepNamespaces([req.namespace]);
  },
};
