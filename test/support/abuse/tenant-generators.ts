import fc from 'fast-check';
import type { AbuseCase, BodySpec } from './generators.js';

/**
 * fast-check generators of a tenant's hostile requests: acme (a tenant admin, cluster-admin on
 * every member) aiming at globex's and the fleet's objects through every form a path can take,
 * every verb, bodies and patches that name foreign namespaces, subjects, roles and groups, and
 * impersonation. Cases are the common suite's `AbuseCase`, so the runner, the raw client and the
 * reports serve both suites.
 */
export const TENANT = 'acme';
export const OTHER_TENANT = 'globex';
/** acme's namespaces as it names them (on the members: `acme-web`, `acme-db`). */
export const OWN_NAMESPACES = ['web', 'db'] as const;
/** globex's namespaces, member names. */
export const GLOBEX_NAMESPACES = ['globex-web', 'globex-db'] as const;
/** The fleet's namespaces the suite aims at (no tenant's). */
export const FLEET_NAMESPACES = ['abuse-canary', 'kube-system', 'default', 'kube-public'] as const;
/** Cluster-scoped canaries: globex's (member names) and the fleet's. */
export const GLOBEX_CLUSTER_OBJECT = 'globex-canary';
export const FLEET_CLUSTER_OBJECT = 'abuse-fleet-canary';
export const GLOBEX_CRD_GROUP = 'globex.example.com';
export const FLEET_CRD_GROUP = 'fleet.example.com';
/** A prefix of Impersonate-Group values: `fan-<case>-<i>` ties the reviews flotilla sends about them to the case. */
export const FAN_OUT_GROUP = 'fan-';

const FLEET_PATH = '/apis/search.flotilla.io/v1alpha1/fleet';
const MEMBERS = ['east', 'west', 'north'] as const;

interface Kind {
  group: string;
  version: string;
  resource: string;
  kind: string;
  namespaced: boolean;
}

const k = (group: string, version: string, resource: string, kind: string, namespaced: boolean): Kind => ({ group, version, resource, kind, namespaced });
const RBAC = 'rbac.authorization.k8s.io';
export const KINDS: readonly Kind[] = [
  k('', 'v1', 'configmaps', 'ConfigMap', true),
  k('', 'v1', 'secrets', 'Secret', true),
  k('', 'v1', 'serviceaccounts', 'ServiceAccount', true),
  k('', 'v1', 'pods', 'Pod', true),
  k('', 'v1', 'services', 'Service', true),
  k('', 'v1', 'events', 'Event', true),
  k('apps', 'v1', 'deployments', 'Deployment', true),
  k(RBAC, 'v1', 'roles', 'Role', true),
  k(RBAC, 'v1', 'rolebindings', 'RoleBinding', true),
  k(GLOBEX_CRD_GROUP, 'v1', 'widgets', 'Widget', true),
  k('example.com', 'v1', 'widgets', 'Widget', true),
  k('', 'v1', 'namespaces', 'Namespace', false),
  k(RBAC, 'v1', 'clusterroles', 'ClusterRole', false),
  k(RBAC, 'v1', 'clusterrolebindings', 'ClusterRoleBinding', false),
  k('apiextensions.k8s.io', 'v1', 'customresourcedefinitions', 'CustomResourceDefinition', false),
  k('', 'v1', 'nodes', 'Node', false),
  k('storage.k8s.io', 'v1', 'storageclasses', 'StorageClass', false),
  k('', 'v1', 'persistentvolumes', 'PersistentVolume', false),
  k(FLEET_CRD_GROUP, 'v1', 'gizmos', 'Gizmo', false),
  k('authorization.k8s.io', 'v1', 'subjectaccessreviews', 'SubjectAccessReview', false),
  k('authorization.k8s.io', 'v1', 'selfsubjectaccessreviews', 'SelfSubjectAccessReview', false),
  k('admissionregistration.k8s.io', 'v1', 'validatingwebhookconfigurations', 'ValidatingWebhookConfiguration', false),
];

/**
 * Names acme writes that already start with its prefix (`acme-acme-own` on the members): an answer
 * may name them as acme wrote them, whichever earlier case stored them. None is `acme-` and another
 * name of these pools, which would read the same as that name left in the member's form.
 */
