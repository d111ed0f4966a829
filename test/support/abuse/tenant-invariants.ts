import { parse as parseYaml } from 'yaml';
import { parseRequestPath, type RequestTarget } from '../../../src/api/request-info.js';
import { headerValues, type RecordedRequest } from '../recording-relay.js';
import type { Answer, CallerIdentity, Violation } from './invariants.js';
import { FAN_OUT_GROUP } from './tenant-generators.js';

/**
 * The tenant boundary as invariants, plain functions over what a relay saw reach a member and what
 * flotilla answered (no I/O; the e2e suite feeds them real records). A tenant's request may reach a
 * member only as one of the tenant's identities, only for the tenant's names (its namespaces, its
 * owned cluster-scoped objects, its CRD groups) or a read of a shared kind, and with a body that
 * names nothing outside the tenant. An answer may carry no foreign object (its marker or uid), and
 * no name the tenant did not write itself in an error, a header or a continue token.
 */
export interface TenantView {
  id: string;
  /** Users and groups the fleet file maps to the tenant. */
  users: readonly string[];
  groups: readonly string[];
}

const RBAC = 'rbac.authorization.k8s.io';
const SA_USER = 'system:serviceaccount:';
const SA_GROUP = 'system:serviceaccounts:';
/** ClusterRoles every tenant refers to by name (flotilla shares them; the tenant may not change them). */
const SHARED_ROLES = new Set(['admin', 'edit', 'view', 'cluster-admin']);
const SHARED_KINDS = new Set(['nodes', 'storageclasses', 'ingressclasses', 'runtimeclasses', 'priorityclasses', 'csidrivers']);
const OWNED_KINDS = new Set(['namespaces', 'clusterroles', 'clusterrolebindings', 'customresourcedefinitions']);
const SELF_REVIEWS = new Set(['selfsubjectaccessreviews', 'selfsubjectrulesreviews', 'selfsubjectreviews']);
/** Namespaced resources the suite names (a path without a namespace reads them cluster-wide). */
const BINDINGS = new Set(['rolebindings', 'clusterrolebindings']);
const NAMESPACED = new Set(['configmaps', 'secrets', 'serviceaccounts', 'pods', 'services', 'events', 'deployments', 'replicasets', 'roles', 'rolebindings', 'widgets', 'endpoints', 'endpointslices', 'leases', 'controllerrevisions']);
const READS = new Set(['GET', 'HEAD']);
/** Cluster-scoped kinds the suite names that no tenant sees (a resource no member serves is the member's 404, no finding). */
const HIDDEN = new Set(['persistentvolumes', 'subjectaccessreviews', 'tokenreviews', 'validatingwebhookconfigurations', 'mutatingwebhookconfigurations', 'validatingadmissionpolicies', 'gizmos', 'apiservices', 'certificatesigningrequests']);

export function ownsName(view: TenantView, name: string): boolean {
  return name.length > view.id.length + 1 && name.startsWith(`${view.id}-`);
}

function ownsGroup(view: TenantView, group: string): boolean {
  return group.length > view.id.length + 1 && group.startsWith(`${view.id}.`);
}

/** A service account's user or group names its namespace; it is the tenant's when that is. */
function ownsUser(view: TenantView, user: string): boolean {
  if (view.users.includes(user)) return true;
  if (!user.startsWith(SA_USER)) return false;
  return ownsName(view, user.slice(SA_USER.length).split(':')[0] ?? '');
}

function ownsUserGroup(view: TenantView, group: string): boolean {
  if (view.groups.includes(group) || group === 'system:authenticated' || group === 'system:serviceaccounts') return true;
  return group.startsWith(SA_GROUP) && ownsName(view, group.slice(SA_GROUP.length));
}

/**
 * Whom a tenant's request may reach a member as: the tenant's users (listed, or service accounts
 * of its namespaces) with the tenant's groups only. The reason when not.
 */
