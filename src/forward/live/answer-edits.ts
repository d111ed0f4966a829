import { CLUSTER_ANNOTATION } from '../../api/fleet-object/index.js';
import { clusterCellOf, clusterColumnAt } from '../../api/table.js';
import { notFound } from '../../api/status.js';
import { answerToTenant, tenantAnswerBytes, type NamedResource, type TenantNames } from '../../tenancy/answers.js';
import { isJsonObject } from '../../util/json-object.js';
import type { ResourceTarget } from '../owner.js';
import type { LiveObject } from './config.js';

/**
 * Live answers edited after the members answered: items flotilla's selection leaves out (`selects`,
 * the read view's own decision: LiveReadDeps.selection), and a tenant's
 * answers rewritten whole into its names (tenancy/answers.ts: items not the tenant's left out). A
 * page can so hold fewer items than its limit; its continue token still leads on (the members'
 * own), so paging stays whole, as the API allows.
 */
export interface AnswerEdits {
  selects?: (o: LiveObject) => boolean;
  tenant?: TenantNames;
  /** The read resource in the tenant's names, looked up once for the read (a watch shows each event in them). */
  resource?: NamedResource;
  /** A Table the client asked with includeObject=None, read with Metadata for the edits: its rows' objects are null once edited. */
  rowObjects?: 'None';
  target: ResourceTarget;
}

/**
 * A list's items or a Table's rows that the selection keeps, each read for what the view decides
 * on: its cluster (annotation, Cluster cell, or `cluster` for one member's answer), namespace,
 * name and creationTimestamp. A single object: undefined when not selected.
 */
function selectedItems(doc: unknown, selects: (o: LiveObject) => boolean, cluster?: string): unknown {
  if (!isJsonObject(doc)) return doc;
  const seen = (o: unknown, clusterCell?: string): boolean => {
    const md = isJsonObject(o) ? o['metadata'] : undefined;
    const m = isJsonObject(md) ? md : {};
    const ann = m['annotations'];
    const annotated = isJsonObject(ann) && typeof ann[CLUSTER_ANNOTATION] === 'string' ? ann[CLUSTER_ANNOTATION] : '';
    const created = m['creationTimestamp'];
    return selects({
      cluster: cluster ?? clusterCell ?? annotated,
      namespace: typeof m['namespace'] === 'string' ? m['namespace'] : '',
      name: typeof m['name'] === 'string' ? m['name'] : '',
      ...(typeof created === 'string' ? { created } : {}),
    });
  };
  if (Array.isArray(doc['rows'])) {
    const at = clusterColumnAt(Array.isArray(doc['columnDefinitions']) ? doc['columnDefinitions'] : []);
    return { ...doc, rows: doc['rows'].filter((r: unknown) => isJsonObject(r) && seen(r['object'], String(Array.isArray(r['cells']) ? clusterCellOf(r['cells'], at) ?? '' : ''))) };
  }
  if (Array.isArray(doc['items'])) return { ...doc, items: doc['items'].filter((i: unknown) => seen(i)) };
  return seen(doc) ? doc : undefined;
}

/** An answer's JSON bytes as edited; 404 for a single object the edits leave out. */
export function editedAnswer(answer: Buffer, edits: AnswerEdits): Buffer {
  let doc: unknown = JSON.parse(answer.toString('utf8'));
  if (edits.selects) doc = selectedItems(doc, edits.selects);
  if (edits.tenant) return tenantAnswerBytes(doc, edits.tenant, edits.target, edits.rowObjects ? withoutRowObjects : undefined);
  if (doc === undefined) throw notFound({ group: edits.target.group, resource: edits.target.resource }, edits.target.name ?? '');
  return Buffer.from(JSON.stringify(edits.rowObjects ? withoutRowObjects(doc) : doc));
}

/** One member's watch event object as edited (`cluster`: whose it is); undefined when left out. */
export function editedEventObject(obj: unknown, edits: AnswerEdits, cluster: string): unknown {
  const selected = edits.selects ? selectedItems(obj, edits.selects, cluster) : obj;
  const shown = edits.tenant && selected !== undefined ? answerToTenant(selected, edits.tenant.naming, edits.resource) : selected;
  return edits.rowObjects && shown !== undefined ? withoutRowObjects(shown) : shown;
}

/** A Table as includeObject=None shows it: each row's object null, as the apiserver writes an empty one. */
function withoutRowObjects(doc: unknown): unknown {
  if (!isJsonObject(doc) || !Array.isArray(doc['rows'])) return doc;
  return { ...doc, rows: doc['rows'].map((r: unknown) => (isJsonObject(r) ? { ...r, object: null } : r)) };
}
