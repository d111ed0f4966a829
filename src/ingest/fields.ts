import type { JsonView } from '../util/json-view.js';
import { ownerValue } from '../store/meta-record.js';

/**
 * The field selectors each built-in kind supports beyond metadata.name and metadata.namespace,
 * and how to read their values from an object, as the apiserver formats them (booleans as
 * "true"/"false", absent strings as ""). Extracted once at ingest into the meta record.
 */
type Getter = (o: JsonView) => string;

function path(...keys: string[]): Getter {
  return (o) => {
    const v = o(...keys);
    if (v === undefined || v === null) return keys[keys.length - 1] === 'hostNetwork' || keys[keys.length - 1] === 'unschedulable' ? 'false' : '';
    return String(v);
  };
}

const BY_KIND: Record<string, Record<string, Getter>> = {
  '/Pod': {
    'spec.nodeName': path('spec', 'nodeName'),
    'spec.restartPolicy': path('spec', 'restartPolicy'),
    'spec.schedulerName': path('spec', 'schedulerName'),
    'spec.serviceAccountName': path('spec', 'serviceAccountName'),
    'spec.hostNetwork': path('spec', 'hostNetwork'),
    'status.phase': path('status', 'phase'),
    'status.podIP': path('status', 'podIP'),
    'status.nominatedNodeName': path('status', 'nominatedNodeName'),
  },
  '/Event': {
    'involvedObject.kind': path('involvedObject', 'kind'),
    'involvedObject.namespace': path('involvedObject', 'namespace'),
    'involvedObject.name': path('involvedObject', 'name'),
    'involvedObject.uid': path('involvedObject', 'uid'),
    'involvedObject.apiVersion': path('involvedObject', 'apiVersion'),
    'involvedObject.resourceVersion': path('involvedObject', 'resourceVersion'),
    'involvedObject.fieldPath': path('involvedObject', 'fieldPath'),
    reason: path('reason'),
    reportingComponent: path('reportingComponent'),
    source: path('source', 'component'),
    type: path('type'),
  },
  '/Secret': { type: path('type') },
  '/Node': { 'spec.unschedulable': path('spec', 'unschedulable') },
  '/Namespace': { 'status.phase': path('status', 'phase') },
  '/ReplicationController': { 'status.replicas': path('status', 'replicas') },
  'apps/ReplicaSet': { 'status.replicas': path('status', 'replicas') },
  'batch/Job': { 'status.successful': path('status', 'succeeded') },
  'certificates.k8s.io/CertificateSigningRequest': { 'spec.signerName': path('spec', 'signerName') },
};

function kindKey(group: string, kind: string): string {
  return `${group}/${kind}`;
}

/** The kind's own selectable fields (empty for kinds with none). */
export function selectableFieldNames(group: string, kind: string): string[] {
  return Object.keys(BY_KIND[kindKey(group, kind)] ?? {});
}

/**
 * A custom resource's field as the apiserver gives it to field selectors: a string as it is, an
 * integer or boolean written out, "" when absent (a CRD may point only at those types).
 */
function crdFieldValue(obj: JsonView, field: string): string {
  const v = obj(...field.split('.'));
  return typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean' ? String(v) : '';
}

/**
 * An object's selectable field values: its built-in kind's, or (`declared`) those its member's
 * CustomResourceDefinition declares; undefined when it has none.
 */
export function selectableFieldValues(group: string, kind: string, obj: JsonView, declared: readonly string[] = []): Record<string, string> | undefined {
  const getters = BY_KIND[kindKey(group, kind)];
  if (!getters && declared.length === 0) return undefined;
  const out: Record<string, string> = {};
  for (const [field, get] of Object.entries(getters ?? {})) out[field] = get(obj);
  for (const field of declared) out[field] = crdFieldValue(obj, field);
  return out;
}

// Cluster-scoped kinds a tenant may own, by group and kind: their names are renamed for it.
const RENAMED_OWNER_KINDS = new Set(['/Namespace', '/PersistentVolume', 'rbac.authorization.k8s.io/ClusterRole', 'rbac.authorization.k8s.io/ClusterRoleBinding', 'apiextensions.k8s.io/CustomResourceDefinition']);

/** What ingest keeps of an object's owner references. */
export interface OwnerFacts {
  /** Each owner as ownerValue names it (`<group>/<Kind>/<uid>`), once each; undefined: no owner. */
  owners: string[] | undefined;
  /** Whether an owner is something a tenant reads renamed (meta-record.ts, RENAMED_OWNERS_FIELD). */
  renamedForTenants: boolean;
}

/** Reads an object's ownerReferences once, for the owner index and the tenants' renaming mark. */
export function ownerFacts(obj: JsonView): OwnerFacts {
  const refs = obj('metadata', 'ownerReferences');
  if (!Array.isArray(refs) || refs.length === 0) return { owners: undefined, renamedForTenants: false };
  const owners: string[] = [];
  let renamedForTenants = false;
  for (const ref of refs as unknown[]) {
    const { apiVersion, kind, uid } = (ref ?? {}) as { apiVersion?: unknown; kind?: unknown; uid?: unknown };
    const group = typeof apiVersion === 'string' && apiVersion.includes('/') ? apiVersion.slice(0, apiVersion.indexOf('/')) : '';
    if (group.includes('.') || RENAMED_OWNER_KINDS.has(`${group}/${String(kind)}`)) renamedForTenants = true;
    // A reference without a uid or kind names nothing the index could find (the apiserver requires both).
    if (typeof uid !== 'string' || uid === '' || typeof kind !== 'string' || kind === '') continue;
    const owner = ownerValue(group, kind, uid);
    if (!owners.includes(owner)) owners.push(owner);
  }
  return { owners: owners.length > 0 ? owners : undefined, renamedForTenants };
}
