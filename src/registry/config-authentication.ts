import type { Checker } from './config-checker.js';
import { defaultAuthentication } from './defaults.js';
import type { AuthenticationSpec, ClusterConfig } from './fleet-config.js';

/** The fleet file's `authentication`: a token reviewer among `clusters`, a token file, how long verdicts last, anonymous callers. */
export function parseAuthentication(c: Checker, raw: unknown, clusters: readonly ClusterConfig[]): AuthenticationSpec {
  const authentication = defaultAuthentication();
  if (raw === undefined) return authentication;
  const o = c.object(raw, 'authentication');
  const reviewer = c.string(o?.tokenReviewCluster, 'authentication.tokenReviewCluster');
  if (reviewer !== undefined) {
    if (!clusters.some((cl) => cl.name === reviewer)) c.fail('authentication.tokenReviewCluster', `names no cluster of this file: ${JSON.stringify(reviewer)}`);
    authentication.tokenReviewCluster = reviewer;
  }
  const tokenFile = c.string(o?.tokenFile, 'authentication.tokenFile');
  if (tokenFile !== undefined) authentication.tokenFile = c.absolutePath(tokenFile, 'authentication.tokenFile');
  authentication.cacheTTLSeconds = c.integer(o?.cacheTTLSeconds, 'authentication.cacheTTLSeconds') ?? authentication.cacheTTLSeconds;
  authentication.tokenReviewStaleSeconds = c.integer(o?.tokenReviewStaleSeconds, 'authentication.tokenReviewStaleSeconds') ?? authentication.tokenReviewStaleSeconds;
  authentication.anonymous = c.boolean(o?.anonymous, 'authentication.anonymous') ?? authentication.anonymous;
  return authentication;
}
