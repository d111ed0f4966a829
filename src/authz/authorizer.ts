import { FULL_ACCESS, NO_ACCESS, SUPERUSER_GROUP, accessSet, authorize, authorizeNonResource, effectiveGroups, type AccessSet, type Caller, type ResourceAttributes } from '../api/rbac.js';
import type { AccessReviews, ReviewedCaller, ReviewedPath } from '../members/access-reviews.js';
import type { MemberPolicies } from './member-policies.js';
import { AUTHZ_ANSWERS_MAX, AUTHZ_NAMESPACE_SETS_MAX, AUTHZ_REVIEWS_AT_ONCE } from '../registry/defaults.js';

/**
 * Where a caller may read a resource, member by member, decided as each member would: by its own
 * RBAC (cached, evaluated here: no round trip), or, for a member whose authorizer is more than
 * RBAC (webhooks, ABAC), by asking it (SubjectAccessReview, verdicts kept a few seconds).
 *
 * The answer per member is an access set: everywhere, some namespaces (an all-namespaces list or
 * watch, which flotilla serves from the namespaces the caller may read, as Rancher's Steve does),
 * or nothing. Answers are kept per (caller, question) until any member's RBAC changes.
 */
export type AuthorizationMode = 'rbac' | 'subjectAccessReview';

export interface ReadQuestion {
  verb: 'get' | 'list' | 'watch';
  group: string;
  resource: string;
  namespaced: boolean;
  /** The request's namespace; undefined for all namespaces (or a cluster-scoped resource). */
  namespace?: string;
  /** A get's name, or a list's or watch's `metadata.name` field selector (as the apiserver reads it). */
  name?: string;
}

export type ClusterAccess = ReadonlyMap<string, AccessSet>;

interface Kept {
  epoch: number;
  byCluster: Map<string, AccessSet>;
}

export class ReadAuthorizer {
  private readonly kept = new Map<string, Kept>();
  private readonly shared = new Map<string, AccessSet>();
  private sharedEpoch = -1;

  constructor(
    private readonly policies: MemberPolicies,
    private readonly reviews: AccessReviews,
    private readonly modeOf: (cluster: string) => AuthorizationMode,
    /** A member's namespaces as cached (undefined when they are not): where an all-namespaces read is asked about one by one. */
    private readonly namespacesOf: (cluster: string) => readonly string[] | undefined = () => undefined,
  ) {}

  /** Each cluster's answer, asking members that decide for themselves. */
  async access(caller: ReviewedCaller, clusters: readonly string[], q: ReadQuestion): Promise<ClusterAccess> {
    const local = this.accessNow(caller, clusters, q);
    const asked = clusters.filter((c) => this.modeOf(c) === 'subjectAccessReview');
    if (asked.length === 0) return local;
    const out = new Map(local);
    await Promise.all(asked.map(async (c) => {
      try {
        out.set(c, await this.askMember(c, caller, q));
      } catch {
        // A member that cannot be asked shows nothing: a read does not fail for one member.
        out.set(c, NO_ACCESS);
      }
    }));
    return out;
  }

  /**
   * A member's own verdict. An all-namespaces read the member refuses cluster-wide is asked again
   * per namespace it has (as cached), so that it shows what the caller may read, as for RBAC
   * members; without its namespaces cached, it shows nothing.
   */
  private async askMember(cluster: string, caller: ReviewedCaller, q: ReadQuestion): Promise<AccessSet> {
    if ((await this.reviews.verdict(cluster, caller, reviewAttributes(q))).allowed) return FULL_ACCESS;
    if (!q.namespaced || q.namespace !== undefined) return NO_ACCESS;
    const namespaces = this.namespacesOf(cluster) ?? [];
    const allowed = new Set<string>();
    for (let i = 0; i < namespaces.length; i += AUTHZ_REVIEWS_AT_ONCE) {
      await Promise.all(namespaces.slice(i, i + AUTHZ_REVIEWS_AT_ONCE).map(async (namespace) => {
        if ((await this.reviews.verdict(cluster, caller, reviewAttributes({ ...q, namespace }))).allowed) allowed.add(namespace);
      }));
    }
    return allowed.size > 0 ? { everywhere: false, namespaces: allowed } : NO_ACCESS;
  }

  /**
   * Each cluster's answer from what is known now, without waiting: RBAC members from their cached
   * policy, the others from a remembered verdict, else `previous` (a running watch's last answer).
   */
  accessNow(caller: ReviewedCaller, clusters: readonly string[], q: ReadQuestion, previous?: ClusterAccess): Map<string, AccessSet> {
    const out = new Map<string, AccessSet>();
    const who: Caller = { user: caller.user, groups: caller.groups };
    if (effectiveGroups(who).has(SUPERUSER_GROUP)) {
      for (const c of clusters) out.set(c, FULL_ACCESS);
      return out;
    }
    const kept = this.keptFor(who, q);
    for (const c of clusters) {
      if (this.modeOf(c) === 'subjectAccessReview') {
        const v = this.reviews.cached(c, caller, reviewAttributes(q));
        out.set(c, v ? (v.allowed ? FULL_ACCESS : NO_ACCESS) : (previous?.get(c) ?? NO_ACCESS));
        continue;
      }
      let set = kept.byCluster.get(c);
      if (!set) kept.byCluster.set(c, (set = this.share(decide(this.policies, c, who, q))));
      out.set(c, set);
    }
    return out;
  }