export const TENANT_PREFIXED_NAMES = ['acme-own', 'acme-twice'] as const;

/** Namespaces as a path or body names them: acme's own, globex's and the fleet's in member form, double-prefixed, unknown. */
const NAMESPACES = [...OWN_NAMESPACES, ...OWN_NAMESPACES, ...GLOBEX_NAMESPACES, ...FLEET_NAMESPACES, 'acme-web', 'acme-globex-web', 'globex', 'new'] as const;
const NAMES = [
  'canary', 'marker', 'canary-east', 'default', 'kube-root-ca.crt', 'mine', GLOBEX_CLUSTER_OBJECT, FLEET_CLUSTER_OBJECT, TENANT_PREFIXED_NAMES[1], 'web', 'db', ...GLOBEX_NAMESPACES, 'kube-system', 'abuse-canary',
  'cluster-admin', 'view', 'admin', 'system:controller:namespace-controller', 'system:pt', `widgets.${GLOBEX_CRD_GROUP}`, 'widgets.example.com', `gizmos.${FLEET_CRD_GROUP}`, 'fleet-gizmo', 'kwok-node-0', 'abuse-tenant-admins-globex',
] as const;
const SUBRESOURCES = [
  'status', 'log', 'exec?command=id&stdout=true', 'attach?stdout=true', 'portforward?ports=80', 'proxy', 'proxy/', 'proxy/configz', 'proxy/metrics', 'finalize', 'eviction', 'scale', 'token', 'binding', 'ephemeralcontainers',
] as const;

// ---------------------------------------------------------------------------------------------
// Paths in every form

const prefixArb = fc.oneof(
  { weight: 4, arbitrary: fc.constant('') },
  { weight: 4, arbitrary: fc.constantFrom(...MEMBERS).map((m) => `/clusters/${m}`) },
  { weight: 2, arbitrary: fc.constant(FLEET_PATH) },
  { weight: 2, arbitrary: fc.constantFrom(...MEMBERS).map((m) => `${FLEET_PATH}/clusters/${m}`) },
);

/** How a path's text is disguised: letters percent-encoded (any segment), doubled or trailing slashes, case. */
const disguiseArb = fc.record({
  encode: fc.array(fc.nat(), { maxLength: 4 }),
  upper: fc.array(fc.nat(), { maxLength: 2 }),
  encodeWhole: fc.option(fc.nat(), { nil: undefined }),
  doubleSlash: fc.option(fc.nat(), { nil: undefined }),
  trailingSlash: fc.boolean(),
});

type Disguise = { encode: number[]; upper: number[]; encodeWhole: number | undefined; doubleSlash: number | undefined; trailingSlash: boolean };

const pct = (ch: string) => `%${ch.charCodeAt(0).toString(16).padStart(2, '0')}`;

