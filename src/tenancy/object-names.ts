/**
 * Whole Kubernetes objects between a tenant's names and the member's (tenant.ts has the names):
 * every field that names a namespace, an owned cluster-scoped object, a CRD group or a service
 * account is renamed, both ways, and nothing else.
 *
 * Member → tenant, an object is the tenant's to see only when every name in it is one the
 * tenant can write: a reference to `kube-system` or to another tenant's namespace, left as it is,
 * would read as the tenant's own `kube-system` (the member's `acme-kube-system`), and renamed
 * back it would point somewhere else. Such an object is not shown at all (undefined; a List
 * drops it), so whatever the tenant reads maps back to exactly what the member holds. Two
 * exceptions, both from HNC's and Kubernetes' own naming: a namespace's tree labels of ancestors
 * that are not the tenant's are dropped (the tenant's tree stops at its own namespaces), and a
 * reference to an object of a hidden resource (a PersistentVolume `pvc-…`) keeps its name on both
 * sides: no tenant owns such names, and the tenant cannot reach the object by it anyway.
 *
 * Tenant → member never fails: every name the tenant writes becomes one of its own.
 */
import { SUBNAMESPACE_OF, TREE_LABEL_SUFFIX } from '../hierarchy/namespace-tree.js';
import { clusterScopedKind, CRDS, resourceName, type ResourcePolicy, type Tenant } from './tenant.js';
import { isJsonObject } from '../util/json-object.js';

/** How references resolve a kind they name: its resource and scope, or undefined if unknown. */
export type KindLookup = (group: string, kind: string) => { resource: string; namespaced: boolean } | undefined;

export interface ObjectNaming {
  tenant: Tenant;
  /** Takes the member's group. */
  kinds: KindLookup;
  /** Whether the member serves this API group (for memberGroup). */
  memberGroups: (group: string) => boolean;
}

/** Tenant → member, for write bodies (create/update/patch bodies, apply). Returns the rewritten object (may mutate the input). */
export function objectToMember(obj: unknown, n: ObjectNaming): unknown {
  rewriteAny(obj, memberward(n));
  return obj;
}

/**
 * Member → tenant, for answers. Returns undefined when the object is not the tenant's to see
 * (another tenant's namespace, a hidden kind, a name the tenant cannot write); for Lists, drops
 * such items. Never mutates its input: member objects may be cached.
 */
export function objectToTenant(obj: unknown, n: ObjectNaming): unknown | undefined {
  const copy = structuredClone(obj);
  try {
    rewriteAny(copy, tenantward(n));
  } catch (e) {
    if (e === NOT_THE_TENANTS) return undefined;
    throw e;
  }
  return copy;
}

/** The resource a patch targets: the member's group (as the request resolved it), its kind and scope. */
export interface PatchTarget {
  group: string;
  kind: string;
  namespaced: boolean;
}

/**
 * Tenant → member for a patch body. Merge, strategic merge and apply patches are partial objects:
 * renamed as objectToMember would, typed by the target (a patch may omit apiVersion and kind).
 * A JSON patch's ops are renamed one by one: an op's value and path (and `from`) are placed in an
 * otherwise empty object of the target's kind, which is renamed, and read back; so `/subjects/-`
 * with a ServiceAccount, `/metadata/namespace` or a tree label's key in a path are renamed, and
 * any other op is kept. An op whose renaming needs a sibling the op does not carry is kept as
 * written: `/roleRef/name` without the roleRef's kind, `/rules/0/resourceNames/0` without the
 * rule's resources, `/subjects/0/name` without the subject's kind.
 */
export function patchToMember(body: unknown, contentType: string, target: PatchTarget, n: ObjectNaming): unknown {
  const d = memberward(n);
  const type: ObjectType = { group: target.group, kind: target.kind, namespaced: target.namespaced };
  const mediaType = contentType.split(';')[0]!.trim().toLowerCase();
  if (mediaType === 'application/json-patch+json') return Array.isArray(body) ? body.map((op) => jsonPatchOpToMember(op, d, type)) : body;
  if (isJsonObject(body)) rewriteObject(body, d, type);
  return body;
}

type Json = Record<string, unknown>;


/** The objects of an array field (or none): a reference list's entries. */
function objectsOf(v: unknown): Json[] {
  return Array.isArray(v) ? v.filter(isJsonObject) : [];
}

