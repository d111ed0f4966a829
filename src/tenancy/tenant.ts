/**
 * A tenant's names (KubeZoo style): the tenant `acme` sees the member's namespace `acme-web` as
 * `web`, its owned cluster-scoped objects `acme-reader` as `reader`, its CRD group
 * `acme.example.com` as `example.com` (the CRD `widgets.acme.example.com` as
 * `widgets.example.com`), and nothing of anyone else. A name is the tenant's only after its id
 * *and* the separator: `abc-x` is never tenant `ab`'s.
 *
 * Pure naming: no I/O, no configuration reading. What rewrites objects, paths and messages builds
 * on these (document-names.ts, request-names.ts).
 */

import type { ClusterScopedPolicy, TenantSpec } from '../registry/fleet-config.js';

export type { ClusterScopedPolicy, TenantSpec };

/**
 * How a tenant sees a resource: `namespaced` (its namespaces' objects), `owned`, `shared`
 * (read-only, names as they are), `hidden` (nothing), or `group` (a cluster-scoped resource of
 * the tenant's own CRD group: every object is the tenant's, names as they are).
 */
export type ResourcePolicy = 'namespaced' | ClusterScopedPolicy | 'group';

export const CRDS = 'customresourcedefinitions.apiextensions.k8s.io';

/** What a tenant owns and shares unless its configuration says otherwise; every other cluster-scoped resource is hidden. */
export const DEFAULT_CLUSTER_SCOPED: Readonly<Record<string, ClusterScopedPolicy>> = {
  namespaces: 'owned',
  'clusterroles.rbac.authorization.k8s.io': 'owned',
  'clusterrolebindings.rbac.authorization.k8s.io': 'owned',
  [CRDS]: 'owned',
  nodes: 'shared',
  'storageclasses.storage.k8s.io': 'shared',
  'ingressclasses.networking.k8s.io': 'shared',
  'runtimeclasses.node.k8s.io': 'shared',
  'priorityclasses.scheduling.k8s.io': 'shared',
  'csidrivers.storage.k8s.io': 'shared',
};

/** Cluster-scoped kinds references name (ownerReferences, roleRef, involvedObject), by group and kind, with their resource. */
const CLUSTER_SCOPED_KINDS: Readonly<Record<string, string>> = {
  '/Namespace': 'namespaces',
  '/Node': 'nodes',
  '/PersistentVolume': 'persistentvolumes',
  'rbac.authorization.k8s.io/ClusterRole': 'clusterroles.rbac.authorization.k8s.io',
  'rbac.authorization.k8s.io/ClusterRoleBinding': 'clusterrolebindings.rbac.authorization.k8s.io',
  'apiextensions.k8s.io/CustomResourceDefinition': CRDS,
  'storage.k8s.io/StorageClass': 'storageclasses.storage.k8s.io',
  'storage.k8s.io/CSIDriver': 'csidrivers.storage.k8s.io',
  'networking.k8s.io/IngressClass': 'ingressclasses.networking.k8s.io',
  'node.k8s.io/RuntimeClass': 'runtimeclasses.node.k8s.io',
  'scheduling.k8s.io/PriorityClass': 'priorityclasses.scheduling.k8s.io',
};

/** The resource (as kubectl names it) of a well-known cluster-scoped kind, or undefined (namespaced, or unknown). */
export function clusterScopedKind(group: string, kind: string): string | undefined {
  return CLUSTER_SCOPED_KINDS[`${group}/${kind}`];
}

/** `pods`, `clusterroles.rbac.authorization.k8s.io`: a resource as kubectl and the configuration name it. */
export function resourceName(group: string, resource: string): string {
  return group ? `${resource}.${group}` : resource;
}

/**
 * ClusterRoles every tenant refers to by their own names, though ClusterRoles are owned: the
 * built-in user-facing roles and the system's. A tenant's RoleBinding to `edit` binds the member's
 * `edit`; the tenant cannot make or change a ClusterRole of these names (request-names.ts and answers.ts refuse it).
 */
