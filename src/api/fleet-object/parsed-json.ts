import { memberRV, oneClusterRV } from '../global-rv.js';
import { clusterColumnAt, withCluster } from '../table.js';
import { isJsonObject } from '../../util/json-object.js';
import { CLUSTER_ANNOTATION } from './cluster-annotation.js';
import type { AnswerForm, EventStamp, FleetAnswer, FleetCodec, MetadataToFleet, ShownOnlyLabel } from './codec.js';

/**
 * The fleet codec for JSON already parsed: records edited in place. The reference the spliced
 * codec must agree with, and the way for what the splice does not follow.
 */
type Doc = Record<string, unknown>;

/**
 * Metadata made the fleet's in place, as metadataEdits edits its bytes: the cluster annotation
 * set (added last when the metadata has none), the global RV over the member's (or, `everyRV`,
 * added after it), managedFields dropped.
 */
export function metadataToFleet(md: Doc, to: MetadataToFleet): void {
  if (to.annotate) md['annotations'] = { ...(isJsonObject(md['annotations']) ? md['annotations'] : {}), [CLUSTER_ANNOTATION]: to.cluster };
  const rv = md['resourceVersion'];
  if (typeof rv === 'string' && rv !== '') md['resourceVersion'] = to.globalRV(rv);
  else if (to.everyRV) md['resourceVersion'] = to.globalRV(typeof rv === 'string' ? rv : '');
  if (to.dropManagedFields) delete md['managedFields'];
}

/** A member's object as flotilla shows it, in place: global RV, cluster annotation on a named object. Status bodies stay as they are. */
export function toFleet(o: Doc, cluster: string, form: AnswerForm = {}): void {
  const md = o['metadata'];
  if (!isJsonObject(md)) return;
  metadataToFleet(md, { cluster, annotate: o['kind'] !== 'Status' && typeof md['name'] === 'string', dropManagedFields: form.dropManagedFields === true, globalRV: oneClusterRV(cluster) });
}

/** The member's view of an object a client sends, in place: member RV, no cluster annotation, no shown-only labels. Whether it changed. */
export function toMember(o: Doc, cluster: string, shownOnly?: ShownOnlyLabel): boolean {
  const md = o['metadata'];
  if (!isJsonObject(md)) return false;
  let changed = false;
  if (typeof md['resourceVersion'] === 'string') {
    const rv = memberRV(md['resourceVersion'], cluster);
    if (rv !== md['resourceVersion']) {
      md['resourceVersion'] = rv;
      changed = true;
    }
  }
  const ann = md['annotations'];
  if (isJsonObject(ann) && CLUSTER_ANNOTATION in ann) {
    delete ann[CLUSTER_ANNOTATION];
    if (Object.keys(ann).length === 0) delete md['annotations'];
    changed = true;
  }
  const labels = md['labels'];
  if (shownOnly && isJsonObject(labels) && typeof o['kind'] === 'string') {
    for (const key of Object.keys(labels)) {
      if (!shownOnly(key, o['kind'])) continue;
      delete labels[key];
      changed = true;
    }
  }
  return changed;
}

/**
 * A member's list, in place: each item shown as toFleet shows it; of a Table, each row's object,
 * and the row's Cluster cell where the list's columns place it (its columnDefinitions stay the
 * member's, as the spliced list's head keeps them).
 */
export function listToFleet(doc: Doc, cluster: string, form: AnswerForm = {}): Doc {
  if (doc['kind'] === 'Table') {
    const at = clusterColumnAt(Array.isArray(doc['columnDefinitions']) ? doc['columnDefinitions'] : []);
    for (const row of Array.isArray(doc['rows']) ? doc['rows'] : []) {
      if (!isJsonObject(row)) continue;
      if (isJsonObject(row['object'])) toFleet(row['object'], cluster, form);
      row['cells'] = withCluster<unknown>(Array.isArray(row['cells']) ? row['cells'] : [], cluster, at);
    }
    return doc;
  }
  for (const item of Array.isArray(doc['items']) ? doc['items'] : []) if (isJsonObject(item)) toFleet(item, cluster, form);
  return doc;
}

/** A watch event's object stamped in place: its RV the global RV of the moment, the cluster annotation when `annotate`. */
export function stampObject(o: Doc, cluster: string, stamp: EventStamp): void {
  const md = o['metadata'];
  if (isJsonObject(md)) metadataToFleet(md, { cluster, annotate: stamp.annotate, globalRV: stamp.globalRV });
}

/**
 * A member's watch event ({type, object}) stamped in place: its object, or of a Table its rows'
 * objects (the Table's own metadata gets the RV, never the annotation). A Table's cells are the
 * caller's, which knows the columns the watch has sent.
 */
export function eventToFleet(event: Doc, cluster: string, stamp: EventStamp): Doc {
  const obj = event['object'];
  if (!isJsonObject(obj)) return event;
  if (obj['kind'] !== 'Table') {
    stampObject(obj, cluster, stamp);
    return event;
  }
  for (const row of Array.isArray(obj['rows']) ? obj['rows'] : []) if (isJsonObject(row) && isJsonObject(row['object'])) stampObject(row['object'], cluster, stamp);
  stampObject(obj, cluster, { ...stamp, annotate: false });
  return event;
}

/** A member's JSON answer by parsing: lists, bodies the splice does not follow, and the reference it must agree with. */
export function parsedAnswer(body: Buffer, cluster: string, form: AnswerForm = {}): FleetAnswer<Buffer> {
  let doc: unknown;
  try {
    doc = JSON.parse(body.toString('utf8'));
  } catch {
    return { body };
  }
  if (!isJsonObject(doc) || doc['kind'] === 'Status') return { body };
  const md = doc['metadata'];
  const rv = isJsonObject(md) && typeof md['resourceVersion'] === 'string' ? md['resourceVersion'] : undefined;
  toFleet(doc, cluster, form);
  if (Array.isArray(doc['items'])) for (const item of doc['items']) if (isJsonObject(item)) toFleet(item, cluster, form);
  return { body: Buffer.from(JSON.stringify(doc)), ...(rv ? { rv } : {}) };
}

export const parsedJsonCodec: FleetCodec<Doc, Doc> = {
  objectToFleet(doc, cluster, form) {
    const md = doc['metadata'];
    const rv = doc['kind'] !== 'Status' && isJsonObject(md) && typeof md['resourceVersion'] === 'string' && md['resourceVersion'] !== '' ? md['resourceVersion'] : undefined;
    toFleet(doc, cluster, form);
    return { body: doc, ...(rv ? { rv } : {}) };
  },
  listToFleet: (doc, cluster) => listToFleet(doc, cluster),
  eventToFleet,
  objectToMember(doc, cluster, shownOnly) {
    toMember(doc, cluster, shownOnly);
    return doc;
  },
};