  /**
   * Each member's verdict on any request of the caller (any verb, or a non-resource URL), as it
   * would decide it: the answer of `kubectl auth can-i`, by the same rules as cached reads.
   */
  async verdicts(caller: ReviewedCaller, clusters: readonly string[], attrs: ResourceAttributes | ReviewedPath): Promise<Map<string, boolean>> {
    const who: Caller = { user: caller.user, groups: caller.groups };
    const superuser = effectiveGroups(who).has(SUPERUSER_GROUP);
    const out = new Map<string, boolean>();
    await Promise.all(clusters.map(async (c) => {
      let allowed: boolean;
      if (superuser) allowed = true;
      else if (this.modeOf(c) === 'rbac') {
        const policy = this.policies.policy(c);
        allowed = 'path' in attrs ? authorizeNonResource(policy, who, attrs.verb, attrs.path) : authorize(policy, who, attrs);
      } else allowed = (await this.reviews.verdict(c, caller, attrs).catch(() => ({ allowed: false }))).allowed;
      out.set(c, allowed);
    }));
    return out;
  }

  /**
   * The members among `clusters` flotilla cannot decide for now, and why: RBAC members whose
   * RBAC objects flotilla's own credentials may not list or watch. Where one of them refuses, the
   * refusal is flotilla's (a 503 naming its credentials), never the caller's 403.
   */
  undecidable(clusters: readonly string[]): { cluster: string; reason: string }[] {
    const out: { cluster: string; reason: string }[] = [];
    for (const cluster of clusters) {
      const reason = this.modeOf(cluster) === 'rbac' ? this.policies.incomplete(cluster) : undefined;
      if (reason !== undefined) out.push({ cluster, reason });
    }
    return out;
  }

  /**
   * Whether the caller may `get` a non-resource URL of flotilla's own (`/status`, `/metrics`): what
   * they show spans every member, so every member must allow it (as it allows its own).
   */
  async mayGet(caller: ReviewedCaller, clusters: readonly string[], path: string): Promise<boolean> {
    return [...(await this.verdicts(caller, clusters, { path, verb: 'get' })).values()].every(Boolean);
  }

  /** How many answers are kept, and for how many members in all (the bench states their memory). */
  keptSize(): { questions: number; answers: number } {
    let answers = 0;
    for (const k of this.kept.values()) answers += k.byCluster.size;
    return { questions: this.kept.size, answers };
  }

  /**
   * The one object kept for answers granting these namespaces (since the policies last changed:
   * sets of older answers are not held on to). Full, it starts over: answers keep the sets they
   * hold, only sharing with them ends.
   */
  private share(set: AccessSet): AccessSet {
    if (set.everywhere || set.namespaces.size === 0) return set;
    if (this.sharedEpoch !== this.policies.epoch || this.shared.size >= AUTHZ_NAMESPACE_SETS_MAX) {
      this.shared.clear();
      this.sharedEpoch = this.policies.epoch;
    }
    // Namespace names are DNS labels: a space cannot be part of one.
    const key = [...set.namespaces].sort().join(' ');
    const known = this.shared.get(key);
    if (known) return known;
    this.shared.set(key, set);
    return set;
  }

  private keptFor(who: Caller, q: ReadQuestion): Kept {
    const key = JSON.stringify([who.user, [...who.groups].sort(), q.verb, q.group, q.resource, q.namespace ?? null, q.name ?? null]);
    let kept = this.kept.get(key);
    if (kept && kept.epoch === this.policies.epoch) {
      // Least recently used goes first: a hit moves to the end.
      this.kept.delete(key);
      this.kept.set(key, kept);
      return kept;
    }
    if (kept) this.kept.delete(key);
    else if (this.kept.size >= AUTHZ_ANSWERS_MAX) this.kept.delete(this.kept.keys().next().value!);
    this.kept.set(key, (kept = { epoch: this.policies.epoch, byCluster: new Map() }));
    return kept;
  }
}

/** The attributes a member's authorizer is asked about, as the apiserver derives them from the request. */
export function reviewAttributes(q: ReadQuestion): ResourceAttributes {
  // GET /api/v1/namespaces/<name> is in its own namespace, as the apiserver's request info reads it.
  const namespace = q.namespaced ? q.namespace : q.group === '' && q.resource === 'namespaces' && q.verb === 'get' ? q.name : undefined;
  return {
    verb: q.verb,
    group: q.group,
    resource: q.resource,
    ...(namespace !== undefined ? { namespace } : {}),
    ...(q.name !== undefined ? { name: q.name } : {}),
  };
}

function decide(policies: MemberPolicies, cluster: string, who: Caller, q: ReadQuestion): AccessSet {
  const policy = policies.policy(cluster);
  // Only an all-namespaces request of a namespaced resource can be granted in part.
  if (q.namespaced && q.namespace === undefined) {
    return accessSet(policy, who, { verb: q.verb, group: q.group, resource: q.resource, ...(q.name !== undefined ? { name: q.name } : {}) });
  }
  return authorize(policy, who, reviewAttributes(q)) ? FULL_ACCESS : NO_ACCESS;
}
