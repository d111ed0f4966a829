import type { IncomingHttpHeaders } from 'node:http';
import type { MemberClient } from '../members/member-client.js';
import { AccessReviews, type AccessVerdict } from '../members/access-reviews.js';
import { badRequest, forbidden } from '../api/status.js';
import type { Identity } from './identity.js';
import { IMPERSONATION_REVIEWS_AT_ONCE, IMPERSONATION_VERDICTS_MAX, IMPERSONATION_VERDICT_TTL_MS } from '../registry/defaults.js';

/**
 * A caller's own `Impersonate-*` headers (`kubectl --as`), honoured as the apiserver honours them:
 * the caller must be allowed the `impersonate` verb on the user (or service account), each group,
 * the uid and each extra value. Flotilla has no authorizer of its own, so each member the request
 * addresses decides, through a SubjectAccessReview about the caller; every one must allow it.
 * The request then goes on as the impersonated identity, which is what members are told.
 */

interface Attributes {
  group: string;
  resource: string;
  subresource?: string;
  namespace?: string;
  name: string;
}

/** Whether a request asks to impersonate anyone at all. */
export function asksImpersonation(headers: IncomingHttpHeaders): boolean {
  for (const name of Object.keys(headers)) if (name.startsWith('impersonate-')) return true;
  return false;
}

/**
 * The identity the headers ask for, from the raw header lines (each repeated line is one value, as
 * the apiserver reads them); 400 for groups, a uid or extras named without a user.
 */
export function requestedIdentity(rawHeaders: string[]): Identity {
  const lines = new Map<string, string[]>();
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]!.toLowerCase();
    if (name.startsWith('impersonate-')) (lines.get(name) ?? lines.set(name, []).get(name)!).push(rawHeaders[i + 1]!);
  }
  const users = lines.get('impersonate-user') ?? [];
  const uids = lines.get('impersonate-uid') ?? [];
  const groups = lines.get('impersonate-group') ?? [];
  const extra: Record<string, string[]> = {};
  for (const [name, values] of lines) {
    if (name === 'impersonate-user' || name === 'impersonate-uid' || name === 'impersonate-group') continue;
    if (!name.startsWith('impersonate-extra-')) throw badRequest(`unknown impersonation header ${JSON.stringify(name)}`);
    let key: string;
    try {
      key = decodeURIComponent(name.slice('impersonate-extra-'.length));
    } catch {
      throw badRequest(`invalid impersonation header ${JSON.stringify(name)}: the extra key is not valid percent-encoding`);
    }
    if (!key) throw badRequest(`invalid impersonation header ${JSON.stringify(name)}: no extra key`);
    extra[key] = values;
  }
  if (users.length !== 1 || !users[0]) {
    throw badRequest(users.length > 1 ? 'only one Impersonate-User may be given' : 'requested impersonation of groups, a uid or extras without impersonating a user');
  }
  if (uids.length > 1) throw badRequest('only one Impersonate-Uid may be given');
  return { user: users[0], ...(uids[0] ? { uid: uids[0] } : {}), groups, extra };
}

/** What the caller must be allowed to `impersonate` for the requested identity. */
export function impersonationAttributes(wanted: Identity): Attributes[] {
  const sa = /^system:serviceaccount:([^:]+):([^:]+)$/.exec(wanted.user);
  const out: Attributes[] = [sa ? { group: '', resource: 'serviceaccounts', namespace: sa[1]!, name: sa[2]! } : { group: '', resource: 'users', name: wanted.user }];
  for (const g of wanted.groups) out.push({ group: '', resource: 'groups', name: g });
  if (wanted.uid) out.push({ group: 'authentication.k8s.io', resource: 'uids', name: wanted.uid });
  for (const [key, values] of Object.entries(wanted.extra)) {
    for (const v of values) out.push({ group: 'authentication.k8s.io', resource: 'userextras', subresource: key, name: v });
  }
  return out;
}

export class ImpersonationChecker {
  private readonly reviews: AccessReviews;

  constructor(member: (name: string) => MemberClient | undefined) {
    this.reviews = new AccessReviews(member, IMPERSONATION_VERDICT_TTL_MS, IMPERSONATION_VERDICTS_MAX);
  }

  /**
   * Resolves when every named member lets `caller` impersonate `wanted`; 403 naming the first
   * refusal otherwise. Attributes are asked in order, a few at a time (each of every member at
   * once), and asking stops at the first refusal or failure, as the apiserver stops at its first
   * denial: a request naming hundreds of groups cannot set off hundreds of reviews at once.
   */
  async check(caller: Identity, wanted: Identity, clusters: string[]): Promise<void> {
    const attributes = impersonationAttributes(wanted);
    for (let at = 0; at < attributes.length; at += IMPERSONATION_REVIEWS_AT_ONCE) {
      const batch = attributes.slice(at, at + IMPERSONATION_REVIEWS_AT_ONCE);
      const checks = await Promise.allSettled(batch.map((attrs) => Promise.all(clusters.map(async (cluster) => ({ cluster, ...(await this.verdict(cluster, caller, attrs)) })))));
      for (const [i, attrs] of batch.entries()) {
        const check = checks[i]!;
        if (check.status === 'rejected') throw check.reason;
        const refused = check.value.find((v) => !v.allowed);
        if (refused) {
          const what = attrs.subresource ? `${attrs.resource}/${attrs.subresource}` : attrs.resource;
          const scope = attrs.namespace !== undefined ? `in the namespace "${attrs.namespace}"` : 'at the cluster scope';
          throw forbidden(
            `${attrs.resource} "${attrs.name}" is forbidden: User "${caller.user}" cannot impersonate resource "${what}" in API group "${attrs.group}" ${scope} (cluster ${refused.cluster})${refused.reason ? `: ${refused.reason}` : ''}`,
            { name: attrs.name, ...(attrs.group ? { group: attrs.group } : {}), kind: attrs.resource },
          );
        }
      }
    }
  }

  private verdict(cluster: string, caller: Identity, attrs: Attributes): Promise<AccessVerdict> {
    return this.reviews.verdict(cluster, caller, { verb: 'impersonate', ...attrs });
  }
}
