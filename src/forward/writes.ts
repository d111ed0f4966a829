import type { IncomingMessage } from 'node:http';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { outsideCache, type FleetMembers, type ResourceCatalog } from '../cacher/cache-roles.js';
import { CLUSTER_ANNOTATION, type AnswerForm } from '../api/fleet-object/index.js';
import { NAMESPACES_KEY, gvrKey } from '../api/resource-info.js';
import { memberRequestPath, type RequestTarget } from '../api/request-info.js';
import { StatusError, answerMessage, badRequest, methodNotAllowed, serviceUnavailable, unknownCluster } from '../api/status.js';
import { answerBodyToTenant, bodyToMember, type TenantNames } from '../tenancy/answers.js';
import { warningHeader } from '../api/warning.js';
import type { Store } from '../store/store.js';
import { owningCluster, type OwnerLookup, type ResourceTarget } from './owner.js';
import type { WriteTracker } from './read-your-writes.js';
import { annotatedCluster } from './annotated-cluster.js';
import { acceptsJson, requireServedMedia } from '../api/negotiate.js';
import { grantTenantNamespace } from './tenant-namespace-grants.js';
import { FORWARD_TIMEOUT_MS, MEMBER_FAN_OUT, NAMESPACE_LOOKUP_TIMEOUT_MS } from '../registry/defaults.js';
import { asCaller, askMembers } from './member-fan-out.js';
import { refuseUnservableCreate } from './create-checks.js';
import { refuseFlotillaSelection } from './collection-selection.js';
import { mergeListAnswers, requestBodyForMember, responseForClient } from './translate.js';
import { memberRV } from '../api/global-rv.js';

/**
 * Writes and the plain (non-streaming) subresources, forwarded to the member that owns the object:
 * update, patch, delete, create, deletecollection (fanned out), status, scale, eviction, binding.
 * Bodies go as they came except for flotilla's RV and annotation; answers come back as the member
 * gave them, RVs made global. Member errors (409 on a stale RV, 403 from its RBAC) pass through.
 */
export interface ForwardDeps extends OwnerLookup {
  fleet: FleetMembers;
  catalog: ResourceCatalog;
  store: Store;
  writes: WriteTracker;
  /** The caller's Impersonate-* headers (401 when flotilla does not know the caller). */
  callerHeaders(req: IncomingMessage): Promise<Record<string, string | string[]>>;
  /** Whom read-your-writes is tracked for. */
  callerKey(req: IncomingMessage): string;
  /** How answers are shown (managedFields dropped as the cache drops them). */
  answerForm?: AnswerForm;
  /** The caller's tenant's names (src/tenancy), when it belongs to one: bodies go in the member's, answers come back in its. */
  tenant?: (req: IncomingMessage) => Promise<TenantNames | undefined>;
}

const PASSED_RESPONSE_HEADERS = ['content-type', 'warning', 'retry-after', 'audit-id'];

export async function forwardWrite(req: FastifyRequest, reply: FastifyReply, deps: ForwardDeps, target: RequestTarget): Promise<FastifyReply> {
  if (target.type !== 'resource') throw methodNotAllowed(`${req.method} is not allowed on ${req.url.split('?')[0]}`);
  requireServedMedia(req.method, req.headers.accept, req.headers['content-type']);
  const tenant = await deps.tenant?.(req.raw);
  const sent = Buffer.isBuffer(req.body) ? req.body : undefined;
  const body = tenant ? bodyToMember(sent, req.headers['content-type'], req.method, tenant.resource(target.group, target.resource), tenant.naming) : sent;
  if (req.method === 'DELETE' && target.name === undefined) return deleteCollection(req, reply, deps, target, body);
  refuseUnservableCreate(req.method, target, body, req.headers['content-type']);
  if (req.method === 'POST' && target.name === undefined) {
    const cluster = await createTarget(req.raw, deps, target, body, req.headers['content-type']);
    return forward(req, reply, deps, target, cluster, body);
  }
  if (target.name === undefined) throw methodNotAllowed(`${req.method} needs an object name: ${req.url.split('?')[0]}`);
  // The object's own cluster annotation (read from flotilla, written back) says which copy is meant.
  const annotated = target.cluster === undefined ? annotatedMember(deps, body, req.headers['content-type']) : undefined;
  return forward(req, reply, deps, target, annotated ?? (await owningCluster(deps, deps.store, target, req.raw)), body);
}

/** GET of a subresource that is not cached (status, scale, …): read through to the owner. */
export async function forwardRead(req: FastifyRequest, reply: FastifyReply, deps: ForwardDeps, target: ResourceTarget): Promise<FastifyReply> {
  requireServedMedia(req.method, req.headers.accept, undefined);
  return forward(req, reply, deps, target, await owningCluster(deps, deps.store, target, req.raw), undefined);
}

