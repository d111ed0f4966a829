import { createHash } from 'node:crypto';
import type { ResourceAttributes } from '../api/rbac.js';
import { serviceUnavailable } from '../api/status.js';
import type { MemberClient } from './member-client.js';
import { ACCESS_REVIEW_TIMEOUT_MS, ACCESS_VERDICTS_MAX, ACCESS_VERDICT_TTL_MS } from '../registry/defaults.js';

/**
 * A member's own verdict on what a caller may do, by SubjectAccessReview, remembered for a few
 * seconds in a bounded map (a watch-heavy client must not cost a review per request). Reviews of
 * the same question asked while one is in flight share it.
 */
export interface ReviewedCaller {
  user: string;
  uid?: string;
  groups: readonly string[];
  extra?: Record<string, string[]>;
}

/** The same attributes the RBAC evaluator decides on. */
export type ReviewedAttributes = ResourceAttributes;

/** A non-resource URL (`/metrics`) and the HTTP verb's name (`get`). */
export interface ReviewedPath {
  path: string;
  verb: string;
}

export interface AccessVerdict {
  allowed: boolean;
  reason: string;
}

export class AccessReviews {
  private readonly verdicts = new Map<string, AccessVerdict & { until: number }>();
  private readonly inflight = new Map<string, Promise<AccessVerdict>>();

  constructor(
    private readonly member: (name: string) => MemberClient | undefined,
    private readonly ttlMs = ACCESS_VERDICT_TTL_MS,
    private readonly maxVerdicts = ACCESS_VERDICTS_MAX,
  ) {}

  /** The verdict remembered for this question, if it has not expired. */
  cached(cluster: string, caller: ReviewedCaller, attrs: ReviewedAttributes | ReviewedPath): AccessVerdict | undefined {
    const v = this.verdicts.get(keyOf(cluster, caller, attrs));
    return v && v.until > Date.now() ? v : undefined;
  }

  /** The member's verdict; 503 when the member cannot be asked. */
  verdict(cluster: string, caller: ReviewedCaller, attrs: ReviewedAttributes | ReviewedPath): Promise<AccessVerdict> {
    const key = keyOf(cluster, caller, attrs);
    const cached = this.verdicts.get(key);
    if (cached && cached.until > Date.now()) return Promise.resolve(cached);
    let pending = this.inflight.get(key);
    if (!pending) {
      pending = this.review(cluster, caller, attrs)
        .then((v) => {
          if (this.verdicts.size >= this.maxVerdicts) this.verdicts.delete(this.verdicts.keys().next().value!);
          this.verdicts.set(key, { ...v, until: Date.now() + this.ttlMs });
          return v;
        })
        .finally(() => this.inflight.delete(key));
      this.inflight.set(key, pending);
    }
    return pending;
  }

  private async review(cluster: string, caller: ReviewedCaller, attrs: ReviewedAttributes | ReviewedPath): Promise<AccessVerdict> {
    const client = this.member(cluster);
    if (!client) throw serviceUnavailable(`cluster "${cluster}" has no connection yet: flotilla cannot ask it what the caller may do`);
    let res;
    try {
      res = await client.fetch({
        method: 'POST',
        path: '/apis/authorization.k8s.io/v1/subjectaccessreviews',
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        body: JSON.stringify({
          apiVersion: 'authorization.k8s.io/v1',
          kind: 'SubjectAccessReview',
          spec: {
            user: caller.user,
            ...(caller.uid ? { uid: caller.uid } : {}),
            groups: caller.groups,
            extra: caller.extra ?? {},
            ...('path' in attrs ? { nonResourceAttributes: attrs } : { resourceAttributes: attrs }),
          },
        }),
        signal: AbortSignal.timeout(ACCESS_REVIEW_TIMEOUT_MS),
        lane: 'reviews',
      });
    } catch (e) {
      throw serviceUnavailable(`cluster "${cluster}" did not answer an access review: ${(e as Error).message}`);
    }
    if (res.status !== 201 && res.status !== 200) throw serviceUnavailable(`cluster "${cluster}" could not review access (HTTP ${res.status})`);
    const review = JSON.parse(res.body.toString('utf8')) as { status?: { allowed?: boolean; reason?: string } };
    return { allowed: review.status?.allowed === true, reason: review.status?.reason ?? '' };
  }
}

function keyOf(cluster: string, caller: ReviewedCaller, attrs: ReviewedAttributes | ReviewedPath): string {
  return createHash('sha256').update(JSON.stringify([cluster, caller.user, caller.uid ?? '', caller.groups, caller.extra ?? {}, attrs])).digest('base64url');
}
