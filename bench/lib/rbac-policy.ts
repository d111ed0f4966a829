/**
 * A member's RBAC objects as a real one holds them, for the authorization bench: the
 * kube-apiserver's bootstrap policy (the 68 ClusterRoles, 49 ClusterRoleBindings, 7 Roles and 7
 * RoleBindings of a v1.34 member with its controller manager, by name, subject and rule count;
 * admin, edit and view aggregated from the aggregate-to-* roles as the controller writes them),
 * plus a fleet's own bindings: teams and departments given `edit` or `view` in their namespaces by
 * RoleBindings naming their groups, as a GitOps rollout makes them, the same on every member.
 * Deterministic: a run can be repeated exactly.
 */
import type { PolicyRule, RoleRef, Subject } from '../../src/api/rbac.js';

const RBAC = 'rbac.authorization.k8s.io';
const READ = ['get', 'list', 'watch'];
const WRITE = ['create', 'delete', 'deletecollection', 'patch', 'update'];
const ALL = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];

const rule = (verbs: string[], apiGroups: string[], resources: string[]): PolicyRule => ({ verbs, apiGroups, resources });

// As a v1.34 member serves them.
const AGGREGATE_TO_VIEW: PolicyRule[] = [
  rule(READ, [''], ['configmaps', 'endpoints', 'persistentvolumeclaims', 'persistentvolumeclaims/status', 'pods', 'replicationcontrollers', 'replicationcontrollers/scale', 'serviceaccounts', 'services', 'services/status']),
  rule(READ, [''], ['bindings', 'events', 'limitranges', 'namespaces/status', 'pods/log', 'pods/status', 'replicationcontrollers/status', 'resourcequotas', 'resourcequotas/status']),
  rule(READ, [''], ['namespaces']),
  rule(READ, ['discovery.k8s.io'], ['endpointslices']),
  rule(READ, ['apps'], ['controllerrevisions', 'daemonsets', 'daemonsets/status', 'deployments', 'deployments/scale', 'deployments/status', 'replicasets', 'replicasets/scale', 'replicasets/status', 'statefulsets', 'statefulsets/scale', 'statefulsets/status']),
  rule(READ, ['autoscaling'], ['horizontalpodautoscalers', 'horizontalpodautoscalers/status']),
  rule(READ, ['batch'], ['cronjobs', 'cronjobs/status', 'jobs', 'jobs/status']),
  rule(READ, ['extensions'], ['daemonsets', 'daemonsets/status', 'deployments', 'deployments/scale', 'deployments/status', 'ingresses', 'ingresses/status', 'networkpolicies', 'replicasets', 'replicasets/scale', 'replicasets/status', 'replicationcontrollers/scale']),
  rule(READ, ['policy'], ['poddisruptionbudgets', 'poddisruptionbudgets/status']),
  rule(READ, ['networking.k8s.io'], ['ingresses', 'ingresses/status', 'networkpolicies']),
  rule(READ, ['resource.k8s.io'], ['resourceclaims', 'resourceclaims/status', 'resourceclaimtemplates']),
];
const AGGREGATE_TO_EDIT: PolicyRule[] = [
  rule(READ, [''], ['pods/attach', 'pods/exec', 'pods/portforward', 'pods/proxy', 'secrets', 'services/proxy']),
  rule(['impersonate'], [''], ['serviceaccounts']),
  rule(WRITE, [''], ['pods', 'pods/attach', 'pods/exec', 'pods/portforward', 'pods/proxy']),
  rule(['create'], [''], ['pods/eviction']),
  rule(WRITE, [''], ['configmaps', 'events', 'persistentvolumeclaims', 'replicationcontrollers', 'replicationcontrollers/scale', 'secrets', 'serviceaccounts', 'services', 'services/proxy']),
  rule(['create'], [''], ['serviceaccounts/token']),
  rule(WRITE, ['apps'], ['daemonsets', 'deployments', 'deployments/rollback', 'deployments/scale', 'replicasets', 'replicasets/scale', 'statefulsets', 'statefulsets/scale']),
  rule(WRITE, ['autoscaling'], ['horizontalpodautoscalers']),
  rule(WRITE, ['batch'], ['cronjobs', 'jobs']),
  rule(WRITE, ['extensions'], ['daemonsets', 'deployments', 'deployments/rollback', 'deployments/scale', 'ingresses', 'networkpolicies', 'replicasets', 'replicasets/scale', 'replicationcontrollers/scale']),
  rule(WRITE, ['policy'], ['poddisruptionbudgets']),
  rule(WRITE, ['networking.k8s.io'], ['ingresses', 'networkpolicies']),
  rule(ALL, ['coordination.k8s.io'], ['leases']),
  rule(WRITE, ['resource.k8s.io'], ['resourceclaims', 'resourceclaimtemplates']),
];
const AGGREGATE_TO_ADMIN: PolicyRule[] = [
  rule(['create'], ['authorization.k8s.io'], ['localsubjectaccessreviews']),
  rule(ALL, [RBAC], ['rolebindings', 'roles']),
];