/** The object at a path of object fields, or undefined. */
function at(obj: Json, ...path: string[]): Json | undefined {
  let v: unknown = obj;
  for (const key of path) v = isJsonObject(v) ? v[key] : undefined;
  return isJsonObject(v) ? v : undefined;
}

/**
 * Thrown member → tenant when an object names something the tenant cannot name; objectToTenant
 * and the List walk catch it and hide the object. One shared value: hiding is not an error.
 */
class NotTheTenants {}
const NOT_THE_TENANTS = new NotTheTenants();

function seen<T>(v: T | undefined): T {
  if (v === undefined) throw NOT_THE_TENANTS;
  return v;
}

/** Renames a string field; '' means "not set" in Kubernetes, and stays so on both sides. */
function rename(obj: Json, key: string, to: (s: string) => string | undefined): void {
  const v = obj[key];
  if (typeof v === 'string' && v !== '') obj[key] = seen(to(v));
}

/** Renames every string of an array field. */
function renameEach(obj: Json, key: string, to: (s: string) => string | undefined): void {
  const v = obj[key];
  if (Array.isArray(v)) obj[key] = v.map((s: unknown) => (typeof s === 'string' && s !== '' ? seen(to(s)) : s));
}

/**
 * One direction of renaming. Tenant → member every answer is defined; member → tenant, undefined
 * is a name the tenant cannot write (the object is hidden, or the tree label dropped).
 */
interface Direction {
  readonly tenantward: boolean;
  readonly n: ObjectNaming;
  readonly tenant: Tenant;
  /** The member's group of a group as the input writes it. */
  memberGroup(group: string): string;
  /** The output's group of a member group. */
  group(memberGroup: string): string | undefined;
  namespace(ns: string): string | undefined;
  /** A cluster-scoped object's name by its resource's policy (not `hidden`), resource in the member's group. */
  clusterName(memberGroup: string, resource: string, name: string, policy: ResourcePolicy): string | undefined;
  /** A CRD's `spec.group` when the tenant owns its CRDs: the group it creates. */
  crdGroup(group: string): string | undefined;
  user(user: string): string | undefined;
  userGroup(group: string): string | undefined;
  /** A Status message; member → tenant only (Status is an answer). */
  text(text: string): string;
  /**
   * The same direction for what an object refers to (subjects, roleRefs, owners, selectors):
   * member → tenant, a name the tenant cannot write stays as the member has it, and the object is
   * shown all the same. Only an object's own names decide whether the tenant sees it.
   */
  readonly references: Direction;
  /** The same direction, strict, where a lenient one is given (a namespace's tree labels). */
  readonly strict: Direction;
}

/**
 * `d` with its renames falling back to the name itself (member → tenant) for references, unless
 * the name is another tenant's: that still hides the object.
 */
function lenient(d: Omit<Direction, 'references' | 'strict'>): Omit<Direction, 'references' | 'strict'> {
  const orSame = <A extends unknown[]>(f: (s: string, ...rest: A) => string | undefined) => (s: string, ...rest: A) => f(s, ...rest) ?? (d.tenant.namesAnother(s) ? undefined : s);
  return {
    ...d,
    group: orSame(d.group),
    namespace: orSame(d.namespace),
    clusterName: (g, r, name, policy) => d.clusterName(g, r, name, policy) ?? (d.tenant.namesAnother(name) ? undefined : name),
    crdGroup: orSame(d.crdGroup),
    user: orSame(d.user),
    userGroup: orSame(d.userGroup),
  };
}

/** A direction with its reference and strict forms, each knowing the other. */
function direction(renames: Omit<Direction, 'references' | 'strict'>): Direction {
  const strict: { -readonly [K in keyof Direction]: Direction[K] } = { ...renames, references: undefined!, strict: undefined! };
  const references: typeof strict = { ...lenient(renames), references: undefined!, strict };
  strict.strict = strict;
  strict.references = references;
  references.references = references;
  return strict;
}

