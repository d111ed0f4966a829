import { notAcceptable } from './status.js';

/**
 * The response forms flotilla serves, chosen from the client's Accept header the way the apiserver
 * does: the first acceptable entry wins; `as=Table` and `as=PartialObjectMetadata(List)` ask for a
 * transformed view of the same objects.
 */
export type ResponseForm = 'object' | 'table' | 'metadata';

interface MediaRange {
  type: string;
  params: Map<string, string>;
}

function parseAccept(header: string): MediaRange[] {
  return header
    .split(',')
    .map((part) => part.trim())
    .filter(Boolean)
    .map((part) => {
      const [type = '', ...rawParams] = part.split(';').map((s) => s.trim());
      const params = new Map<string, string>();
      for (const p of rawParams) {
        const eq = p.indexOf('=');
        if (eq > 0) params.set(p.slice(0, eq).trim().toLowerCase(), p.slice(eq + 1).trim());
      }
      return { type: type.toLowerCase(), params };
    });
}

const JSON_TYPES = new Set(['application/json', 'application/*', '*/*']);

export function negotiate(accept: string | undefined, opts: { list: boolean }): ResponseForm {
  if (!accept) return 'object';
  const ranges = parseAccept(accept);
  for (const r of ranges) {
    if (!JSON_TYPES.has(r.type) || refused(r)) continue;
    const as = r.params.get('as');
    if (!as) return 'object';
    const g = r.params.get('g');
    const v = r.params.get('v');
    if (g !== 'meta.k8s.io' || (v !== 'v1' && v !== 'v1beta1')) continue;
    if (as === 'Table') return 'table';
    if (as === 'PartialObjectMetadata' && !opts.list) return 'metadata';
    if (as === 'PartialObjectMetadataList' && opts.list) return 'metadata';
  }
  throw notAcceptable(`only the following media types are accepted: application/json, application/json;as=Table;v=v1;g=meta.k8s.io, application/json;as=PartialObjectMetadata${opts.list ? 'List' : ''};v=v1;g=meta.k8s.io`);
}

const PROTOBUF = 'application/vnd.kubernetes.protobuf';
const NAMES_PROTOBUF = /application\/vnd\.kubernetes\.protobuf/i;

/**
 * Whether the client asks for PartialObjectMetadata(List) in protobuf before any JSON form
 * negotiate() would answer with (client-go's metadata client does): flotilla then encodes its
 * metadata answer so (api/protobuf-metadata.ts). Other protobuf requests are answered in JSON,
 * which client-go's Accept includes.
 */
export function prefersProtobufMetadata(accept: string | undefined, opts: { list: boolean }): boolean {
  if (!accept) return false;
  const metadataAs = opts.list ? 'PartialObjectMetadataList' : 'PartialObjectMetadata';
  for (const r of parseAccept(accept)) {
    if (refused(r)) continue;
    const as = r.params.get('as');
    const metaGroup = r.params.get('g') === 'meta.k8s.io';
    if (r.type === PROTOBUF && as === metadataAs && metaGroup && r.params.get('v') === 'v1') return true;
    // The first JSON entry negotiate() would take.
    if (JSON_TYPES.has(r.type) && (!as || (metaGroup && ['v1', 'v1beta1'].includes(r.params.get('v') ?? '') && (as === 'Table' || as === metadataAs)))) return false;
  }
  return false;
}

/**
 * Whether the client takes plain protobuf and no JSON form negotiate() serves (client-go with
 * `AcceptContentTypes` protobuf alone): a member answers it in protobuf, and flotilla, whose cache
 * holds JSON, can only by asking the members (src/forward/live/).
 */
export function protobufOnly(accept: string | undefined, opts: { list: boolean }): boolean {
  // Asked of every cached read: a header that does not name protobuf is not parsed for it.
  if (!accept || !NAMES_PROTOBUF.test(accept)) return false;
  try {
    negotiate(accept, opts);
    return false;
  } catch {
    return parseAccept(accept).some((r) => r.type === PROTOBUF && !refused(r) && !r.params.has('as'));
  }
}

/** Whether plain JSON is among the acceptable types (a wildcard counts); no Accept accepts anything. */
export function acceptsJson(accept: string | undefined): boolean {
  if (!accept) return true;
  return parseAccept(accept).some((r) => JSON_TYPES.has(r.type) && !refused(r));
}

/** q=0 is "not acceptable" (RFC 9110 §12.4.2). */
function refused(r: MediaRange): boolean {
  return /^0(\.0{0,3})?$/.test(r.params.get('q') ?? '1');
}

/**
 * A 406 for a request whose every acceptable media type asks for a conversion (`as=Table`,
 * `as=PartialObjectMetadata`) of an object that has none, as the apiserver answers a review's
 * POST asked for a Table. Any plain type (JSON, YAML, protobuf, a wildcard) is fine.
 */
export function requirePlainObject(accept: string | undefined): void {
  if (!accept) return;
  const acceptable = parseAccept(accept).filter((r) => !refused(r));
  if (acceptable.length > 0 && acceptable.every((r) => r.params.has('as'))) {
    throw notAcceptable('only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf');
  }
}
