import { formatFieldSelector, parseFieldSelector } from '../api/field-selector.js';
import { formatLabelSelector, parseLabelSelector } from '../api/label-selector.js';
import { decodeContinue, encodeContinue, type ContinueToken } from '../api/continue-token.js';
import { StatusError, forbidden, methodNotAllowed, notFound, notServed } from '../api/status.js';
import { pathSegments, segmentsPath } from '../api/request-info.js';
import { admitTenantRequest, tenantVerb } from './request-rules.js';
import { TREE_LABEL_SUFFIX } from '../hierarchy/namespace-tree.js';
import { KEY_SEP } from '../store/keys.js';
import { sharedName, type ResourcePolicy, type Tenant } from './tenant.js';

/**
 * A tenant's request in the member's names: its path (API group, namespace, the name of an owned
 * cluster-scoped object) and the query parts that name things (field and label selectors, the
 * continue token). Everything after this reads member names, so no later part can forget to
 * rewrite; the answers are rewritten back by the read view's presentation and the forwarders.
 *
 * What the tenant may not name is 404, worded as if it did not exist: a hidden resource, another
 * tenant's CRD group. A write to a shared resource is 403 (the tenant reads those objects).
 */
export interface FleetNames {
  /** Whether a member serves this API group (a tenant's `example.com` is `acme.example.com` when that exists). */
  hasGroup(group: string): boolean;
  /** Whether a resource is namespaced; undefined when no member serves it. */
  namespaced(group: string, resource: string): boolean | undefined;
}

/** Reviews about the caller itself: cluster-scoped, create-only, and every tenant's to ask. */
export const SELF_REVIEWS: ReadonlySet<string> = new Set(['selfsubjectaccessreviews', 'selfsubjectrulesreviews', 'selfsubjectreviews']);
const NAMESPACE_OWN_SUBRESOURCES = new Set(['status', 'finalize']);
const READ_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** The member's request URL (path and query) for a tenant's request URL. */
export function requestToMember(url: string, method: string, tenant: Tenant, fleet: FleetNames): string {
  const q = url.indexOf('?');
  const path = q >= 0 ? url.slice(0, q) : url;
  const query = q >= 0 ? url.slice(q + 1) : '';
  const rewritten = pathToMember(path, method, tenant, fleet);
  return query ? `${rewritten.path}?${queryToMember(query, tenant, rewritten)}` : rewritten.path;
}

interface RewrittenPath {
  path: string;
  /** The resource the path names, in the member's names, when it names one. */
  resource?: { group: string; resource: string; policy: ResourcePolicy };
}

/**
 * Every decision reads the path's decoded segments (`pathSegments`), never the raw ones: `%61pi`
 * is `api` here as it is to the router and the members. The tenant's request is admitted by its
 * table (request-rules.ts) before any name in it is rewritten.
 */