function memberward(n: ObjectNaming): Direction {
  const t = n.tenant;
  return direction({
    tenantward: false,
    n,
    tenant: t,
    memberGroup: (g) => t.memberGroup(g, n.memberGroups),
    group: (g) => g,
    namespace: (ns) => t.memberNamespace(ns),
    // A hidden resource's name stays: callers refuse writes of hidden objects before this.
    clusterName: (g, r, name, policy) => t.memberName(g, r, name, policy) ?? name,
    crdGroup: (g) => t.ownGroup(g),
    user: (u) => t.memberUser(u),
    userGroup: (g) => t.memberUserGroup(g),
    text: (s) => s,
  });
}

function tenantward(n: ObjectNaming): Direction {
  const t = n.tenant;
  return direction({
    tenantward: true,
    n,
    tenant: t,
    memberGroup: (g) => g,
    group: (g) => t.tenantGroup(g),
    namespace: (ns) => t.tenantNamespace(ns),
    clusterName: (g, r, name, policy) => t.tenantName(g, r, name, policy),
    // Only the tenant's own group: tenantGroup also passes groups that are nobody's.
    crdGroup: (g) => {
      const own = t.tenantGroup(g);
      return own !== undefined && own !== g ? own : undefined;
    },
    user: (u) => t.tenantUser(u),
    userGroup: (g) => t.tenantUserGroup(g),
    text: (s) => t.tenantText(s),
  });
}

/** An object's type: the member's group and the kind; `namespaced` where the caller knows it (a patch's target). */
interface ObjectType {
  group: string;
  kind: string;
  namespaced?: boolean;
}

interface Scope {
  namespaced: boolean;
  /** Undefined: a kind neither the lookup nor tenant.ts knows. */
  resource?: string;
}

/**
 * A kind's scope: the lookup's, else a well-known cluster-scoped kind's, else (unknown) namespaced
 * when the object or reference carries a namespace.
 */
function scopeOf(d: Direction, group: string, kind: string, carriesNamespace: boolean): Scope {
  const known = d.n.kinds(group, kind);
  if (known) return known;
  const wellKnown = clusterScopedKind(group, kind);
  // clusterScopedKind names the resource as kubectl does, `<resource>.<group>`.
  if (wellKnown !== undefined) return { namespaced: false, resource: group ? wellKnown.slice(0, -(group.length + 1)) : wellKnown };
  return { namespaced: carriesNamespace };
}

function policyOf(d: Direction, group: string, scope: Scope): ResourcePolicy {
  if (scope.resource !== undefined) return d.tenant.policy(group, scope.resource, scope.namespaced);
  // An unknown namespaced kind: `namespaced`, or hidden in another tenant's group (the resource does not matter).
  if (scope.namespaced) return d.tenant.policy(group, '', true);
  // An unknown cluster-scoped kind: the tenant's whole in its own CRD group, else hidden (no
  // configuration can name a resource this does not know).
  const own = d.tenant.tenantGroup(group);
  return own !== undefined && own !== group ? 'group' : 'hidden';
}

/** Renames an `apiVersion` field's group; returns the member's group ('' for the core group or no apiVersion). */
function rewriteApiVersion(obj: Json, d: Direction): string {
  const v = obj.apiVersion;
  if (typeof v !== 'string') return '';
  const slash = v.indexOf('/');
  if (slash < 0) return '';
  const group = d.memberGroup(v.slice(0, slash));
  obj.apiVersion = `${seen(d.group(group))}${v.slice(slash)}`;
  return group;
}

/** Renames a bare group field (roleRef's `apiGroup`); returns the member's group. */
function rewriteGroupField(obj: Json, d: Direction, key: string): string {
  const v = obj[key];
  if (typeof v !== 'string' || v === '') return '';
  const group = d.memberGroup(v);
  obj[key] = seen(d.group(group));
  return group;
}

/**
 * The name a reference gives an object of this kind: renamed when the kind is cluster-scoped and
 * the tenant owns or shares it; a namespaced object's name, and a hidden one's, stay.
 */
function referenceName(d: Direction, group: string, kind: string, carriesNamespace: boolean, name: string): string | undefined {
  const scope = scopeOf(d, group, kind, carriesNamespace);
  if (scope.namespaced) return name;
  const policy = policyOf(d, group, scope);
  return policy === 'hidden' ? name : d.clusterName(group, scope.resource ?? '', name, policy);
}

