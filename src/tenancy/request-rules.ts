import { forbidden, methodNotAllowed, notFound, notServed } from '../api/status.js';
import { CRDS, resourceName, type ResourcePolicy, type Tenant } from './tenant.js';

/**
 * What a tenant may ask of the fleet: deny by default. A tenant's request is admitted only when a
 * row of TENANT_REQUESTS names its resource's policy, scope, subresource and verb; anything else is
 * refused before it is rewritten, let alone forwarded, and refused as if absent where the tenant
 * cannot see the thing (404) or may only read it (403). A row's rewrite is the policy's
 * (request-names.ts): namespaces and owned names prefixed, shared names as they are.
 */

/** A request's verb as a tenant's rules read it: reads are get, list and watch alike (the view decides what they show). */
export type TenantVerb = 'read' | 'create' | 'update' | 'delete' | 'deletecollection';

/** Where a request acts: in one namespace, across the tenant's namespaces, or on cluster-scoped objects. */
export type RequestScope = 'namespace' | 'all-namespaces' | 'cluster';

/** A policy of a resource, or one of the requests every tenant may make about itself. */
export type RulePolicy = ResourcePolicy | 'self-review';

interface Rule {
  policy: RulePolicy;
  scope: RequestScope;
  /** The resources (as kubectl names them) the row is limited to; every resource of the policy when absent. */
  resources?: readonly string[];
  /** The subresources the row admits: none (the object or collection itself), some, or any. */
  subresources: 'none' | 'any' | readonly string[];
  verbs: readonly TenantVerb[];
}

const EVERY_VERB: readonly TenantVerb[] = ['read', 'create', 'update', 'delete', 'deletecollection'];

export const TENANT_REQUESTS: readonly Rule[] = [
  // Its own namespaces are wholly the tenant's; the members' RBAC decides within them.
  { policy: 'namespaced', scope: 'namespace', subresources: 'any', verbs: EVERY_VERB },
  // Across namespaces only reads: the view shows the tenant's namespaces alone.
  { policy: 'namespaced', scope: 'all-namespaces', subresources: 'none', verbs: ['read'] },
  // Owned cluster-scoped objects one by one: a collection delete would reach every tenant's.
  { policy: 'owned', scope: 'cluster', subresources: 'none', verbs: ['read', 'create', 'update', 'delete'] },
  // Only the subresources those kinds have: another's would be a member's answer about a name.
  { policy: 'owned', scope: 'cluster', resources: ['namespaces', CRDS], subresources: ['status'], verbs: ['read', 'update'] },
  { policy: 'owned', scope: 'cluster', resources: ['namespaces'], subresources: ['finalize'], verbs: ['update'] },
  // The tenant's own CRD group's cluster-scoped objects are all its own.
  { policy: 'group', scope: 'cluster', subresources: 'any', verbs: EVERY_VERB },
  // Shared kinds are read, never written, and none of their subresources reaches past the object
  // (a node's `proxy` is its kubelet, which serves every tenant's pods).
  { policy: 'shared', scope: 'cluster', subresources: ['none', 'status'], verbs: ['read'] },
  { policy: 'self-review', scope: 'cluster', subresources: 'none', verbs: ['create'] },
];

export interface TenantRequest {
  group: string;
  resource: string;
  policy: RulePolicy;
  scope: RequestScope;
  subresource?: string;
  verb: TenantVerb;
  /** The object's name as the tenant wrote it, when the request names one. */
  name?: string;
}

/** The verb of a request to a resource path, by method and whether it names an object. */
export function tenantVerb(method: string, named: boolean): TenantVerb {
  switch (method) {
    case 'GET':
    case 'HEAD':
    case 'OPTIONS':
      return 'read';
    case 'POST':
      // To a collection, or to an object's subresource (eviction, binding, exec).
      return 'create';
    case 'PUT':
    case 'PATCH':
      return 'update';
    case 'DELETE':
      return named ? 'delete' : 'deletecollection';
    default:
      throw methodNotAllowed(`${method} is not allowed`);
  }
}

/** The rule admitting a request, or a refusal that tells the tenant nothing it cannot see. */
export function admitTenantRequest(tenant: Tenant, r: TenantRequest): void {
  if (TENANT_REQUESTS.some((rule) => admits(rule, r))) return;
  const qualified = r.group ? `${r.resource}.${tenant.tenantGroup(r.group) ?? r.group}` : r.resource;
  const what = `${qualified}${r.subresource ? `/${r.subresource}` : ''}`;
  const details = { ...(r.name !== undefined ? { name: r.name } : {}), kind: r.resource };
  switch (r.policy) {
    case 'hidden':
      throw r.name !== undefined ? notFound({ group: tenant.tenantGroup(r.group) ?? r.group, resource: r.resource }, r.name) : notServed();
    case 'shared':
      throw forbidden(`${what}${r.name !== undefined ? ` "${r.name}"` : ''} is forbidden: tenant ${tenant.id} may only read ${r.resource}`, details);
    default:
      break;
  }
  // A subresource no row admits for this kind is, for the tenant, not there.
  if (r.subresource !== undefined && !TENANT_REQUESTS.some((rule) => rule.policy === r.policy && rule.scope === r.scope && admitsResource(rule, r) && admitsSubresource(rule, r.subresource))) {
    throw r.name !== undefined ? notFound({ group: tenant.tenantGroup(r.group) ?? r.group, resource: r.resource }, r.name) : notServed();
  }
  const how = r.verb === 'deletecollection' && r.scope === 'cluster' ? `; tenant ${tenant.id} deletes its ${r.resource} by name` : '';
  throw forbidden(`${what}${r.name !== undefined ? ` "${r.name}"` : ''} is forbidden: tenant ${tenant.id} may not ${VERB_WORDS[r.verb]} ${r.scope === 'all-namespaces' ? 'across namespaces' : 'here'}${how}`, details);
}

const VERB_WORDS: Record<TenantVerb, string> = {
  read: 'read',
  create: 'create',
  update: 'change',
  delete: 'delete',
  deletecollection: 'delete a collection',
};

function admits(rule: Rule, r: TenantRequest): boolean {
  return rule.policy === r.policy && rule.scope === r.scope && admitsResource(rule, r) && admitsSubresource(rule, r.subresource) && rule.verbs.includes(r.verb);
}

function admitsResource(rule: Rule, r: TenantRequest): boolean {
  return rule.resources === undefined || rule.resources.includes(resourceName(r.group, r.resource));
}

function admitsSubresource(rule: Rule, subresource: string | undefined): boolean {
  if (rule.subresources === 'any') return true;
  if (rule.subresources === 'none') return subresource === undefined;
  return subresource === undefined ? rule.subresources.includes('none') : rule.subresources.includes(subresource);
}
