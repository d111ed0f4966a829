import { parseFieldSelector, validateFieldSelector, type FieldSelector } from '../api/field-selector.js';
import { badRequest } from '../api/status.js';
import { selectableFieldNames } from '../ingest/fields.js';
import { isGet } from './step-label-selector.js';
import type { ViewBuilder, ViewRequest, ViewStep } from './view-step.js';

// Fields every kind can be selected by; each built-in kind adds its own (src/ingest/fields.ts).
const GENERIC_FIELDS = ['metadata.name', 'metadata.namespace'];

/**
 * `?fieldSelector=` on lists and watches, a field the kind cannot be selected by being a 400; the
 * legacy single-object watch URL (`/pods/NAME?watch=1`) is a `metadata.name` selector.
 */
export const fieldSelection: ViewStep = {
  name: 'field-selector',
  apply(view, req) {
    if (isGet(req)) return;
    const selector = req.fieldSelector ? parseFieldSelector(req.fieldSelector) : [];
    const { group, kind } = req.resource.info;
    const builtIn = new Set([...GENERIC_FIELDS, ...selectableFieldNames(group, kind)]);
    const declaredBy = req.resource.selectableFields;
    if (declaredBy) validateCustomFields(selector.filter((r) => !builtIn.has(r.field)), view, req, declaredBy);
    else validateFieldSelector(selector, builtIn);
    if (req.name !== undefined) selector.push({ field: 'metadata.name', operator: 'Equals', value: req.name });
    view.requireFields(selector);
  },
};

/**
 * A custom resource's own fields select only where every member the view shows declares them in
 * its CRD, as cached: a member that does not (or whose CRD flotilla could not read) would answer
 * the apiserver's 400, so the fleet does too, rather than leave that member's objects out
 * silently. With no member left to show, every member the resource is cached from decides.
 */
function validateCustomFields(selector: FieldSelector, view: ViewBuilder, req: ViewRequest, declaredBy: (cluster: string) => readonly string[]): void {
  if (selector.length === 0) return;
  const shown = view.clustersLeft;
  const judged = shown.length > 0 ? shown : req.resource.clusters;
  for (const r of selector) {
    const lacking = judged.filter((c) => !declaredBy(c).includes(r.field));
    if (lacking.length === 0) continue;
    // The apiserver's words when no member declares it; which members lack it when only some do.
    const some = lacking.length < judged.length && shown.length > 0;
    throw badRequest(`field label not supported: ${r.field}${some ? ` (the CustomResourceDefinition on ${lacking.join(', ')} does not declare it)` : ''}`);
  }
}