/** `picks` choose letters anywhere in the path (the prefix's `clusters` and `api` as much as names). */
export function disguise(path: string, d: Disguise): string {
  const segs = path.split('/');
  if (d.encodeWhole !== undefined) {
    const i = 1 + (d.encodeWhole % Math.max(1, segs.length - 1));
    if (segs[i]) segs[i] = [...segs[i]!].map((ch) => (/[a-z]/.test(ch) ? pct(ch) : ch)).join('');
  }
  // Escapes made already stay whole: only plain letters are upper-cased or encoded.
  const tokens = segs.join('/').match(/%[0-9a-f]{2}|[^]/gi) ?? [];
  for (const p of d.upper) {
    const i = p % tokens.length;
    if (/^[a-z]$/.test(tokens[i]!)) tokens[i] = tokens[i]!.toUpperCase();
  }
  for (const p of d.encode) {
    const i = p % tokens.length;
    if (/^[a-zA-Z]$/.test(tokens[i]!)) tokens[i] = pct(tokens[i]!);
  }
  let out = tokens.join('');
  if (d.doubleSlash !== undefined) {
    const slashes = [...out.matchAll(/\//g)].map((m) => m.index);
    const at = slashes[d.doubleSlash % slashes.length]!;
    out = `${out.slice(0, at)}/${out.slice(at)}`;
  }
  return d.trailingSlash ? `${out}/` : out;
}

function base(kind: Kind): string {
  return kind.group ? `/apis/${kind.group}/${kind.version}` : `/api/${kind.version}`;
}

// ---------------------------------------------------------------------------------------------
// Bodies: objects and patches that name what is not acme's

const USERS = ['bob', 'alice', 'admin@globex', 'admin@acme', 'dev@acme', 'system:admin', 'nobody', 'system:serviceaccount:globex-web:default', 'system:serviceaccount:web:default', 'system:serviceaccount:kube-system:namespace-controller', 'system:kube-controller-manager'] as const;
const GROUPS = ['system:masters', 'globex-admins', 'acme-admins', 'acme-devs', 'system:authenticated', 'system:serviceaccounts', 'system:serviceaccounts:globex-web', 'system:serviceaccounts:web', 'system:nodes'] as const;

const subjectArb = fc.oneof(
  fc.constantFrom(...USERS).map((name) => ({ kind: 'User', apiGroup: RBAC, name })),
  fc.constantFrom(...GROUPS).map((name) => ({ kind: 'Group', apiGroup: RBAC, name })),
  fc.record({ name: fc.constantFrom('default', 'canary', 'namespace-controller'), namespace: fc.constantFrom(...NAMESPACES) }).map((s) => ({ kind: 'ServiceAccount', ...s })),
);
const roleRefArb = fc.oneof(
  fc.constantFrom('cluster-admin', 'admin', 'edit', 'view', 'system:controller:namespace-controller', GLOBEX_CLUSTER_OBJECT, FLEET_CLUSTER_OBJECT, 'mine', TENANT_PREFIXED_NAMES[0]).map((name) => ({ apiGroup: RBAC, kind: 'ClusterRole', name })),
  fc.constantFrom('canary', 'mine').map((name) => ({ apiGroup: RBAC, kind: 'Role', name })),
);
const AGGREGATE_LABELS = ['rbac.authorization.k8s.io/aggregate-to-view', 'rbac.authorization.k8s.io/aggregate-to-edit', 'rbac.authorization.k8s.io/aggregate-to-admin', 'rbac.authorization.k8s.io/aggregate-to-cluster-reader'] as const;
const ruleArb = fc.constantFrom(
  { apiGroups: ['*'], resources: ['*'], verbs: ['*'] },
  { apiGroups: [''], resources: ['secrets'], verbs: ['get', 'list'] },
  { apiGroups: [''], resources: ['namespaces'], verbs: ['delete'], resourceNames: ['globex-web'] },
  { nonResourceURLs: ['*'], verbs: ['*'] },
  { apiGroups: [RBAC], resources: ['clusterrolebindings'], verbs: ['escalate', 'bind', 'impersonate'] },
);
const ownerRefArb = fc.record({
  apiVersion: fc.constantFrom('v1', `${RBAC}/v1`, 'apps/v1'),
  kind: fc.constantFrom('Namespace', 'ClusterRole', 'ConfigMap', 'Deployment'),
  name: fc.constantFrom(...NAMES),
  uid: fc.constantFrom('00000000-0000-0000-0000-000000000000', 'abcd'),
});

/** `arb` in one case of `outOf` (else absent): each hostile field rare enough that the others still pass validation. */
function rarely<T>(arb: fc.Arbitrary<T>, outOf: number): fc.Arbitrary<T | undefined> {
  return fc.oneof({ weight: outOf - 1, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: arb });
}

const metadataArb = fc
  .record({
    name: fc.oneof({ weight: 1, arbitrary: fc.constant(undefined) }, { weight: 5, arbitrary: fc.constantFrom(...NAMES) }),
    generateName: rarely(fc.constantFrom('system:pt-', 'globex-', 'acme-', 'x-', 'kube-'), 4),
    namespace: rarely(fc.constantFrom(...NAMESPACES), 2),
    labels: rarely(fc.dictionary(fc.constantFrom(...AGGREGATE_LABELS, 'app', 'abuse.flotilla.io/marker'), fc.constantFrom('true', 'x'), { minKeys: 1, maxKeys: 2 }), 3),
    annotations: rarely(fc.dictionary(fc.constantFrom('search.flotilla.io/cluster', 'x'), fc.constantFrom('east', 'globex-web'), { minKeys: 1, maxKeys: 1 }), 10),
    // One: two with the same uid are the member's own 500.
    ownerReferences: rarely(ownerRefArb.map((o) => [o]), 8),
    resourceVersion: rarely(fc.constantFrom('0', 'eyJlYXN0IjoiMSJ9'), 20),
  })
  .map((md) => Object.fromEntries(Object.entries(md).filter(([, v]) => v !== undefined)));

/** The kind-specific rest of an object of `kind`: what names other objects. */
function specArb(kind: Kind): fc.Arbitrary<Record<string, unknown>> {
  switch (kind.resource) {
    case 'rolebindings':
    case 'clusterrolebindings':
      return fc.record({ roleRef: roleRefArb, subjects: fc.array(subjectArb, { minLength: 1, maxLength: 3 }) });
    case 'roles':
      return fc.record({ rules: fc.array(ruleArb, { maxLength: 2 }) });
    case 'clusterroles':
      return fc.record(
        { rules: fc.array(ruleArb, { maxLength: 2 }), aggregationRule: fc.constantFrom({ clusterRoleSelectors: [{ matchLabels: { 'abuse.flotilla.io/marker': 'x' } }] }, { clusterRoleSelectors: [{ matchExpressions: [{ key: 'kubernetes.io/bootstrapping', operator: 'Exists' }] }] }) },
        { requiredKeys: ['rules'] },
      );
    case 'customresourcedefinitions':
      return fc.constantFrom(GLOBEX_CRD_GROUP, FLEET_CRD_GROUP, 'example.com', 'acme.example.com', 'own.example.com').chain((group) =>
        fc.constantFrom('Namespaced', 'Cluster').map((scope) => ({
          spec: { group, scope, names: { plural: 'widgets', singular: 'widget', kind: 'Widget' }, versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } }] },
        })),
      );
    case 'configmaps':
      return fc.constant({ data: { pwned: 'acme' } });
    case 'secrets':
      return fc.constant({ stringData: { pwned: 'acme' } });
    case 'pods':
      return fc.constantFrom('default', 'canary').map((sa) => ({ spec: { serviceAccountName: sa, containers: [{ name: 'c', image: 'example.com/x:1' }] } }));
    case 'subjectaccessreviews':
    case 'selfsubjectaccessreviews':
      return fc.record({ user: fc.constantFrom(...USERS), groups: fc.array(fc.constantFrom(...GROUPS), { maxLength: 2 }), ns: fc.constantFrom(...NAMESPACES) }).map((r) => ({
        spec: { user: r.user, groups: r.groups, resourceAttributes: { namespace: r.ns, verb: 'get', resource: 'secrets' } },
      }));
    default:
      return fc.constant({});
  }
}