/** The roles whose rules callers of the bench are granted, as the member serves them. */
const WRITTEN: Record<string, PolicyRule[]> = {
  'cluster-admin': [rule(['*'], ['*'], ['*']), { verbs: ['*'], nonResourceURLs: ['*'] }],
  'system:aggregate-to-admin': AGGREGATE_TO_ADMIN,
  'system:aggregate-to-edit': AGGREGATE_TO_EDIT,
  'system:aggregate-to-view': AGGREGATE_TO_VIEW,
  admin: [...AGGREGATE_TO_EDIT, ...AGGREGATE_TO_ADMIN, ...AGGREGATE_TO_VIEW],
  edit: [...AGGREGATE_TO_EDIT, ...AGGREGATE_TO_VIEW],
  view: AGGREGATE_TO_VIEW,
  'system:basic-user': [rule(['create'], ['authorization.k8s.io'], ['selfsubjectaccessreviews', 'selfsubjectrulesreviews']), rule(['create'], ['authentication.k8s.io'], ['selfsubjectreviews'])],
  'system:discovery': [{ verbs: ['get'], nonResourceURLs: ['/api', '/api/*', '/apis', '/apis/*', '/healthz', '/livez', '/openapi', '/openapi/*', '/readyz', '/version', '/version/'] }],
  'system:public-info-viewer': [{ verbs: ['get'], nonResourceURLs: ['/healthz', '/livez', '/readyz', '/version', '/version/'] }],
};

/** The other bootstrap ClusterRoles, by name and rule count (their rules are drawn below). */
const DRAWN: [string, number][] = [
  ['system:auth-delegator', 2], ['system:certificates.k8s.io:certificatesigningrequests:nodeclient', 1],
  ['system:certificates.k8s.io:certificatesigningrequests:selfnodeclient', 1], ['system:certificates.k8s.io:kube-apiserver-client-approver', 1],
  ['system:certificates.k8s.io:kube-apiserver-client-kubelet-approver', 1], ['system:certificates.k8s.io:kubelet-serving-approver', 1],
  ['system:certificates.k8s.io:legacy-unknown-approver', 1], ['system:heapster', 2], ['system:kube-aggregator', 1],
  ['system:kube-controller-manager', 11], ['system:kube-dns', 1], ['system:kube-scheduler', 25], ['system:kubelet-api-admin', 4],
  ['system:monitoring', 2], ['system:node', 25], ['system:node-bootstrapper', 1], ['system:node-problem-detector', 3],
  ['system:node-proxier', 5], ['system:persistent-volume-provisioner', 5], ['system:service-account-issuer-discovery', 1],
  ['system:volume-scheduler', 3],
];
/** The controllers' roles (system:controller:<name>), each bound to its service account in kube-system. */
const CONTROLLERS: [string, number][] = [
  ['attachdetach-controller', 8], ['certificate-controller', 6], ['clusterrole-aggregation-controller', 1], ['cronjob-controller', 6],
  ['daemon-set-controller', 8], ['deployment-controller', 6], ['disruption-controller', 9], ['endpoint-controller', 4],
  ['endpointslice-controller', 4], ['endpointslicemirroring-controller', 5], ['ephemeral-volume-controller', 4], ['expand-controller', 5],
  ['generic-garbage-collector', 2], ['horizontal-pod-autoscaler', 8], ['job-controller', 5], ['legacy-service-account-token-cleaner', 2],
  ['namespace-controller', 3], ['node-controller', 5], ['persistent-volume-binder', 10], ['pod-garbage-collector', 3],
  ['pv-protection-controller', 2], ['pvc-protection-controller', 3], ['replicaset-controller', 5], ['replication-controller', 5],
  ['resource-claim-controller', 6], ['resourcequota-controller', 3], ['root-ca-cert-publisher', 2], ['route-controller', 3],
  ['selinux-warning-controller', 5], ['service-account-controller', 2], ['service-cidrs-controller', 5], ['service-controller', 4],
  ['statefulset-controller', 10], ['ttl-after-finished-controller', 2], ['ttl-controller', 2], ['validatingadmissionpolicy-status-controller', 3],
  ['volumeattributesclass-protection-controller', 4],
];

