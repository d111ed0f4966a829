/**
 * Kubernetes RBAC, evaluated the way the apiserver's RBAC authorizer does, on a member's Roles,
 * ClusterRoles, RoleBindings and ClusterRoleBindings: so that flotilla can decide a cached read
 * exactly as the member that holds the object would, without asking it each time.
 *
 * Aggregated ClusterRoles need nothing here: the member's controller writes the aggregated rules
 * into the ClusterRole itself, and that is what is cached.
 */
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

function subjectMatches(s: Subject, user: string, groups: ReadonlySet<string>, bindingNamespace: string | undefined): boolean {
  switch (s.kind) {
    case 'User':
      return s.name === user;
    case 'Group':
      return groups.has(s.name);
    case 'ServiceAccount': {
      // A RoleBinding's ServiceAccount subject without a namespace means the binding's own.
      const namespace = s.namespace || bindingNamespace;
      return namespace !== undefined && user === `${SA_PREFIX}${namespace}:${s.name}`;
    }
    default:
      return false;
  }
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

/**
 * The rules that apply to a caller, each with where it applies: cluster-wide (a
 * ClusterRoleBinding) or in one namespace (a RoleBinding).
 */
export function callerRules(policy: RbacPolicy, caller: Caller): { namespace?: string; rules: readonly PolicyRule[] }[] {
  const groups = effectiveGroups(caller);
  const out: { namespace?: string; rules: readonly PolicyRule[] }[] = [];
  for (const b of policy.clusterRoleBindings) {
    if (b.subjects?.some((s) => subjectMatches(s, caller.user, groups, undefined))) out.push({ rules: rulesOf(policy, { roleRef: b.roleRef }) });
  }
  for (const b of policy.roleBindings) {
    if (b.subjects?.some((s) => subjectMatches(s, caller.user, groups, b.namespace))) out.push({ namespace: b.namespace, rules: rulesOf(policy, b) });
  }
  return out;
}

/** The member's verdict on a resource request, as its RBAC authorizer (with the superuser group) decides. */
export function authorize(policy: RbacPolicy, caller: Caller, a: ResourceAttributes): boolean {
  if (effectiveGroups(caller).has(SUPERUSER_GROUP)) return true;
  for (const grant of callerRules(policy, caller)) {
    // A RoleBinding grants in its namespace only: never cluster-wide, never a cluster-scoped object.
    if (grant.namespace !== undefined && grant.namespace !== a.namespace) continue;
    if (grant.rules.some((r) => ruleAllows(r, a))) return true;
  }
  return false;
}

/**
 * Where a caller may do a verb on a resource without naming objects (list, watch): everywhere, or
 * in these namespaces. Rules with resourceNames do not count: they grant named requests only.
 */
export interface AccessSet {
  everywhere: boolean;
  namespaces: ReadonlySet<string>;
}

export function accessSet(policy: RbacPolicy, caller: Caller, a: Omit<ResourceAttributes, 'namespace' | 'name'>): AccessSet {
  if (effectiveGroups(caller).has(SUPERUSER_GROUP)) return { everywhere: true, namespaces: new Set() };
  const namespaces = new Set<string>();
  for (const grant of callerRules(policy, caller)) {
    if (!grant.rules.some((r) => ruleAllows(r, a))) continue;
    if (grant.namespace === undefined) return { everywhere: true, namespaces: new Set() };
    namespaces.add(grant.namespace);
  }
  return { everywhere: false, namespaces };
}

/** A member's RBAC objects (as listed) into a policy. */
export function policyOf(objects: {
  roles: readonly { metadata: { namespace?: string; name: string }; rules?: PolicyRule[] | null }[];
  clusterRoles: readonly { metadata: { name: string }; rules?: PolicyRule[] | null }[];
  roleBindings: readonly { metadata: { namespace?: string }; subjects?: Subject[] | null; roleRef: RoleRef }[];
  clusterRoleBindings: readonly { subjects?: Subject[] | null; roleRef: RoleRef }[];
}): RbacPolicy {
  return {
    roles: new Map(objects.roles.map((r) => [`${r.metadata.namespace ?? ''}/${r.metadata.name}`, r.rules ?? []])),
    clusterRoles: new Map(objects.clusterRoles.map((r) => [r.metadata.name, r.rules ?? []])),
    roleBindings: objects.roleBindings.map((b) => ({ namespace: b.metadata.namespace, subjects: b.subjects ?? [], roleRef: b.roleRef })),
    clusterRoleBindings: objects.clusterRoleBindings.map((b) => ({ subjects: b.subjects ?? [], roleRef: b.roleRef })),
  };
}