function objectArb(kind: Kind): fc.Arbitrary<Record<string, unknown>> {
  return fc.tuple(metadataArb, specArb(kind)).map(([metadata, rest]) => ({ apiVersion: kind.group ? `${kind.group}/${kind.version}` : kind.version, kind: kind.kind, metadata, ...rest }));
}

const jsonPatchArb = fc.array(
  fc.oneof(
    fc.constantFrom(...NAMESPACES).map((value) => ({ op: 'replace', path: '/metadata/namespace', value })),
    fc.constantFrom(...NAMES).map((value) => ({ op: 'replace', path: '/metadata/name', value })),
    subjectArb.map((value) => ({ op: 'add', path: '/subjects/-', value })),
    roleRefArb.map((value) => ({ op: 'replace', path: '/roleRef', value })),
    fc.constantFrom(...AGGREGATE_LABELS).map((l) => ({ op: 'add', path: `/metadata/labels/${l.replace('/', '~1')}`, value: 'true' })),
    fc.constant({ op: 'add', path: '/aggregationRule', value: { clusterRoleSelectors: [{ matchLabels: { 'kubernetes.io/bootstrapping': 'rbac-defaults' } }] } }),
    fc.constant({ op: 'replace', path: '/spec/group', value: GLOBEX_CRD_GROUP }),
    ownerRefArb.map((value) => ({ op: 'add', path: '/metadata/ownerReferences', value: [value] })),
  ),
  { minLength: 1, maxLength: 3 },
);

