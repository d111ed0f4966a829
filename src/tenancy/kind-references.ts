import { SUBNAMESPACE_OF, TREE_LABEL_SUFFIX } from '../hierarchy/namespace-tree.js';
import { at, objectsOf, rename, renameEach, seen, type Direction, type Json } from './naming-direction.js';
import { referenceName, rewriteReference, rewriteReferenceAt } from './reference-names.js';

/**
 * The names each kind holds beyond its apiVersion and metadata (KIND_REFERENCES, by the member's
 * group and kind): RBAC subjects and rules, events' and endpoints' object references, a claim's
 * volume, a CRD's group, a namespace's own labels, network policies' namespace selectors, HNC's
 * parents and children.
 */

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
export const KIND_REFERENCES: Readonly<Record<string, (obj: Json, d: Direction) => void>> = {
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