export function outsideTenant(view: TenantView, sent: CallerIdentity): string | undefined {
  if (!ownsUser(view, sent.user)) return `user ${JSON.stringify(sent.user)} is not tenant ${view.id}'s`;
  const foreign = sent.groups.filter((g) => !ownsUserGroup(view, g));
  if (foreign.length) return `groups ${JSON.stringify(foreign.slice(0, 5))}${foreign.length > 5 ? ` and ${foreign.length - 5} more` : ''} are not tenant ${view.id}'s`;
  if (Object.keys(sent.extra ?? {}).length) return `extra ${JSON.stringify(sent.extra)}`;
  return undefined;
}

function describe(rec: RecordedRequest): string {
  return `${rec.method} ${rec.url.length > 250 ? `${rec.url.slice(0, 250)}…` : rec.url} (to ${rec.relay} as ${headerValues(rec.rawHeaders, 'impersonate-user')[0] ?? 'flotilla'})`;
}

/** Whether a cluster-scoped object name is the tenant's (a CRD's by its group). */
function ownsObject(view: TenantView, resource: string, name: string): boolean {
  // A CRD's name is `<plural>.<group>`; one without a dot names no CRD on any member.
  const dot = name.indexOf('.');
  if (resource === 'customresourcedefinitions' && dot > 0) return ownsGroup(view, name.slice(dot + 1));
  return ownsName(view, name);
}

function parseBody(rec: RecordedRequest): unknown {
  const text = rec.body.toString('utf8');
  if (!text.trim()) return undefined;
  try {
    return /yaml/i.test(headerValues(rec.rawHeaders, 'content-type')[0] ?? '') ? parseYaml(text) : JSON.parse(text);
  } catch {
    return undefined;
  }
}

interface Meta {
  name?: unknown;
  generateName?: unknown;
  namespace?: unknown;
  labels?: Record<string, unknown>;
  ownerReferences?: { apiVersion?: unknown; kind?: unknown; name?: unknown }[];
}

