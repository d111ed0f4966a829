import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { FleetMembers } from '../../cacher/cache-roles.js';
import type { ReadAuthorizer } from '../../authz/authorizer.js';
import { effectiveGroups, type ResourceAttributes } from '../../api/rbac.js';
import { StatusError, badRequest, notServed } from '../../api/status.js';
import type { ReviewedPath } from '../../members/access-reviews.js';
import type { Callers } from '../callers.js';
import { CLUSTER_PREFIXES, targetOf } from '../target.js';
import { sendJson } from '../replies.js';
import { requirePlainObject, requireServedMedia } from '../../api/negotiate.js';
import type { Tenant } from '../../tenancy/tenant.js';
import { bodyBytes } from '../../api/write-body.js';
import { RULES_REVIEW_TIMEOUT_MS } from '../../registry/defaults.js';

/**
 * Who am I and can I, answered by flotilla for the fleet (`kubectl auth whoami`, `auth can-i`,
 * `auth can-i --list`): a SelfSubjectReview is the identity flotilla authenticated; a
 * SelfSubjectAccessReview is allowed when some member allows the request (the members named in
 * the reason), as flotilla decides cached reads; a SelfSubjectRulesReview is the union of the
 * members' own answers for the caller. Under `/clusters/<name>/`, that member's alone.
 */
export interface SelfReviewsOptions {
  fleet: FleetMembers;
  callers: Callers;
  authorizer: ReadAuthorizer;
}

const AUTHN = 'authentication.k8s.io';
const AUTHZ = 'authorization.k8s.io';

interface AccessReviewSpec {
  resourceAttributes?: Partial<ResourceAttributes> & { version?: string };
  nonResourceAttributes?: { path?: string; verb?: string };
}

interface RulesStatus {
  resourceRules?: unknown[];
  nonResourceRules?: unknown[];
  incomplete?: boolean;
  evaluationError?: string;
}

/** A tenant's rules review names its namespace: in the member's names (JSON only; another encoding is refused). */
function rulesReviewToMember(body: Buffer, contentType: string, tenant: Tenant): Buffer {
  if (!contentType.startsWith('application/json')) throw new StatusError(415, 'UnsupportedMediaType', `tenant ${tenant.id} sends reviews in JSON`);
  let review: { spec?: { namespace?: unknown } };
  try {
    review = JSON.parse(body.toString('utf8')) as typeof review;
  } catch {
    throw badRequest('the request body must be a JSON object');
  }
  if (typeof review.spec?.namespace === 'string' && review.spec.namespace !== '') review.spec.namespace = tenant.memberNamespace(review.spec.namespace);
  return bodyBytes(review);
}

