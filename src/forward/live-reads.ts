import type { IncomingMessage } from 'node:http';
import { StringDecoder } from 'node:string_decoder';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FleetMembers } from '../cacher/cache-manager.js';
import { CLUSTER_ANNOTATION, mergeParsedLists, mergeSplicedLists, protobufListToFleet, splicedList, splicedWatchEvent, stampObject, type SplicedList } from '../api/fleet-object/index.js';
import { canonicalPath } from '../api/request-info.js';
import { decodeGlobalRV, encodeGlobalRV } from '../api/global-rv.js';
import { negotiate, protobufOnly, type ResponseForm } from '../api/negotiate.js';
import { PROTOBUF_CONTENT_TYPE, editProtobufObject, isProtobuf } from '../api/protobuf-object.js';
import { writeProtobufList, type ListMetaFields } from '../api/protobuf-list.js';
import { PROTOBUF_WATCH_CONTENT_TYPE, WatchFrames, lengthPrefixed, readWatchEvent, watchEventFrame } from '../api/protobuf-watch.js';
import { answerMessage, badRequest, expired, isStatusObject, notFound, notServed, serviceUnavailable } from '../api/status.js';
import { int64Param, refuseVersionWithContinue, watchRequested } from '../api/list-options.js';
import { firstHitWarning, warningHeader as warning } from '../api/warning.js';
import { CLUSTER_COLUMN, clusterCellOf, clusterColumnAt, withCluster } from '../api/table.js';
import type { ResourceTarget } from './owner.js';
import { responseForClient } from './translate.js';
import { TREE_LABEL_SUFFIX } from '../hierarchy/namespace-tree.js';
import { mapBounded } from '../util/map-bounded.js';
import { seal, unseal } from '../util/sealed-token.js';
import { answerToTenant, type TenantNames } from '../tenancy/answers.js';
import { isJsonObject } from '../util/json-object.js';
import { MEMBER_FAN_OUT, MEMBER_READ_TIMEOUT_MS } from '../registry/defaults.js';
import { AnswerRefusedError } from '../members/member-client.js';
import type { LiveBufferHold, LiveReadLimits } from './live-read-limits.js';
import type { LiveReadStats } from '../metrics/metrics.js';

/**
 * Live reads: a get or list of a resource flotilla does not cache is asked of the members
 * themselves, as the caller (the caller's Impersonate-* headers, as writes are forwarded), in
 * parallel (at most `concurrency` members at once), and the answers merged as a cached list is
 * shown: each object annotated with its cluster and given a global resourceVersion, one Table with
 * the Cluster column after the name, paging with a continue token that carries each member's own
 * continue. A member that fails or refuses the caller is named in a Warning and the others still
 * answer. `/clusters/<name>/` reads go to that member alone. A watch opens the members' watches and
 * interleaves their events under the global resourceVersion (liveWatch).
 */
export interface LiveReadsConfig {
  /** Whether uncached resources are read live at all. */
  enabled: boolean;
  /** Resources never read live, as kubectl names them: `secrets`, `leases.coordination.k8s.io`. */
  exclude: string[];
  /** Members one list or get asks at once (default MEMBER_FAN_OUT). */
  concurrency?: number;
  /** The members' answers all live reads may hold at once, in MiB (live-read-limits.ts; default LIVE_BUFFER_MIB). */
  maxBufferMiB?: number;
  /** Live watches open at once (live-read-limits.ts; default LIVE_WATCHES). */
  maxWatches?: number;
}

export interface LiveReadDeps {
  fleet: FleetMembers;
  config: LiveReadsConfig;
  /** The caller's Impersonate-* headers (401 when flotilla does not know the caller). */
  callerHeaders(req: IncomingMessage): Promise<Record<string, string | string[]>>;
  /** The caller's tenant's names (src/tenancy): answers are shown in them, with nothing of anyone else. */
  tenant?: TenantNames;
  /**
   * Hierarchy selection (src/view/step-hierarchy.ts) of a read whose label selector names the
   * namespace tree: the members get the rest of the selector, and answers keep the objects whose
   * (cluster, namespace) the tree selects.
   */
  treeSelection?: { rest: string; selects(cluster: string, namespace: string): boolean };
  /** This read's share of the bytes live reads may hold (released when its response is done). */
  hold?: LiveBufferHold;
  /** A member's namespaces (member names), when flotilla caches them from it. */
  namespacesOf?: (cluster: string) => readonly string[] | undefined;
}

/**
 * Live answers edited after the members answered, by reply: items the namespace tree does not
 * select left out (`selects`), and a tenant's answers rewritten whole into its names (`shown`,
 * object-names.ts: items not the tenant's left out). A page can so hold fewer items than its
 * limit; its continue token still leads on (the members' own), so paging stays whole, as the API
 * allows.
 */
interface AnswerEdits {
  selects?: (cluster: string, namespace: string) => boolean;
  shown?: (doc: unknown) => unknown;
  target: ResourceTarget;
}
const answerEdits = new WeakMap<FastifyReply, AnswerEdits>();
/** The hold of a read whose answer is still to be written (sendAs takes the answer's bytes too). */
const answerHolds = new WeakMap<FastifyReply, LiveBufferHold>();

