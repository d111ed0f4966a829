import { unpack } from 'msgpackr';
import type { RelativeCell } from '../table/relative-cells.js';
import { KEY_SEP } from './keys.js';

/**
 * The store's meta record of an object, kept beside its bytes (msgpack): what lists, selectors,
 * Tables and the label index need without parsing the object. The ingest writes it; the store
 * owns its format.
 */
export interface MetaRecord {
  uid: string;
  /** The member's own resourceVersion of this object. */
  rv: string;
  labels?: Record<string, string>;
  created?: string;
  /** The member's Table cells for this object, when it was ingested in Table form. */
  cells?: unknown[];
  /**
   * Where the served object's `metadata` JSON lies in its stored bytes, as [byte offset, byte
   * length]: PartialObjectMetadata and Table rows slice it from there. The meta record used to
   * carry its own copy, about 700 of a bench pod's 1,300 meta bytes.
   */
  metadataSpan: [number, number];
  /** Values of the kind's selectable fields (field selectors), when it has any. */
  fields?: Record<string, string>;
  /** Cells printed relative to now (besides Age), reprinted when served. */
  relative?: RelativeCell[];
  /** The object's owners (its ownerReferences), each as ownerValue gives it: `<group>/<Kind>/<uid>`. */
  owners?: string[];
}

export function decodeMeta(bytes: Buffer | Uint8Array): MetaRecord {
  return unpack(bytes) as MetaRecord;
}

/**
 * Marks (value "true") an object whose owner references a tenant may read renamed: an owner of a
 * cluster-scoped kind a tenant owns (Namespace, ClusterRole, …) or of a CRD group (any group with a
 * dot: a tenant's are `<id>.<group>`). Not a selectable field: an index entry only, so a tenant's
 * list finds the few objects its in-place edit would leave wrong (src/tenancy/object-bytes.ts).
 */
export const RENAMED_OWNERS_FIELD = 'metadata.ownerReferences.renamed';

/**
 * Fields worth an index entry per object: values that pick out a few objects among many (the
 * pods of one node, the events of one object). Low-cardinality fields (status.phase, ...) would
 * cost an index write per object and still match most of them, so those are scanned.
 */
export const INDEXED_FIELDS: ReadonlySet<string> = new Set(['spec.nodeName', 'status.podIP', 'involvedObject.uid', 'involvedObject.name', RENAMED_OWNERS_FIELD]);

/**
 * The owner index lives in the label index too, as two entries of every object: one per owner
 * (OWNERS_FIELD, valued ownerValue: `<group>/<Kind>/<uid>`), so the objects one owner owns are
 * one range and whether a resource holds anything owned by a kind is one probe; and its own uid
 * (UID_FIELD), so an owner named by its uid is found, and a walk up from an object reaches its
 * owners' owners (src/view/owner-predicate.ts). Neither is a selectable field.
 */
export const OWNERS_FIELD = 'metadata.ownerReferences';
export const UID_FIELD = 'metadata.uid';

/**
 * The creation-time index lives in the label index too: one entry per object valued its
 * creationTimestamp as whole-second RFC 3339 text (createdValue), which sorts as time, so a
 * created-after/before range is one range of entries. Not a selectable field.
 */
export const CREATED_FIELD = 'metadata.creationTimestamp';

/**
 * A creationTimestamp as the creation-time index enters it: as the apiserver writes it
 * (`2026-11-28T10:00:00Z`), else parsed and written so, rounded up to the next whole second as
 * search bounds are (api/search-terms.ts timeBound); undefined when it is not a time.
 */
export function createdValue(created: string): string | undefined {
  if (created.length === 20 && created.charCodeAt(19) === 90 && created.charCodeAt(10) === 84) return created;
  const ms = Date.parse(created);
  if (Number.isNaN(ms)) return undefined;
  return `${new Date(Math.ceil(ms / 1000) * 1000).toISOString().slice(0, 19)}Z`;
}

/** An owner as the meta record and the owner index name it (group '' for the core group). */
export function ownerValue(group: string, kind: string, uid: string): string {
  return `${group}/${kind}/${uid}`;
}

/** The uid of an owner named by ownerValue (uids hold no '/'). */
export function ownerUid(value: string): string {
  return value.slice(value.lastIndexOf('/') + 1);
}

/** The `<group>/<Kind>` of an owner named by ownerValue. */
export function ownerKind(value: string): string {
  return value.slice(0, value.lastIndexOf('/'));
}

/**
 * How an indexed field's value is entered in the label index: after a mark no label key can
 * start with (label keys are letters, digits, '-', '_', '.', '/'), so the two never meet.
 */
export function fieldIndexEntry(field: string, value: string): string {
  return `:${field}=${value}`;
}

/** The label-index "key" under which an indexed field's values are entered. */
export function fieldIndexKey(field: string): string {
  return `:${field}`;
}

/**
 * The label index entries of one object, joined by KEY_SEP: its labels, its indexed fields that
 * have a value, its uid, its owners and its creation time. Computed from the meta record alone, so the store can tell
 * from a stored record which entries to remove.
 */
export function indexEntries(meta: MetaRecord): string {
  const out = meta.labels ? Object.entries(meta.labels).map(([k, v]) => `${k}=${v}`) : [];
  if (meta.fields) {
    for (const [field, value] of Object.entries(meta.fields)) if (value !== '' && INDEXED_FIELDS.has(field)) out.push(fieldIndexEntry(field, value));
  }
  if (meta.uid) out.push(fieldIndexEntry(UID_FIELD, meta.uid));
  if (meta.owners) for (const owner of meta.owners) out.push(fieldIndexEntry(OWNERS_FIELD, owner));
  const created = meta.created === undefined ? undefined : createdValue(meta.created);
  if (created !== undefined) out.push(fieldIndexEntry(CREATED_FIELD, created));
  return out.join(KEY_SEP);
}