/**
 * An object reference (ownerReference, involvedObject, regarding, targetRef, claimRef, roleRef):
 * its group, its namespace, and its name when it names a cluster-scoped object.
 */
function rewriteReference(ref: Json, d: Direction, groupKey: 'apiVersion' | 'apiGroup' = 'apiVersion'): void {
  const group = groupKey === 'apiVersion' ? rewriteApiVersion(ref, d) : rewriteGroupField(ref, d, groupKey);
  rename(ref, 'namespace', d.namespace);
  const kind = ref.kind;
  if (typeof kind !== 'string') return;
  const carriesNamespace = typeof ref.namespace === 'string' && ref.namespace !== '';
  rename(ref, 'name', (name) => referenceName(d, group, kind, carriesNamespace, name));
}

function rewriteReferenceAt(obj: Json, d: Direction, ...path: string[]): void {
  const ref = at(obj, ...path);
  if (ref) rewriteReference(ref, d);
}

/**
 * Every object's own names: its namespace, or its name (and generateName, so a generated name is
 * the tenant's too) by its cluster-scoped kind's policy; and its ownerReferences.
 */
function rewriteMetadata(obj: Json, type: ObjectType, d: Direction): void {
  const meta = at(obj, 'metadata');
  const carriesNamespace = typeof meta?.namespace === 'string' && meta.namespace !== '';
  const scope = scopeOf(d, type.group, type.kind, type.namespaced ?? carriesNamespace);
  const policy = policyOf(d, type.group, scope);
  // Member → tenant a hidden object is not shown; tenant → member its name stays (callers refuse such writes earlier).
  if (policy === 'hidden' && d.tenantward) throw NOT_THE_TENANTS;
  if (!meta) return;
  if (scope.namespaced) rename(meta, 'namespace', d.namespace);
  else if (policy !== 'hidden') {
    const resource = scope.resource ?? '';
    rename(meta, 'name', (name) => d.clusterName(type.group, resource, name, policy));
    // A CRD's name is `<plural>.<group>`, never generated. A generated name is always the
    // tenant's, even one that starts as a shared name does (`system:`): the member only adds to it.
    if (resourceName(type.group, resource) !== CRDS) rename(meta, 'generateName', (name) => (!d.tenantward && policy === 'owned' ? d.tenant.prefix + name : d.clusterName(type.group, resource, name, policy)));
  }
  for (const owner of objectsOf(meta.ownerReferences)) rewriteReference(owner, d.references);
}

/**
 * RBAC subjects: a ServiceAccount's namespace, a service account's user name
 * (`system:serviceaccount:<ns>:<name>`), a namespace's group (`system:serviceaccounts:<ns>`).
 */
function rewriteSubject(subject: Json, d: Direction): void {
  rename(subject, 'namespace', d.namespace);
  if (subject.kind === 'User') rename(subject, 'name', d.user);
  else if (subject.kind === 'Group') rename(subject, 'name', d.userGroup);
}

function rewriteBinding(binding: Json, d: Direction): void {
  for (const subject of objectsOf(binding.subjects)) rewriteSubject(subject, d);
  const roleRef = at(binding, 'roleRef');
  if (roleRef) rewriteReference(roleRef, d, 'apiGroup');
}

/** `clusterroles.rbac.authorization.k8s.io` → its resource and group. */
function splitResourceName(qualified: string): { resource: string; group: string } {
  const dot = qualified.indexOf('.');
  return dot < 0 ? { resource: qualified, group: '' } : { resource: qualified.slice(0, dot), group: qualified.slice(dot + 1) };
}

/**
 * The owned resource whose names a rule's resourceNames are, or undefined: the first owned
 * (group, resource) the rule grants, a wildcard matching any. A rule mixing an owned resource
 * with others names the owned one's objects: the names become the tenant's, never another's.
 */
function ruleNamesResource(d: Direction, groups: readonly string[], resources: readonly string[]): { resource: string; group: string } | undefined {
  const owned = d.tenant.ownedResources().map(splitResourceName);
  for (const r of resources) {
    const resource = r.split('/')[0]!;
    for (const g of groups) {
      const match = owned.find((o) => (g === '*' || g === o.group) && (resource === '*' || resource === o.resource));
      if (match) return match;
    }
  }
  return undefined;
}

