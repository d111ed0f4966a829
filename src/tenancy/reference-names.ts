import { clusterScopedKind, type ResourcePolicy } from './tenant.js';
import { at, rename, seen, type Direction, type Json } from './naming-direction.js';

/**
 * The names an object gives other objects: an apiVersion's or apiGroup's group, and an object
 * reference's namespace and name, by the referenced kind's scope and the tenant's policy for it.
 */

/** An object's type: the member's group and the kind; `namespaced` where the caller knows it (a patch's target). */
export interface ObjectType {
  group: string;
  kind: string;
  namespaced?: boolean;
}

interface Scope {
  namespaced: boolean;
  /** Undefined: a kind neither the lookup nor tenant.ts knows. */
  resource?: string;
}

/**
 * A kind's scope: the lookup's, else a well-known cluster-scoped kind's, else (unknown) namespaced
 * when the object or reference carries a namespace.
 */
export function scopeOf(d: Direction, group: string, kind: string, carriesNamespace: boolean): Scope {
  const known = d.n.kinds(group, kind);
  if (known) return known;
  const wellKnown = clusterScopedKind(group, kind);
  // clusterScopedKind names the resource as kubectl does, `<resource>.<group>`.
  if (wellKnown !== undefined) return { namespaced: false, resource: group ? wellKnown.slice(0, -(group.length + 1)) : wellKnown };
  return { namespaced: carriesNamespace };
}

export function policyOf(d: Direction, group: string, scope: Scope): ResourcePolicy {
  if (scope.resource !== undefined) return d.tenant.policy(group, scope.resource, scope.namespaced);
  // An unknown namespaced kind: `namespaced`, or hidden in another tenant's group (the resource does not matter).
  if (scope.namespaced) return d.tenant.policy(group, '', true);
  // An unknown cluster-scoped kind: the tenant's whole in its own CRD group, else hidden (no
  // configuration can name a resource this does not know).
  const own = d.tenant.tenantGroup(group);
  return own !== undefined && own !== group ? 'group' : 'hidden';
}

/** Renames an `apiVersion` field's group; returns the member's group ('' for the core group or no apiVersion). */
export function rewriteApiVersion(obj: Json, d: Direction): string {
  const v = obj.apiVersion;
  if (typeof v !== 'string') return '';
  const slash = v.indexOf('/');
  if (slash < 0) return '';
  const group = d.memberGroup(v.slice(0, slash));
  obj.apiVersion = `${seen(d.group(group))}${v.slice(slash)}`;
  return group;
}

/** Renames a bare group field (roleRef's `apiGroup`); returns the member's group. */
function rewriteGroupField(obj: Json, d: Direction, key: string): string {
  const v = obj[key];
  if (typeof v !== 'string' || v === '') return '';
  const group = d.memberGroup(v);
  obj[key] = seen(d.group(group));
  return group;
}

/**
 * The name a reference gives an object of this kind: renamed when the kind is cluster-scoped and
 * the tenant owns or shares it; a namespaced object's name, and a hidden one's, stay.
 */
export function referenceName(d: Direction, group: string, kind: string, carriesNamespace: boolean, name: string): string | undefined {
  const scope = scopeOf(d, group, kind, carriesNamespace);
  if (scope.namespaced) return name;
  const policy = policyOf(d, group, scope);
  return policy === 'hidden' ? name : d.clusterName(group, scope.resource ?? '', name, policy);
}

/**
 * An object reference (ownerReference, involvedObject, regarding, targetRef, claimRef, roleRef):
 * its group, its namespace, and its name when it names a cluster-scoped object.
 */
export function rewriteReference(ref: Json, d: Direction, groupKey: 'apiVersion' | 'apiGroup' = 'apiVersion'): void {
  const group = groupKey === 'apiVersion' ? rewriteApiVersion(ref, d) : rewriteGroupField(ref, d, groupKey);
  rename(ref, 'namespace', d.namespace);
  const kind = ref.kind;
  if (typeof kind !== 'string') return;
  const carriesNamespace = typeof ref.namespace === 'string' && ref.namespace !== '';
  rename(ref, 'name', (name) => referenceName(d, group, kind, carriesNamespace, name));
}

export function rewriteReferenceAt(obj: Json, d: Direction, ...path: string[]): void {
  const ref = at(obj, ...path);
  if (ref) rewriteReference(ref, d);
}