// What drawn rules name: the resources and verbs the bootstrap roles' rules are made of.
const POOL: [string[], string[]][] = [
  [[''], ['pods']], [[''], ['pods/status']], [[''], ['nodes']], [[''], ['nodes/status']], [[''], ['events']], [['', 'events.k8s.io'], ['events']],
  [[''], ['endpoints']], [[''], ['services']], [[''], ['persistentvolumes']], [[''], ['persistentvolumeclaims']], [[''], ['configmaps']],
  [[''], ['secrets']], [[''], ['serviceaccounts']], [[''], ['namespaces']], [['apps'], ['deployments', 'replicasets']],
  [['apps', 'extensions'], ['daemonsets']], [['apps'], ['statefulsets']], [['batch'], ['jobs']], [['batch'], ['cronjobs']],
  [['coordination.k8s.io'], ['leases']], [['storage.k8s.io'], ['storageclasses', 'csinodes']], [['discovery.k8s.io'], ['endpointslices']],
  [['certificates.k8s.io'], ['certificatesigningrequests']], [['policy'], ['poddisruptionbudgets']], [['resource.k8s.io'], ['resourceclaims']],
];
const VERB_SETS = [READ, ['get', 'list', 'update', 'watch'], ['create', 'patch', 'update'], ['update'], ['create', 'delete', 'get', 'list', 'patch', 'update', 'watch'], ['get']];

function drawnRules(name: string, count: number): PolicyRule[] {
  let h = 0;
  for (let i = 0; i < name.length; i++) h = (h * 31 + name.charCodeAt(i)) >>> 0;
  return Array.from({ length: count }, (_, k) => {
    const [apiGroups, resources] = POOL[(h + k * 7) % POOL.length]!;
    return rule(VERB_SETS[(h + k) % VERB_SETS.length]!, apiGroups, resources);
  });
}

