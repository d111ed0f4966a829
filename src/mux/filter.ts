import { matchesLabels, type LabelSelector } from '../api/label-selector.js';
import { matchesFields, type FieldSelector } from '../api/field-selector.js';

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

type Meta = { labels?: Record<string, string>; fields?: Record<string, string> } | undefined;

/**
 * The event a watch with this filter gets for a change, as the apiserver decides it: a MODIFIED
 * object that starts matching is ADDED, one that stops is DELETED (with its new state), one that
 * matched neither before nor after is nothing (undefined). Only selectors on labels and fields
 * can change their verdict on a modification; without the previous meta record (an event logged
 * before it was kept) the verdict on the new state decides alone, as before.
 */
export function eventTypeFor(
  f: ObjectFilter,
  ev: { type: 'ADDED' | 'MODIFIED' | 'DELETED'; cluster: string; namespace: string; name: string },
  meta: () => Meta,
  prevMeta: (() => Meta) | undefined,
): 'ADDED' | 'MODIFIED' | 'DELETED' | undefined {
  const now = matches(f, ev, meta);
  if (ev.type !== 'MODIFIED' || !prevMeta || !needsMeta(f)) return now ? ev.type : undefined;
  const was = matches(f, ev, prevMeta);
  if (now) return was ? 'MODIFIED' : 'ADDED';
  return was ? 'DELETED' : undefined;
}
