import { CRDS, resourceName } from './tenant.js';
import { KIND_REFERENCES } from './kind-references.js';
import { at, NOT_THE_TENANTS, objectsOf, rename, type Direction, type Json } from './naming-direction.js';
import { policyOf, rewriteApiVersion, rewriteReference, scopeOf, type ObjectType } from './reference-names.js';

/** One whole object renamed: its apiVersion, its own names (metadata) and its kind's references. */

/**
 * Every object's own names: its namespace, or its name (and generateName, so a generated name is
 * the tenant's too) by its cluster-scoped kind's policy; and its ownerReferences.
 */
function rewriteMetadata(obj: Json, type: ObjectType, d: Direction): void {
  const meta = at(obj, 'metadata');
  const carriesNamespace = typeof meta?.namespace === 'string' && meta.namespace !== '';
  const scope = scopeOf(d, type.group, type.kind, type.namespaced ?? carriesNamespace);
  const policy = policyOf(d, type.group, scope);
  // Member → tenant a hidden object is not shown; tenant → member its name stays (callers refuse such writes earlier).
  if (policy === 'hidden' && d.tenantward) throw NOT_THE_TENANTS;
  if (!meta) return;
  if (scope.namespaced) rename(meta, 'namespace', d.namespace);
  else if (policy !== 'hidden') {
    const resource = scope.resource ?? '';
    rename(meta, 'name', (name) => d.clusterName(type.group, resource, name, policy));
    // A CRD's name is `<plural>.<group>`, never generated. A generated name is always the
    // tenant's, even one that starts as a shared name does (`system:`): the member only adds to it.
    if (resourceName(type.group, resource) !== CRDS) rename(meta, 'generateName', (name) => (!d.tenantward && policy === 'owned' ? d.tenant.prefix + name : d.clusterName(type.group, resource, name, policy)));
  }
  for (const owner of objectsOf(meta.ownerReferences)) rewriteReference(owner, d.references);
}

/** One object: its apiVersion, metadata and its kind's references. `fallback`: the type a List's item or a patch omits. */
export function rewriteObject(obj: Json, d: Direction, fallback?: ObjectType): void {
  const group = typeof obj.apiVersion === 'string' ? rewriteApiVersion(obj, d) : (fallback?.group ?? '');
  const kind = typeof obj.kind === 'string' ? obj.kind : fallback?.kind;
  if (kind === undefined) return;
  const namespaced = fallback !== undefined && fallback.group === group && fallback.kind === kind ? fallback.namespaced : undefined;
  const type: ObjectType = namespaced === undefined ? { group, kind } : { group, kind, namespaced };
  rewriteMetadata(obj, type, d);
  KIND_REFERENCES[`${group}/${kind}`]?.(obj, d.references);
}