/** What a body (an object, or a merge or apply patch, which look like one) names outside the tenant. */
function objectViolations(view: TenantView, t: Extract<RequestTarget, { type: 'resource' }>, method: string, doc: Record<string, unknown>, what: string): Violation[] {
  const out: Violation[] = [];
  const md = (doc.metadata ?? {}) as Meta;
  const clusterScoped = t.namespace === undefined && OWNED_KINDS.has(t.resource) && !t.subresource;
  // A cluster-scoped object's metadata.namespace is ignored by the member.
  // A kind of the tenant's own group at cluster scope is one its CRD made cluster-scoped: the member drops a namespace there.
  const ownClusterScoped = t.namespace === undefined && ownsGroup(view, t.group);
  if (typeof md.namespace === 'string' && md.namespace !== '' && !ownsName(view, md.namespace) && !ownClusterScoped && (t.namespace !== undefined || NAMESPACED.has(t.resource))) {
    out.push({ kind: 'member:body-foreign-namespace', detail: `${what}: metadata.namespace ${JSON.stringify(md.namespace)}` });
  }
  if (clusterScoped && method === 'POST') {
    if (typeof md.name === 'string' && md.name !== '' && !ownsObject(view, t.resource, md.name)) out.push({ kind: 'member:body-foreign-name', detail: `${what}: creates ${t.resource} ${JSON.stringify(md.name)}` });
    // A CRD's name is its plural and group: the member refuses a generated one.
    if (typeof md.generateName === 'string' && md.generateName !== '' && !md.name && !md.generateName.startsWith(`${view.id}-`) && t.resource !== 'customresourcedefinitions') {
      out.push({ kind: 'member:generate-name-outside-tenant', detail: `${what}: generateName ${JSON.stringify(md.generateName)}` });
    }
  }
  // An owner of a kind its group does not serve (`v1` ClusterRole) names nothing that exists.
  const OWNER_GROUPS: Record<string, string> = { Namespace: 'v1', ClusterRole: 'rbac.authorization.k8s.io/v1' };
  for (const o of md.ownerReferences ?? []) {
    if (typeof o?.kind === 'string' && OWNER_GROUPS[o.kind] === o.apiVersion && typeof o.name === 'string' && !ownsName(view, o.name) && !SHARED_ROLES.has(o.name) && !(o.kind === 'ClusterRole' && o.name.startsWith('system:'))) {
      out.push({ kind: 'member:body-foreign-owner', detail: `${what}: an ownerReference to ${o.kind} ${JSON.stringify(o.name)}` });
    }
  }
  if (t.group === RBAC && (t.resource === 'clusterroles' || t.resource === 'roles')) {
    const labels = Object.keys(md.labels ?? {}).filter((l) => l.startsWith('rbac.authorization.k8s.io/aggregate-to-'));
    if (labels.length) out.push({ kind: 'member:rbac-aggregation-label', detail: `${what}: labels ${JSON.stringify(labels)} put its rules into roles not the tenant's` });
    if (doc.aggregationRule !== undefined && doc.aggregationRule !== null) out.push({ kind: 'member:rbac-aggregation-rule', detail: `${what}: an aggregationRule gathers rules of roles not the tenant's: ${JSON.stringify(doc.aggregationRule).slice(0, 200)}` });
  }
  if (t.group === RBAC && (t.resource === 'clusterrolebindings' || t.resource === 'rolebindings')) {
    out.push(...bindingViolations(view, t.resource, doc.subjects, doc.roleRef, what));
  }
  if (t.resource === 'customresourcedefinitions') {
    const group = (doc.spec as { group?: unknown } | undefined)?.group;
    if (typeof group === 'string' && !ownsGroup(view, group)) out.push({ kind: 'member:crd-foreign-group', detail: `${what}: spec.group ${JSON.stringify(group)}` });
  }
  return out;
}

function bindingViolations(view: TenantView, resource: string, subjects: unknown, roleRef: unknown, what: string): Violation[] {
  const out: Violation[] = [];
  for (const s of Array.isArray(subjects) ? (subjects as { kind?: unknown; name?: unknown; namespace?: unknown }[]) : []) {
    const name = typeof s?.name === 'string' ? s.name : '';
    const ok = s?.kind === 'User' ? ownsUser(view, name) : s?.kind === 'Group' ? ownsUserGroup(view, name) && name !== 'system:authenticated' && name !== 'system:serviceaccounts' : s?.kind === 'ServiceAccount' ? typeof s.namespace === 'string' && ownsName(view, s.namespace) : false;
    if (!ok) out.push({ kind: 'member:rbac-foreign-subject', detail: `${what}: subject ${JSON.stringify(s)}` });
  }
  const ref = roleRef as { kind?: unknown; name?: unknown } | undefined;
  if (ref && ref.kind === 'ClusterRole' && typeof ref.name === 'string' && !ownsName(view, ref.name)) {
    // Bound cluster-wide, even a shared role reaches every namespace on the member.
    if (resource === 'clusterrolebindings') out.push({ kind: 'member:rbac-cluster-wide-grant', detail: `${what}: binds ClusterRole ${JSON.stringify(ref.name)} cluster-wide` });
    // In a namespace of the tenant's, a shared role (flotilla's shared names: the four user-facing ones, system:*) grants only there.
    else if (!SHARED_ROLES.has(ref.name) && !ref.name.startsWith('system:')) out.push({ kind: 'member:rbac-foreign-role', detail: `${what}: binds ClusterRole ${JSON.stringify(ref.name)}` });
  }
  return out;
}

