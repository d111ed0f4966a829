import { parse as parseYaml } from 'yaml';
import { CLUSTER_ANNOTATION, clusterAnnotationEdit, clusterAnnotationEntry } from '../ingest/decode.js';
import { editedPieces, joinPieces, type ByteEdit } from '../util/byte-edits.js';
import { decodeGlobalRV, encodeGlobalRV } from '../api/global-rv.js';
import { badRequest, conflict } from '../api/status.js';
import { QUOTE, objectMembers, parseSpan, type JsonMember } from '../util/json-members.js';
import { editProtobufObject, isProtobuf, type ObjectFacts } from '../api/protobuf-object.js';

/**
 * What flotilla changes in bodies on the way to and from a member: the resourceVersion (global on
 * flotilla's side, the member's own on the member's) and flotilla's cluster annotation (shown to
 * clients, never written to members). Everything else passes unchanged.
 */
type Doc = Record<string, unknown>;

function isObject(v: unknown): v is Doc {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** A global RV as the member's own RV for `cluster`; a token that is not global passes as it is. */
export function memberRV(rv: string, cluster: string): string {
  if (rv === '' || rv === '0') return rv;
  let rvs: Record<string, string>;
  try {
    rvs = decodeGlobalRV(rv);
  } catch {
    // Not one of ours (a member RV a client got elsewhere): the member judges it.
    return rv;
  }
  const own = rvs[cluster];
  if (own === undefined) {
    throw conflict(`the resourceVersion ${JSON.stringify(rv)} was read from ${Object.keys(rvs).join(', ') || 'no cluster'}, not from cluster ${cluster} that this request goes to; read the object again`);
  }
  return own;
}

/** The member's view of an object a client sends: member RV, no cluster annotation. */
function toMember(o: Doc, cluster: string): boolean {
  const md = o['metadata'];
  if (!isObject(md)) return false;
  let changed = false;
  if (typeof md['resourceVersion'] === 'string') {
    const rv = memberRV(md['resourceVersion'], cluster);
    if (rv !== md['resourceVersion']) {
      md['resourceVersion'] = rv;
      changed = true;
    }
  }
  const ann = md['annotations'];
  if (isObject(ann) && CLUSTER_ANNOTATION in ann) {
    delete ann[CLUSTER_ANNOTATION];
    if (Object.keys(ann).length === 0) delete md['annotations'];
    changed = true;
  }
  return changed;
}

/**
 * A request body as the member must see it. JSON and apply-YAML bodies are translated (and sent as
 * JSON, which every one of these content types accepts) only when they carry something of
 * flotilla's; otherwise, and for protobuf, the bytes go as they came.
 */
export function requestBodyForMember(body: Buffer | undefined, contentType: string | undefined, cluster: string): Buffer | undefined {
  if (!body || body.length === 0) return body;
  if (isProtobuf(contentType)) {
    // client-go sends built-in kinds so: an update carries the global RV it read from flotilla.
    return editProtobufObject(body, { resourceVersion: (rv) => memberRV(rv, cluster), dropAnnotation: CLUSTER_ANNOTATION })?.body ?? body;
  }
  const type = (contentType ?? '').split(';')[0]!.trim().toLowerCase();
  const isJson = type === 'application/json' || type.endsWith('+json');
  const isYaml = type === 'application/apply-patch+yaml' || type === 'application/yaml';
  if (!isJson && !isYaml) return body;
  const text = body.toString('utf8');
  // Cheap test first: most bodies (annotate, label, scale patches) carry neither.
  if (!text.includes('resourceVersion') && !text.includes(CLUSTER_ANNOTATION)) return body;
  // The YAML parser recurses per level and runs out of stack near 800; on a nearly exhausted
  // stack V8 can even abort the process (a regex compiled there fails as out of memory).
  if (isYaml && yamlTooDeep(text)) throw badRequest('the request body is nested too deeply');
  let doc: unknown;
  try {
    doc = isJson ? JSON.parse(text) : parseYaml(text);
  } catch (e) {
    throw badRequest(`the request body is not valid ${isJson ? 'JSON' : 'YAML'}: ${(e as Error).message}`);
  }
  let changed = false;
  if (Array.isArray(doc)) {
    // JSON patch: an operation may set or test metadata.resourceVersion.
    for (const op of doc) {
      if (isObject(op) && op['path'] === '/metadata/resourceVersion' && typeof op['value'] === 'string') {
        const rv = memberRV(op['value'], cluster);
        if (rv !== op['value']) {
          op['value'] = rv;
          changed = true;
        }
      }
    }
  } else if (isObject(doc)) {
    changed = toMember(doc, cluster);
    // DeleteOptions: a resourceVersion precondition read from flotilla is a global RV too.
    const pre = doc['preconditions'];
    if (isObject(pre) && typeof pre['resourceVersion'] === 'string') {
      const rv = memberRV(pre['resourceVersion'], cluster);
      if (rv !== pre['resourceVersion']) {
        pre['resourceVersion'] = rv;
        changed = true;
      }
    }
    if (Array.isArray(doc['items'])) for (const item of doc['items']) if (isObject(item) && toMember(item, cluster)) changed = true;
  }
  if (!changed) return body;
  try {
    return Buffer.from(JSON.stringify(doc));
  } catch (e) {
    // JSON.parse takes any depth; writing it back recurses, and a hostile body runs out of stack.
    if (e instanceof RangeError) throw badRequest('the request body is nested too deeply');
    throw e;
  }
}

// Far beyond any manifest (CRD schemas nest a few dozen levels), far below the parser's limit.
const MAX_YAML_FLOW_DEPTH = 200;
const MAX_YAML_INDENT = 400;

/** Flow nesting (brackets outside quotes) or block indentation past what flotilla parses. */
export function yamlTooDeep(text: string): boolean {
  let depth = 0;
  let quote = '';
  let indent = 0;
  let lineStart = true;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]!;
    if (quote) {
      if (ch === '\\' && quote === '"') i++;
      else if (ch === quote) quote = '';
      continue;
    }
    if (ch === '\n') {
      lineStart = true;
      indent = 0;
      continue;
    }
    if (lineStart && ch === ' ') {
      if (++indent > MAX_YAML_INDENT) return true;
      continue;
    }
    lineStart = false;
    if (ch === '"' || ch === "'") quote = ch;
    else if (ch === '[' || ch === '{') {
      if (++depth > MAX_YAML_FLOW_DEPTH) return true;
    } else if ((ch === ']' || ch === '}') && depth > 0) depth--;
  }
  return false;
}

