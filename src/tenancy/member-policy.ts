/**
 * The tenant boundary as the members enforce it (docs/tenant-member-policy.md): RBAC that gives a
 * tenant's admins only the cluster-scoped rights the tenant's policy table allows and full power
 * inside the tenant's own namespaces, and a ValidatingAdmissionPolicy that refuses every write of
 * the tenant's identities that leaves the tenant's names. Flotilla confines tenants too; this holds
 * when flotilla is wrong or bypassed.
 *
 * Pure: plain manifests from a TenantSpec, no I/O.
 */

import { CRDS, Tenant, type TenantSpec } from './tenant.js';

export type Manifest = Record<string, unknown> & { apiVersion: string; kind: string; metadata: { name: string; namespace?: string; labels?: Record<string, string> } };

/** The RoleBinding in each of the tenant's namespaces that makes its admins admins there; the admission policy keeps the tenant off it. */
export const NAMESPACE_ADMINS_BINDING = 'flotilla-tenant-admins';

const RBAC = 'rbac.authorization.k8s.io';
const ROLEBINDINGS = `rolebindings.${RBAC}`;
const CLUSTERROLES = `clusterroles.${RBAC}`;
const CLUSTERROLEBINDINGS = `clusterrolebindings.${RBAC}`;
const OWNED_VERBS = ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'];
const SHARED_VERBS = ['get', 'list', 'watch'];
/** Cluster-scoped creates that only ask about the caller: what kubectl auth can-i and whoami send. */
const SELF_REVIEWS = ['selfsubjectaccessreviews.authorization.k8s.io', 'selfsubjectrulesreviews.authorization.k8s.io', 'selfsubjectreviews.authentication.k8s.io'];

export interface MemberPolicyOptions {
  /** The tenant's namespaces on the member (member names, `acme-web`) to bind its admins in. */
  namespaces?: readonly string[];
}

/** Every manifest a member needs for one tenant: RBAC for its admins (when it has some), the admission policy and its binding. */
export function generateMemberPolicy(spec: TenantSpec, opts: MemberPolicyOptions = {}): Manifest[] {
  const tenant = new Tenant(spec);
  const out: Manifest[] = [];
  if (hasAdmins(spec)) {
    out.push(makeClusterRole(tenant), makeClusterRoleBinding(spec));
    for (const ns of opts.namespaces ?? []) if (tenant.ownsNamespace(ns)) out.push(makeNamespaceGrant(spec, ns));
  }
  out.push(makeAdmissionPolicy(spec), makeAdmissionPolicyBinding(spec));
  return out;
}

/** The collection path of each kind the member-side policy is made of. */
const COLLECTIONS: Readonly<Record<string, string>> = {
  ClusterRole: 'clusterroles',
  ClusterRoleBinding: 'clusterrolebindings',
  RoleBinding: 'rolebindings',
  ValidatingAdmissionPolicy: 'validatingadmissionpolicies',
  ValidatingAdmissionPolicyBinding: 'validatingadmissionpolicybindings',
};

/** A manifest's collection path on a member, or with `named` its own. */
export function manifestPath(m: Manifest, named = false): string {
  const collection = COLLECTIONS[m.kind];
  if (!collection) throw new Error(`no path for kind ${m.kind}`);
  const ns = m.metadata.namespace ? `/namespaces/${encodeURIComponent(m.metadata.namespace)}` : '';
  return `/apis/${m.apiVersion}${ns}/${collection}${named ? `/${encodeURIComponent(m.metadata.name)}` : ''}`;
}

export function hasAdmins(spec: TenantSpec): boolean {
  return (spec.admins?.users.length ?? 0) + (spec.admins?.groups.length ?? 0) > 0;
}

/** The name of the tenant's ClusterRole and ClusterRoleBinding; not the tenant's to change (its names start `<id>-`). */
export function clusterRoleName(spec: TenantSpec): string {
  return `flotilla:tenant:${spec.id}`;
}

export function admissionPolicyName(spec: TenantSpec): string {
  return `flotilla-tenant-${spec.id}`;
}

/** `clusterroles.rbac.authorization.k8s.io` as an RBAC rule's group and resource. */
function splitResource(name: string): { group: string; resource: string } {
  const dot = name.indexOf('.');
  return dot < 0 ? { group: '', resource: name } : { group: name.slice(dot + 1), resource: name.slice(0, dot) };
}

/**
 * The tenant's cluster-scoped rights: write its owned kinds (clusterroles with `escalate`, so it
 * may write roles it binds in its own namespaces), read its shared ones, impersonate its own users
 * and groups. No `bind`, no deletecollection: a collection delete cannot be limited to its names.
 */