type PatchType = 'application/json-patch+json' | 'application/merge-patch+json' | 'application/strategic-merge-patch+json' | 'application/apply-patch+yaml';

function writeBodyArb(kind: Kind, method: string): fc.Arbitrary<{ body: string; contentType: string }> {
  if (method !== 'PATCH') return objectArb(kind).map((o) => ({ body: JSON.stringify(o), contentType: 'application/json' }));
  return fc.constantFrom<PatchType>('application/json-patch+json', 'application/merge-patch+json', 'application/strategic-merge-patch+json', 'application/apply-patch+yaml').chain(
    (contentType): fc.Arbitrary<{ body: string; contentType: string }> =>
      contentType === 'application/json-patch+json'
        ? jsonPatchArb.map((p) => ({ body: JSON.stringify(p), contentType }))
        : objectArb(kind).map((o) => ({ body: JSON.stringify(o), contentType })),
  );
}

// ---------------------------------------------------------------------------------------------
// Headers

const ACCEPTS = [
  'application/json', 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json', 'application/vnd.kubernetes.protobuf', 'application/vnd.kubernetes.protobuf,application/json',
  'application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io,application/json', 'application/yaml', '*/*',
] as const;

const impersonationArb: fc.Arbitrary<[string, string][]> = fc.oneof(
  fc.record({ user: fc.constantFrom(...USERS), groups: fc.array(fc.constantFrom(...GROUPS), { maxLength: 3 }) }).map(({ user, groups }): [string, string][] => [['Impersonate-User', user], ...groups.map((g): [string, string] => ['Impersonate-Group', g])]),
  fc.constantFrom(...GROUPS).map((g): [string, string][] => [['Impersonate-Group', g]]),
  fc.constantFrom<[string, string][]>([['Impersonate-User', 'dev@acme'], ['Impersonate-Extra-scopes', 'all']], [['Impersonate-User', 'admin@globex'], ['Impersonate-Uid', 'uid-admin@globex']]),
  // Hundreds of groups: each may cost flotilla a review per member.
  fc.integer({ min: 40, max: 300 }).map((n): [string, string][] => [['Impersonate-User', 'dev@acme'], ...Array.from({ length: n }, (_, i): [string, string] => ['Impersonate-Group', `${FAN_OUT_GROUP}{case}-${i}`])]),
);

const selectorArb = fc.constantFrom(
  'labelSelector=abuse.flotilla.io%2Fmarker', 'labelSelector=app%3Dx', 'labelSelector=kubernetes.io%2Fbootstrapping%3Drbac-defaults', 'labelSelector=', 'fieldSelector=metadata.name%3Dglobex-canary',
  'fieldSelector=metadata.namespace%3Dglobex-web', 'fieldSelector=metadata.name!%3Dx', 'fieldSelector=metadata.namespace!%3Dweb', 'labelSelector=abuse.flotilla.io%2Fmarker&fieldSelector=metadata.name!%3Dcanary',
);
const listQueryArb = fc.constantFrom('', '', '?limit=1', '?limit=2&resourceVersion=0', '?resourceVersion=0', '?labelSelector=abuse.flotilla.io%2Fmarker', '?fieldSelector=metadata.namespace%3Dglobex-web', '?limit=1&fieldSelector=metadata.name!%3Dx');

// ---------------------------------------------------------------------------------------------
// Whole cases

type Verb = 'get' | 'list' | 'watch' | 'create' | 'update' | 'patch' | 'delete' | 'deletecollection' | 'subresource' | 'head';
const verbArb = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom<Verb>('get', 'list') },
  { weight: 1, arbitrary: fc.constantFrom<Verb>('watch', 'head') },
  { weight: 3, arbitrary: fc.constantFrom<Verb>('create', 'update', 'patch') },
  { weight: 2, arbitrary: fc.constantFrom<Verb>('delete', 'deletecollection') },
  { weight: 2, arbitrary: fc.constant<Verb>('subresource') },
);