/** A member's object as flotilla shows it: global RV, cluster annotation. Status bodies stay as they are. */
export function toFleet(o: Doc, cluster: string): void {
  const md = o['metadata'];
  if (!isObject(md)) return;
  if (typeof md['resourceVersion'] === 'string' && md['resourceVersion'] !== '') {
    md['resourceVersion'] = encodeGlobalRV({ [cluster]: md['resourceVersion'] });
  }
  if (o['kind'] !== 'Status' && typeof md['name'] === 'string') {
    md['annotations'] = { ...(isObject(md['annotations']) ? md['annotations'] : {}), [CLUSTER_ANNOTATION]: cluster };
  }
}

export interface MemberAnswer {
  /** The body to send the client. */
  body: Buffer;
  /** The member's own RV of the written object, when the answer carried one. */
  rv?: string;
  /** What a protobuf answer said of its object (JSON answers are read where needed). */
  facts?: ObjectFacts;
}

/** A member's JSON or protobuf answer with RVs made global; other content types pass unchanged. */
export function responseForClient(body: Buffer, contentType: string | undefined, cluster: string): MemberAnswer {
  if (isProtobuf(contentType)) return protobufAnswer(body, cluster);
  if (!(contentType ?? '').toLowerCase().startsWith('application/json') || body.length === 0) return { body };
  return splicedAnswer(body, cluster) ?? parsedAnswer(body, cluster);
}

/** A protobuf object's answer as toFleet makes a JSON one: global RV, cluster annotation. */
function protobufAnswer(body: Buffer, cluster: string): MemberAnswer {
  const edited = editProtobufObject(body, {
    resourceVersion: (rv) => (rv === '' ? rv : encodeGlobalRV({ [cluster]: rv })),
    setAnnotation: { key: CLUSTER_ANNOTATION, value: cluster, when: (o) => o.kind !== 'Status' && o.name !== undefined && o.name !== '' },
  });
  if (!edited) return { body };
  const rv = edited.facts.kind !== 'Status' ? edited.facts.resourceVersion : undefined;
  return { body: edited.body, facts: edited.facts, ...(rv ? { rv } : {}) };
}