/** A JSON patch's operations that write names: checked as the object parts they write. */
function jsonPatchViolations(view: TenantView, t: Extract<RequestTarget, { type: 'resource' }>, ops: unknown[], what: string): Violation[] {
  const out: Violation[] = [];
  for (const op of ops as { path?: unknown; value?: unknown }[]) {
    const path = typeof op?.path === 'string' ? op.path : '';
    const v = op?.value;
    if (path === '/metadata/namespace') out.push(...objectViolations(view, t, 'PATCH', { metadata: { namespace: v } }, what));
    else if (path.startsWith('/metadata/labels/')) out.push(...objectViolations(view, t, 'PATCH', { metadata: { labels: { [path.slice('/metadata/labels/'.length).replace('~1', '/')]: v } } }, what));
    else if (path === '/metadata/ownerReferences') out.push(...objectViolations(view, t, 'PATCH', { metadata: { ownerReferences: v } }, what));
    else if (path === '/aggregationRule') out.push(...objectViolations(view, t, 'PATCH', { aggregationRule: v }, what));
    else if (path === '/spec/group') out.push(...objectViolations(view, t, 'PATCH', { spec: { group: v } }, what));
    // Only RBAC kinds have subjects and a roleRef: on any other kind the member drops the field.
    else if (path.startsWith('/subjects') && t.group === RBAC && BINDINGS.has(t.resource)) out.push(...bindingViolations(view, t.resource, path === '/subjects' ? v : [v], undefined, what));
    else if (path === '/roleRef' && t.group === RBAC && BINDINGS.has(t.resource)) out.push(...bindingViolations(view, t.resource, [], v, what));
  }
  return out;
}

/**
 * What a request that reached a member as (someone of) the tenant may address: the tenant's
 * namespaces, its owned cluster-scoped objects by name, its CRD groups; collection reads
 * (flotilla filters the answer); reads of shared kinds (not their proxy); its self-reviews.
 */
export function checkTenantMemberRequest(view: TenantView, rec: RecordedRequest): Violation[] {
  if (headerValues(rec.rawHeaders, 'impersonate-user').length === 0) return [];
  const what = describe(rec);
  let t: RequestTarget;
  try {
    t = parseRequestPath(rec.url);
  } catch {
    return [];
  }
  const out: Violation[] = [];
  if (t.type === 'group' || t.type === 'resources' || t.type === 'resource') {
    const owner = /^([a-z0-9-]+)\./.exec(t.group)?.[1];
    if (owner !== undefined && owner !== view.id && ['globex'].includes(owner)) out.push({ kind: 'member:foreign-group', detail: `${what}: API group ${t.group} is another tenant's` });
  }
  if (t.type !== 'resource') return out;
  const read = READS.has(rec.method) && !rec.upgrade;
  if (t.namespace !== undefined) {
    if (!ownsName(view, t.namespace)) out.push({ kind: `member:foreign-namespace:${rec.method}`, detail: `${what}: namespace ${t.namespace} is not tenant ${view.id}'s` });
  } else if (ownsGroup(view, t.group)) {
    // The tenant's own CRD group: all of it is the tenant's.
  } else if (SELF_REVIEWS.has(t.resource)) {
    // Reviews about the caller itself: every tenant's to ask.
  } else if (OWNED_KINDS.has(t.resource)) {
    if (t.name !== undefined) {
      const shared = t.resource === 'clusterroles' && (SHARED_ROLES.has(t.name) || t.name.startsWith('system:'));
      if (!ownsObject(view, t.resource, t.name) && !(shared && read && !t.subresource)) out.push({ kind: `member:foreign-object:${rec.method}`, detail: `${what}: ${t.resource} ${t.name} is not tenant ${view.id}'s` });
    } else if (rec.method === 'DELETE') {
      out.push({ kind: 'member:cluster-collection-delete', detail: `${what}: a collection delete of ${t.resource} reaches every tenant's and the fleet's` });
    } else if (!read && rec.method !== 'POST') {
      out.push({ kind: `member:cluster-collection-write:${rec.method}`, detail: what });
    }
  } else if (SHARED_KINDS.has(t.resource)) {
    if (!read) out.push({ kind: `member:shared-kind-write:${rec.method}`, detail: what });
    else if (t.subresource !== undefined && t.subresource !== 'status') out.push({ kind: `member:shared-kind-subresource:${t.subresource.split('/')[0]}`, detail: `${what}: the ${t.subresource.split('/')[0]} of a shared ${t.resource} object` });
  } else if (NAMESPACED.has(t.resource)) {
    // A read of every namespace is filtered by flotilla; a named one without a namespace names nothing on a member.
    if (!read) out.push({ kind: `member:cluster-wide:${rec.method}`, detail: `${what}: ${t.resource} in every namespace` });
  } else if (HIDDEN.has(t.resource)) {
    out.push({ kind: `member:hidden-kind:${rec.method}`, detail: `${what}: ${t.group ? `${t.resource}.${t.group}` : t.resource} is hidden from tenants` });
  }
  // A subresource's body is no object of the kind (a proxied request, an eviction, exec's input).
  if ((rec.method === 'POST' || rec.method === 'PUT' || rec.method === 'PATCH') && t.subresource === undefined) {
    const doc = parseBody(rec);
    if (Array.isArray(doc)) out.push(...jsonPatchViolations(view, t, doc, what));
    else if (doc && typeof doc === 'object') out.push(...objectViolations(view, t, rec.method, doc as Record<string, unknown>, what));
  }
  return out;
}

