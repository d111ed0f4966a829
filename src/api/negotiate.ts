import { StatusError, notAcceptable } from './status.js';

/**
 * The response forms flotilla serves, chosen from the client's Accept header the way the apiserver
 * does: the most preferred acceptable entry wins; `as=Table` and `as=PartialObjectMetadata(List)`
 * ask for a transformed view of the same objects. Flotilla serves no CBOR (KEP-4222): a client
 * asking for it alone gets the apiserver's 406, one sending it the apiserver's 415, answered here
 * before any member is asked, so that a member serving CBOR is never sent it.
 */
export type ResponseForm = 'object' | 'table' | 'metadata';

interface MediaRange {
  type: string;
  params: Map<string, string>;
}

function parseAccept(header: string): MediaRange[] {
  const ranges = header
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
  return byPreference(ranges);
}

/**
 * The entries in the order the apiserver tries them: its Accept parser's insertion sort, which
 * moves an entry before one it prefers (a higher q, or a concrete type before a wildcard). So
 * `application/cbor;q=1, application/json;q=0.9` tries CBOR (unserved) and then JSON.
 */
function byPreference(ranges: MediaRange[]): MediaRange[] {
  const sorted = [...ranges];
  const q = (r: MediaRange) => Number(r.params.get('q') ?? '1') || 0;
  const wildcard = (r: MediaRange, part: 0 | 1) => r.type.split('/')[part] === '*';
  const before = (a: MediaRange, b: MediaRange) => q(a) > q(b) || (!wildcard(a, 0) && wildcard(b, 0)) || (!wildcard(a, 1) && wildcard(b, 1));
  for (let i = 1; i < sorted.length; i++) {
    for (let j = i; j > 0 && before(sorted[j]!, sorted[j - 1]!); j--) [sorted[j - 1], sorted[j]] = [sorted[j]!, sorted[j - 1]!];
  }
  return sorted;
}

const JSON_TYPES = new Set(['application/json', 'application/*', '*/*']);

/**
 * The apiserver's 406 when no entry names a type it has (as it words it, `details` included),
 * listing what flotilla answers in: JSON (a list's endpoint also watches: its stream too).
 */
function noServedType(list: boolean): StatusError {
  return notAcceptableOf(['application/json', ...(list ? ['application/json;stream=watch'] : [])].join(', '));
}

/** The apiserver's 406 naming the types it could answer in (`details` as it sends them: empty). */
function notAcceptableOf(types: string): StatusError {
  return new StatusError(406, 'NotAcceptable', `406: Not Acceptable\n\nAvailable representations: ${types}`, {});
}

/**
 * The form to answer a read in; 406 when the client takes none. `list`: a list (PartialObjectMetadataList);
 * `watchable` (default `list`): the endpoint also watches (a list's, or a watch), which the 406 names.
 */
export function negotiate(accept: string | undefined, opts: { list: boolean; watchable?: boolean }): ResponseForm {
  if (!accept) return 'object';
  const ranges = parseAccept(accept);
  if (!ranges.some((r) => JSON_TYPES.has(r.type) && !refused(r))) throw noServedType(opts.watchable ?? opts.list);
  const metadataForm = [metadataAs(opts.list)];
  for (const r of ranges) {
    if (refused(r) || !answersInJson(r, metadataForm)) continue;
    const as = r.params.get('as');
    return !as ? 'object' : as === 'Table' ? 'table' : 'metadata';
  }
  throw notAcceptable(`only the following media types are accepted: application/json, application/json;as=Table;v=v1;g=meta.k8s.io, application/json;as=PartialObjectMetadata${opts.list ? 'List' : ''};v=v1;g=meta.k8s.io`);
}

const PROTOBUF = 'application/vnd.kubernetes.protobuf';
const NAMES_PROTOBUF = /application\/vnd\.kubernetes\.protobuf/i;

function metadataAs(list: boolean): string {
  return list ? 'PartialObjectMetadataList' : 'PartialObjectMetadata';
}