export function makeClusterRole(tenant: Tenant): Manifest {
  const spec = tenant.spec;
  const rules: Record<string, unknown>[] = [];
  for (const [name, policy] of Object.entries(tenant.policyTable())) {
    if (policy === 'hidden') continue;
    const { group, resource } = splitResource(name);
    const verbs = policy === 'shared' ? SHARED_VERBS : name === CLUSTERROLES ? [...OWNED_VERBS, 'escalate'] : OWNED_VERBS;
    rules.push({ apiGroups: [group], resources: [resource], verbs });
  }
  // An empty resourceNames would mean every user: no rule then.
  if (spec.users.length > 0) rules.push({ apiGroups: [''], resources: ['users'], verbs: ['impersonate'], resourceNames: [...spec.users] });
  if (spec.groups.length > 0) rules.push({ apiGroups: [''], resources: ['groups'], verbs: ['impersonate'], resourceNames: [...spec.groups] });
  return { apiVersion: `${RBAC}/v1`, kind: 'ClusterRole', metadata: { name: clusterRoleName(spec), labels: policyLabels(spec) }, rules };
}

export function makeClusterRoleBinding(spec: TenantSpec): Manifest {
  return {
    apiVersion: `${RBAC}/v1`,
    kind: 'ClusterRoleBinding',
    metadata: { name: clusterRoleName(spec), labels: policyLabels(spec) },
    roleRef: { apiGroup: RBAC, kind: 'ClusterRole', name: clusterRoleName(spec) },
    subjects: adminSubjects(spec),
  };
}

/** The tenant's admins as cluster-admin inside one of its namespaces (a member name), and nowhere else. */
export function makeNamespaceGrant(spec: TenantSpec, namespace: string): Manifest {
  return {
    apiVersion: `${RBAC}/v1`,
    kind: 'RoleBinding',
    metadata: { name: NAMESPACE_ADMINS_BINDING, namespace, labels: policyLabels(spec) },
    roleRef: { apiGroup: RBAC, kind: 'ClusterRole', name: 'cluster-admin' },
    subjects: adminSubjects(spec),
  };
}

function adminSubjects(spec: TenantSpec): Record<string, string>[] {
  return [
    ...(spec.admins?.users ?? []).map((name) => ({ apiGroup: RBAC, kind: 'User', name })),
    ...(spec.admins?.groups ?? []).map((name) => ({ apiGroup: RBAC, kind: 'Group', name })),
  ];
}

function policyLabels(spec: TenantSpec): Record<string, string> {
  return { 'app.kubernetes.io/managed-by': 'flotilla', 'search.flotilla.io/tenant': spec.id };
}

/** A CEL string literal (JSON's escapes are CEL's for the characters names hold). */
function cel(s: string): string {
  return JSON.stringify(s);
}

function celList(items: readonly string[]): string {
  return `[${items.map(cel).join(', ')}]`;
}

/**
 * The admission policy: for requests by the tenant's identities (its users and groups, the service
 * accounts of its namespaces), every write must stay in the tenant's names. Reads are RBAC's alone.
 * Names come from the object (after generateName is resolved), the old object for a delete.
 * Messages name the tenant's own rules, never the object refused.
 */