function pathToMember(path: string, method: string, tenant: Tenant, fleet: FleetNames): RewrittenPath {
  const trailing = path.length > 1 && path.endsWith('/');
  const parts = pathSegments(path);
  const rebuilt = () => segmentsPath(parts, trailing);
  let at = 0;
  if (parts[0] === 'clusters' && parts.length >= 2) at = 2;
  const root = parts[at];
  if (root === 'openapi') {
    schemaPathToMember(parts, at, tenant, fleet);
    return { path: rebuilt() };
  }
  // Discovery and flotilla's own paths (health, version, status) are read, never written.
  if (root !== 'api' && root !== 'apis') return { path: nonResourcePath(rebuilt(), method) };
  let group = '';
  let rest = at + 2; // after `api/<version>`
  if (root === 'apis') {
    if (parts.length <= at + 1) return { path: nonResourcePath(rebuilt(), method) };
    group = memberGroupOf(parts[at + 1]!, tenant, fleet);
    parts[at + 1] = group;
    rest = at + 3;
  }
  if (parts.length <= rest) return { path: nonResourcePath(rebuilt(), method) };
  let resourceAt = rest;
  let namespace: string | undefined;
  if (parts[rest] === 'namespaces' && parts.length > rest + 1) {
    namespace = parts[rest + 1]!;
    parts[rest + 1] = tenant.memberNamespace(namespace);
    // `/namespaces/<ns>` and its own subresources are the Namespace object; deeper is in it.
    if (parts.length === rest + 2 || (parts.length === rest + 3 && NAMESPACE_OWN_SUBRESOURCES.has(parts[rest + 2]!))) {
      const subresource = parts[rest + 2];
      admitTenantRequest(tenant, { group, resource: 'namespaces', policy: 'owned', scope: 'cluster', verb: tenantVerb(method, true), name: namespace, ...(subresource !== undefined ? { subresource } : {}) });
      return { path: rebuilt(), resource: { group, resource: 'namespaces', policy: 'owned' } };
    }
    resourceAt = rest + 2;
  }
  const resource = parts[resourceAt]!;
  const served = fleet.namespaced(group, resource);
  // In a namespace, only a namespaced resource is there (`namespaces/x/proxy` names nothing).
  const namespaced = resourceAt > rest ? (served === true ? true : undefined) : served;
  const name = parts[resourceAt + 1];
  const subresource = parts.length > resourceAt + 2 ? parts.slice(resourceAt + 2).join('/') : undefined;
  const verb = tenantVerb(method, name !== undefined);
  // Served by no member: not there for the tenant either, whatever a member would make of the path
  // (`/api/v1/watch/…`, a resource discovery has not shown yet).
  if (namespaced === undefined) throw name !== undefined ? notFound({ group: tenantGroupOf(group, tenant), resource }, name) : notServed();
  const base = { group, resource, ...(name !== undefined ? { name } : {}), ...(subresource !== undefined ? { subresource } : {}), verb };
  if (SELF_REVIEWS.has(resource)) {
    admitTenantRequest(tenant, { ...base, policy: 'self-review', scope: 'cluster' });
    return { path: rebuilt(), resource: { group, resource, policy: 'shared' } };
  }
  const policy = tenant.policy(group, resource, namespaced);
  const scope = namespace !== undefined ? 'namespace' : namespaced ? 'all-namespaces' : 'cluster';
  admitTenantRequest(tenant, { ...base, policy, scope });
  if (name !== undefined && scope === 'cluster' && sharedName(group, resource, name) && !READ_METHODS.has(method)) throw sharedNameRefused(tenant, resource, name);
  if (name !== undefined && scope === 'cluster') {
    const member = tenant.memberName(group, resource, name, policy);
    if (member === undefined) throw notFound({ group: tenantGroupOf(group, tenant), resource }, name);
    parts[resourceAt + 1] = member;
  }
  return { path: rebuilt(), resource: { group, resource, policy } };
}

/** A path that names no resource (discovery, health, version, flotilla's status): read-only for a tenant. */
function nonResourcePath(path: string, method: string): string {
  if (!READ_METHODS.has(method)) throw methodNotAllowed(`${method} is not allowed on ${path}`);
  return path;
}

/**
 * A schema path names a group (`/openapi/v3/apis/example.com/v1`): the tenant's own. The whole
 * v2 document names every tenant's groups at once: a tenant reads v3 only (kubectl does).
 */
function schemaPathToMember(parts: string[], at: number, tenant: Tenant, fleet: FleetNames): void {
  if (parts[at + 1] === 'v2') throw notServed();
  if (parts[at + 1] === 'v3' && parts[at + 2] === 'apis' && parts[at + 3] !== undefined) parts[at + 3] = memberGroupOf(parts[at + 3]!, tenant, fleet);
}

/** A ClusterRole every tenant refers to (`edit`, `system:…`) is the fleet's: no tenant writes it. */
export function sharedNameRefused(tenant: Tenant, resource: string, name: string): Error {
  return forbidden(`${resource}.rbac.authorization.k8s.io "${name}" is forbidden: it is shared by every tenant; tenant ${tenant.id} may only refer to it`, { name, group: 'rbac.authorization.k8s.io', kind: resource });
}

/**
 * A group the tenant names, in the member's names: its own CRD group where one exists. Naming a
 * group that is the tenant's or another's in member form (`acme.example.com`) is naming nothing.
 */