export const selfReviewsPlugin: FastifyPluginAsync<SelfReviewsOptions> = async (app, { fleet, callers, authorizer }) => {
  // Bodies come as JSON or protobuf (kubectl 1.30 on): taken as they are, read below.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: 256 * 1024 }, (_req, body, done) => done(null, body));

  /**
   * The access review the caller sent. JSON is read here; another encoding (protobuf) is read by a
   * member it addresses: the review sent there as the caller comes back as JSON, its spec included.
   */
  async function reviewOf(req: FastifyRequest): Promise<unknown> {
    const body = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
    const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
    if (type === 'application/json' || type === '') {
      try {
        const parsed = JSON.parse(body.toString('utf8')) as unknown;
        if (parsed !== null && typeof parsed === 'object') return parsed;
      } catch {
        // answered below
      }
      throw badRequest('the request body must be a JSON object');
    }
    const cluster = clustersOf(req)[0];
    const member = cluster !== undefined ? fleet.member(cluster) : undefined;
    if (!member) throw badRequest(`flotilla reads a ${type} review through a member, and none is connected`);
    const res = await member.fetch({
      method: 'POST',
      path: (req.url.split('?')[0] ?? '').replace(/^\/clusters\/[^/]+/, ''),
      headers: { ...(await callers.headersFor(req.raw)), 'content-type': type, accept: 'application/json' },
      body,
      signal: AbortSignal.timeout(RULES_REVIEW_TIMEOUT_MS),
    });
    if (res.status !== 201 && res.status !== 200) throw badRequest(`cluster ${cluster} could not read the review (HTTP ${res.status}): ${res.body.toString('utf8').slice(0, 200)}`);
    return JSON.parse(res.body.toString('utf8')) as unknown;
  }

  const clustersOf = (req: FastifyRequest): string[] => {
    const { cluster } = targetOf(req.raw, fleet);
    return cluster !== undefined ? [cluster] : fleet.clusterNames();
  };

  async function whoAmI(req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    const version = (req.params as { version: string }).version;
    if (!['v1', 'v1beta1', 'v1alpha1'].includes(version)) throw notServed();
    const id = await callers.reader(req.raw);
    // The groups the apiserver gives the caller: system:authenticated (and a service account's own) included.
    const groups = [...effectiveGroups({ user: id.user, groups: id.groups })];
    const userInfo = { username: id.user, ...(id.uid ? { uid: id.uid } : {}), groups, ...(Object.keys(id.extra).length ? { extra: id.extra } : {}) };
    return sendJson(reply.code(201), { kind: 'SelfSubjectReview', apiVersion: `${AUTHN}/${version}`, metadata: { creationTimestamp: null }, status: { userInfo } });
  }

  async function canI(req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    const caller = await callers.reader(req.raw);
    const review = (await reviewOf(req)) as { spec?: AccessReviewSpec };
    const spec = review.spec ?? {};
    let attrs: ResourceAttributes | ReviewedPath;
    if (spec.resourceAttributes && !spec.nonResourceAttributes) {
      const r = spec.resourceAttributes;
      attrs = {
        verb: r.verb ?? '', group: r.group ?? '', resource: r.resource ?? '',
        ...(r.subresource ? { subresource: r.subresource } : {}),
        ...(r.namespace ? { namespace: r.namespace } : {}),
        ...(r.name ? { name: r.name } : {}),
      };
    } else if (spec.nonResourceAttributes && !spec.resourceAttributes) {
      attrs = { path: spec.nonResourceAttributes.path ?? '', verb: spec.nonResourceAttributes.verb ?? '' };
    } else {
      throw badRequest('SelfSubjectAccessReview: exactly one of spec.resourceAttributes and spec.nonResourceAttributes must be given');
    }
    const clusters = clustersOf(req);
    // A tenant asks in its names; members decide on theirs.
    const tenant = callers.tenantSeen(req.raw);
    if (tenant && 'resource' in attrs) {
      if (attrs.namespace !== undefined) attrs.namespace = tenant.memberNamespace(attrs.namespace);
      if (attrs.name !== undefined && attrs.namespace === undefined) {
        attrs.name = tenant.memberName(attrs.group, attrs.resource, attrs.name, tenant.policy(attrs.group, attrs.resource, false)) ?? attrs.name;
      }
    }
    const verdicts = await authorizer.verdicts(caller, clusters, attrs);
    const allowedIn = clusters.filter((c) => verdicts.get(c));
    const reason = allowedIn.length === 0 ? '' : clusters.length === 1 ? `allowed by cluster ${allowedIn[0]}` : `allowed by clusters ${allowedIn.join(', ')}${allowedIn.length < clusters.length ? `; not by ${clusters.filter((c) => !verdicts.get(c)).join(', ')}` : ''}`;
    return sendJson(reply.code(201), {
      kind: 'SelfSubjectAccessReview', apiVersion: `${AUTHZ}/v1`, metadata: { creationTimestamp: null }, spec,
      status: { allowed: allowedIn.length > 0, ...(reason ? { reason } : {}) },
    });
  }

  async function rules(req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    const headers = await callers.headersFor(req.raw);
    // Each member reads the review as it came (JSON or protobuf) and answers in JSON.
    const sent = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
    const contentType = req.headers['content-type'] ?? 'application/json';
    const clusters = clustersOf(req);
    const tenant = callers.tenantSeen(req.raw);
    const body = tenant ? rulesReviewToMember(sent, contentType, tenant) : sent;
    const answers = await Promise.all(clusters.map(async (cluster) => {
      const member = fleet.member(cluster);
      try {
        if (!member) throw new Error('no connection yet');
        const res = await member.fetch({
          method: 'POST',
          path: `/apis/${AUTHZ}/v1/selfsubjectrulesreviews`,
          headers: { ...headers, 'content-type': contentType, accept: 'application/json' },
          body,
          signal: AbortSignal.timeout(RULES_REVIEW_TIMEOUT_MS),
        });
        if (res.status === 400) throw badRequest(`cluster ${cluster}: ${res.body.toString('utf8').slice(0, 300)}`);
        if (res.status !== 201 && res.status !== 200) throw new Error(`HTTP ${res.status}: ${res.body.toString('utf8').slice(0, 200)}`);
        return { cluster, status: (JSON.parse(res.body.toString('utf8')) as { status?: RulesStatus }).status ?? {} };
      } catch (e) {
        // A review the members cannot read is the caller's error, not an incomplete answer.
        if (e instanceof StatusError) throw e;
        return { cluster, error: (e as Error).message };
      }
    }));
    // The union: what some member allows, each rule once.
    const union = (pick: (s: RulesStatus) => unknown[] | undefined) => {
      const seen = new Map<string, unknown>();
      for (const a of answers) for (const r of (a.status && pick(a.status)) ?? []) seen.set(JSON.stringify(r), r);
      return [...seen.values()];
    };
    const errors = answers.flatMap((a) => (a.error ? [`cluster ${a.cluster}: ${a.error}`] : a.status?.evaluationError ? [`cluster ${a.cluster}: ${a.status.evaluationError}`] : []));
    return sendJson(reply.code(201), {
      kind: 'SelfSubjectRulesReview', apiVersion: `${AUTHZ}/v1`, metadata: { creationTimestamp: null }, spec: {},
      status: {
        resourceRules: union((s) => s.resourceRules),
        nonResourceRules: union((s) => s.nonResourceRules),
        incomplete: answers.some((a) => a.error || a.status?.incomplete),
        ...(errors.length ? { evaluationError: errors.join('; ') } : {}),
      },
    });
  }

  // A review is no list and has no Table form: asked only for one, it is the apiserver's 406; nor CBOR.
  const plain = async (req: FastifyRequest): Promise<void> => {
    requireServedMedia(req.method, req.headers.accept, req.headers['content-type']);
    requirePlainObject(req.headers.accept);
  };
  for (const p of CLUSTER_PREFIXES) {
    app.post(`${p}/apis/${AUTHN}/:version/selfsubjectreviews`, { preHandler: plain }, whoAmI);
    app.post(`${p}/apis/${AUTHZ}/v1/selfsubjectaccessreviews`, { preHandler: plain }, canI);
    app.post(`${p}/apis/${AUTHZ}/v1/selfsubjectrulesreviews`, { preHandler: plain }, rules);
  }
};
