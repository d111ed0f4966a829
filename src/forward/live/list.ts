import type { FastifyReply } from 'fastify';
import { decodeGlobalRV, encodeGlobalRV } from '../../api/global-rv.js';
import type { ReadRequest } from '../../api/list-options.js';
import { PROTOBUF_CONTENT_TYPE } from '../../api/protobuf-object.js';
import { writeProtobufList, type ListMetaFields } from '../../api/protobuf-list.js';
import { expired } from '../../api/status.js';
import { CLUSTER_COLUMN } from '../../api/table.js';
import { isJsonObject } from '../../util/json-object.js';
import { seal } from '../../util/sealed-token.js';
import { askMembers, type MemberResult } from '../member-fan-out.js';
import { bodyText, leftOutWarnings, noAnswer, settled } from './member-failures.js';
import { listSink, merged, parsedList, protobufListOf, releaseAnswers, splicedMerged, unspliced, type Doc, type Parsed } from './member-answers.js';
import { shareLimit, unsealedForTenant } from './list-paging.js';
import { decodeLiveContinue, encodeLiveContinue } from '../../api/continue-token.js';
import { send, sendAs, sendBody } from './send.js';
import { clusterOf, type LiveAsk } from './sources.js';
import type { LiveReadDeps } from './config.js';

/**
 * A live list: each source asked (sources.ts), a page's limit shared among them, and their
 * answers merged into one list or Table (member-answers.ts) under one continue token that
 * carries each source's own (api/continue-token.ts). A member that fails or refuses the caller is named
 * in a Warning and the others still answer.
 */
export async function liveList(reply: FastifyReply, deps: LiveReadDeps, sources: readonly string[], params: URLSearchParams, read: ReadRequest, ask: LiveAsk, notes: readonly string[], protobuf: boolean): Promise<FastifyReply> {
  const continueText = read.continue;
  const rvText = read.resourceVersion;
  const limit = read.limit ?? 0;
  const token = continueText ? decodeLiveContinue(deps.tenant ? unsealedForTenant(continueText) : continueText) : undefined;
  const since = !token && rvText && rvText !== '0' ? decodeGlobalRV(rvText) : undefined;
  const query = new URLSearchParams(params);
  for (const p of ['continue', 'resourceVersion', 'resourceVersionMatch', 'limit']) query.delete(p);
  const rvMatch = read.resourceVersionMatch;
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
    const read = await askMembers(deps.fleet, asked, ask.bounds, (c) => {
      const q = new URLSearchParams(query);
      const own = token?.live[c];
      const cluster = clusterOf(c);
      if (own) q.set('continue', own);
      else if (rvText === '0') q.set('resourceVersion', '0');
      else if (since?.[cluster] !== undefined) q.set('resourceVersion', since[cluster]!);
      if (rvMatch && q.has('resourceVersion')) q.set('resourceVersionMatch', rvMatch);
      if (shares) q.set('limit', String(shares.get(c)));
      return protobuf ? ask.request(c, q) : { ...ask.request(c, q), sinkFor: listSink(cluster) };
    }, (answer, c) => ({ source: c, answer, list: answer.status !== 200 ? undefined : protobuf ? protobufListOf(answer) : parsedList(answer) }));
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
  const warnings = [...new Set([...notes, ...ok.flatMap((a) => a.warnings), ...leftOutWarnings(results)])];
  if (protobuf) {
    const list = writeProtobufList({ kind: kind.kind ?? '', apiVersion: kind.apiVersion ?? '', metadata: listMeta, items: ok.flatMap((a) => a.protobufItems ?? []) });
    return sendAs(reply, list, PROTOBUF_CONTENT_TYPE, warnings);
  }
  if (ok.length === 0) {
    const empty = token!.kind === 'Table' ? { columnDefinitions: [CLUSTER_COLUMN], rows: [] } : { items: [] };
    return send(reply, { kind: token!.kind, apiVersion: token!.apiVersion, metadata, ...empty }, warnings);
  }
  const spliced = ok.every((a) => a.spliced && (a.spliced.list.table === true) === (ok[0]!.spliced!.list.table === true));
  // The answers' bytes are copied (or parsed) out before their buffers go back.
  const answer = spliced ? splicedMerged(ok, metadata) : merged(ok.map(unspliced).filter((p): p is Parsed => p !== undefined), metadata);
  releaseAnswers(results);
  return Buffer.isBuffer(answer) ? sendBody(reply, answer, warnings) : send(reply, answer, warnings);
}