const SHARED_CLUSTER_ROLES = new Set(['admin', 'edit', 'view', 'cluster-admin']);

export function sharedName(group: string, resource: string, name: string): boolean {
  return group === 'rbac.authorization.k8s.io' && resource === 'clusterroles' && (SHARED_CLUSTER_ROLES.has(name) || name.startsWith('system:'));
}

const SA_USER = 'system:serviceaccount:';
const SA_GROUP = 'system:serviceaccounts:';

export class Tenant {
  readonly id: string;
  /** What starts every name of the tenant's on the member: id and separator. */
  readonly prefix: string;
  /** The prefix's bytes, for edits in place. */
  readonly prefixBytes: Buffer;
  private readonly groupPrefix: string;
  private readonly policies: Readonly<Record<string, ClusterScopedPolicy>>;
  // The id after something a name cannot contain, then its separator and a name character.
  private readonly textPattern: RegExp;

  /** `others`: every other tenant's id, whose CRD groups this tenant never sees. */
  constructor(readonly spec: TenantSpec, private readonly others: readonly string[] = []) {
    this.id = spec.id;
    this.prefix = `${spec.id}-`;
    this.prefixBytes = Buffer.from(this.prefix);
    this.groupPrefix = `${spec.id}.`;
    this.policies = { ...DEFAULT_CLUSTER_SCOPED, ...spec.clusterScoped };
    this.textPattern = new RegExp(`(^|[^a-z0-9.-])${spec.id}[-.](?=[A-Za-z0-9])`, 'g');
  }

  /** The member's namespace of the tenant's `ns` ('' stays '': cluster scope). */
  memberNamespace(ns: string): string {
    return ns === '' ? '' : this.prefix + ns;
  }

  /** The tenant's name of a member namespace, or undefined when it is not the tenant's. */
  tenantNamespace(ns: string): string | undefined {
    if (ns === '') return '';
    return ns.length > this.prefix.length && ns.startsWith(this.prefix) ? ns.slice(this.prefix.length) : undefined;
  }

  /** Whether a member namespace is the tenant's. */
  ownsNamespace(ns: string): boolean {
    return ns.length > this.prefix.length && ns.startsWith(this.prefix);
  }

  /**
   * How the tenant sees a resource, given in the member's group. A cluster-scoped resource of the
   * tenant's own CRD group is the tenant's whole; of another tenant's group, hidden.
   */
  policy(group: string, resource: string, namespaced: boolean): ResourcePolicy {
    const groupOwner = this.groupOwner(group);
    if (groupOwner !== undefined && groupOwner !== this.id) return 'hidden';
    if (namespaced) return 'namespaced';
    if (groupOwner === this.id) return 'group';
    return this.policies[resourceName(group, resource)] ?? 'hidden';
  }

  /** The tenant whose CRD group this is (its first label is a tenant's id), or undefined. */
  private groupOwner(group: string): string | undefined {
    if (group.startsWith(this.groupPrefix) && group.length > this.groupPrefix.length) return this.id;
    const dot = group.indexOf('.');
    if (dot <= 0) return undefined;
    const first = group.slice(0, dot);
    return this.others.includes(first) ? first : undefined;
  }

  /** How the tenant sees each cluster-scoped resource the defaults or its configuration name (as kubectl names them). */
  policyTable(): Readonly<Record<string, ClusterScopedPolicy>> {
    return this.policies;
  }

  /** The cluster-scoped resources (as kubectl names them) whose objects the tenant owns, its configuration's order. */
  ownedResources(): string[] {
    return Object.keys(this.policies).filter((r) => this.policies[r] === 'owned');
  }

  /** The member's group of a group the tenant names: its own CRD group where it has one (`memberGroups` holds it), else the group itself. */
  memberGroup(group: string, memberGroups: (g: string) => boolean): string {
    if (group === '') return '';
    const own = this.groupPrefix + group;
    return memberGroups(own) ? own : group;
  }

