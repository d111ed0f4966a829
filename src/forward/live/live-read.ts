import type { FastifyReply, FastifyRequest } from 'fastify';
import { canonicalPath } from '../../api/request-info.js';
import { negotiate, protobufOnly, type ResponseForm } from '../../api/negotiate.js';
import { PROTOBUF_CONTENT_TYPE } from '../../api/protobuf-object.js';
import { notServed } from '../../api/status.js';
import { parseReadRequest } from '../../api/list-options.js';
import { isSearchKey } from '../../api/search-terms.js';
import { warningHeader as warning } from '../../api/warning.js';
import { TREE_LABEL_SUFFIX } from '../../hierarchy/namespace-tree.js';
import { MEMBER_READ_TIMEOUT_MS } from '../../registry/defaults.js';
import { asCaller } from '../member-fan-out.js';
import type { ResourceTarget } from '../owner.js';
import { servedLive, type LiveObject, type LiveReadDeps } from './config.js';
import type { AnswerEdits } from './answer-edits.js';
import { liveGet } from './get.js';
import { liveList } from './list.js';
import { liveWatch } from './watch.js';
import { clusterOf, namespaceOf, sourcesOf, type LiveAsk } from './sources.js';
import type { LiveReplyState } from './reply-state.js';

/**
 * A live read, from its request to the get, list or watch that answers it. The members are asked
 * as the caller (the caller's Impersonate-* headers, as writes are forwarded), at most
 * `concurrency` at once (member-fan-out.ts), and the answers merged as a cached list is shown:
 * each object annotated with its cluster and given a global resourceVersion, one Table with the
 * Cluster column after the name, paging with a continue token that carries each member's own
 * continue. A member that fails or refuses the caller is named in a Warning and the others still
 * answer. `/clusters/<name>/` reads go to that member alone. A watch opens the members' watches
 * and interleaves their events under the global resourceVersion (watch.ts).
 */

/**
 * Subresources read live like their object (a get asked of every member, the first copy shown):
 * the object's own state, each that Kubernetes serves to a get (a CertificateSigningRequest's
 * approval, a pod's ephemeral containers and resize are the pod). Others (proxy, log, exec…)
 * reach one member's workload, not the object, so they are never fanned out.
 */
const LIVE_SUBRESOURCES: ReadonlySet<string> = new Set(['status', 'scale', 'approval', 'ephemeralcontainers', 'resize']);

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
  // The apiserver's checks of the options, as a cached read makes them, before any member is asked.
  const read = parseReadRequest(params, target.name !== undefined);
  const watching = read.verb === 'watch';
  if (target.subresource !== undefined && (target.name === undefined || watching || !LIVE_SUBRESOURCES.has(target.subresource))) throw notServed();
  const list = target.name === undefined;
  const selection = deps.selection;
  // Protobuf, for a client that takes nothing else: the members' own encoding, edited as it
  // passes. Not for a tenant or flotilla's own selection, whose edits read JSON: 406.
  const protobuf = protobufOnly(req.headers.accept, { list: list && !watching }) && !deps.tenant && !selection;
  const form = protobuf ? 'object' : negotiate(req.headers.accept, { list: list && !watching, watchable: list || watching });
  const identity = await deps.callerHeaders(req.raw);
  const addressed = target.cluster !== undefined ? [target.cluster] : fleetClusters ?? deps.fleet.clusterNames();
  const shown = selection ? addressed.filter((c) => selection.showsCluster(c)) : addressed;
  const clusters = shown.length > 0 ? shown : addressed;
  const headers = asCaller(identity, req.headers['user-agent'], { accept: protobuf ? PROTOBUF_CONTENT_TYPE : accepted(form, list) });
  const path = canonicalPath({ ...target, cluster: undefined });
  const ask: LiveAsk = {
    request: (source, query) => {
      const namespace = namespaceOf(source);
      const own = namespace === undefined ? path : canonicalPath({ ...target, cluster: undefined, namespace });
      const q = query.toString();
      return { cluster: clusterOf(source), path: q ? `${own}?${q}` : own, headers };
    },
    bounds: { concurrency: deps.config.concurrency, timeoutMs: MEMBER_READ_TIMEOUT_MS, ...(deps.hold ? { budget: deps.hold } : {}) },
  };
  // Hierarchy selectors and search terms are flotilla's: the members get the rest of the
  // selector, and what they answer is kept where flotilla's selection admits it. Without a tree
  // (namespaces not cached), the members match hierarchy selectors against the objects' labels: said.
  for (const key of [...params.keys()]) if (isSearchKey(key)) params.delete(key);
  if (selection) {
    if (selection.rest) params.set('labelSelector', selection.rest);
    else params.delete('labelSelector');
  }
  const notes = !selection && (params.get('labelSelector') ?? '').includes(TREE_LABEL_SUFFIX)
    ? [warning(`hierarchy selectors (*${TREE_LABEL_SUFFIX}) select by the namespace tree of cached namespaces; flotilla caches none here, so the members match them against the objects' own labels`)]
    : [];
  const tenant = deps.tenant;
  // Edits read each Table row's object for its name, namespace and creation time: a client's
  // includeObject=None (rows without one) is asked of the members as Metadata, and the objects
  // taken out again once edited.
  const rowObjectsDropped = (tenant !== undefined || selection !== undefined) && form === 'table' && read.includeObject === 'None';
  if (rowObjectsDropped) params.set('includeObject', 'Metadata');
  const edits: AnswerEdits | undefined = tenant || selection
    ? {
        ...(selection ? { selects: (o: LiveObject) => selection.admits(o) } : {}),
        ...(tenant ? { tenant, resource: tenant.resource(target.group, target.resource) } : {}),
        ...(rowObjectsDropped ? { rowObjects: 'None' as const } : {}),
        target,
      }
    : undefined;
  const hold = deps.hold && !watching ? deps.hold : undefined;
  const state: LiveReplyState = { ...(edits ? { edits } : {}), ...(hold ? { hold } : {}) };
  if (edits || hold) reply.liveRead = state;
  if (watching) return liveWatch(reply, deps, clusters, params, read, path, { ...headers, accept: protobuf ? PROTOBUF_CONTENT_TYPE : accepted(form, false) }, notes, protobuf);
  if (!list) return liveGet(reply, deps, clusters, params, ask, target, protobuf);
  return liveList(reply, deps, sourcesOf(deps, target, clusters), params, read, ask, notes, protobuf);
}