export function makeAdmissionPolicy(spec: TenantSpec): Manifest {
  const tenant = new Tenant(spec);
  const prefix = tenant.prefix;
  const groupPrefix = `${spec.id}.`;
  const owned = tenant.ownedResources();
  const ownName = (v: string) => `(${v}.startsWith(${cel(prefix)}) && size(${v}) > ${prefix.length})`;
  const saUser = `system:serviceaccount:${prefix}`;
  const saGroup = `system:serviceaccounts:${prefix}`;
  const identity = [
    `request.userInfo.username in ${celList(spec.users)}`,
    `request.userInfo.username.startsWith(${cel(saUser)})`,
    `(has(request.userInfo.groups) && request.userInfo.groups.exists(g, g in ${celList(spec.groups)} || g.startsWith(${cel(saGroup)})))`,
  ].join(' || ');
  const writing = `(request.operation in ['CREATE', 'UPDATE'])`;
  const subjectOk = [
    `(s.kind == 'ServiceAccount' && (has(s.namespace) && s.namespace != '' ? ${ownName('s.namespace')} : ${ownName('variables.ns')}))`,
    `(s.kind == 'User' && (s.name in ${celList(spec.users)} || s.name.startsWith(${cel(saUser)})))`,
    `(s.kind == 'Group' && (s.name in ${celList(spec.groups)} || s.name.startsWith(${cel(saGroup)})))`,
  ].join(' || ');
  const message = (text: string) => `flotilla tenant ${spec.id}: ${text}`;
  return {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicy',
    metadata: { name: admissionPolicyName(spec), labels: policyLabels(spec) },
    spec: {
      failurePolicy: 'Fail',
      matchConstraints: {
        resourceRules: [{ apiGroups: ['*'], apiVersions: ['*'], operations: ['CREATE', 'UPDATE', 'DELETE', 'CONNECT'], resources: ['*/*'], scope: '*' }],
      },
      matchConditions: [{ name: 'tenant-identity', expression: identity }],
      variables: [
        // The request's empty strings are absent fields: read with has(), or the policy fails (closed) on them.
        { name: 'ns', expression: `has(request.namespace) ? request.namespace : ''` },
        { name: 'group', expression: `has(request.resource.group) ? request.resource.group : ''` },
        { name: 'obj', expression: `request.operation == 'DELETE' ? oldObject : object` },
        { name: 'name', expression: `variables.obj != null && has(variables.obj.metadata) && has(variables.obj.metadata.name) ? variables.obj.metadata.name : (has(request.name) ? request.name : '')` },
        { name: 'resource', expression: `variables.group == '' ? request.resource.resource : request.resource.resource + '.' + variables.group` },
        // A Namespace is cluster-scoped, whatever the request's namespace says.
        { name: 'clusterScoped', expression: `variables.ns == '' || variables.resource == 'namespaces'` },
      ],
      validations: [
        {
          expression: `variables.clusterScoped || ${ownName('variables.ns')}`,
          message: message(`writes only in its own namespaces (${prefix}…)`),
          reason: 'Forbidden',
        },
        {
          expression: `!variables.clusterScoped || variables.resource in ${celList([...owned, ...SELF_REVIEWS])} || variables.group.startsWith(${cel(groupPrefix)})`,
          messageExpression: `${cel(message('may not write cluster-scoped '))} + request.resource.resource`,
          reason: 'Forbidden',
        },
        {
          expression: `!variables.clusterScoped || !(variables.resource in ${celList(owned.filter((r) => r !== CRDS))}) || ${ownName('variables.name')}`,
          messageExpression: `${cel(message(`names its cluster-scoped objects ${prefix}…; refused: `))} + request.resource.resource`,
          reason: 'Forbidden',
        },
        {
          expression: `variables.resource != ${cel(CRDS)} || (variables.obj.spec.group.startsWith(${cel(groupPrefix)}) && variables.name == variables.obj.spec.names.plural + '.' + variables.obj.spec.group)`,
          message: message(`defines resources only in its own API groups (${groupPrefix}…)`),
          reason: 'Forbidden',
        },
        {
          // A conversion webhook is called by the member's apiserver: only a service of the tenant's.
          expression: `variables.resource != ${cel(CRDS)} || !${writing} || !has(variables.obj.spec.conversion) || !has(variables.obj.spec.conversion.webhook) || (!has(variables.obj.spec.conversion.webhook.clientConfig.url) && has(variables.obj.spec.conversion.webhook.clientConfig.service) && ${ownName('variables.obj.spec.conversion.webhook.clientConfig.service.namespace')})`,
          message: message(`a conversion webhook must be a service in the tenant's own namespaces`),
          reason: 'Forbidden',
        },
        {
          // Aggregation would copy other roles' rules into the tenant's, or the tenant's into others'.
          expression: `variables.resource != ${cel(CLUSTERROLES)} || !${writing} || (!has(variables.obj.aggregationRule) && !(has(variables.obj.metadata.labels) && variables.obj.metadata.labels.exists(k, k.startsWith('rbac.authorization.k8s.io/aggregate-to-'))))`,
          message: message('ClusterRoles may not aggregate or be aggregated (aggregationRule, rbac.authorization.k8s.io/aggregate-to-* labels)'),
          reason: 'Forbidden',
        },
        {
          expression: `!(variables.resource in ${celList([ROLEBINDINGS, CLUSTERROLEBINDINGS])}) || !${writing} || !has(variables.obj.subjects) || variables.obj.subjects.all(s, ${subjectOk})`,
          message: message(`binds only its own users, groups and service accounts (of namespaces ${prefix}…)`),
          reason: 'Forbidden',
        },
        {
          // The tenant may widen its own ClusterRoles (escalate): bound cluster-wide they would widen it everywhere.
          expression: `variables.resource != ${cel(CLUSTERROLEBINDINGS)} || !${writing} || !variables.obj.roleRef.name.startsWith(${cel(prefix)})`,
          message: message('binds its own ClusterRoles only in its namespaces (a RoleBinding), not cluster-wide'),
          reason: 'Forbidden',
        },
        {
          expression: `variables.resource != ${cel(ROLEBINDINGS)} || variables.name != ${cel(NAMESPACE_ADMINS_BINDING)}`,
          message: message(`the RoleBinding ${NAMESPACE_ADMINS_BINDING} is the platform's`),
          reason: 'Forbidden',
        },
      ],
    },
  };
}

export function makeAdmissionPolicyBinding(spec: TenantSpec): Manifest {
  return {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicyBinding',
    metadata: { name: admissionPolicyName(spec), labels: policyLabels(spec) },
    spec: { policyName: admissionPolicyName(spec), validationActions: ['Deny'] },
  };
}