/** A list's items or a Table's rows that the tree selects (each item names its cluster). */
function selectedItems(doc: unknown, selects: (cluster: string, namespace: string) => boolean, cluster?: string): unknown {
  if (!isJsonObject(doc)) return doc;
  const namespaceOf = (o: unknown) => {
    const md = isJsonObject(o) ? o['metadata'] : undefined;
    return isJsonObject(md) && typeof md['namespace'] === 'string' ? md['namespace'] : '';
  };
  const clusterOf = (o: unknown) => {
    const md = isJsonObject(o) ? o['metadata'] : undefined;
    const ann = isJsonObject(md) ? md['annotations'] : undefined;
    return cluster ?? (isJsonObject(ann) && typeof ann[CLUSTER_ANNOTATION] === 'string' ? ann[CLUSTER_ANNOTATION] : '');
  };
  if (Array.isArray(doc['rows'])) {
    const at = clusterColumnAt(Array.isArray(doc['columnDefinitions']) ? doc['columnDefinitions'] : []);
    return { ...doc, rows: doc['rows'].filter((r: unknown) => isJsonObject(r) && selects(cluster ?? String(Array.isArray(r['cells']) ? clusterCellOf(r['cells'], at) ?? '' : ''), namespaceOf(r['object']))) };
  }
  if (Array.isArray(doc['items'])) return { ...doc, items: doc['items'].filter((i: unknown) => selects(clusterOf(i), namespaceOf(i))) };
  return selects(clusterOf(doc), namespaceOf(doc)) ? doc : undefined;
}

/** Whether a resource (not cached) is read live from the members under this configuration. */
export function servedLive(config: LiveReadsConfig, group: string, resource: string): boolean {
  if (!config.enabled) return false;
  const name = group ? `${resource}.${group}` : resource;
  return !config.exclude.includes(name);
}

/** What /status says of live reads. */
export function liveStatus(config: LiveReadsConfig, limits?: LiveReadLimits): { enabled: boolean; served: string; exclude: string[]; concurrency: number } & Partial<LiveReadStats> {
  return {
    enabled: config.enabled,
    served: config.enabled ? 'every resource the members serve that flotilla does not cache, except those excluded' : 'none',
    exclude: [...config.exclude],
    concurrency: config.concurrency ?? MEMBER_FAN_OUT,
    ...(limits ? limits.stats() : {}),
  };
}

type Doc = Record<string, unknown>;


/**
 * Subresources read live like their object (a get asked of every member, the first copy shown):
 * the object's own state, each that Kubernetes serves to a get (a CertificateSigningRequest's
 * approval, a pod's ephemeral containers and resize are the pod). Others (proxy, log, exec…)
 * reach one member's workload, not the object, so they are never fanned out.
 */
const LIVE_SUBRESOURCES: ReadonlySet<string> = new Set(['status', 'scale', 'approval', 'ephemeralcontainers', 'resize']);

/** One member's answer, or why there is none. */
export interface MemberResult {
  cluster: string;
  status?: number;
  headers?: IncomingMessage['headers'];
  body?: Buffer;
  error?: string;
}

const PASSED_ERROR_HEADERS = ['content-type', 'retry-after', 'warning'];

function accepted(form: ResponseForm, list: boolean): string {
  if (form === 'table') return 'application/json;as=Table;v=v1;g=meta.k8s.io';
  if (form === 'metadata') return `application/json;as=PartialObjectMetadata${list ? 'List' : ''};v=v1;g=meta.k8s.io`;
  return 'application/json';
}

/**
 * `clusters`: the members a fleet-wide read asks (default every member); a resource cached from
 * some clusters only is read live from those, outside the namespaces it caches.
 */
export async function liveRead(req: FastifyRequest, reply: FastifyReply, deps: LiveReadDeps, target: ResourceTarget, fleetClusters?: readonly string[]): Promise<FastifyReply> {
  if (!servedLive(deps.config, target.group, target.resource)) throw notServed();
  const params = new URLSearchParams(req.url.includes('?') ? req.url.slice(req.url.indexOf('?') + 1) : '');
  const watching = watchRequested(params.get('watch'));
  if (target.subresource !== undefined && (target.name === undefined || watching || !LIVE_SUBRESOURCES.has(target.subresource))) throw notServed();
  const list = target.name === undefined;
  // Protobuf, for a client that takes nothing else: the members' own encoding, edited as it
  // passes. Not for a tenant or a hierarchy selection, whose edits read JSON: 406.
  const protobuf = protobufOnly(req.headers.accept, { list: list && !watching }) && !deps.tenant && !deps.treeSelection;
  const form = protobuf ? 'object' : negotiate(req.headers.accept, { list: list && !watching });
  const identity = await deps.callerHeaders(req.raw);
  const clusters = target.cluster !== undefined ? [target.cluster] : fleetClusters ?? deps.fleet.clusterNames();
  const ua = req.headers['user-agent'];
  const headers: Record<string, string | string[]> = { ...identity, accept: protobuf ? PROTOBUF_CONTENT_TYPE : accepted(form, list), 'user-agent': `${typeof ua === 'string' ? ua : 'unknown'} via flotilla` };
  const path = canonicalPath({ ...target, cluster: undefined });
  if (deps.hold && !watching) answerHolds.set(reply, deps.hold);
  const ask = (source: string, query: URLSearchParams): Promise<MemberResult> => {
    const namespace = namespaceOf(source);
    return askMember(deps, clusterOf(source), namespace === undefined ? path : canonicalPath({ ...target, cluster: undefined, namespace }), query, headers);
  };
  // Hierarchy selectors are flotilla's (the namespace tree of cached namespaces): the members get
  // the rest of the selector, and what they answer is kept where the tree selects it. Without a
  // tree (namespaces not cached), the members match them against the objects' labels: said.
  const tree = deps.treeSelection;
  if (tree && list) {
    if (tree.rest) params.set('labelSelector', tree.rest);
    else params.delete('labelSelector');
  }
  const notes = !tree && (params.get('labelSelector') ?? '').includes(TREE_LABEL_SUFFIX)
    ? [warning(`hierarchy selectors (*${TREE_LABEL_SUFFIX}) select by the namespace tree of cached namespaces; flotilla caches none here, so the members match them against the objects' own labels`)]
    : [];
  const tenant = deps.tenant;
  const resource = tenant?.resource(target.group, target.resource);
  if (tenant || (tree && list)) {
    answerEdits.set(reply, {
      ...(tree && list ? { selects: (cluster: string, namespace: string) => tree.selects(cluster, namespace) } : {}),
      ...(tenant ? { shown: (doc: unknown) => answerToTenant(doc, tenant.naming, resource) } : {}),
      target,
    });
  }
  if (watching) return liveWatch(reply, deps, clusters, params, path, { ...headers, accept: protobuf ? PROTOBUF_CONTENT_TYPE : accepted(form, false) }, notes, protobuf);
  if (!list) return liveGet(reply, deps, clusters, params, ask, target, protobuf);
  return liveList(reply, deps, sourcesOf(deps, target, clusters), params, ask, notes, protobuf);
}