/** Role and ClusterRole rules: apiGroups (the tenant's CRD groups) and resourceNames of owned resources. */
function rewriteRule(rule: Json, d: Direction): void {
  const strings = (v: unknown) => (Array.isArray(v) ? v.filter((s): s is string => typeof s === 'string') : []);
  // '*' is every group, nobody's; '' (core) renames to itself.
  const memberGroups = strings(rule.apiGroups).map((g) => (g === '*' ? g : d.memberGroup(g)));
  renameEach(rule, 'apiGroups', (g) => (g === '*' ? g : d.group(d.memberGroup(g))));
  const owned = ruleNamesResource(d, memberGroups, strings(rule.resources));
  if (owned) renameEach(rule, 'resourceNames', (name) => d.clusterName(owned.group, owned.resource, name, 'owned'));
}

function rewriteRules(role: Json, d: Direction): void {
  // aggregationRule selects ClusterRoles by label: no names in it.
  for (const rule of objectsOf(role.rules)) rewriteRule(rule, d);
}

const METADATA_NAME = 'kubernetes.io/metadata.name';

/**
 * A Namespace's own names in its labels and annotations: `kubernetes.io/metadata.name`, HNC's
 * parent annotation, and HNC's tree labels (`<ancestor>.tree.hnc.x-k8s.io/depth`), whose key
 * names a namespace; a tree label of an ancestor not the tenant's is dropped member → tenant.
 */
function rewriteNamespace(ns: Json, d: Direction): void {
  const meta = at(ns, 'metadata');
  if (!meta) return;
  const labels = at(meta, 'labels');
  if (labels) {
    const renamed: Json = {};
    for (const [key, value] of Object.entries(labels)) {
      if (key === METADATA_NAME) renamed[key] = typeof value === 'string' && value !== '' ? seen(d.namespace(value)) : value;
      else if (key.endsWith(TREE_LABEL_SUFFIX)) {
        // Strict: an ancestor not the tenant's is not named to it at all.
        const ancestor = d.strict.namespace(key.slice(0, -TREE_LABEL_SUFFIX.length));
        if (ancestor !== undefined) renamed[ancestor + TREE_LABEL_SUFFIX] = value;
      } else renamed[key] = value;
    }
    meta.labels = renamed;
  }
  const annotations = at(meta, 'annotations');
  if (annotations) rename(annotations, SUBNAMESPACE_OF, d.namespace);
}

/** A CRD's group: the tenant's own where it owns CRDs (as its name), else renamed as any group. */
function rewriteCrd(crd: Json, d: Direction): void {
  const spec = at(crd, 'spec');
  if (!spec) return;
  const owned = d.tenant.policy('apiextensions.k8s.io', 'customresourcedefinitions', false) === 'owned';
  rename(spec, 'group', (g) => (owned ? d.crdGroup(g) : d.group(d.memberGroup(g))));
}

/** A label selector of namespaces: the values of `kubernetes.io/metadata.name` are namespace names. */
function rewriteNamespaceSelector(selector: Json, d: Direction): void {
  const matchLabels = at(selector, 'matchLabels');
  if (matchLabels) rename(matchLabels, METADATA_NAME, d.namespace);
  for (const expression of objectsOf(selector.matchExpressions)) {
    if (expression.key === METADATA_NAME) renameEach(expression, 'values', d.namespace);
  }
}

function rewriteNetworkPolicy(policy: Json, d: Direction): void {
  const spec = at(policy, 'spec');
  if (!spec) return;
  const peers = [...objectsOf(spec.ingress).flatMap((rule) => objectsOf(rule.from)), ...objectsOf(spec.egress).flatMap((rule) => objectsOf(rule.to))];
  for (const peer of peers) {
    const selector = at(peer, 'namespaceSelector');
    if (selector) rewriteNamespaceSelector(selector, d);
  }
}

/**
 * The references each kind holds beyond its metadata, by the member's group and kind. A kind not
 * here is renamed in its apiVersion and metadata only.
 */
