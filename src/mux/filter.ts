import { matchesLabels, type LabelSelector } from '../selectors/labels.js';
import { matchesFields, type FieldSelector } from '../selectors/fields.js';

/** Which objects a list or watch wants: by cluster, namespace, labels and fields. */
export interface ObjectFilter {
  cluster?: string;
  namespace?: string;
  labelSelector?: LabelSelector;
  fieldSelector?: FieldSelector;
}

export function needsLabels(f: ObjectFilter): boolean {
  return (f.labelSelector?.length ?? 0) > 0;
}

export function needsMeta(f: ObjectFilter): boolean {
  return needsLabels(f) || (f.fieldSelector?.some((r) => r.field !== 'metadata.name' && r.field !== 'metadata.namespace') ?? false);
}

/** The meta record is read only when a selector needs it: meta records are decoded on demand. */
export function matches(
  f: ObjectFilter,
  o: { cluster: string; namespace: string; name: string },
  meta: () => { labels?: Record<string, string>; fields?: Record<string, string> } | undefined,
): boolean {
  if (f.cluster !== undefined && o.cluster !== f.cluster) return false;
  if (f.namespace !== undefined && o.namespace !== f.namespace) return false;
  if (f.fieldSelector?.length) {
    const own = needsMeta(f) ? meta()?.fields : undefined;
    if (!matchesFields(f.fieldSelector, { ...own, 'metadata.name': o.name, 'metadata.namespace': o.namespace })) return false;
  }
  if (needsLabels(f) && !matchesLabels(f.labelSelector!, meta()?.labels)) return false;
  return true;
}