/** Why a member that did not answer in time is left out. */
const UNANSWERED = `did not answer within ${MEMBER_READ_TIMEOUT_MS / 1000} s`;

/**
 * One member's answer, or why there is none. A read the live reads' buffer refused fails whole
 * (its refusal, a 429), rather than leave members out: flotilla's own load is no member's failure.
 */
async function askMember(deps: LiveReadDeps, cluster: string, path: string, query: URLSearchParams, headers: Record<string, string | string[]>): Promise<MemberResult> {
  const member = deps.fleet.member(cluster);
  if (!member) return { cluster, error: 'not a member of the fleet' };
  const hold = deps.hold;
  if (hold?.isRefused) throw hold.refusal();
  const q = query.toString();
  try {
    const res = await member.fetch({ method: 'GET', path: q ? `${path}?${q}` : path, headers, signal: AbortSignal.timeout(MEMBER_READ_TIMEOUT_MS) }, hold && ((n) => hold.take(n)));
    return { cluster, status: res.status, headers: res.headers, body: res.body };
  } catch (e) {
    if (e instanceof AnswerRefusedError && hold) throw hold.refusal();
    const err = e as Error;
    return { cluster, error: err.name === 'TimeoutError' || err.name === 'AbortError' ? UNANSWERED : err.message };
  }
}

function bodyText(r: MemberResult): string {
  return answerMessage(r.body, 300);
}

/**
 * A member's answer once flotilla has tried to read it: a 200 it could not read (`read` undefined)
 * counts as a member that failed, so it is named in a Warning rather than left out unsaid, and
 * is never passed on unedited when no other member answers (503 naming it).
 */
export function settled(r: MemberResult, read: unknown): MemberResult {
  return r.status === 200 && read === undefined ? { cluster: r.cluster, error: UNREADABLE } : r;
}

const UNREADABLE = 'answered 200 with a body flotilla could not read';

/**
 * A Warning for a member left out of an answer, or undefined when its leaving out needs none: a
 * 404 (a list: it does not serve the resource; a get: it has no such object).
 */
export function leftOutWarning(r: MemberResult): string | undefined {
  if (r.error !== undefined) return warning(`cluster ${r.cluster} is left out: ${r.error.slice(0, 200)}`);
  if (r.status === 404) return undefined;
  if (r.status === 403) return warning(`cluster ${r.cluster} refused: ${bodyText(r).slice(0, 300)}`);
  return warning(`cluster ${r.cluster} is left out: it answered ${r.status}: ${bodyText(r).slice(0, 200)}`);
}

/**
 * The answer when no member gave one: a member's refusal of the request itself (400, 422) first,
 * then a refusal of the caller (403), a member's own failure (5xx), members that could not be
 * reached (503), and last "not found" (404, as the member words it).
 */
function noAnswer(reply: FastifyReply, results: readonly MemberResult[]): FastifyReply {
  const answered = results.filter((r) => r.status !== undefined);
  const rank = (s: number) => (s === 404 ? 4 : s === 403 ? 1 : s >= 500 ? 2 : 0);
  const unreachable = results.filter((r) => r.error !== undefined);
  const pick = [...answered].sort((a, b) => rank(a.status!) - rank(b.status!))[0];
  if (unreachable.length > 0 && (!pick || pick.status === 404)) {
    throw serviceUnavailable(unreachable.map((r) => `cluster ${r.cluster} ${r.error}`).join('; '));
  }
  if (!pick) throw serviceUnavailable('no member cluster to ask');
  // A path no member serves is a bare 404 page from each: flotilla's every error is a Status.
  if (pick.status === 404 && !isStatusBody(pick)) throw notServed();
  const others = results.filter((r) => r !== pick).map((r) => leftOutWarning(r)).filter((w): w is string => w !== undefined);
  for (const h of PASSED_ERROR_HEADERS) {
    const v = pick.headers?.[h];
    if (h === 'warning') {
      const own = v === undefined ? [] : Array.isArray(v) ? v : [v];
      if (own.length + others.length > 0) reply.header('warning', [...own, ...others]);
    } else if (v !== undefined) reply.header(h, v);
  }
  return reply.code(pick.status!).send(pick.body);
}

function isStatusBody(r: MemberResult): boolean {
  // A member's Status in protobuf (to a client that takes only that): a 404 page is never one.
  if (isProtobuf(r.headers?.['content-type'])) return true;
  try {
    return r.body !== undefined && isStatusObject(JSON.parse(r.body.toString('utf8')));
  } catch {
    return false;
  }
}

interface Parsed {
  cluster: string;
  /** The answer; of a spliced list, its members but items. */
  doc: Doc;
  warnings: string[];
  /** A JSON list's items read in place (api/fleet-object splicedList), and the body they are ranges of. */
  spliced?: { list: SplicedList; body: Buffer };
  /** A protobuf list's items, each edited as flotilla shows it (its doc: kind, apiVersion, metadata). */
  protobufItems?: Uint8Array[];
}

function warningsOf(r: MemberResult): string[] {
  const w = r.headers?.['warning'];
  return w === undefined ? [] : Array.isArray(w) ? w : [w];
}