const METHOD: Record<Verb, string> = { get: 'GET', list: 'GET', watch: 'GET', head: 'HEAD', create: 'POST', update: 'PUT', patch: 'PATCH', delete: 'DELETE', deletecollection: 'DELETE', subresource: 'GET' };

export const tenantCaseArb: fc.Arbitrary<AbuseCase> = fc
  .record({
    caller: fc.oneof({ weight: 9, arbitrary: fc.constant('admin@acme') }, { weight: 1, arbitrary: fc.constant('dev@acme') }),
    transport: fc.constantFrom('raw' as const, 'node' as const),
    prefix: prefixArb,
    kind: fc.constantFrom(...KINDS),
    verb: verbArb,
    namespace: fc.option(fc.constantFrom(...NAMESPACES), { nil: undefined, freq: 3 }),
    name: fc.constantFrom(...NAMES),
    sub: fc.constantFrom(...SUBRESOURCES),
    subMethod: fc.constantFrom('GET', 'GET', 'POST', 'PUT', 'PATCH', 'DELETE'),
    selector: selectorArb,
    listQuery: listQueryArb,
    disguise: fc.option(disguiseArb, { nil: undefined, freq: 2 }),
    impersonation: rarely(impersonationArb, 5),
    accept: fc.option(fc.constantFrom(...ACCEPTS), { nil: undefined, freq: 2 }),
    seedBody: fc.nat(),
  })
  .chain((r) => {
    const method = r.verb === 'subresource' ? r.subMethod : METHOD[r.verb];
    const needsBody = method === 'POST' || method === 'PUT' || method === 'PATCH';
    const bodyArb = needsBody ? writeBodyArb(r.kind, method).map((b) => b as { body: string; contentType: string } | undefined) : fc.constant(undefined);
    return bodyArb.map((body) => ({ ...r, method, body }));
  })
  .map((r): AbuseCase => {
    const ns = r.kind.namespaced || r.kind.resource === 'namespaces' ? r.namespace : undefined;
    let path = `${r.prefix}${base(r.kind)}`;
    if (r.kind.resource === 'namespaces') path += '/namespaces';
    else path += `${ns !== undefined ? `/namespaces/${ns}` : ''}/${r.kind.resource}`;
    let query = '';
    const named = r.verb === 'get' || r.verb === 'head' || r.verb === 'update' || r.verb === 'patch' || r.verb === 'delete' || r.verb === 'subresource';
    // A Namespace's own path names it where others name their namespace.
    if (named) path += `/${r.kind.resource === 'namespaces' && ns !== undefined ? ns : r.name}`;
    const [sub, subQuery] = r.sub.split('?') as [string, string | undefined];
    if (r.verb === 'subresource') {
      path += `/${sub}`;
      if (subQuery) query = `?${subQuery}`;
    }
    if (r.verb === 'list') query = r.listQuery;
    if (r.verb === 'watch') query = '?watch=true&timeoutSeconds=1';
    if (r.verb === 'deletecollection') query = `?${r.selector}`;
    if (r.disguise) path = disguise(path, r.disguise);
    const headers: [string, string][] = [];
    if (r.accept !== undefined) headers.push(['Accept', r.accept]);
    if (r.impersonation) headers.push(...r.impersonation);
    let body: BodySpec = { kind: 'none' };
    if (r.body) {
      headers.push(['Content-Type', r.body.contentType]);
      body = { kind: 'text', text: r.body.body };
      if (r.body.contentType === 'application/apply-patch+yaml') query = `${query ? `${query}&` : '?'}fieldManager=acme&force=true`;
    }
    return { caller: r.caller, authForm: 'bearer', transport: r.transport, method: r.method, target: `${path}${query}`, headers, body, framing: 'length' };
  });

/** The request's text as the tenant wrote it, decoded: what an answer may echo back. */
export function requestText(c: AbuseCase): string {
  let target = c.target;
  try {
    target = decodeURIComponent(c.target);
  } catch {
    // Undecodable: as sent.
  }
  const body = c.body.kind === 'text' ? c.body.text : '';
  return `${target}\n${c.headers.map(([n, v]) => `${n}: ${v}`).join('\n')}\n${body}`.toLowerCase();
}
