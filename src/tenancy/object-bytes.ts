import { forEachMember, objectMembers, skipValue } from '../util/json-members.js';
import type { Tenant } from './tenant.js';
import { objectToTenant, type ObjectNaming } from './object-names.js';

/**
 * A stored object's bytes as a tenant reads them. Most objects name the tenant's names in one
 * place only, `metadata.namespace`: those are edited in place (the prefix cut out of that one
 * string), which costs a scan of the metadata. Objects of kinds that reference other objects by
 * name (RBAC, events, endpoints, CRDs, namespaces themselves, custom resources of the tenant's
 * own groups) are parsed and rewritten whole (object-names.ts).
 */

/** Kinds whose objects name other objects (beyond `metadata.namespace`), by group and kind. */
const REFERENCING_KINDS = new Set([
  '/Namespace', '/Event', '/Endpoints', '/PersistentVolumeClaim', '/PersistentVolume',
  'rbac.authorization.k8s.io/Role', 'rbac.authorization.k8s.io/RoleBinding',
  'rbac.authorization.k8s.io/ClusterRole', 'rbac.authorization.k8s.io/ClusterRoleBinding',
  'events.k8s.io/Event', 'discovery.k8s.io/EndpointSlice', 'networking.k8s.io/NetworkPolicy',
  'apiextensions.k8s.io/CustomResourceDefinition', 'hnc.x-k8s.io/HierarchyConfiguration',
]);

/** Whether a kind's objects can take the in-place edit: namespaced, not referencing, not of a tenant's CRD group. */
export function editsInPlace(tenant: Tenant, info: { group: string; kind: string; namespaced: boolean }): boolean {
  return info.namespaced && !REFERENCING_KINDS.has(`${info.group}/${info.kind}`) && tenant.tenantGroup(info.group) === info.group;
}

export interface ShownBytes {
  bytes: Buffer;
  /** How many bytes shorter the metadata became (its offset is unchanged). */
  metadataShrunk: number;
}

// An owner of a kind whose name the tenant sees otherwise (an owned cluster-scoped kind).
const RENAMED_OWNER = /"kind":"(Namespace|ClusterRole|ClusterRoleBinding|CustomResourceDefinition)"/;

/**
 * The object with the tenant's prefix cut from `metadata.namespace`; undefined when that is not
 * all it takes (an owner reference to a renamed kind or a tenant's group), or the bytes do not
 * read as expected: then the caller rewrites the parsed object.
 */
export function namespaceCut(bytes: Buffer, tenant: Tenant): ShownBytes | undefined {
  let namespaceAt = -1;
  let owners: [number, number] | undefined;
  let seen = false;
  forEachMember(bytes, 0, (key, start) => {
    if (key !== 'metadata') return undefined;
    seen = true;
    forEachMember(bytes, start, (inner, at) => {
      if (inner === 'namespace') namespaceAt = at;
      else if (inner === 'ownerReferences') {
        const end = skipValue(bytes, at);
        owners = [at, end];
        return end;
      }
      return undefined;
    });
    // Nothing after the metadata matters: the walk stops here.
    return -1;
  });
  if (!seen || namespaceAt < 0) return undefined;
  const prefix = tenant.prefix;
  if (bytes.toString('latin1', namespaceAt, namespaceAt + 1 + prefix.length) !== `"${prefix}`) return undefined;
  if (owners) {
    const text = bytes.toString('utf8', owners[0], owners[1]);
    if (RENAMED_OWNER.test(text) || text.includes(`"apiVersion":"${tenant.id}.`)) return undefined;
  }
  return {
    bytes: Buffer.concat([bytes.subarray(0, namespaceAt + 1), bytes.subarray(namespaceAt + 1 + prefix.length)]),
    metadataShrunk: prefix.length,
  };
}

export interface RewrittenBytes {
  bytes: Buffer;
  /** Where the rewritten object's metadata lies, [offset, length]. */
  metadataSpan: [number, number] | undefined;
  /** The object's name, when the tenant names it otherwise. */
  renamed?: { from: string; to: string };
}

/** The object parsed, rewritten into the tenant's names and written again; undefined when it is not the tenant's. */
export function rewrittenForTenant(bytes: Buffer, naming: ObjectNaming): RewrittenBytes | undefined {
  const stored = JSON.parse(bytes.toString('utf8')) as { metadata?: { name?: unknown } };
  const shown = objectToTenant(stored, naming) as { metadata?: { name?: unknown } } | undefined;
  if (shown === undefined) return undefined;
  const out = Buffer.from(JSON.stringify(shown));
  const metadata = objectMembers(out, 0)?.members.find((m) => m.key === 'metadata');
  const from = stored.metadata?.name;
  const to = shown.metadata?.name;
  return {
    bytes: out,
    metadataSpan: metadata ? [metadata.start, metadata.end - metadata.start] : undefined,
    ...(typeof from === 'string' && typeof to === 'string' && from !== to ? { renamed: { from, to } } : {}),
  };
}

/**
 * Table cells as the tenant reads them: the object's own name as the tenant names it (`renamed`:
 * a CRD's `widgets.acme.example.com` is `widgets.example.com`), other names in text (a binding's
 * `ClusterRole/acme-x`) without the prefix.
 */
export function tenantCells(cells: readonly unknown[], tenant: Tenant, renamed?: { from: string; to: string }): unknown[] {
  return cells.map((c) => (typeof c !== 'string' ? c : renamed && c === renamed.from ? renamed.to : tenant.tenantText(c)));
}