function memberGroupOf(group: string, tenant: Tenant, fleet: FleetNames): string {
  const member = tenant.memberGroup(group, (g) => fleet.hasGroup(g));
  if (member === group && tenant.tenantGroup(group) !== group) throw notServed();
  return member;
}

function tenantGroupOf(group: string, tenant: Tenant): string {
  return tenant.tenantGroup(group) ?? group;
}

/** Field and label selectors and the continue token, in the member's names; other parameters as they came. */
function queryToMember(query: string, tenant: Tenant, path: RewrittenPath): string {
  const params = new URLSearchParams(query);
  const out = new URLSearchParams();
  for (const [key, value] of params) {
    if (key === 'fieldSelector') out.append(key, fieldSelectorToMember(value, tenant, path));
    else if (key === 'labelSelector') out.append(key, labelSelectorToMember(value, tenant));
    else if (key === 'continue') out.append(key, continueToMember(value, tenant, path));
    else out.append(key, value);
  }
  return out.toString();
}

// Fields that hold a namespace, whatever the resource; `metadata.name` holds one of Namespaces.
const NAMESPACE_FIELDS = new Set(['metadata.namespace', 'involvedObject.namespace', 'regarding.namespace']);

function fieldSelectorToMember(text: string, tenant: Tenant, path: RewrittenPath): string {
  const sel = parseFieldSelector(text);
  const r = path.resource;
  for (const req of sel) {
    if (NAMESPACE_FIELDS.has(req.field)) req.value = req.value === '' ? '' : tenant.memberNamespace(req.value);
    else if (req.field === 'metadata.name' && r && r.policy !== 'namespaced' && req.value !== '') {
      req.value = tenant.memberName(r.group, r.resource, req.value, r.policy) ?? req.value;
    }
  }
  return formatFieldSelector(sel);
}

const NAME_LABEL = 'kubernetes.io/metadata.name';

/** The namespace-tree labels (`web.tree.hnc.x-k8s.io/depth`) and a namespace's name label name tenant namespaces. */
function labelSelectorToMember(text: string, tenant: Tenant): string {
  const sel = parseLabelSelector(text);
  for (const req of sel) {
    if (req.key.endsWith(TREE_LABEL_SUFFIX)) req.key = tenant.memberNamespace(req.key.slice(0, -TREE_LABEL_SUFFIX.length)) + TREE_LABEL_SUFFIX;
    else if (req.key === NAME_LABEL) req.values = req.values.map((v) => (v === '' ? v : tenant.memberNamespace(v)));
  }
  return formatLabelSelector(sel);
}

/** A continue token names where the next page starts, a store key: its namespace (and owned name) are the tenant's. */
function continueToMember(text: string, tenant: Tenant, path: RewrittenPath): string {
  let token: ContinueToken;
  try {
    token = decodeContinue(text);
  } catch (e) {
    // Not a cached list's token: a live list's, sealed (forward/live/list-paging.ts), which names nothing to
    // rewrite; whichever path serves the list reads it, or answers it 400.
    if (e instanceof StatusError) return text;
    throw e;
  }
  return encodeContinue({ ...token, start: storeKeyNames(token.start, path.resource?.policy, (ns) => tenant.memberNamespace(ns), (n) => (path.resource ? tenant.memberName(path.resource.group, path.resource.resource, n, path.resource.policy) ?? n : n)) });
}

/** A store key (resource · namespace · name · cluster) shown to a tenant: its names in the tenant's form. */
export function storeKeyToTenant(key: string, tenant: Tenant, resource: { group: string; resource: string; policy: ResourcePolicy }): string {
  return storeKeyNames(key, resource.policy, (ns) => tenant.tenantNamespace(ns) ?? ns, (n) => tenant.tenantName(resource.group, resource.resource, n, resource.policy) ?? n);
}

function storeKeyNames(key: string, policy: ResourcePolicy | undefined, namespace: (ns: string) => string, name: (n: string) => string): string {
  const parts = key.split(KEY_SEP);
  if (parts.length !== 4) return key;
  if (parts[1] !== '') parts[1] = namespace(parts[1]!);
  else if (policy === 'owned' && parts[2] !== '') parts[2] = name(parts[2]!);
  return parts.join(KEY_SEP);
}