function parsed(r: MemberResult): Parsed | undefined {
  try {
    const doc = JSON.parse(r.body!.toString('utf8')) as unknown;
    if (!isJsonObject(doc)) return undefined;
    return { cluster: r.cluster, doc, warnings: warningsOf(r) };
  } catch {
    return undefined;
  }
}

/** A list answer, its items read in place when the splice follows them, parsed otherwise. */
function parsedList(r: MemberResult): Parsed | undefined {
  const list = r.body ? splicedList(r.body, r.cluster) : undefined;
  if (!list) return parsed(r);
  return { cluster: r.cluster, doc: list.head, warnings: warningsOf(r), spliced: { list, body: r.body! } };
}

/**
 * A member's protobuf list, its items edited as toFleet edits JSON ones (a global RV of the
 * member's, the cluster annotation); undefined for an answer that is no protobuf list.
 */
function protobufListOf(r: MemberResult): Parsed | undefined {
  const list = r.body && isProtobuf(r.headers?.['content-type']) ? protobufListToFleet(r.body, r.cluster) : undefined;
  if (!list) return undefined;
  return { cluster: r.cluster, doc: { kind: list.kind, apiVersion: list.apiVersion, metadata: list.metadata }, warnings: warningsOf(r), protobufItems: list.items };
}

/** The same answer wholly parsed, for a merge where another member's answer could not be spliced. */
function unspliced(a: Parsed): Parsed | undefined {
  if (!a.spliced) return a;
  const whole = parsed({ cluster: a.cluster, body: a.spliced.body });
  return whole && { ...whole, warnings: a.warnings };
}

/**
 * Spliced lists as one, in the members' order: the first's kind and apiVersion, `metadata`, and
 * every member's item bytes, as merged() makes them (JSON.stringify of the same values). Tables
 * likewise: the first's columns with the Cluster column, and every member's rows.
 */
function splicedMerged(answers: readonly Parsed[], metadata: Doc): Buffer {
  return mergeSplicedLists(answers.map((a) => a.spliced!), answers[0]!.doc, metadata);
}

/** Members' answers (lists or Tables) as one, in the members' order. */
function merged(answers: readonly Parsed[], metadata: Doc): Doc {
  return mergeParsedLists(answers, metadata);
}

function send(reply: FastifyReply, doc: Doc, warnings: readonly string[]): FastifyReply {
  return sendBody(reply, Buffer.from(JSON.stringify(doc)), warnings);
}

function sendBody(reply: FastifyReply, answer: Buffer, warnings: readonly string[]): FastifyReply {
  const edits = answerEdits.get(reply);
  let body = answer;
  if (edits) {
    let doc: unknown = JSON.parse(answer.toString('utf8'));
    if (edits.selects) doc = selectedItems(doc, edits.selects);
    if (edits.shown && doc !== undefined) doc = edits.shown(doc);
    if (doc === undefined) throw notFound({ group: edits.target.group, resource: edits.target.resource }, edits.target.name ?? '');
    body = Buffer.from(JSON.stringify(doc));
  }
  return sendAs(reply, body, 'application/json', warnings);
}

function sendAs(reply: FastifyReply, body: Buffer, contentType: string, warnings: readonly string[]): FastifyReply {
  const hold = answerHolds.get(reply);
  if (hold && !hold.take(body.length)) throw hold.refusal();
  const unique = [...new Set(warnings)];
  if (unique.length) reply.header('warning', unique);
  return reply.code(200).type(contentType).send(body);
}

/** Asks one source of a list (sourcesOf): a member, or one namespace of it. */
type Ask = (source: string, query: URLSearchParams) => Promise<MemberResult>;

/**
 * What a list asks: each member, or for a tenant's list across its namespaces each of its
 * namespaces on each member (`east/acme-web`), where flotilla knows them (namespaces cached): the
 * member-side policy makes a tenant's admins admins of their namespaces alone, so a member refuses
 * them the cluster-wide list. A member none of whose namespaces is the tenant's is not asked.
 */
function sourcesOf(deps: LiveReadDeps, target: ResourceTarget, clusters: readonly string[]): string[] {
  const tenant = deps.tenant;
  if (!tenant || target.namespace !== undefined || !tenant.resource(target.group, target.resource)?.namespaced) return [...clusters];
  const sources = clusters.flatMap((c) => {
    const namespaces = deps.namespacesOf?.(c);
    return namespaces === undefined ? [c] : namespaces.filter((ns) => tenant.naming.tenant.ownsNamespace(ns)).map((ns) => `${c}/${ns}`);
  });
  // No namespace of the tenant anywhere: the members' own (empty, or refused) answer.
  return sources.length > 0 ? sources : [...clusters];
}

function clusterOf(source: string): string {
  const slash = source.indexOf('/');
  return slash < 0 ? source : source.slice(0, slash);
}

function namespaceOf(source: string): string | undefined {
  const slash = source.indexOf('/');
  return slash < 0 ? undefined : source.slice(slash + 1);
}

/**
 * Which of several members' copies of a name a get answers: the first in the fleet's order
 * (`hits` come in it), with a Warning naming every member that holds one, as for cached gets.
 */
export function chooseLiveGet<T extends { cluster: string }>(hits: readonly T[], what: { resource: string; group: string; name: string }): { hit: T; warning?: string } {
  const [hit, ...others] = hits;
  if (others.length === 0) return { hit: hit! };
  return { hit: hit!, warning: firstHitWarning(`${what.resource}${what.group ? '.' + what.group : ''} "${what.name}"`, hits.map((h) => h.cluster)) };
}

