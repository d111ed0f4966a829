import { forbidden } from '../api/status.js';
import { isJsonObject } from '../util/json-object.js';
import type { Tenant } from './tenant.js';

/**
 * What a tenant's RBAC write may say, where renaming alone cannot keep it inside the tenant
 * (request-rules.ts admits the request; document-names.ts renames the body; this reads the result,
 * in the member's names):
 * - a subject is the tenant's own (`Tenant.ownsSubject`): binding the fleet's users or groups, or
 *   another tenant's, would hand them the tenant's roles or the tenant theirs;
 * - no aggregation: an `aggregationRule`, or a label `rbac.authorization.k8s.io/aggregate-to-…`,
 *   would fold the tenant's rules into a shared role (`view`) or a shared role's into the tenant's.
 * A JSON patch is held to the same: an op that sets subjects gives whole subjects, and one that
 * writes a single field of a subject (whose kind it does not carry) is refused.
 */
const RBAC_GROUP = 'rbac.authorization.k8s.io';
const AGGREGATION_LABEL = 'rbac.authorization.k8s.io/aggregate-to-';
const SETTING_OPS = new Set(['add', 'replace', 'copy', 'move']);

/** Throws 403 when an RBAC write body (object, partial object, or JSON patch ops) reaches outside the tenant. */
export function checkTenantRbacWrite(group: string, resource: string, body: unknown, jsonPatch: boolean, tenant: Tenant): void {
  if (group !== RBAC_GROUP) return;
  const clusterWide = resource === 'clusterrolebindings';
  if (jsonPatch && Array.isArray(body)) {
    for (const op of body) checkPatchOp(op, clusterWide, tenant);
    return;
  }
  checkObject(body, clusterWide, tenant);
}

function checkObject(doc: unknown, clusterWide: boolean, tenant: Tenant): void {
  if (!isJsonObject(doc)) return;
  if (clusterWide && doc['roleRef'] !== undefined && doc['roleRef'] !== null) refuseClusterWideRole(doc['roleRef'], tenant);
  // `null` in a merge patch removes: always allowed.
  if (doc['aggregationRule'] !== undefined && doc['aggregationRule'] !== null) throw refused(tenant, 'may not aggregate roles (aggregationRule)');
  const metadata = doc['metadata'];
  if (isJsonObject(metadata)) checkLabels(metadata['labels'], tenant);
  if (doc['subjects'] !== undefined && doc['subjects'] !== null) checkSubjects(doc['subjects'], tenant);
}

/**
 * A ClusterRoleBinding grants its role in every namespace of the member, so no role is the
 * tenant's to grant so: a shared one (`view`) would let the tenant's subjects (its pods' service
 * accounts, talking to the member itself) read every tenant's objects, and one of its own can be
 * widened after it is bound. Roles are the tenant's to bind in its namespaces (RoleBinding).
 */
function refuseClusterWideRole(roleRef: unknown, tenant: Tenant): never {
  const name = isJsonObject(roleRef) ? roleRef['name'] : undefined;
  throw refused(tenant, `may not bind a role in every namespace${typeof name === 'string' ? ` (${JSON.stringify(tenant.tenantText(name))})` : ''}: bind it in its own namespaces with a RoleBinding`);
}

function checkLabels(labels: unknown, tenant: Tenant): void {
  if (!isJsonObject(labels)) return;
  for (const [key, value] of Object.entries(labels)) if (key.startsWith(AGGREGATION_LABEL) && value !== null) throw refused(tenant, `may not label a role ${key}`);
}

function checkSubjects(subjects: unknown, tenant: Tenant): void {
  for (const subject of Array.isArray(subjects) ? subjects : [subjects]) checkSubject(subject, tenant);
}

function checkSubject(subject: unknown, tenant: Tenant): void {
  if (!isJsonObject(subject)) throw refused(tenant, 'may bind only whole subjects');
  const { kind, name, namespace } = subject;
  const owned = typeof kind === 'string' && typeof name === 'string' && (namespace === undefined || typeof namespace === 'string') && tenant.ownsSubject(kind, name, namespace);
  if (!owned) throw refused(tenant, `may bind only its own users, groups and service accounts, not ${typeof kind === 'string' ? kind : 'subject'} ${JSON.stringify(tenant.tenantText(String(name)))}`);
}

/** One JSON patch op, by the path it writes. */
function checkPatchOp(op: unknown, clusterWide: boolean, tenant: Tenant): void {
  if (!isJsonObject(op) || typeof op['op'] !== 'string' || !SETTING_OPS.has(op['op'])) return;
  const path = typeof op['path'] === 'string' ? op['path'] : '';
  const tokens = path.split('/').slice(1).map((t) => t.replace(/~1/g, '/').replace(/~0/g, '~'));
  // A copy or move brings a value from elsewhere in the object, unseen here: into what this guards, refused.
  const guarded = () => {
    if (op['op'] === 'copy' || op['op'] === 'move') throw refused(tenant, `may not copy or move into ${path}`);
  };
  const value = op['value'];
  // The pointer '' is the whole document.
  if (path === '') {
    guarded();
    return checkObject(value, clusterWide, tenant);
  }
  switch (tokens[0]) {
    case 'roleRef':
      guarded();
      if (!clusterWide) return;
      if (tokens.length === 1) return refuseClusterWideRole(value, tenant);
      throw refused(tenant, 'may set only a whole roleRef');
    case 'aggregationRule':
      throw refused(tenant, 'may not aggregate roles (aggregationRule)');
    case 'subjects':
      guarded();
      if (tokens.length === 1) return checkSubjects(value, tenant);
      if (tokens.length === 2) return checkSubject(value, tenant);
      throw refused(tenant, 'may bind only whole subjects');
    case 'metadata':
      if (tokens.length === 1) {
        guarded();
        return isJsonObject(value) ? checkLabels(value['labels'], tenant) : undefined;
      }
      if (tokens[1] !== 'labels') return;
      guarded();
      if (tokens.length === 2) return checkLabels(value, tenant);
      if (tokens[2]!.startsWith(AGGREGATION_LABEL)) throw refused(tenant, `may not label a role ${tokens[2]}`);
      return;
    default:
      return;
  }
}

function refused(tenant: Tenant, what: string): Error {
  return forbidden(`forbidden: tenant ${tenant.id} ${what}`);
}