const KIND_REFERENCES: Readonly<Record<string, (obj: Json, d: Direction) => void>> = {
  'rbac.authorization.k8s.io/RoleBinding': rewriteBinding,
  'rbac.authorization.k8s.io/ClusterRoleBinding': rewriteBinding,
  'rbac.authorization.k8s.io/Role': rewriteRules,
  'rbac.authorization.k8s.io/ClusterRole': rewriteRules,
  // The same stored Event as events.k8s.io's: involvedObject is its `regarding`, related its `related`.
  // Its message is the member's words (`Successfully assigned acme-web/p to node-1`): the tenant's names in them.
  '/Event': (event, d) => {
    rewriteReferenceAt(event, d, 'involvedObject');
    rewriteReferenceAt(event, d, 'related');
    rename(event, 'message', d.text);
  },
  'events.k8s.io/Event': (event, d) => {
    rewriteReferenceAt(event, d, 'regarding');
    rewriteReferenceAt(event, d, 'related');
    rename(event, 'note', d.text);
  },
  '/Endpoints': (endpoints, d) => {
    for (const subset of objectsOf(endpoints.subsets)) {
      for (const address of [...objectsOf(subset.addresses), ...objectsOf(subset.notReadyAddresses)]) rewriteReferenceAt(address, d, 'targetRef');
    }
  },
  'discovery.k8s.io/EndpointSlice': (slice, d) => {
    for (const endpoint of objectsOf(slice.endpoints)) rewriteReferenceAt(endpoint, d, 'targetRef');
  },
  // A claim's volume: a PersistentVolume's name, by that resource's policy (hidden: it stays).
  '/PersistentVolumeClaim': (claim, d) => {
    const spec = at(claim, 'spec');
    if (spec) rename(spec, 'volumeName', (name) => referenceName(d, '', 'PersistentVolume', false, name));
  },
  '/PersistentVolume': (volume, d) => rewriteReferenceAt(volume, d, 'spec', 'claimRef'),
  // The name is metadata's (`<plural>.<group>`); status.acceptedNames hold no group.
  'apiextensions.k8s.io/CustomResourceDefinition': rewriteCrd,
  '/Namespace': rewriteNamespace,
  'networking.k8s.io/NetworkPolicy': rewriteNetworkPolicy,
  'hnc.x-k8s.io/HierarchyConfiguration': (config, d) => {
    const spec = at(config, 'spec');
    if (spec) rename(spec, 'parent', d.namespace);
    const status = at(config, 'status');
    if (status) renameEach(status, 'children', d.namespace);
  },
};

/** Whether a kind's objects name other objects beyond their metadata (KIND_REFERENCES rewrites those names). */
export function namesOtherObjects(group: string, kind: string): boolean {
  return Object.hasOwn(KIND_REFERENCES, `${group}/${kind}`);
}

/** One object: its apiVersion, metadata and its kind's references. `fallback`: the type a List's item or a patch omits. */
function rewriteObject(obj: Json, d: Direction, fallback?: ObjectType): void {
  const group = typeof obj.apiVersion === 'string' ? rewriteApiVersion(obj, d) : (fallback?.group ?? '');
  const kind = typeof obj.kind === 'string' ? obj.kind : fallback?.kind;
  if (kind === undefined) return;
  const namespaced = fallback !== undefined && fallback.group === group && fallback.kind === kind ? fallback.namespaced : undefined;
  const type: ObjectType = namespaced === undefined ? { group, kind } : { group, kind, namespaced };
  rewriteMetadata(obj, type, d);
  KIND_REFERENCES[`${group}/${kind}`]?.(obj, d.references);
}

/** A List's items: each renamed, typed by the List where it omits its type (built-in Lists do); member → tenant, hidden items dropped. */
function rewriteList(list: Json & { items: unknown[] }, d: Direction): void {
  const group = rewriteApiVersion(list, d);
  const kind = typeof list.kind === 'string' && list.kind !== 'List' ? list.kind.slice(0, -'List'.length) : undefined;
  const itemType = kind === undefined ? undefined : { group, kind };
  list.items = list.items.filter((item) => {
    if (!isJsonObject(item)) return true;
    try {
      rewriteObject(item, d, itemType);
      return true;
    } catch (e) {
      if (e === NOT_THE_TENANTS) return false;
      throw e;
    }
  });
}