async function liveGet(reply: FastifyReply, deps: LiveReadDeps, clusters: readonly string[], params: URLSearchParams, ask: Ask, target: ResourceTarget, protobuf: boolean): Promise<FastifyReply> {
  const query = new URLSearchParams(params);
  const rv = query.get('resourceVersion');
  query.delete('resourceVersion');
  const rvs = rv && rv !== '0' ? decodeGlobalRV(rv) : undefined;
  const results = await mapBounded(clusters, deps.config.concurrency ?? MEMBER_FAN_OUT, (c) => {
    const q = new URLSearchParams(query);
    if (rv === '0') q.set('resourceVersion', '0');
    else if (rvs?.[c] !== undefined) q.set('resourceVersion', rvs[c]!);
    return ask(c, q);
  });
  const answeredIn = (r: MemberResult): Parsed | undefined => (!protobuf ? parsed(r) : isProtobuf(r.headers?.['content-type']) ? { cluster: r.cluster, doc: {}, warnings: warningsOf(r) } : undefined);
  const read = results.map((r) => ({ answer: r, hit: r.status === 200 ? answeredIn(r) : undefined }));
  const hits = read.map((r) => r.hit).filter((p): p is Parsed => p !== undefined);
  const answers = read.map((r) => settled(r.answer, r.hit));
  if (hits.length === 0) return noAnswer(reply, answers);
  const { hit, warning: firstHit } = chooseLiveGet(hits, { resource: target.resource, group: target.group, name: target.name! });
  const warnings = [...hit.warnings, ...(firstHit ? [firstHit] : []), ...answers.filter((r) => r.status !== 200).map((r) => leftOutWarning(r)).filter((w): w is string => w !== undefined)];
  if (protobuf) {
    const body = responseForClient(results.find((r) => r.cluster === hit.cluster)!.body!, PROTOBUF_CONTENT_TYPE, hit.cluster).body;
    return sendAs(reply, body, PROTOBUF_CONTENT_TYPE, warnings);
  }
  if (hit.doc['kind'] === 'Table') {
    const md = isJsonObject(hit.doc['metadata']) ? hit.doc['metadata'] : {};
    return send(reply, merged([hit], { ...md, ...(typeof md['resourceVersion'] === 'string' && md['resourceVersion'] ? { resourceVersion: encodeGlobalRV({ [hit.cluster]: md['resourceVersion'] }) } : {}) }), warnings);
  }
  // The member's bytes edited, not re-serialized (an int64 beyond 2^53 stays exact).
  return sendBody(reply, responseForClient(results.find((r) => r.cluster === hit.cluster)!.body!, 'application/json', hit.cluster).body, warnings);
}

/**
 * A live list's continue token: base64url JSON `{"live": {source: member continue, or null for a
 * source not asked yet}, "rv": {cluster: member RV of its first page}}`, a source a member or one
 * namespace of it (`east/acme-web`, sourcesOf). Sources that are done (or were left out) are not
 * in it. A cached list's token (`{rv, start, snap}`) is not one of these, nor the other way round:
 * each path answers the other's token with 400.
 */
export interface LiveContinue {
  live: Record<string, string | null>;
  rv: Record<string, string>;
  /** The list's kind and apiVersion, for a later page none of whose members answer (an empty page). */
  kind?: string;
  apiVersion?: string;
}

export function encodeLiveContinue(c: LiveContinue): string {
  return Buffer.from(JSON.stringify({ live: c.live, rv: c.rv, ...(c.kind !== undefined ? { kind: c.kind, apiVersion: c.apiVersion ?? '' } : {}) })).toString('base64url');
}

