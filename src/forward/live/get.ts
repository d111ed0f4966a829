import type { FastifyReply } from 'fastify';
import { encodeGlobalRV, decodeGlobalRV } from '../../api/global-rv.js';
import { PROTOBUF_CONTENT_TYPE, isProtobuf } from '../../api/protobuf-object.js';
import { firstHitWarning } from '../../api/warning.js';
import { isJsonObject } from '../../util/json-object.js';
import { askMembers, type MemberResult } from '../member-fan-out.js';
import type { ResourceTarget } from '../owner.js';
import { responseForClient } from '../translate.js';
import { leftOutWarnings, noAnswer, settled } from './member-failures.js';
import { merged, parsed, warningsOf, type Parsed } from './member-answers.js';
import { send, sendAs, sendBody } from './send.js';
import type { LiveReadDeps } from './config.js';
import type { LiveAsk } from './sources.js';

/**
 * A live get: every member asked for the object (a global resourceVersion gives each its own), the
 * first copy in the fleet's order shown, the others named in a Warning, as cached gets do.
 */

/**
 * Which of several members' copies of a name a get answers: the first in the fleet's order
 * (`hits` come in it), with a Warning naming every member that holds one, as for cached gets.
 */
export function chooseLiveGet<T extends { cluster: string }>(hits: readonly T[], what: { resource: string; group: string; name: string }): { hit: T; warning?: string } {
  const [hit, ...others] = hits;
  if (others.length === 0) return { hit: hit! };
  return { hit: hit!, warning: firstHitWarning(`${what.resource}${what.group ? '.' + what.group : ''} "${what.name}"`, hits.map((h) => h.cluster)) };
}

export async function liveGet(reply: FastifyReply, deps: LiveReadDeps, clusters: readonly string[], params: URLSearchParams, ask: LiveAsk, target: ResourceTarget, protobuf: boolean): Promise<FastifyReply> {
  const query = new URLSearchParams(params);
  const rv = query.get('resourceVersion');
  query.delete('resourceVersion');
  const rvs = rv && rv !== '0' ? decodeGlobalRV(rv) : undefined;
  const results = await askMembers(deps.fleet, clusters, ask.bounds, (c) => {
    const q = new URLSearchParams(query);
    if (rv === '0') q.set('resourceVersion', '0');
    else if (rvs?.[c] !== undefined) q.set('resourceVersion', rvs[c]!);
    return ask.request(c, q);
  });
  const answeredIn = (r: MemberResult): Parsed | undefined => (!protobuf ? parsed(r) : isProtobuf(r.headers?.['content-type']) ? { cluster: r.cluster, doc: {}, warnings: warningsOf(r) } : undefined);
  const read = results.map((r) => ({ answer: r, hit: r.status === 200 ? answeredIn(r) : undefined }));
  const hits = read.map((r) => r.hit).filter((p): p is Parsed => p !== undefined);
  const answers = read.map((r) => settled(r.answer, r.hit));
  if (hits.length === 0) return noAnswer(reply, answers);
  const { hit, warning: firstHit } = chooseLiveGet(hits, { resource: target.resource, group: target.group, name: target.name! });
  const warnings = [...hit.warnings, ...(firstHit ? [firstHit] : []), ...leftOutWarnings(answers)];
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