/** A Status answer: its messages (the tenant's names of the member's), and what its details name. */
function rewriteStatus(status: Json, d: Direction): void {
  if (!d.tenantward) return;
  rename(status, 'message', d.text);
  const details = at(status, 'details');
  if (!details) return;
  const group = typeof details.group === 'string' ? details.group : '';
  // details.kind is the resource (`namespaces`) or, from some webhooks, the kind (`Namespace`).
  const kind = typeof details.kind === 'string' ? details.kind : '';
  const resource = clusterScopedKind(group, kind)?.split('.')[0] ?? kind;
  const policy = d.tenant.policy(group, resource, false);
  // A Status is never hidden: the caller must answer; a name the tenant cannot write keeps only its words.
  if (policy === 'owned') rename(details, 'name', (name) => d.clusterName(group, resource, name, policy) ?? d.text(name));
  rename(details, 'group', (g) => d.group(g) ?? g);
  for (const cause of objectsOf(details.causes)) rename(cause, 'message', d.text);
}

/** A watch event's line, `{type, object}`, is not an object of a kind. */
function isWatchEvent(v: Json): v is Json & { object: Json } {
  return typeof v.type === 'string' && isJsonObject(v.object) && v.apiVersion === undefined && (v.kind === undefined || v.kind === 'WatchEvent');
}

function rewriteAny(v: unknown, d: Direction): void {
  if (!isJsonObject(v)) return;
  if (isWatchEvent(v)) rewriteAny(v.object, d);
  else if (v.kind === 'Status') rewriteStatus(v, d);
  else if (typeof v.kind === 'string' && v.kind.endsWith('List') && Array.isArray(v.items)) rewriteList(v as Json & { items: unknown[] }, d);
  else rewriteObject(v, d);
}

/** JSON pointer tokens (RFC 6901). */
function pointerTokens(pointer: string): string[] | undefined {
  if (pointer !== '' && !pointer.startsWith('/')) return undefined;
  return pointer === '' ? [] : pointer.slice(1).split('/').map((t) => t.replace(/~1/g, '/').replace(/~0/g, '~'));
}

function pointerOf(tokens: readonly string[]): string {
  return tokens.map((t) => `/${t.replace(/~/g, '~0').replace(/\//g, '~1')}`).join('');
}

const ARRAY_INDEX = /^(0|[1-9][0-9]*|-)$/;

/**
 * A pointer and the value there, renamed: the value is placed at the pointer in an otherwise
 * empty object of the target's type, which is renamed, then read back along the pointer. Array
 * indices become a one-element array (every element of a reference list renames alike); a map
 * key the rename changed (a tree label's) is read back under its new name.
 */
function throughSkeleton(pointer: string, value: unknown, d: Direction, type: ObjectType): { pointer: string; value: unknown } {
  const tokens = pointerTokens(pointer);
  // Not a pointer: the member refuses the patch as the tenant wrote it.
  if (tokens === undefined) return { pointer, value };
  if (tokens.length === 0) {
    if (isJsonObject(value)) rewriteObject(value, d, type);
    return { pointer, value };
  }
  const root: Json = {};
  let parent: Json | unknown[] = root;
  tokens.forEach((token, i) => {
    const child = i === tokens.length - 1 ? value : ARRAY_INDEX.test(tokens[i + 1]!) ? [] : {};
    if (Array.isArray(parent)) parent.push(child);
    else parent[token] = child;
    parent = child as Json | unknown[];
  });
  rewriteObject(root, d, type);
  const renamed: string[] = [];
  let here: unknown = root;
  for (const token of tokens) {
    if (Array.isArray(here)) {
      renamed.push(token);
      here = here[0];
    } else if (isJsonObject(here)) {
      // The skeleton holds one key per level: the token, or what the rename made of it.
      const key = Object.keys(here)[0] ?? token;
      renamed.push(key);
      here = here[key];
    } else renamed.push(token);
  }
  return { pointer: pointerOf(renamed), value: here };
}

function jsonPatchOpToMember(op: unknown, d: Direction, type: ObjectType): unknown {
  if (!isJsonObject(op) || typeof op.path !== 'string') return op;
  const out: Json = { ...op };
  const hasValue = 'value' in op;
  const renamed = throughSkeleton(op.path, hasValue ? structuredClone(op.value) : null, d, type);
  out.path = renamed.pointer;
  if (hasValue) out.value = renamed.value;
  if (typeof op.from === 'string') out.from = throughSkeleton(op.from, null, d, type).pointer;
  return out;
}