  /** The tenant's name of a member group, or undefined when the group is another tenant's. */
  tenantGroup(group: string): string | undefined {
    const owner = this.groupOwner(group);
    if (owner === undefined) return group;
    return owner === this.id ? group.slice(this.groupPrefix.length) : undefined;
  }

  /** A CRD group the tenant creates (`spec.group`): always its own. */
  ownGroup(group: string): string {
    return this.groupPrefix + group;
  }

  /**
   * The member's name of a cluster-scoped object the tenant names, by its resource's policy:
   * owned names take the prefix, a CRD's (`<plural>.<group>`) takes the tenant's group; shared and
   * group-owned names stay. Undefined: the tenant cannot name objects of a hidden resource.
   */
  memberName(group: string, resource: string, name: string, policy: ResourcePolicy): string | undefined {
    if (policy === 'hidden') return undefined;
    if (policy !== 'owned' || sharedName(group, resource, name)) return name;
    if (resourceName(group, resource) === CRDS) {
      const dot = name.indexOf('.');
      return dot > 0 ? `${name.slice(0, dot + 1)}${this.ownGroup(name.slice(dot + 1))}` : this.prefix + name;
    }
    return this.prefix + name;
  }

  /** The tenant's name of a member's cluster-scoped object, or undefined when the tenant does not see it. */
  tenantName(group: string, resource: string, name: string, policy: ResourcePolicy): string | undefined {
    if (policy === 'hidden') return undefined;
    if (policy !== 'owned' || sharedName(group, resource, name)) return name;
    if (resourceName(group, resource) === CRDS) {
      const dot = name.indexOf('.');
      if (dot <= 0) return undefined;
      const g = name.slice(dot + 1);
      return g.startsWith(this.groupPrefix) && g.length > this.groupPrefix.length ? `${name.slice(0, dot + 1)}${g.slice(this.groupPrefix.length)}` : undefined;
    }
    return this.tenantNamespace(name) || undefined;
  }

  /**
   * A user name as the member knows it: a service account's `system:serviceaccount:<ns>:<name>`
   * lives in a tenant namespace; other users are who they are.
   */
  memberUser(user: string): string {
    if (!user.startsWith(SA_USER)) return user;
    const rest = user.slice(SA_USER.length);
    const colon = rest.indexOf(':');
    return colon > 0 ? `${SA_USER}${this.memberNamespace(rest.slice(0, colon))}${rest.slice(colon)}` : user;
  }

  /** The tenant's form of a member's user name; undefined: a service account of a namespace not the tenant's. */
  tenantUser(user: string): string | undefined {
    if (!user.startsWith(SA_USER)) return user;
    const rest = user.slice(SA_USER.length);
    const colon = rest.indexOf(':');
    if (colon <= 0) return user;
    const ns = this.tenantNamespace(rest.slice(0, colon));
    return ns ? `${SA_USER}${ns}${rest.slice(colon)}` : undefined;
  }

  /**
   * Whether a member's name is another tenant's: its namespace or CRD group, a service account
   * (user or group) of its namespaces. An object of this tenant's that names one is not shown
   * (it would tell of the other); one that names a fleet-level name (`kube-system`) is.
   */
  namesAnother(name: string): boolean {
    let subject = name;
    if (name.startsWith(SA_USER)) subject = name.slice(SA_USER.length).split(':')[0] ?? '';
    else if (name.startsWith(SA_GROUP)) subject = name.slice(SA_GROUP.length);
    return this.others.some((o) => subject.startsWith(`${o}-`) || subject.startsWith(`${o}.`));
  }

