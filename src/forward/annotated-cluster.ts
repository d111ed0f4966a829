import { CLUSTER_ANNOTATION, CLUSTER_ANNOTATION_POINTER } from '../api/fleet-object/index.js';
import { editProtobufObject, isProtobuf } from '../api/protobuf-object.js';
import { bodyFormat, parseBody } from '../api/write-body.js';
import { isJsonObject } from '../util/json-object.js';

/** Where kubectl's client-side apply keeps the manifest it applies: a patch carries it whole. */
const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration';

/**
 * The member a write body names by flotilla's `search.flotilla.io/cluster` annotation, if any: an
 * object read from flotilla and written back (update, server-side apply) carries it; a merge or
 * strategic patch carries it when it sets it, or, from `kubectl apply`, in the manifest it records
 * as last applied (the patch leaves out what did not change, the annotation included); a JSON
 * patch when an operation sets it. Bodies that do not parse name none (the member says why).
 */
export function annotatedCluster(body: Buffer | undefined, contentType: string | undefined): string | undefined {
  if (!body || !(body.includes(CLUSTER_ANNOTATION) || body.includes(CLUSTER_ANNOTATION_POINTER))) return undefined;
  if (isProtobuf(contentType)) return editProtobufObject(body, { readAnnotation: CLUSTER_ANNOTATION })?.facts.annotation || undefined;
  const format = bodyFormat(contentType);
  if (!format) return undefined;
  let doc: unknown;
  try {
    doc = parseBody(body.toString('utf8'), format);
  } catch {
    return undefined;
  }
  if (Array.isArray(doc)) return fromJsonPatch(doc);
  const annotations = annotationsOf(doc);
  const own = annotations?.[CLUSTER_ANNOTATION];
  if (typeof own === 'string') return own;
  const applied = annotations?.[LAST_APPLIED];
  if (typeof applied !== 'string' || !applied.includes(CLUSTER_ANNOTATION)) return undefined;
  try {
    const recorded = annotationsOf(JSON.parse(applied))?.[CLUSTER_ANNOTATION];
    return typeof recorded === 'string' ? recorded : undefined;
  } catch {
    return undefined;
  }
}

function annotationsOf(doc: unknown): Record<string, unknown> | undefined {
  const md = isJsonObject(doc) ? doc['metadata'] : undefined;
  const ann = isJsonObject(md) ? md['annotations'] : undefined;
  return isJsonObject(ann) ? ann : undefined;
}

/** A JSON patch's last operation that sets the annotation, or the whole annotations map holding it. */
function fromJsonPatch(ops: unknown[]): string | undefined {
  let named: string | undefined;
  for (const op of ops) {
    if (!isJsonObject(op) || (op['op'] !== 'add' && op['op'] !== 'replace')) continue;
    if (op['path'] === CLUSTER_ANNOTATION_POINTER && typeof op['value'] === 'string') named = op['value'];
    else if (op['path'] === '/metadata/annotations' && isJsonObject(op['value']) && typeof op['value'][CLUSTER_ANNOTATION] === 'string') named = op['value'][CLUSTER_ANNOTATION];
  }
  return named;
}
