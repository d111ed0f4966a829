import { parseFieldSelector, validateFieldSelector } from '../api/field-selector.js';
import { selectableFieldNames } from '../ingest/fields.js';
import { isGet } from './step-label-selector.js';
import type { ViewStep } from './view-step.js';

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
    validateFieldSelector(selector, new Set([...GENERIC_FIELDS, ...selectableFieldNames(group, kind)]));
    if (req.name !== undefined) selector.push({ field: 'metadata.name', operator: 'Equals', value: req.name });
    view.requireFields(selector);
  },
};
