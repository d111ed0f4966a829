import { CLUSTER_ANNOTATION } from '../../api/fleet-object/index.js';
import { clusterCellOf, clusterColumnAt } from '../../api/table.js';
import { notFound } from '../../api/status.js';
import { answerToTenant, tenantAnswerBytes, type NamedResource, type TenantNames } from '../../tenancy/answers.js';
import { isJsonObject } from '../../util/json-object.js';
import type { ResourceTarget } from '../owner.js';

/**
 * Live answers edited after the members answered: items the namespace tree does not select left
 * out (`selects`, the read view's own predicate: LiveReadDeps.treeSelection), and a tenant's
 * answers rewritten whole into its names (tenancy/answers.ts: items not the tenant's left out). A
 * page can so hold fewer items than its limit; its continue token still leads on (the members'
 * own), so paging stays whole, as the API allows.
 */
export interface AnswerEdits {
  selects?: (cluster: string, namespace: string) => boolean;
  tenant?: TenantNames;
  /** The read resource in the tenant's names, looked up once for the read (a watch shows each event in them). */
  resource?: NamedResource;
  target: ResourceTarget;
}

/**
 * A list's items or a Table's rows that the tree selects, each read for the (cluster, namespace)
 * the view's predicate takes: its cluster annotation or Cluster cell (or `cluster`, for one
 * member's answer), its metadata's namespace. A single object: undefined when not selected.
 */
function selectedItems(doc: unknown, selects: (cluster: string, namespace: string) => boolean, cluster?: string): unknown {
  if (!isJsonObject(doc)) return doc;
  const namespaceOf = (o: unknown) => {
    const md = isJsonObject(o) ? o['metadata'] : undefined;
    return isJsonObject(md) && typeof md['namespace'] === 'string' ? md['namespace'] : '';
  };
  const clusterOf = (o: unknown) => {
    const md = isJsonObject(o) ? o['metadata'] : undefined;
    const ann = isJsonObject(md) ? md['annotations'] : undefined;
    return cluster ?? (isJsonObject(ann) && typeof ann[CLUSTER_ANNOTATION] === 'string' ? ann[CLUSTER_ANNOTATION] : '');
  };
  if (Array.isArray(doc['rows'])) {
    const at = clusterColumnAt(Array.isArray(doc['columnDefinitions']) ? doc['columnDefinitions'] : []);
    return { ...doc, rows: doc['rows'].filter((r: unknown) => isJsonObject(r) && selects(cluster ?? String(Array.isArray(r['cells']) ? clusterCellOf(r['cells'], at) ?? '' : ''), namespaceOf(r['object']))) };
  }
  if (Array.isArray(doc['items'])) return { ...doc, items: doc['items'].filter((i: unknown) => selects(clusterOf(i), namespaceOf(i))) };
  return selects(clusterOf(doc), namespaceOf(doc)) ? doc : undefined;
}

/** An answer's JSON bytes as edited; 404 for a single object the edits leave out. */
export function editedAnswer(answer: Buffer, edits: AnswerEdits): Buffer {
  let doc: unknown = JSON.parse(answer.toString('utf8'));
  if (edits.selects) doc = selectedItems(doc, edits.selects);
  if (edits.tenant) return tenantAnswerBytes(doc, edits.tenant, edits.target);
  if (doc === undefined) throw notFound({ group: edits.target.group, resource: edits.target.resource }, edits.target.name ?? '');
  return Buffer.from(JSON.stringify(doc));
}

/** One member's watch event object as edited (`cluster`: whose it is); undefined when left out. */
export function editedEventObject(obj: unknown, edits: AnswerEdits, cluster: string): unknown {
  const selected = edits.selects ? selectedItems(obj, edits.selects, cluster) : obj;
  return edits.tenant && selected !== undefined ? answerToTenant(selected, edits.tenant.naming, edits.resource) : selected;
}