const CLUSTER_NAME = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
/** A member, or one namespace of it (sourcesOf). */
const SOURCE = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(\/[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)?$/;

export function decodeLiveContinue(token: string): LiveContinue {
  const fail = () => badRequest(`invalid continue token "${token}"`);
  if (!/^[A-Za-z0-9_-]*$/.test(token)) throw fail();
  let doc: unknown;
  try {
    doc = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
  } catch {
    throw fail();
  }
  if (!isJsonObject(doc) || !isJsonObject(doc['live']) || !isJsonObject(doc['rv'])) throw fail();
  const live: Record<string, string | null> = {};
  for (const [c, v] of Object.entries(doc['live'])) {
    if (!SOURCE.test(c) || (v !== null && typeof v !== 'string')) throw fail();
    live[c] = v;
  }
  const rv: Record<string, string> = {};
  for (const [c, v] of Object.entries(doc['rv'])) {
    if (!CLUSTER_NAME.test(c) || typeof v !== 'string' || !/^[0-9]+$/.test(v)) throw fail();
    rv[c] = v;
  }
  if (doc['kind'] !== undefined && (typeof doc['kind'] !== 'string' || typeof doc['apiVersion'] !== 'string')) throw fail();
  return { live, rv, ...(typeof doc['kind'] === 'string' ? { kind: doc['kind'], apiVersion: doc['apiVersion'] as string } : {}) };
}

/** A tenant's live continue token, opened: one it was not given by this flotilla has expired for it. */
function unsealedForTenant(token: string): string {
  const open = unseal(token);
  if (open === undefined) throw expired('the continue token is not one this flotilla gave, or has expired: list again from the start');
  return open;
}

/** A page's limit shared among the members asked for it, in their order: some get one more, none more than the page holds. */
export function shareLimit(limit: number, clusters: readonly string[]): Map<string, number> {
  const out = new Map<string, number>();
  const base = Math.floor(limit / clusters.length);
  const extra = limit % clusters.length;
  clusters.forEach((c, i) => out.set(c, base + (i < extra ? 1 : 0)));
  return out;
}

async function liveList(reply: FastifyReply, deps: LiveReadDeps, sources: readonly string[], params: URLSearchParams, ask: Ask, notes: readonly string[], protobuf: boolean): Promise<FastifyReply> {
  const continueText = params.get('continue');
  const rvText = params.get('resourceVersion');
  const limit = int64Param('limit', params.get('limit')) ?? 0;
  const token = continueText ? decodeLiveContinue(deps.tenant ? unsealedForTenant(continueText) : continueText) : undefined;
  if (token) refuseVersionWithContinue(rvText);
  const since = !token && rvText && rvText !== '0' ? decodeGlobalRV(rvText) : undefined;
  const query = new URLSearchParams(params);
  for (const p of ['continue', 'resourceVersion', 'resourceVersionMatch', 'limit']) query.delete(p);
  const rvMatch = params.get('resourceVersionMatch');
  // Members still to read: all of them, or those the token carries (in the fleet's order).
  let pending = token ? sources.filter((c) => c in token.live) : [...sources];
  const results: MemberResult[] = [];
  let ok: Parsed[] = [];
  /** The source of each of `ok`: a member, or one namespace of it (a tenant's list, sourcesOf). */
  let okSources: string[] = [];
  let carried: string[] = [];
  for (;;) {
    const shares = limit > 0 && pending.length > 0 ? shareLimit(limit, pending) : undefined;
    const asked = pending.filter((c) => !shares || shares.get(c)! > 0);
    // Each answer is read as it arrives, while the slower members are still answering.
    const read = await mapBounded(asked, deps.config.concurrency ?? MEMBER_FAN_OUT, async (c) => {
      const q = new URLSearchParams(query);
      const own = token?.live[c];
      const cluster = clusterOf(c);
      if (own) q.set('continue', own);
      else if (rvText === '0') q.set('resourceVersion', '0');
      else if (since?.[cluster] !== undefined) q.set('resourceVersion', since[cluster]!);
      if (rvMatch && q.has('resourceVersion')) q.set('resourceVersionMatch', rvMatch);
      if (shares) q.set('limit', String(shares.get(c)));
      const answer = await ask(c, q);
      return { source: c, answer, list: answer.status !== 200 ? undefined : protobuf ? protobufListOf(answer) : parsedList(answer) };
    });
    const answers = read.map((r) => settled(r.answer, r.list));
    results.push(...answers);
    // A member's continue that expired expires the whole list: the client lists again.
    const gone = read.find((r, i) => answers[i]!.status === 410 && token?.live[r.source]);
    if (gone) throw expired(`cluster ${gone.answer.cluster}: ${bodyText(gone.answer)}`);
    const listed = read.filter((r) => r.list !== undefined);
    ok = listed.map((r) => r.list!);
    okSources = listed.map((r) => r.source);
    // Members this page did not ask (their share of the limit was 0) keep their place in the token.
    carried = pending.filter((c) => !asked.includes(c));
    // None of those asked answered (refused, failed): the page is the next members' rather than
    // an empty one (a caller refused everywhere gets the refusal, not empty pages).
    if (ok.length > 0 || carried.length === 0) break;
    pending = carried;
  }
  // A later page whose members all refuse or fail: an empty last page, as the earlier ones showed
  // what could be read; a first page: the members' own answer (a caller refused everywhere, 403).
  if (ok.length === 0 && !token?.kind) return noAnswer(reply, results);
  const rvs: Record<string, string> = { ...(token?.rv ?? {}) };
  const live: Record<string, string | null> = {};
  for (const c of carried) live[c] = token?.live[c] ?? null;
  // The items after this page: known only when every member still to read told its own count
  // (a member not asked on this page, or one that counts nothing under a selector, leaves it unknown).
  let remaining: number | undefined = carried.length > 0 ? undefined : 0;
  ok.forEach((a, i) => {
    const md = isJsonObject(a.doc['metadata']) ? a.doc['metadata'] : {};
    // A member's RV is its first page's; of several namespaces of one member, the oldest, so that
    // a watch from it misses nothing any of them showed.
    const rv = md['resourceVersion'];
    if (typeof rv === 'string' && /^[0-9]+$/.test(rv) && (rvs[a.cluster] === undefined || (!token && BigInt(rv) < BigInt(rvs[a.cluster]!)))) rvs[a.cluster] = rv;
    if (typeof md['continue'] === 'string' && md['continue']) {
      live[okSources[i]!] = md['continue'];
      const own = md['remainingItemCount'];
      remaining = remaining !== undefined && typeof own === 'number' && Number.isSafeInteger(own) && own >= 0 ? remaining + own : undefined;
    }
  });
  const head = ok[0]?.doc;
  const kind = typeof head?.['kind'] === 'string' ? { kind: head['kind'], apiVersion: String(head['apiVersion'] ?? '') } : token?.kind !== undefined ? { kind: token.kind, apiVersion: token.apiVersion ?? '' } : {};
  const open = Object.keys(live).length > 0 ? encodeLiveContinue({ live, rv: rvs, ...kind }) : undefined;
  // A tenant's page leaves out what is not the tenant's: the members' counts would count it, and
  // their continue tokens name the key of the next object, whoever's it is.
  const next = open !== undefined && deps.tenant ? seal(open) : open;
  if (deps.tenant) remaining = undefined;
  const listMeta: ListMetaFields = { resourceVersion: encodeGlobalRV(rvs), ...(next ? { continue: next, ...(remaining !== undefined ? { remainingItemCount: remaining } : {}) } : {}) };
  const metadata: Doc = { ...listMeta };
  // One warning of each kind: a member's namespaces answer alike.
  const warnings = [...new Set([...notes, ...ok.flatMap((a) => a.warnings), ...results.filter((r) => r.status !== 200).map((r) => leftOutWarning(r)).filter((w): w is string => w !== undefined)])];
  if (protobuf) {
    const list = writeProtobufList({ kind: kind.kind ?? '', apiVersion: kind.apiVersion ?? '', metadata: listMeta, items: ok.flatMap((a) => a.protobufItems ?? []) });
    return sendAs(reply, list, PROTOBUF_CONTENT_TYPE, warnings);
  }
  if (ok.length === 0) {
    const empty = token!.kind === 'Table' ? { columnDefinitions: [CLUSTER_COLUMN], rows: [] } : { items: [] };
    return send(reply, { kind: token!.kind, apiVersion: token!.apiVersion, metadata, ...empty }, warnings);
  }
  const spliced = ok.every((a) => a.spliced && (a.spliced.list.table === true) === (ok[0]!.spliced!.list.table === true));
  if (spliced) return sendBody(reply, splicedMerged(ok, metadata), warnings);
  return send(reply, merged(ok.map(unspliced).filter((p): p is Parsed => p !== undefined), metadata), warnings);
}

const INITIAL_EVENTS_END = 'k8s.io/initial-events-end';

/** Whether a bookmark's object (or, in a Table, its row's object) ends the initial events. */
function endsInitialEvents(obj: Doc): boolean {
  const md = obj['metadata'];
  if (isJsonObject(md) && isJsonObject(md['annotations']) && md['annotations'][INITIAL_EVENTS_END] === 'true') return true;
  const rows = obj['rows'];
  return Array.isArray(rows) && rows.some((r) => isJsonObject(r) && isJsonObject(r['object']) && endsInitialEvents(r['object']));
}

/**
 * A live watch: every member's watch, as the caller, interleaved. Each event's object is
 * annotated with its cluster, and its resourceVersion is the global one of that moment (each
 * member's latest, the event's own member at the event), so a client resumes from any event or
 * bookmark: a global `resourceVersion` gives each member its own. A member that refuses or does
 * not answer within the member timeout is named in a Warning and left out; when none answers,
 * a member's own answer (as for lists). The watch ends when any member's watch ends (its
 * timeout, an error, an ERROR event, which is passed on), so that the client watches again from
 * the last resourceVersion it saw rather than miss a member's events. Tables: the Cluster column
 * after the name, column definitions in the first event only.
 */
async function liveWatch(reply: FastifyReply, deps: LiveReadDeps, clusters: readonly string[], params: URLSearchParams, path: string, headers: Record<string, string | string[]>, notes: readonly string[], protobuf: boolean): Promise<FastifyReply> {
  const rvText = params.get('resourceVersion');
  const since = rvText && rvText !== '0' ? decodeGlobalRV(rvText) : undefined;
  const query = new URLSearchParams(params);
  query.delete('resourceVersion');
  const rvs: Record<string, string> = { ...(since ?? {}) };
  /** The global RV at a member's event: that member's RV is now `rv`, each other's its latest. */
  const globalAt = (cluster: string, rv: string): string => {
    rvs[cluster] = rv;
    return encodeGlobalRV(rvs);
  };
  // Counted from here, so that watches starting together cannot all pass the bound.
  if (deps.hold && !deps.hold.startWatch(reply.raw)) throw deps.hold.watchRefusal();
  const aborter = new AbortController();
  const opened = await mapBounded(clusters, clusters.length, async (cluster): Promise<MemberResult & { stream?: IncomingMessage }> => {
    const member = deps.fleet.member(cluster);
    if (!member) return { cluster, error: 'not a member of the fleet' };
    const q = new URLSearchParams(query);
    if (rvText === '0') q.set('resourceVersion', '0');
    else if (since?.[cluster] !== undefined) q.set('resourceVersion', since[cluster]!);
    const own = new AbortController();
    const stop = () => own.abort();
    aborter.signal.addEventListener('abort', stop, { once: true });
    const headerTimer = setTimeout(() => own.abort(), MEMBER_READ_TIMEOUT_MS);
    try {
      const res = await member.send({ method: 'GET', path: `${path}?${q}`, headers, signal: own.signal, lane: 'long-running' });
      clearTimeout(headerTimer);
      if (res.statusCode === 200) return { cluster, status: 200, headers: res.headers, stream: res };
      const chunks: Buffer[] = [];
      for await (const c of res) chunks.push(c as Buffer);
      return { cluster, status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) };
    } catch (e) {
      return { cluster, error: own.signal.aborted ? UNANSWERED : (e as Error).message };
    } finally {
      clearTimeout(headerTimer);
    }
  });
  const streams = opened.filter((o) => o.stream !== undefined);
  if (streams.length === 0) return noAnswer(reply, opened);
  const warnings = [...notes, ...opened.filter((o) => o.stream === undefined).map((o) => leftOutWarning(o)).filter((w): w is string => w !== undefined)];
  reply.hijack();
  const out = reply.raw;
  out.statusCode = 200;
  out.setHeader('content-type', protobuf ? PROTOBUF_WATCH_CONTENT_TYPE : 'application/json');
  // Past fastify's onSend, which rewords a tenant's other answers: reworded here.
  const tenant = deps.tenant?.naming.tenant;
  if (warnings.length) out.setHeader('warning', tenant ? warnings.map((w) => tenant.tenantText(w)) : warnings);
  out.flushHeaders();
  let ended = false;
  // Column definitions come from one member's stream, on the lines it sends them (a member sends
  // them on its first line, and again on its first event when that line was a bookmark).
  let headerCluster: string | undefined;
  let heldColumns: unknown[] | undefined;
  // Where each member's rows take the Cluster cell, from the columns its stream sent.
  const clusterAt = new Map<string, number>();
  // A watch-list's initial-events-end bookmark means "you have everything": sent once, after
  // every member's own, with the global RV of that moment.
  const initialEventsEnded = new Set<string>();
  const finish = () => {
    if (ended) return;
    ended = true;
    aborter.abort();
    for (const o of streams) o.stream!.destroy();
    out.end();
  };
  out.on('close', finish);
  const event = (cluster: string, line: string) => {
    let e: Doc;
    try {
      e = JSON.parse(line) as Doc;
    } catch {
      return;
    }
    const obj = e['object'];
    if (e['type'] === 'ERROR' || !isJsonObject(obj)) {
      out.write(line + '\n');
      finish();
      return;
    }
    if (e['type'] === 'BOOKMARK' && endsInitialEvents(obj)) {
      initialEventsEnded.add(cluster);
      if (initialEventsEnded.size < streams.length) {
        const cols = obj['columnDefinitions'];
        if (headerCluster === undefined && Array.isArray(cols) && cols.length > 0) heldColumns = cols;
        const md = obj['metadata'];
        if (isJsonObject(md) && typeof md['resourceVersion'] === 'string' && md['resourceVersion'] !== '') rvs[cluster] = md['resourceVersion'];
        return;
      }
    }
    const edits = answerEdits.get(reply);
    if (obj['kind'] !== 'Table' && !edits) {
      const edited = splicedWatchEvent(Buffer.from(line), cluster, e['type'] !== 'BOOKMARK', (rv) => globalAt(cluster, rv));
      if (edited) {
        out.write(edited);
        out.write('\n');
        return;
      }
    }
    const stamp = (o: Doc, annotate: boolean) => stampObject(o, cluster, { annotate, globalRV: (rv) => globalAt(cluster, rv) });
    if (obj['kind'] === 'Table') {
      const own = obj['columnDefinitions'];
      const cols = Array.isArray(own) && own.length > 0 ? own : headerCluster === undefined ? heldColumns : undefined;
      if (Array.isArray(own) && own.length > 0) clusterAt.set(cluster, clusterColumnAt(own));
      const at = clusterAt.get(cluster) ?? clusterColumnAt(heldColumns ?? []);
      if (cols && (headerCluster === undefined || headerCluster === cluster)) {
        obj['columnDefinitions'] = withCluster<unknown>(cols, CLUSTER_COLUMN, clusterColumnAt(cols));
        headerCluster = cluster;
      } else obj['columnDefinitions'] = null;
      for (const row of Array.isArray(obj['rows']) ? obj['rows'] : []) {
        if (!isJsonObject(row)) continue;
        row['cells'] = withCluster<unknown>(Array.isArray(row['cells']) ? row['cells'] : [], cluster, at);
        if (isJsonObject(row['object'])) stamp(row['object'], e['type'] !== 'BOOKMARK');
      }
      stamp(obj, false);
    } else stamp(obj, e['type'] !== 'BOOKMARK');
    if (edits && e['type'] !== 'BOOKMARK') {
      let shown: unknown = edits.selects ? selectedItems(obj, edits.selects, cluster) : obj;
      if (edits.shown && shown !== undefined) shown = edits.shown(shown);
      // Not selected, or not the tenant's: the watch never hears of it.
      if (shown === undefined || (isJsonObject(shown) && shown['kind'] === 'Table' && Array.isArray(shown['rows']) && shown['rows'].length === 0)) return;
      e['object'] = shown;
    }
    out.write(JSON.stringify(e) + '\n');
  };
  /**
   * A member's event in protobuf, edited as the JSON one is spliced (the global RV, the cluster
   * annotation), its other bytes the member's. An ERROR event passes and ends the watch, as does
   * a frame flotilla cannot follow: the client watches again from the last RV it saw.
   */
  const protobufEvent = (cluster: string, frame: Buffer) => {
    const e = readWatchEvent(frame);
    if (!e || e.type === 'ERROR') {
      if (e) out.write(lengthPrefixed(frame));
      finish();
      return;
    }
    const edited = editProtobufObject(e.object, {
      resourceVersion: (rv) => (rv === '' ? rv : globalAt(cluster, rv)),
      setAnnotation: { key: CLUSTER_ANNOTATION, value: cluster, when: () => e.type !== 'BOOKMARK' },
      readAnnotation: INITIAL_EVENTS_END,
    });
    if (!edited) {
      finish();
      return;
    }
    if (e.type === 'BOOKMARK' && edited.facts.annotation === 'true') {
      initialEventsEnded.add(cluster);
      // Its RV is kept (above); the bookmark itself waits for every member's.
      if (initialEventsEnded.size < streams.length) return;
    }
    out.write(watchEventFrame({ type: e.type, object: edited.body }));
  };
  /** What reads one member's stream: length-delimited protobuf frames, or JSON lines. */
  const reader = (cluster: string): ((chunk: Buffer) => void) => {
    if (protobuf) {
      const frames = new WatchFrames();
      return (chunk) => {
        let complete: Buffer[];
        try {
          complete = frames.push(chunk);
        } catch {
          finish();
          return;
        }
        for (const frame of complete) if (!ended) protobufEvent(cluster, frame);
      };
    }
    const decoder = new StringDecoder('utf8');
    let pending = '';
    return (chunk) => {
      pending += decoder.write(chunk);
      let nl: number;
      while (!ended && (nl = pending.indexOf('\n')) >= 0) {
        const line = pending.slice(0, nl).trim();
        pending = pending.slice(nl + 1);
        if (line) event(cluster, line);
      }
    };
  };
  // A client that reads slower than the members write makes the members wait: their streams are
  // paused until this response drains, so flotilla holds a chunk or so a member, never the
  // backlog (a client that read nothing while a member wrote 900 MB of events had 241 MB queued
  // here). A member whose watcher stays blocked ends its watch, and so this one (the client
  // watches again from its last resourceVersion), as a slow watcher of that member would.
  let paused = false;
  const pace = () => {
    if (paused || ended || !out.writableNeedDrain) return;
    paused = true;
    for (const o of streams) o.stream!.pause();
    out.once('drain', () => {
      paused = false;
      if (!ended) for (const o of streams) o.stream!.resume();
    });
  };
  for (const o of streams) {
    const read = reader(o.cluster);
    o.stream!.on('data', (chunk: Buffer) => {
      if (ended) return;
      read(chunk);
      pace();
    });
    o.stream!.on('end', finish);
    o.stream!.on('error', finish);
    o.stream!.on('close', finish);
  }
  return reply;
}
