/**
 * Kubernetes RBAC, evaluated the way the apiserver's RBAC authorizer does, on a member's Roles,
 * ClusterRoles, RoleBindings and ClusterRoleBindings: so that flotilla can decide a cached read
 * exactly as the member that holds the object would, without asking it each time.
 *
 * Aggregated ClusterRoles need nothing here: the member's controller writes the aggregated rules
 * into the ClusterRole itself, and that is what is cached.
 */
export const RBAC_GROUP = 'rbac.authorization.k8s.io';
/** What a member's policy is made of (cached from every member flotilla authorizes by RBAC). */
export const RBAC_RESOURCES = ['roles', 'clusterroles', 'rolebindings', 'clusterrolebindings'] as const;
export type RbacResource = (typeof RBAC_RESOURCES)[number];

export interface PolicyRule {
  verbs: string[];
  apiGroups?: string[];
  resources?: string[];
  resourceNames?: string[];
  nonResourceURLs?: string[];
}

export interface Subject {
  kind: string;
  name: string;
  namespace?: string;
}

export interface RoleRef {
  kind: string;
  name: string;
}

/** A RoleBinding (with its namespace) or a ClusterRoleBinding (without). */
export interface Binding {
  namespace?: string;
  subjects?: Subject[];
  roleRef: RoleRef;
}

/** One member's RBAC objects, as cached. */
export interface RbacPolicy {
  /** Roles by `namespace/name`. */
  roles: ReadonlyMap<string, readonly PolicyRule[]>;
  clusterRoles: ReadonlyMap<string, readonly PolicyRule[]>;
  roleBindings: readonly Binding[];
  clusterRoleBindings: readonly Binding[];
}

export interface Caller {
  user: string;
  groups: readonly string[];
}

/** What is asked: a verb on a resource (and subresource), in a namespace or cluster-wide, maybe by name. */
export interface ResourceAttributes {
  verb: string;
  group: string;
  resource: string;
  subresource?: string;
  namespace?: string;
  name?: string;
}

/** The group whose members the apiserver allows everything before any authorizer is asked. */
export const SUPERUSER_GROUP = 'system:masters';

const SA_PREFIX = 'system:serviceaccount:';

/**
 * The groups the apiserver gives a caller besides those it was authenticated with:
 * `system:authenticated` for everyone but `system:anonymous`, and for a service account named
 * with no groups (impersonated) `system:serviceaccounts` and `system:serviceaccounts:<namespace>`.
 * A service account impersonated with groups has those only, as the apiserver's impersonation
 * decides; one authenticated by its token has them already (the token review gives them).
 */
export function effectiveGroups(caller: Caller): Set<string> {
  const groups = new Set(caller.groups);
  if (caller.user !== 'system:anonymous' && !groups.has('system:unauthenticated')) groups.add('system:authenticated');
  if (caller.user.startsWith(SA_PREFIX) && caller.groups.length === 0) {
    const [namespace] = caller.user.slice(SA_PREFIX.length).split(':');
    groups.add('system:serviceaccounts');
    if (namespace) groups.add(`system:serviceaccounts:${namespace}`);
  }
  return groups;
}

function has(list: readonly string[] | undefined, value: string): boolean {
  return list !== undefined && (list.includes('*') || list.includes(value));
}

/** As rbac's ResourceMatches: `*`, `resource` or `resource/subresource` exactly, or `*\/subresource`. */
function resourceMatches(rule: PolicyRule, resource: string, subresource: string | undefined): boolean {
  const combined = subresource ? `${resource}/${subresource}` : resource;
  for (const r of rule.resources ?? []) {
    if (r === '*' || r === combined) return true;
    if (subresource && r === `*/${subresource}`) return true;
  }
  return false;
}

/** Whether a rule grants the attributes (a rule with resourceNames grants only requests naming one). */
export function ruleAllows(rule: PolicyRule, a: ResourceAttributes): boolean {
  if (!has(rule.verbs, a.verb) || !has(rule.apiGroups, a.group) || !resourceMatches(rule, a.resource, a.subresource)) return false;
  if (!rule.resourceNames || rule.resourceNames.length === 0) return true;
  return a.name !== undefined && rule.resourceNames.includes(a.name);
}

/** The rules a binding grants, or none when its role does not exist (yet). */
function rulesOf(policy: RbacPolicy, b: Binding): readonly PolicyRule[] {
  if (b.roleRef.kind === 'ClusterRole') return policy.clusterRoles.get(b.roleRef.name) ?? [];
  if (b.roleRef.kind === 'Role' && b.namespace !== undefined) return policy.roles.get(`${b.namespace}/${b.roleRef.name}`) ?? [];
  return [];
}

/** Rules and where they apply: cluster-wide (a ClusterRoleBinding) or in one namespace (a RoleBinding). */
export interface Grant {
  namespace?: string;
  rules: readonly PolicyRule[];
}

/**
 * A policy with its bindings' grants filed under the subjects they name: a caller's grants are
 * then a few map lookups (its user name, each of its groups), not a pass over every binding.
 */
export interface IndexedPolicy {
  byUser: ReadonlyMap<string, readonly Grant[]>;
  byGroup: ReadonlyMap<string, readonly Grant[]>;
}