/**
 * Reviews flotilla sends to check an impersonation, per case (the suite's fan-out groups carry the
 * case's id): a caller's many groups must not become as many reviews.
 */
export class ReviewFanOut {
  private readonly counts = new Map<string, number>();
  constructor(private readonly limit: number) {}

  check(rec: RecordedRequest): Violation[] {
    if (rec.method !== 'POST' || !rec.url.includes('subjectaccessreviews')) return [];
    const m = new RegExp(`"${FAN_OUT_GROUP}(\\d+)-\\d+"`).exec(rec.body.toString('utf8'));
    if (!m) return [];
    const n = (this.counts.get(m[1]!) ?? 0) + 1;
    this.counts.set(m[1]!, n);
    if (n !== this.limit + 1) return [];
    return [{ kind: 'member:review-fan-out', detail: `case ${m[1]}: more than ${this.limit} SubjectAccessReviews about its Impersonate-Group values reached the members` }];
  }
}

/** What of the foreign objects an answer must never carry. */
export interface ForeignObjects {
  /** Strings written into every foreign canary (labels, annotations, data). */
  markers: readonly string[];
  /** uids of every object the tenant does not see. */
  uids: ReadonlySet<string>;
}

const UID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g;
// Whole names: another tenant's (member names or its group), the fleet's canaries, and the tenant's own in member form.
const NAME = /(?<![a-z0-9.-])(globex[-.][a-z0-9][a-z0-9.-]*|abuse-canary|abuse-fleet-canary|kube-system|fleet\.example\.com|acme-[a-z0-9][a-z0-9.-]*)/g;

function foreignContent(text: string, foreign: ForeignObjects): string | undefined {
  const marker = foreign.markers.find((m) => text.includes(m));
  if (marker) return `marker ${marker}`;
  for (const m of text.matchAll(UID)) if (foreign.uids.has(m[0])) return `uid ${m[0]}`;
  return undefined;
}

/** Names in `text` the request did not write itself (an echo of the tenant's own words is no leak). */
export function unwrittenNames(text: string, written: string): string[] {
  // A name the member generated from a generateName the request wrote (`globex-` in acme's own
  // namespace) is the request's, whether the body is written as it went or quoted in a case's
  // text, and in either case (a case's text is lowercased).
  const generated = [...written.matchAll(/\\?"generateName\\?"\s*:\s*\\?"([^"\\]+)\\?"/gi)].map((m) => m[1]!.toLowerCase());
  const out = new Set<string>();
  for (const m of text.toLowerCase().matchAll(NAME)) if (!written.includes(m[1]!) && !generated.some((g) => m[1]!.startsWith(g))) out.add(m[1]!);
  return [...out];
}

