import type { ResourceInfo } from '../api/resource-info.js';
import { answerMessage } from '../api/status.js';

/**
 * A member refused flotilla's own credentials (401 or 403 to a list or watch): a right flotilla's
 * identity lacks there, not anything a caller did. Said so in the cacher's lastError, the log and
 * callers' 503s, naming the right (`list clusterroles.rbac.authorization.k8s.io`) and the member's
 * own words (which name the user it took flotilla for).
 */
export class OwnRightsError extends Error {
  constructor(
    readonly cluster: string,
    /** The verb and resource refused, as `kubectl auth can-i` takes them. */
    readonly right: string,
    /** The member's answer: 401 (it does not accept them) or 403 (they lack the right). */
    readonly status: number,
    memberMessage: string,
  ) {
    super(`flotilla's own credentials for member ${cluster} cannot ${right}: ${memberMessage}`);
  }
}

/** The error of a list or watch a member answered `status` to: an OwnRightsError when it refused flotilla's credentials. */
export function memberRefusal(cluster: string, info: ResourceInfo, namespace: string | undefined, verb: 'list' | 'watch', status: number, body: string): Error {
  const said = answerMessage(Buffer.from(body), 300);
  if (status === 401 || status === 403) {
    const resource = info.group ? `${info.resource}.${info.group}` : info.resource;
    return new OwnRightsError(cluster, `${verb} ${resource}${namespace ? ` in namespace ${namespace}` : ''}`, status, status === 401 ? `HTTP 401 (the member does not accept them): ${said}` : said);
  }
  return new Error(`${verb} ${resource(info)} from ${cluster}: HTTP ${status}: ${said}`);
}

function resource(info: ResourceInfo): string {
  return info.group ? `${info.group}/${info.version}/${info.resource}` : `${info.version}/${info.resource}`;
}