export function indexPolicy(policy: RbacPolicy): IndexedPolicy {
  const byUser = new Map<string, Grant[]>();
  const byGroup = new Map<string, Grant[]>();
  const file = (map: Map<string, Grant[]>, key: string, grant: Grant) => {
    const list = map.get(key);
    if (!list) map.set(key, [grant]);
    else if (!list.includes(grant)) list.push(grant);
  };
  const add = (b: Binding, grant: Grant) => {
    for (const s of b.subjects ?? []) {
      if (s.kind === 'User') file(byUser, s.name, grant);
      else if (s.kind === 'Group') file(byGroup, s.name, grant);
      else if (s.kind === 'ServiceAccount') {
        // A RoleBinding's ServiceAccount subject without a namespace means the binding's own.
        const namespace = s.namespace || b.namespace;
        if (namespace !== undefined) file(byUser, `${SA_PREFIX}${namespace}:${s.name}`, grant);
      }
    }
  };
  for (const b of policy.clusterRoleBindings) add(b, { rules: rulesOf(policy, { roleRef: b.roleRef }) });
  for (const b of policy.roleBindings) add(b, { namespace: b.namespace, rules: rulesOf(policy, b) });
  return { byUser, byGroup };
}

/** The grants that apply to a caller. */
export function callerRules(policy: IndexedPolicy, caller: Caller): Grant[] {
  const out: Grant[] = [...(policy.byUser.get(caller.user) ?? [])];
  for (const g of effectiveGroups(caller)) {
    for (const grant of policy.byGroup.get(g) ?? []) if (!out.includes(grant)) out.push(grant);
  }
  return out;
}

/** The member's verdict on a resource request, as its RBAC authorizer (with the superuser group) decides. */
export function authorize(policy: IndexedPolicy, caller: Caller, a: ResourceAttributes): boolean {
  if (effectiveGroups(caller).has(SUPERUSER_GROUP)) return true;
  for (const grant of callerRules(policy, caller)) {
    // A RoleBinding grants in its namespace only: never cluster-wide, never a cluster-scoped object.
    if (grant.namespace !== undefined && grant.namespace !== a.namespace) continue;
    if (grant.rules.some((r) => ruleAllows(r, a))) return true;
  }
  return false;
}

/**
 * The verdict on a non-resource URL (`/metrics`): cluster-wide grants only, a rule's URL matching
 * exactly, or by prefix when it ends in `*`, as the apiserver's RBAC decides.
 */
export function authorizeNonResource(policy: IndexedPolicy, caller: Caller, verb: string, path: string): boolean {
  if (effectiveGroups(caller).has(SUPERUSER_GROUP)) return true;
  for (const grant of callerRules(policy, caller)) {
    if (grant.namespace !== undefined) continue;
    for (const r of grant.rules) {
      if (!has(r.verbs, verb)) continue;
      if (r.nonResourceURLs?.some((u) => u === '*' || u === path || (u.endsWith('*') && path.startsWith(u.slice(0, -1))))) return true;
    }
  }
  return false;
}

/**
 * Where a caller may do a verb on a resource across namespaces (list, watch): everywhere, or in
 * these namespaces. Rules with resourceNames count only for a request naming one of them.
 */
export interface AccessSet {
  everywhere: boolean;
  namespaces: ReadonlySet<string>;
}

export const NO_ACCESS: AccessSet = Object.freeze({ everywhere: false, namespaces: new Set<string>() });
export const FULL_ACCESS: AccessSet = Object.freeze({ everywhere: true, namespaces: new Set<string>() });

export function accessSet(policy: IndexedPolicy, caller: Caller, a: Omit<ResourceAttributes, 'namespace'>): AccessSet {
  if (effectiveGroups(caller).has(SUPERUSER_GROUP)) return FULL_ACCESS;
  let namespaces: Set<string> | undefined;
  for (const grant of callerRules(policy, caller)) {
    if (!grant.rules.some((r) => ruleAllows(r, a))) continue;
    if (grant.namespace === undefined) return FULL_ACCESS;
    (namespaces ??= new Set()).add(grant.namespace);
  }
  return namespaces ? { everywhere: false, namespaces } : NO_ACCESS;
}

/** A member's RBAC objects, as the API serves them. */
export interface PolicyObjects {
  roles: readonly { metadata: { namespace?: string; name: string }; rules?: PolicyRule[] | null }[];
  clusterRoles: readonly { metadata: { name: string }; rules?: PolicyRule[] | null }[];
  roleBindings: readonly { metadata: { namespace?: string }; subjects?: Subject[] | null; roleRef: RoleRef }[];
  clusterRoleBindings: readonly { subjects?: Subject[] | null; roleRef: RoleRef }[];
}

/** A member's RBAC objects (as listed) into a policy. */
export function policyOf(objects: PolicyObjects): RbacPolicy {
  return {
    roles: new Map(objects.roles.map((r) => [`${r.metadata.namespace ?? ''}/${r.metadata.name}`, r.rules ?? []])),
    clusterRoles: new Map(objects.clusterRoles.map((r) => [r.metadata.name, r.rules ?? []])),
    roleBindings: objects.roleBindings.map((b) => ({ namespace: b.metadata.namespace, subjects: b.subjects ?? [], roleRef: b.roleRef })),
    clusterRoleBindings: objects.clusterRoleBindings.map((b) => ({ subjects: b.subjects ?? [], roleRef: b.roleRef })),
  };
}