function decodeToken(token: string): string {
  try {
    return Buffer.from(token.replace(/-/g, '+').replace(/_/g, '/'), 'base64').toString('latin1');
  } catch {
    return '';
  }
}

/**
 * An answer to the tenant: no foreign object's marker or uid anywhere (body or header); in errors
 * and headers, no foreign name and no member-form name the request did not write; in a list's
 * continue token, no member name.
 */
export function checkTenantAnswer(answer: Answer, written: string, foreign: ForeignObjects): Violation[] {
  if (answer.type !== 'response') return [];
  const out: Violation[] = [];
  const headers = Object.entries(answer.headers).filter(([n]) => n !== 'date' && n !== 'audit-id').map(([n, vs]) => `${n}: ${vs.join(', ')}`).join('\n');
  const body = answer.body.toString('latin1');
  const inBody = foreignContent(body, foreign);
  if (inBody) out.push({ kind: `answer:foreign-object:${answer.status}`, detail: `HTTP ${answer.status}: the body carries a foreign object's ${inBody}: ${JSON.stringify(body.slice(0, 300))}` });
  const inHeaders = foreignContent(headers, foreign);
  if (inHeaders) out.push({ kind: 'answer:foreign-object-in-header', detail: `HTTP ${answer.status}: a header carries a foreign object's ${inHeaders}` });
  const named = unwrittenNames(headers, written);
  if (answer.status >= 400) named.push(...unwrittenNames(body, written));
  const foreignNames = named.filter((n) => !n.startsWith('acme-'));
  const memberNames = named.filter((n) => n.startsWith('acme-'));
  if (foreignNames.length) out.push({ kind: `answer:foreign-name:${answer.status}`, detail: `HTTP ${answer.status} names ${JSON.stringify(foreignNames)}, which the request did not: ${JSON.stringify((answer.status >= 400 ? body : headers).slice(0, 300))}` });
  if (memberNames.length) out.push({ kind: `answer:member-form-name:${answer.status}`, detail: `HTTP ${answer.status} names the tenant's ${JSON.stringify(memberNames)} in the member's form: ${JSON.stringify((answer.status >= 400 ? body : headers).slice(0, 300))}` });
  const cont = /"continue"\s*:\s*"([^"]+)"/.exec(body)?.[1];
  if (cont !== undefined && answer.status < 300) {
    // Key separators (control characters) end a name as a space would.
    const names = unwrittenNames([...decodeToken(cont)].map((ch) => (ch < ' ' ? ' ' : ch)).join(''), written);
    if (names.length) out.push({ kind: 'answer:continue-names-member', detail: `a list's continue token carries ${JSON.stringify(names)}: ${JSON.stringify(decodeToken(cont).slice(0, 200))}` });
  }
  return out;
}

/** A page's remainingItemCount counts only what the tenant can list (`visible`: the whole list's length as the tenant gets it). */
export function checkRemainingCount(path: string, page: { items: number; remaining?: number }, visible: number): Violation[] {
  if (page.remaining === undefined || page.items + page.remaining <= visible) return [];
  return [{ kind: 'answer:remaining-count', detail: `${path}: a page of ${page.items} with remainingItemCount ${page.remaining}, where the tenant's whole list has ${visible}` }];
}

/** Log lines of flotilla's that carry a foreign object's marker. */
export function logViolations(log: string, foreign: ForeignObjects): Violation[] {
  const lines = log.split('\n').filter((l) => foreign.markers.some((m) => l.includes(m)));
  return lines.length ? [{ kind: 'log:foreign-marker', detail: `${lines.length} log line(s) carry a foreign marker: ${JSON.stringify(lines[0]!.slice(0, 300))}` }] : [];
}