  /**
   * An identity a caller of this tenant asks to become (Impersonate-*), in the member's names, or
   * undefined when any part of it is outside the tenant: the user must be one of the tenant's
   * users or a service account of its namespaces, each group one of its groups or its
   * namespaces' service-account groups (and those every such identity has). Never a fleet group.
   */
  ownIdentity(user: string, groups: readonly string[]): { user: string; groups: string[] } | undefined {
    const memberUser = this.memberUser(user);
    const serviceAccount = this.ownsServiceAccount(memberUser);
    if (!serviceAccount && !this.spec.users.includes(memberUser)) return undefined;
    const memberGroups = groups.map((g) => this.memberUserGroup(g));
    const own = (g: string) =>
      this.spec.groups.includes(g) || g === 'system:authenticated' || (g.startsWith(SA_GROUP) && this.ownsNamespace(g.slice(SA_GROUP.length))) || (serviceAccount && g === 'system:serviceaccounts');
    return memberGroups.every(own) ? { user: memberUser, groups: memberGroups } : undefined;
  }

  /**
   * Whether an RBAC subject, in the member's names, is the tenant's: a service account of its
   * namespaces, one of its users or groups, or its namespaces' service-account groups.
   */
  ownsSubject(kind: string, name: string, namespace: string | undefined): boolean {
    switch (kind) {
      case 'ServiceAccount':
        return namespace === undefined || namespace === '' || this.ownsNamespace(namespace);
      case 'User':
        return this.spec.users.includes(name) || this.ownsServiceAccount(name);
      case 'Group':
        return this.spec.groups.includes(name) || (name.startsWith(SA_GROUP) && this.ownsNamespace(name.slice(SA_GROUP.length)));
      default:
        return false;
    }
  }

  /** Whether a member's user name is a service account of the tenant's namespaces. */
  private ownsServiceAccount(user: string): boolean {
    if (!user.startsWith(SA_USER)) return false;
    const parts = user.slice(SA_USER.length).split(':');
    return parts.length === 2 && this.ownsNamespace(parts[0]!) && parts[1] !== '';
  }

  /** `system:serviceaccounts:<ns>` names a namespace; other groups are what they are. */
  memberUserGroup(group: string): string {
    if (!group.startsWith(SA_GROUP)) return group;
    return SA_GROUP + this.memberNamespace(group.slice(SA_GROUP.length));
  }

  tenantUserGroup(group: string): string | undefined {
    if (!group.startsWith(SA_GROUP)) return group;
    const ns = this.tenantNamespace(group.slice(SA_GROUP.length));
    return ns ? SA_GROUP + ns : undefined;
  }

  /**
   * A message as the tenant reads it: every member name of the tenant's (`acme-web`, a group
   * `acme.example.com`) without the tenant's id. Only whole names: `xacme-web` stays.
   */
  tenantText(text: string): string {
    return text.replace(this.textPattern, '$1');
  }
}

/**
 * Every tenant of the configuration, and which one a caller belongs to: its user name, else its
 * first group that a tenant lists, else (a service account, `system:serviceaccount:<ns>:<name>`)
 * the tenant whose namespace holds it, so a tenant's workloads see the fleet as the tenant does.
 * A caller of no tenant sees the fleet as it is.
 */
export class Tenants {
  private readonly byUser = new Map<string, Tenant>();
  private readonly byGroup = new Map<string, Tenant>();
  readonly all: readonly Tenant[];

  constructor(specs: readonly TenantSpec[]) {
    const ids = specs.map((s) => s.id);
    this.all = specs.map((s) => new Tenant(s, ids.filter((i) => i !== s.id)));
    for (const t of this.all) {
      for (const u of t.spec.users) this.byUser.set(u, t);
      for (const g of t.spec.groups) this.byGroup.set(g, t);
    }
  }

  of(caller: { user: string; groups: readonly string[] }): Tenant | undefined {
    const own = this.byUser.get(caller.user);
    if (own) return own;
    for (const g of caller.groups) {
      const t = this.byGroup.get(g);
      if (t) return t;
    }
    if (!caller.user.startsWith(SA_USER)) return undefined;
    const namespace = caller.user.slice(SA_USER.length).split(':')[0] ?? '';
    return this.all.find((t) => t.ownsNamespace(namespace));
  }
}
