import { CLUSTER_ANNOTATION, CLUSTER_ANNOTATION_POINTER, mergeParsedLists, parsedAnswer, protobufAnswer, protobufToMember, splicedAnswer, toMember, type AnswerForm, type FleetAnswer } from '../api/fleet-object/index.js';
import { encodeGlobalRV, memberRV } from '../api/global-rv.js';
import { editProtobufObject, isProtobuf } from '../api/protobuf-object.js';
import { bodyBytes, bodyFormat, parseBody } from '../api/write-body.js';
import { TREE_LABEL_SUFFIX } from '../hierarchy/namespace-tree.js';
import { isJsonObject } from '../util/json-object.js';

/**
 * Bodies on their way to and from a member, by content type: what changes in them is the
 * fleet-object codec's (api/fleet-object: the global RV, the cluster annotation); this picks the
 * codec for a body, and knows the forward layer's own part, the labels only flotilla shows.
 */
type Doc = Record<string, unknown>;

/**
 * Labels flotilla shows that the member does not hold: a namespace's tree labels (flotilla's
 * hierarchy; a member's HNC sets its own). An update built from what flotilla showed (read,
 * change, write back) must not write them to the member, where they would read as HNC's.
 */
function isShownOnly(key: string, kind: string): boolean {
  return kind === 'Namespace' && key.endsWith(TREE_LABEL_SUFFIX);
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
    return editProtobufObject(body, protobufToMember(cluster, isShownOnly))?.body ?? body;
  }
  const format = bodyFormat(contentType);
  if (!format) return body;
  const text = body.toString('utf8');
  // Cheap test first: most bodies (annotate, label, scale patches) carry neither.
  if (!text.includes('resourceVersion') && !text.includes(CLUSTER_ANNOTATION) && !text.includes(CLUSTER_ANNOTATION_POINTER) && !text.includes(TREE_LABEL_SUFFIX)) return body;
  let doc = parseBody(text, format);
  let changed = false;
  if (Array.isArray(doc)) {
    // JSON patch: operations on the cluster annotation are flotilla's (they chose the member), not the member's.
    const kept = doc.filter((op) => !(isJsonObject(op) && op['path'] === CLUSTER_ANNOTATION_POINTER));
    if (kept.length !== doc.length) {
      doc = kept;
      changed = true;
    }
    // An operation may set or test metadata.resourceVersion.
    for (const op of kept) {
      const value = isJsonObject(op) && op['path'] === '/metadata/annotations' ? op['value'] : undefined;
      if (isJsonObject(value) && CLUSTER_ANNOTATION in value) {
        delete value[CLUSTER_ANNOTATION];
        changed = true;
      }
      if (isJsonObject(op) && op['path'] === '/metadata/resourceVersion' && typeof op['value'] === 'string') {
        const rv = memberRV(op['value'], cluster);
        if (rv !== op['value']) {
          op['value'] = rv;
          changed = true;
        }
      }
    }
  } else if (isJsonObject(doc)) {
    changed = toMember(doc, cluster, isShownOnly);
    // DeleteOptions: a resourceVersion precondition read from flotilla is a global RV too.
    const pre = doc['preconditions'];
    if (isJsonObject(pre) && typeof pre['resourceVersion'] === 'string') {
      const rv = memberRV(pre['resourceVersion'], cluster);
      if (rv !== pre['resourceVersion']) {
        pre['resourceVersion'] = rv;
        changed = true;
      }
    }
    if (Array.isArray(doc['items'])) for (const item of doc['items']) if (isJsonObject(item) && toMember(item, cluster, isShownOnly)) changed = true;
  }
  return changed ? bodyBytes(doc) : body;
}

/**
 * A member's JSON or protobuf answer with RVs made global, and without managedFields when the
 * cache drops them (a watched object then equals the write answer that made it); other content
 * types pass unchanged.
 */
export function responseForClient(body: Buffer, contentType: string | undefined, cluster: string, form: AnswerForm = {}): FleetAnswer<Buffer> {
  if (isProtobuf(contentType)) return protobufAnswer(body, cluster, form) ?? { body };
  if (!(contentType ?? '').toLowerCase().startsWith('application/json') || body.length === 0) return { body };
  return splicedAnswer(body, cluster, form) ?? parsedAnswer(body, cluster, form);
}

/** Merges the JSON list answers of a deletecollection fanned out to several members (Status answers left out). */
export function mergeListAnswers(answers: { cluster: string; body: Buffer }[], form: AnswerForm = {}): Buffer {
  const lists: { cluster: string; doc: Doc }[] = [];
  const rvs: Record<string, string> = {};
  for (const a of answers) {
    const doc = JSON.parse(a.body.toString('utf8')) as Doc;
    if (doc['kind'] === 'Status') continue;
    lists.push({ cluster: a.cluster, doc });
    const md = doc['metadata'];
    if (isJsonObject(md) && typeof md['resourceVersion'] === 'string' && md['resourceVersion'] !== '') rvs[a.cluster] = md['resourceVersion'];
  }
  if (lists.length === 0) return answers[0]?.body ?? Buffer.from('{}');
  return Buffer.from(JSON.stringify(mergeParsedLists(lists, { resourceVersion: encodeGlobalRV(rvs) }, form)));
}
