/**
 * Whole Kubernetes objects between a tenant's names and the member's (tenant.ts has the names):
 * every field that names a namespace, an owned cluster-scoped object, a CRD group or a service
 * account is renamed, both ways, and nothing else.
 *
 * Member → tenant, an object is the tenant's to see only when every name in it is one the
 * tenant can write: a reference to `kube-system` or to another tenant's namespace, left as it is,
 * would read as the tenant's own `kube-system` (the member's `acme-kube-system`), and renamed
 * back it would point somewhere else. Such an object is not shown at all (undefined; a List
 * drops it), so whatever the tenant reads maps back to exactly what the member holds. Two
 * exceptions, both from HNC's and Kubernetes' own naming: a namespace's tree labels of ancestors
 * that are not the tenant's are dropped (the tenant's tree stops at its own namespaces), and a
 * reference to an object of a hidden resource (a PersistentVolume `pvc-…`) keeps its name on both
 * sides: no tenant owns such names, and the tenant cannot reach the object by it anyway.
 *
 * Tenant → member never fails: every name the tenant writes becomes one of its own.
 */
import { clusterScopedKind } from './tenant.js';
import { isJsonObject } from '../util/json-object.js';
import { at, memberward, NOT_THE_TENANTS, objectsOf, rename, tenantward, type Direction, type Json, type ObjectNaming } from './naming-direction.js';
import { rewriteApiVersion } from './reference-names.js';
import { rewriteObject } from './object-names.js';

/** Tenant → member, for write bodies (create/update/patch bodies, apply). Returns the rewritten object (may mutate the input). */
export function objectToMember(obj: unknown, n: ObjectNaming): unknown {
  rewriteAny(obj, memberward(n));
  return obj;
}

/**
 * Member → tenant, for answers. Returns undefined when the object is not the tenant's to see
 * (another tenant's namespace, a hidden kind, a name the tenant cannot write); for Lists, drops
 * such items. Never mutates its input: member objects may be cached.
 */
export function objectToTenant(obj: unknown, n: ObjectNaming): unknown | undefined {
  const copy = structuredClone(obj);
  try {
    rewriteAny(copy, tenantward(n));
  } catch (e) {
    if (e === NOT_THE_TENANTS) return undefined;
    throw e;
  }
  return copy;
}

/** A List's items: each renamed, typed by the List where it omits its type (built-in Lists do); member → tenant, hidden items dropped. */
function rewriteList(list: Json & { items: unknown[] }, d: Direction): void {
  const group = rewriteApiVersion(list, d);
  const kind = typeof list.kind === 'string' && list.kind !== 'List' ? list.kind.slice(0, -'List'.length) : undefined;
  const itemType = kind === undefined ? undefined : { group, kind };
  list.items = list.items.filter((item) => {
    if (!isJsonObject(item)) return true;
    try {
      rewriteObject(item, d, itemType);
      return true;
    } catch (e) {
      if (e === NOT_THE_TENANTS) return false;
      throw e;
    }
  });
}

/** A Status answer: its messages (the tenant's names of the member's), and what its details name. */
function rewriteStatus(status: Json, d: Direction): void {
  if (!d.tenantward) return;
  rename(status, 'message', d.text);
  const details = at(status, 'details');
  if (!details) return;
  const group = typeof details.group === 'string' ? details.group : '';
  // details.kind is the resource (`namespaces`) or, from some webhooks, the kind (`Namespace`).
  const kind = typeof details.kind === 'string' ? details.kind : '';
  const resource = clusterScopedKind(group, kind)?.split('.')[0] ?? kind;
  const policy = d.tenant.policy(group, resource, false);
  // A Status is never hidden: the caller must answer; a name the tenant cannot write keeps only its words.
  if (policy === 'owned') rename(details, 'name', (name) => d.clusterName(group, resource, name, policy) ?? d.text(name));
  rename(details, 'group', (g) => d.group(g) ?? g);
  for (const cause of objectsOf(details.causes)) rename(cause, 'message', d.text);
}

/** A watch event's line, `{type, object}`, is not an object of a kind. */
function isWatchEvent(v: Json): v is Json & { object: Json } {
  return typeof v.type === 'string' && isJsonObject(v.object) && v.apiVersion === undefined && (v.kind === undefined || v.kind === 'WatchEvent');
}

function rewriteAny(v: unknown, d: Direction): void {
  if (!isJsonObject(v)) return;
  if (isWatchEvent(v)) rewriteAny(v.object, d);
  else if (v.kind === 'Status') rewriteStatus(v, d);
  else if (typeof v.kind === 'string' && v.kind.endsWith('List') && Array.isArray(v.items)) rewriteList(v as Json & { items: unknown[] }, d);
  else rewriteObject(v, d);
}