export interface RbacObject {
  apiVersion: string;
  kind: 'ClusterRole' | 'ClusterRoleBinding' | 'Role' | 'RoleBinding';
  metadata: { name: string; namespace?: string; uid: string; resourceVersion: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  rules?: PolicyRule[];
  subjects?: Subject[];
  roleRef?: RoleRef & { apiGroup: string };
  aggregationRule?: unknown;
}

export interface RbacObjects {
  clusterRoles: RbacObject[];
  clusterRoleBindings: RbacObject[];
  roles: RbacObject[];
  roleBindings: RbacObject[];
}

const BOOTSTRAP = { labels: { 'kubernetes.io/bootstrapping': 'rbac-defaults' }, annotations: { 'rbac.authorization.kubernetes.io/autoupdate': 'true' } };
const group = (name: string): Subject & { apiGroup: string } => ({ kind: 'Group', apiGroup: RBAC, name });
const user = (name: string): Subject & { apiGroup: string } => ({ kind: 'User', apiGroup: RBAC, name });
const serviceAccount = (name: string, namespace = 'kube-system'): Subject => ({ kind: 'ServiceAccount', name, namespace });

/** A fleet's own bindings on top of the bootstrap policy. */
export interface FleetBindings {
  /** Groups bound to cluster-admin by a ClusterRoleBinding (a platform team). */
  clusterAdminGroups: string[];
  /** RoleBindings: a subject given a ClusterRole in a namespace. */
  roleBindings: { namespace: string; role: string; subject: Subject }[];
}

/** One member's RBAC objects: the bootstrap policy and the fleet's bindings. */
export function memberRbac(cluster: string, fleet: FleetBindings): RbacObjects {
  let uid = 0;
  const meta = (name: string, namespace?: string, bootstrap = true): RbacObject['metadata'] => ({
    name,
    ...(namespace !== undefined ? { namespace } : {}),
    uid: `${cluster}-rbac-${++uid}`,
    resourceVersion: String(100 + uid),
    ...(bootstrap ? BOOTSTRAP : {}),
  });
  const clusterRole = (name: string, rules: PolicyRule[], aggregate?: string): RbacObject => ({
    apiVersion: `${RBAC}/v1`,
    kind: 'ClusterRole',
    metadata: meta(name),
    rules,
    ...(aggregate ? { aggregationRule: { clusterRoleSelectors: [{ matchLabels: { [`${RBAC}/aggregate-to-${aggregate}`]: 'true' } }] } } : {}),
  });
  const crb = (name: string, role: string, subjects: Subject[], bootstrap = true): RbacObject => ({
    apiVersion: `${RBAC}/v1`, kind: 'ClusterRoleBinding', metadata: meta(name, undefined, bootstrap), subjects, roleRef: { apiGroup: RBAC, kind: 'ClusterRole', name: role },
  });
  const rb = (namespace: string, name: string, kind: 'Role' | 'ClusterRole', role: string, subjects: Subject[], bootstrap = true): RbacObject => ({
    apiVersion: `${RBAC}/v1`, kind: 'RoleBinding', metadata: meta(name, namespace, bootstrap), subjects, roleRef: { apiGroup: RBAC, kind, name: role },
  });

  const clusterRoles: RbacObject[] = [
    ...Object.entries(WRITTEN).map(([name, rules]) => clusterRole(name, rules, ['admin', 'edit', 'view'].includes(name) ? name : undefined)),
    ...DRAWN.map(([name, n]) => clusterRole(name, drawnRules(name, n))),
    ...CONTROLLERS.map(([name, n]) => clusterRole(`system:controller:${name}`, drawnRules(name, n))),
  ];
  const clusterRoleBindings: RbacObject[] = [
    crb('cluster-admin', 'cluster-admin', [group('system:masters')]),
    crb('system:basic-user', 'system:basic-user', [group('system:authenticated')]),
    crb('system:discovery', 'system:discovery', [group('system:authenticated')]),
    crb('system:public-info-viewer', 'system:public-info-viewer', [group('system:authenticated'), group('system:unauthenticated')]),
    crb('system:kube-controller-manager', 'system:kube-controller-manager', [user('system:kube-controller-manager')]),
    crb('system:kube-dns', 'system:kube-dns', [serviceAccount('kube-dns')]),
    crb('system:kube-scheduler', 'system:kube-scheduler', [user('system:kube-scheduler')]),
    crb('system:monitoring', 'system:monitoring', [group('system:monitoring')]),
    crb('system:node', 'system:node', []),
    crb('system:node-proxier', 'system:node-proxier', [user('system:kube-proxy')]),
    crb('system:service-account-issuer-discovery', 'system:service-account-issuer-discovery', [group('system:serviceaccounts')]),
    crb('system:volume-scheduler', 'system:volume-scheduler', [user('system:kube-scheduler')]),
    ...CONTROLLERS.map(([name]) => crb(`system:controller:${name}`, `system:controller:${name}`, [serviceAccount(name)])),
    ...fleet.clusterAdminGroups.map((g) => crb(`fleet:${g}`, 'cluster-admin', [group(g)], false)),
  ];
  const roles: RbacObject[] = [
    ['kube-public', 'system:controller:bootstrap-signer', 3],
    ['kube-system', 'extension-apiserver-authentication-reader', 1],
    ['kube-system', 'system::leader-locking-kube-controller-manager', 4],
    ['kube-system', 'system::leader-locking-kube-scheduler', 4],
    ['kube-system', 'system:controller:bootstrap-signer', 1],
    ['kube-system', 'system:controller:cloud-provider', 1],
    ['kube-system', 'system:controller:token-cleaner', 2],
  ].map(([namespace, name, n]) => ({ apiVersion: `${RBAC}/v1`, kind: 'Role' as const, metadata: meta(name as string, namespace as string), rules: drawnRules(name as string, n as number) }));
  const roleBindings: RbacObject[] = [
    rb('kube-public', 'system:controller:bootstrap-signer', 'Role', 'system:controller:bootstrap-signer', [serviceAccount('bootstrap-signer')]),
    rb('kube-system', 'system::extension-apiserver-authentication-reader', 'Role', 'extension-apiserver-authentication-reader', [user('system:kube-controller-manager'), user('system:kube-scheduler')]),
    rb('kube-system', 'system::leader-locking-kube-controller-manager', 'Role', 'system::leader-locking-kube-controller-manager', [user('system:kube-controller-manager'), serviceAccount('kube-controller-manager'), serviceAccount('leader-election-controller')]),
    rb('kube-system', 'system::leader-locking-kube-scheduler', 'Role', 'system::leader-locking-kube-scheduler', [user('system:kube-scheduler'), serviceAccount('kube-scheduler')]),
    rb('kube-system', 'system:controller:bootstrap-signer', 'Role', 'system:controller:bootstrap-signer', [serviceAccount('bootstrap-signer')]),
    rb('kube-system', 'system:controller:cloud-provider', 'Role', 'system:controller:cloud-provider', [serviceAccount('cloud-provider')]),
    rb('kube-system', 'system:controller:token-cleaner', 'Role', 'system:controller:token-cleaner', [serviceAccount('token-cleaner')]),
    ...fleet.roleBindings.map((b, i) => rb(b.namespace, `fleet-${b.role}-${i}`, 'ClusterRole', b.role, [b.subject], false)),
  ];
  return { clusterRoles, clusterRoleBindings, roles, roleBindings };
}

export { group as groupSubject, user as userSubject };