async function forward(req: FastifyRequest, reply: FastifyReply, deps: ForwardDeps, target: ResourceTarget, cluster: string, body: Buffer | undefined): Promise<FastifyReply> {
  const tenant = await deps.tenant?.(req.raw);
  // A tenant's answer is rewritten as a whole: asked for in JSON.
  const answer = await callMember(req, deps, cluster, body, tenant ? 'application/json' : undefined);
  const contentType = headerText(answer.headers['content-type']);
  const resource = deps.catalog.resource(gvrKey(target));
  const cachedHere = resource !== undefined && !outsideCache(resource, { ...target, cluster });
  const translated = responseForClient(answer.body, contentType, cluster, answerForm(deps, cachedHere));
  if (tenant) translated.body = answerBodyToTenant(translated.body, contentType, tenant, target);
  if (answer.status < 300 && req.method !== 'GET') {
    const caller = deps.callerKey(req.raw);
    // Parsed for creates only: a patch's answer is not (the splice above avoids exactly that).
    const made = req.method === 'POST' && target.name === undefined ? translated.facts?.name ?? createdName(answer.body, contentType) : undefined;
    if (cachedHere) {
      const key = gvrKey(target);
      const deleting = req.method === 'DELETE' && target.name !== undefined && target.subresource === undefined;
      const gone = deleting && (translated.facts ? !translated.facts.deleting : deletedNow(answer.body, contentType).length > 0);
      if (gone) deps.writes.recordDeleted(caller, key, [{ cluster, namespace: target.namespace ?? '', name: target.name! }]);
      else if (translated.rv) deps.writes.record(caller, key, cluster, translated.rv);
      if (made !== undefined) deps.writes.forgetDeleted(caller, key, { cluster, namespace: target.namespace ?? '', name: made });
    }
    rememberOwner(deps, caller, req.method, target, cluster, made);
    if (tenant && made !== undefined) await grantTenantNamespace(deps.fleet.member(cluster), tenant.naming.tenant, target, made, req.log);
  }
  return send(reply, answer.status, answer.headers, translated.body);
}

/**
 * The answer shown as reads show the same object: as the cache holds it (managedFields dropped
 * when so configured) where the cache serves it, as the member has it where reads are live.
 */
function answerForm(deps: ForwardDeps, cachedHere: boolean): AnswerForm | undefined {
  return cachedHere ? deps.answerForm : undefined;
}

/** A create is remembered where it went (for the caller's next writes to it); a delete forgotten. */
function rememberOwner(deps: ForwardDeps, caller: string, method: string, target: ResourceTarget, cluster: string, made: string | undefined): void {
  if (!deps.recent) return;
  const base = { resource: gvrKey(target), ...(target.namespace !== undefined ? { namespace: target.namespace } : {}) };
  if (method === 'DELETE' && target.name !== undefined && target.subresource === undefined) deps.recent.owners.forget(caller, { ...base, name: target.name });
  if (made !== undefined) deps.recent.owners.remember(caller, { ...base, name: made }, cluster);
}

