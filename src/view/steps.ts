import { ViewBuilder, type ViewRequest, type ViewStep } from './view-step.js';
import type { ReadView } from './read-view.js';
import { addressedCluster } from './step-addressed-cluster.js';
import { authorization } from './step-authorization.js';
import { requestNamespace } from './step-namespace.js';
import { labelSelection } from './step-label-selector.js';
import { hierarchySelection } from './step-hierarchy.js';
import { fieldSelection } from './step-field-selector.js';
import { tenantView } from './step-tenant.js';
import { searchSelection } from './step-search.js';

/**
 * The view steps, in the order they run, on a view that starts as every cluster the resource is
 * cached from (so a cluster dropped from the configuration is out of every view at once, while
 * the store still holds its objects until they are removed). A new step is a file
 * of its own, put here where it belongs: steps that decide which clusters and namespaces the
 * caller may see come before the request's own narrowing, so an error a later step raises can
 * never depend on what an earlier one hid.
 */
export const VIEW_STEPS: readonly ViewStep[] = [addressedCluster, authorization, tenantView, requestNamespace, hierarchySelection, searchSelection, labelSelection, fieldSelection];

export function buildReadView(req: ViewRequest, steps: readonly ViewStep[] = VIEW_STEPS): ReadView {
  const builder = new ViewBuilder(req.resource.clusters);
  for (const step of steps) step.apply(builder, req);
  return builder.build(req.access);
}
