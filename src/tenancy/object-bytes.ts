import { QUOTE, memberValueAt, objectMembers } from '../util/json-members.js';
import type { CutBytes } from '../util/byte-edits.js';
import { storedObjectLead } from '../ingest/decode.js';
import type { Tenant } from './tenant.js';
import { objectToTenant } from './document-names.js';
import { namesOtherObjects } from './kind-references.js';
import type { ObjectNaming } from './naming-direction.js';

/**
 * A stored object's bytes as a tenant reads them. Most objects name the tenant's names in one
 * place only, `metadata.namespace`: those are edited in place (the prefix cut out of that one
 * string), which costs a scan of the metadata. Objects of kinds that reference other objects by
 * name (RBAC, events, endpoints, CRDs, namespaces themselves, custom resources of the tenant's
 * own groups) are parsed and rewritten whole (document-names.ts).
 */

/** Whether a kind's objects can take the in-place edit: namespaced, not referencing, not of a tenant's CRD group. */
export function editsInPlace(tenant: Tenant, info: { group: string; kind: string; namespaced: boolean }): boolean {
  return info.namespaced && !namesOtherObjects(info.group, info.kind) && tenant.tenantGroup(info.group) === info.group;
}


/**
 * The object with the tenant's prefix cut from `metadata.namespace`, or undefined when the bytes
 * do not read as expected (the caller then rewrites the parsed object). The walk stops at the
 * namespace: the apiserver writes it third in the metadata (name, generateName, namespace), so a
 * few keys are read. Whether the owner references need more is the caller's to know (the store
 * marks those objects at ingest: RENAMED_OWNERS_FIELD).
 */
export function namespaceCut(bytes: Buffer, tenant: Tenant, metadataAt = -1, name?: string): CutBytes | undefined {
  const prefix = tenant.prefixBytes;
  let at = metadataAt >= 0 ? typedNamespaceAt(bytes, metadataAt, name) : -1;
  if (at < 0) {
    const metadata = memberValueAt(bytes, 0, METADATA);
    at = metadata < 0 ? -1 : memberValueAt(bytes, metadata, NAMESPACE);
  }
  if (at < 0 || bytes[at] !== QUOTE) return undefined;
  for (let k = 0; k < prefix.length; k++) if (bytes[at + 1 + k] !== prefix[k]) return undefined;
  return { src: bytes, from: at + 1, to: at + 1 + prefix.length };
}

/**
 * A built-in kind's namespace, read the way the apiserver writes its metadata (Go's field order:
 * `{"name":…,"generateName":…,"namespace":…`) from the metadata's offset: the name is known (the
 * store key's), so it is stepped over, not read; -1 when the bytes are laid out otherwise (then
 * the members are walked).
 */
function typedNamespaceAt(bytes: Buffer, open: number, name: string | undefined): number {
  let i = keyAt(bytes, open, NAME_KEY);
  if (i < 0 || bytes[i] !== QUOTE) return -1;
  // A name is a DNS name: ASCII, no escapes.
  i = name !== undefined ? i + 1 + name.length : bytes.indexOf(QUOTE, i + 1);
  if (bytes[i] !== QUOTE || bytes[i + 1] !== COMMA) return -1;
  i += 2;
  const generated = keyAt(bytes, i, GENERATE_NAME_KEY);
  if (generated >= 0) {
    i = bytes.indexOf(QUOTE, generated + 1);
    if (i < 0 || bytes[i + 1] !== COMMA) return -1;
    i += 2;
  }
  return keyAt(bytes, i, NAMESPACE_KEY);
}

/** Past `"<key>":` at `i` (the value's first byte), or -1 when another key is there. */
function keyAt(bytes: Buffer, i: number, key: Buffer): number {
  for (let k = 0; k < key.length; k++) if (bytes[i + k] !== key[k]) return -1;
  return i + key.length;
}

const COMMA = 0x2c;
const NAME_KEY = Buffer.from('{"name":');
const GENERATE_NAME_KEY = Buffer.from('"generateName":');
const NAMESPACE_KEY = Buffer.from('"namespace":');

const METADATA = Buffer.from('metadata');
const NAMESPACE = Buffer.from('namespace');

/** Where a stored object's metadata starts: after `{"kind":…,"apiVersion":…,"metadata":` (storedObjectLead). */
export function storedMetadataAt(kind: string, apiVersion: string): number {
  return Buffer.byteLength(storedObjectLead(kind, apiVersion));
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