function createdName(body: Buffer, contentType: string | undefined): string | undefined {
  if (!(contentType ?? '').startsWith('application/json')) return undefined;
  try {
    const doc = JSON.parse(body.toString('utf8')) as { metadata?: { name?: unknown } };
    return typeof doc.metadata?.name === 'string' ? doc.metadata.name : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The objects a delete's answer says are gone: the answer is the object as it was, or a success
 * Status; an object with a deletionTimestamp is still there (graceful, or held by finalizers), its
 * answer a write like any other. For a deletecollection's list, its items so. Undefined names
 * (protobuf, a body that does not parse) are none.
 */
function deletedNow(body: Buffer, contentType: string | undefined): { namespace: string; name: string }[] {
  if (!(contentType ?? '').startsWith('application/json')) return [];
  let doc: unknown;
  try {
    doc = JSON.parse(body.toString('utf8'));
  } catch {
    return [];
  }
  const gone = (o: unknown): { namespace: string; name: string } | undefined => {
    const md = (o as { metadata?: { name?: unknown; namespace?: unknown; deletionTimestamp?: unknown } } | null)?.metadata;
    if (!md || md.deletionTimestamp || typeof md.name !== 'string') return undefined;
    return { namespace: typeof md.namespace === 'string' ? md.namespace : '', name: md.name };
  };
  const d = doc as { kind?: unknown; status?: unknown; items?: unknown } | null;
  if (d?.kind === 'Status') return d.status === 'Success' ? [{ namespace: '', name: '' }] : [];
  if (Array.isArray(d?.items)) return d.items.map(gone).filter((o): o is { namespace: string; name: string } => o !== undefined);
  const one = gone(doc);
  return one ? [one] : [];
}

interface Answer {
  status: number;
  headers: IncomingMessage['headers'];
  body: Buffer;
}

async function callMember(req: FastifyRequest, deps: ForwardDeps, cluster: string, body: Buffer | undefined, accept?: string): Promise<Answer> {
  const [answer] = await callMembers(req, deps, [cluster], body, accept);
  return answer!;
}

/**
 * The request sent on to each of `clusters` as the caller (member-fan-out.ts), its answers in
 * their order; 503 naming the first member that did not answer.
 */
async function callMembers(req: FastifyRequest, deps: ForwardDeps, clusters: readonly string[], body: Buffer | undefined, accept?: string): Promise<Answer[]> {
  const identity = await deps.callerHeaders(req.raw);
  const unknown = clusters.find((c) => !deps.fleet.member(c));
  if (unknown !== undefined) throw unknownCluster(unknown);
  const own: Record<string, string> = {};
  for (const h of ['content-type', 'accept']) {
    const v = req.headers[h];
    if (typeof v === 'string') own[h] = v;
  }
  if (accept !== undefined) own['accept'] = accept;
  const headers = asCaller(identity, req.headers['user-agent'], own);
  const requestPath = memberRequestPath(req.url);
  const bounds = { concurrency: MEMBER_FAN_OUT, timeoutMs: FORWARD_TIMEOUT_MS };
  const results = await askMembers(deps.fleet, clusters, bounds, (cluster) => {
    const forwarded = requestBodyForMember(body, req.headers['content-type'], cluster);
    return { cluster, method: req.method, path: memberQuery(requestPath, cluster), headers, ...(forwarded !== undefined ? { body: forwarded } : {}) };
  });
  return results.map((r) => {
    if (r.error !== undefined || r.status === undefined) {
      const path = memberQuery(requestPath, r.cluster).split('?')[0];
      throw serviceUnavailable(`cluster ${r.cluster} did not answer ${req.method} ${path}${r.timedOut ? ` within ${FORWARD_TIMEOUT_MS / 1000} s` : `: ${r.error}`}`);
    }
    return { status: r.status, headers: r.headers ?? {}, body: r.body ?? Buffer.alloc(0) };
  });
}

/** A resourceVersion in the query (deletecollection's list options) is global on our side. */
function memberQuery(path: string, cluster: string): string {
  const q = path.indexOf('?');
  if (q < 0) return path;
  const params = new URLSearchParams(path.slice(q + 1));
  const rv = params.get('resourceVersion');
  if (!rv) return path;
  params.set('resourceVersion', memberRV(rv, cluster));
  return `${path.slice(0, q)}?${params}`;
}

/**
 * Where a create goes: the `/clusters/<name>/` prefix, else the cluster the object's own
 * `search.flotilla.io/cluster` annotation names (a manifest exported from flotilla), else the one
 * member that has the namespace. Anything else is ambiguous: 400 saying how to choose.
 */
async function createTarget(req: IncomingMessage, deps: ForwardDeps, target: ResourceTarget, body: Buffer | undefined, contentType: string | undefined): Promise<string> {
  const clusters = deps.fleet.clusterNames();
  if (target.cluster !== undefined) return owningCluster(deps, deps.store, target, req);
  const annotated = annotatedMember(deps, body, contentType);
  if (annotated !== undefined) return annotated;
  if (clusters.length === 1) return clusters[0]!;
  const how = `address one cluster with the /clusters/<name>/ path prefix (one of ${clusters.join(', ')}) or set the ${CLUSTER_ANNOTATION} annotation on the object`;
  if (target.namespace === undefined) throw badRequest(`flotilla cannot tell which cluster should get this new ${target.resource}: ${how}`);
  const holders = await clustersWithNamespace(deps, target.namespace);
  if (holders.length === 1) return holders[0]!;
  if (holders.length === 0) {
    throw new StatusError(404, 'NotFound', `namespaces "${target.namespace}" not found in any cluster of the fleet`, { name: target.namespace, kind: 'namespaces' });
  }
  throw badRequest(`namespace "${target.namespace}" exists in clusters ${holders.join(', ')}: flotilla cannot tell which one should get this new ${target.resource}; ${how}`);
}

/** The member the body's cluster annotation names; 400 when it names none of the fleet's. */
function annotatedMember(deps: ForwardDeps, body: Buffer | undefined, contentType: string | undefined): string | undefined {
  const annotated = annotatedCluster(body, contentType);
  if (annotated === undefined) return undefined;
  const clusters = deps.fleet.clusterNames();
  if (!clusters.includes(annotated)) throw badRequest(`the object's ${CLUSTER_ANNOTATION} annotation names "${annotated}", which is not a member of this fleet (${clusters.join(', ')})`);
  return annotated;
}

/** The members that have a namespace: from the cache when namespaces are cached everywhere, else asked. */
async function clustersWithNamespace(deps: ForwardDeps, namespace: string): Promise<string[]> {
  const clusters = deps.fleet.clusterNames();
  const cached = deps.catalog.resource(NAMESPACES_KEY);
  if (cached && clusters.every((c) => cached.clusters.includes(c))) {
    return deps.store.lookup(NAMESPACES_KEY, '', namespace).map((e) => e.cluster);
  }
  // Flotilla's own question (is the namespace there?), not the caller's: asked as flotilla.
  const path = `/api/v1/namespaces/${encodeURIComponent(namespace)}`;
  const found = await askMembers(deps.fleet, clusters, { concurrency: MEMBER_FAN_OUT, timeoutMs: NAMESPACE_LOOKUP_TIMEOUT_MS }, (cluster) => ({ cluster, path, headers: { accept: 'application/json' } }));
  return found.filter((r) => r.status === 200).map((r) => r.cluster);
}

/**
 * deletecollection goes to every member the request covers; their lists of deleted objects are
 * merged. A member that fails is named in a Warning; when all fail, the first failure is the answer.
 */
async function deleteCollection(req: FastifyRequest, reply: FastifyReply, deps: ForwardDeps, target: ResourceTarget, body: Buffer | undefined): Promise<FastifyReply> {
  refuseFlotillaSelection(req.url);
  const cached = deps.catalog.resource(gvrKey(target));
  const clusters = target.cluster !== undefined ? [await owningCluster(deps, deps.store, target, req.raw)] : (cached?.clusters ?? deps.fleet.clusterNames());
  // Lists of what was deleted come back as JSON when the client takes JSON too (client-go asks
  // protobuf first): flotilla merges them, and reads what each member deleted from them.
  const accept = acceptsJson(req.headers.accept) || (await deps.tenant?.(req.raw)) ? 'application/json' : undefined;
  const answers = (await callMembers(req, deps, clusters, body, accept)).map((answer, i) => ({ cluster: clusters[i]!, answer }));
  const ok = answers.filter((a) => a.answer.status < 300);
  if (ok.length === 0) return send(reply, answers[0]!.answer.status, answers[0]!.answer.headers, answers[0]!.answer.body);
  // Read-your-writes: the caller's next reads do not show what each member deleted.
  if (cached) {
    const caller = deps.callerKey(req.raw);
    for (const a of ok) {
      if (outsideCache(cached, { ...target, cluster: a.cluster })) continue;
      const gone = deletedNow(a.answer.body, headerText(a.answer.headers['content-type']));
      deps.writes.recordDeleted(caller, gvrKey(target), gone.filter((o) => o.name !== '').map((o) => ({ cluster: a.cluster, ...o })));
    }
  }
  const form = answerForm(deps, cached !== undefined && !outsideCache(cached, target));
  const failed = answers.filter((a) => a.answer.status >= 300);
  const tenant = await deps.tenant?.(req.raw);
  if (failed.length) {
    reply.header('warning', failed.map((f) => warningHeader(`cluster ${f.cluster} answered ${f.answer.status}: ${answerMessage(f.answer.body)}`)));
  }
  const shown = (body: Buffer, contentType: string | undefined) => (tenant ? answerBodyToTenant(body, contentType, tenant, target) : body);
  const jsonAnswers = ok.filter((a) => headerText(a.answer.headers['content-type'])?.startsWith('application/json'));
  if (jsonAnswers.length !== ok.length || ok.length === 1) {
    const only = ok[0]!;
    const type = headerText(only.answer.headers['content-type']);
    return send(reply, only.answer.status, only.answer.headers, shown(responseForClient(only.answer.body, type, only.cluster, form).body, type));
  }
  return send(reply, 200, { 'content-type': 'application/json' }, shown(mergeListAnswers(ok.map((a) => ({ cluster: a.cluster, body: a.answer.body })), form), 'application/json'));
}

function send(reply: FastifyReply, status: number, headers: IncomingMessage['headers'], body: Buffer): FastifyReply {
  for (const h of PASSED_RESPONSE_HEADERS) {
    const v = headers[h];
    if (v !== undefined) reply.header(h, v);
  }
  return reply.code(status).send(body);
}

function headerText(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}