/** The same by parsing: lists, bodies the splice does not follow, and the reference it must agree with. */
export function parsedAnswer(body: Buffer, cluster: string): MemberAnswer {
  let doc: unknown;
  try {
    doc = JSON.parse(body.toString('utf8'));
  } catch {
    return { body };
  }
  if (!isObject(doc) || doc['kind'] === 'Status') return { body };
  const md = doc['metadata'];
  const rv = isObject(md) && typeof md['resourceVersion'] === 'string' ? md['resourceVersion'] : undefined;
  toFleet(doc, cluster);
  if (Array.isArray(doc['items'])) for (const item of doc['items']) if (isObject(item)) toFleet(item, cluster);
  return { body: Buffer.from(JSON.stringify(doc)), ...(rv ? { rv } : {}) };
}

/**
 * The same for a single object, by splicing its bytes: the global RV over the member's, the
 * cluster annotation into `metadata.annotations`. A write's answer is a whole object (managed
 * fields included), and a controller patching pods fleet-wide sends many: parsing and
 * re-serializing each cost more than the rest of flotilla's work on the request. Undefined for
 * anything else (a list, a body it cannot follow), which goes through parsedAnswer.
 */
export function splicedAnswer(body: Buffer, cluster: string): MemberAnswer | undefined {
  const top = objectMembers(body, 0);
  if (!top || top.members.some((m) => m.key === 'items' || m.key.includes('\\'))) return undefined;
  const find = (ms: JsonMember[], key: string) => ms.find((m) => m.key === key);
  const text = (m: JsonMember | undefined) => (m && body[m.start] === QUOTE ? (parseSpan(body, m.start, m.end) as string) : undefined);
  const mdAt = find(top.members, 'metadata');
  if (text(find(top.members, 'kind')) === 'Status' || !mdAt) return { body };
  const md = objectMembers(body, mdAt.start);
  if (!md || md.members.some((m) => m.key.includes('\\'))) return undefined;
  const edits: ByteEdit[] = [];
  const rvAt = find(md.members, 'resourceVersion');
  const rv = text(rvAt);
  if (rv) edits.push({ ...rvAt!, text: JSON.stringify(encodeGlobalRV({ [cluster]: rv })) });
  if (text(find(md.members, 'name')) !== undefined) {
    const annAt = find(md.members, 'annotations');
    if (!annAt) {
      edits.push({ start: md.close, end: md.close, text: `${md.members.length > 0 ? ',' : ''}"annotations":{${clusterAnnotationEntry(cluster)}}` });
    } else {
      const edit = clusterAnnotationEdit(body, annAt, cluster);
      if (!edit) return undefined;
      edits.push(edit);
    }
  }
  return { body: joinPieces(editedPieces(edits, 0, body.length), body), ...(rv ? { rv } : {}) };
}

/** Merges the JSON list answers of a deletecollection fanned out to several members. */
export function mergeListAnswers(answers: { cluster: string; body: Buffer }[]): Buffer {
  let head: Doc | undefined;
  const items: unknown[] = [];
  const rvs: Record<string, string> = {};
  for (const a of answers) {
    const doc = JSON.parse(a.body.toString('utf8')) as Doc;
    if (doc['kind'] === 'Status') continue;
    head ??= doc;
    const md = doc['metadata'];
    if (isObject(md) && typeof md['resourceVersion'] === 'string' && md['resourceVersion'] !== '') rvs[a.cluster] = md['resourceVersion'];
    if (Array.isArray(doc['items'])) {
      for (const item of doc['items']) {
        if (isObject(item)) toFleet(item, a.cluster);
        items.push(item);
      }
    }
  }
  if (!head) return answers[0]?.body ?? Buffer.from('{}');
  return Buffer.from(JSON.stringify({ ...head, metadata: { resourceVersion: encodeGlobalRV(rvs) }, items }));
}