/**
 * Whether negotiate() answers in JSON for this entry: plain JSON (or a wildcard), a Table, or the
 * PartialObjectMetadata forms given (the one of a list or of a get, or either).
 */
function answersInJson(r: MediaRange, metadataForms: readonly string[]): boolean {
  if (!JSON_TYPES.has(r.type)) return false;
  const as = r.params.get('as');
  if (!as) return true;
  return r.params.get('g') === 'meta.k8s.io' && ['v1', 'v1beta1'].includes(r.params.get('v') ?? '') && (as === 'Table' || metadataForms.includes(as));
}

/** Whether a protobuf entry `wanted` takes comes before the first entry negotiate() would answer in JSON. */
function protobufBeforeJson(accept: string, wanted: (r: MediaRange) => boolean, metadataForms: readonly string[]): boolean {
  for (const r of parseAccept(accept)) {
    if (refused(r)) continue;
    if (r.type === PROTOBUF && wanted(r)) return true;
    if (answersInJson(r, metadataForms)) return false;
  }
  return false;
}

/**
 * Whether the client asks for PartialObjectMetadata(List) in protobuf before any JSON form
 * negotiate() would answer with (client-go's metadata client does): flotilla then encodes its
 * metadata answer so (api/protobuf-metadata.ts).
 */
export function prefersProtobufMetadata(accept: string | undefined, opts: { list: boolean }): boolean {
  if (!accept) return false;
  const form = metadataAs(opts.list);
  return protobufBeforeJson(accept, (r) => r.params.get('as') === form && r.params.get('g') === 'meta.k8s.io' && r.params.get('v') === 'v1', [form]);
}

/**
 * Whether the client asks for plain protobuf before any JSON form negotiate() would answer with
 * (client-go's default Accept, `application/vnd.kubernetes.protobuf, application/json`): a built-in
 * kind's answer then goes out in protobuf, transcoded from the cache's JSON
 * (api/protobuf-transcode.ts), as a member answers it. A list's or a get's metadata form alike
 * counts as one negotiate() takes.
 */
export function prefersProtobuf(accept: string | undefined): boolean {
  if (!accept || !NAMES_PROTOBUF.test(accept)) return false;
  return protobufBeforeJson(accept, (r) => !r.params.get('as'), ['PartialObjectMetadata', 'PartialObjectMetadataList']);
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

// What a member answers a write in, which flotilla passes on (or reads, when JSON).
const WRITE_ANSWER_TYPES = ['application/json', 'application/yaml', PROTOBUF];
const WRITE_BODY_TYPES = 'application/json, application/yaml, application/vnd.kubernetes.protobuf';

/** CBOR and its structured-syntax forms (`application/apply-patch+cbor`), and CBOR sequences. */
function isCbor(contentType: string | undefined): boolean {
  const type = (contentType ?? '').split(';')[0]!.trim().toLowerCase();
  return type === 'application/cbor' || type === 'application/cbor-seq' || type.endsWith('+cbor');
}

/**
 * A write (or a request flotilla sends on to one member: a subresource's GET, a review) refused as
 * the apiserver refuses it, before any member is asked: 406 when the client takes none of the types
 * a member's answer comes in, 415 for a CBOR body. The apiserver reads a patch's type before
 * negotiating the answer, and a create's, update's or delete's body after.
 */
export function requireServedMedia(method: string, accept: string | undefined, contentType: string | undefined): void {
  const body = () => {
    if (!isCbor(contentType)) return;
    if (method === 'PATCH') throw new StatusError(415, 'UnsupportedMediaType', '415: Unsupported Media Type', {});
    throw new StatusError(415, 'UnsupportedMediaType', `the body of the request was in an unknown format - accepted media types include: ${WRITE_BODY_TYPES}`);
  };
  if (method === 'PATCH') body();
  if (accept) {
    const taken = parseAccept(accept).some((r) => !refused(r) && (r.type === '*/*' || r.type === 'application/*' || WRITE_ANSWER_TYPES.includes(r.type)));
    if (!taken) throw notAcceptableOf(WRITE_BODY_TYPES);
  }
  body();
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
