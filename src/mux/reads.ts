import { gvrKey } from '../api/resource-info.js';
import { encodeGlobalRV } from '../api/global-rv.js';
import type { Store, StoredEntry } from '../store/store.js';
import { heldBySeveral, notFound } from '../api/status.js';
import type { ResponseForm } from '../api/negotiate.js';
import { copiesOf, matchingEntries, planPage, storeRV, type PageRequest, type ReadScope } from './list-plan.js';
import { ListBytes, NOTHING, itemBuffer, listFrame, type IncludeObject } from './response-forms.js';

/**
 * Answers lists and gets from the store. A list is concatenation: the stored bytes of each object
 * (list-plan.ts says which) between a header and a footer in the request's form
 * (response-forms.ts), never re-encoded.
 */
export interface ListOptions extends PageRequest {
  form: ResponseForm;
  includeObject?: IncludeObject;
}

/**
 * A rendered list. A page (limit) is one buffer. An unpaged list is produced in chunks of about
 * CHUNK_BYTES from one read snapshot as the client takes them, so a list of a million objects
 * neither builds one giant buffer nor holds the event loop: `done` releases the snapshot.
 */
export type ListBody = Buffer | { chunks: Iterable<Buffer>; done(): void };

const CHUNK_BYTES = 256 * 1024;
const COMMA = Buffer.from(',');

export function listResponse(store: Store, opts: ListOptions): ListBody {
  if (!opts.limit && !opts.continueToken) return unpagedList(store, opts);
  const page = planPage(store, opts);
  try {
    const frame = listFrame(store, page.atRV ? { ...opts, metaOf: page.atRV.metaOf } : opts, page.listMeta, page.snapshot);
    const parts = new ListBytes();
    parts.push(frame.head);
    let first = true;
    for (const e of page.entries) {
      const item = frame.item(e);
      if (item === NOTHING) continue;
      if (!first) parts.push(COMMA);
      first = false;
      parts.push(item);
    }
    parts.push(frame.tail);
    return parts.concat();
  } finally {
    // The last page's snapshot goes once the page is rendered (Table rows read meta from it), as
    // does a page's own, read at the list's RV.
    if (page.atRV) page.atRV.done();
    else if (page.last && page.snapshotId) opts.snapshots.release(page.snapshotId);
  }
}

function unpagedList(store: Store, opts: ListOptions): ListBody {
  const snapshot = store.snapshot();
  let released = false;
  const done = () => {
    if (!released) snapshot.done();
    released = true;
  };
  try {
    const frame = listFrame(store, opts, `"resourceVersion":${JSON.stringify(storeRV(store, opts.resource, opts.view, snapshot))}`, snapshot);
    const entries = matchingEntries(store, opts, snapshot);
    let first = true;
    const nextChunk = (): { chunk: Buffer; last: boolean } => {
      const parts = new ListBytes();
      for (let r = entries.next(); !r.done; r = entries.next()) {
        const item = frame.item(r.value);
        if (item === NOTHING) continue;
        if (!first) parts.push(COMMA);
        first = false;
        parts.push(item);
        if (parts.length >= CHUNK_BYTES) return { chunk: parts.concat(), last: false };
      }
      parts.push(frame.tail);
      return { chunk: parts.concat(), last: true };
    };
    const opening = nextChunk();
    if (opening.last) {
      // Small enough for one pass: one buffer, no stream.
      done();
      return Buffer.concat([frame.head, opening.chunk]);
    }
    return {
      done,
      chunks: (function* () {
        try {
          yield Buffer.concat([frame.head, opening.chunk]);
          for (;;) {
            const c = nextChunk();
            yield c.chunk;
            if (c.last) return;
          }
        } finally {
          done();
        }
      })(),
    };
  } catch (e) {
    done();
    throw e;
  }
}

/**
 * The one member copy of namespace/name the view shows, or 404, or 409 when several members
 * hold one (naming only the members the view shows): what a write may go to.
 */
export function findOne(store: Store, scope: ReadScope, namespace: string, name: string): StoredEntry {
  const info = scope.resource.info;
  const hits = copiesOf(store, scope, namespace, name);
  if (hits.length === 0) throw notFound({ group: info.group, resource: info.resource }, name);
  if (hits.length > 1) throw heldBySeveral(info, namespace, name, hits.map((h) => h.cluster));
  return hits[0]!;
}

/**
 * A get: the first copy the view shows, in the fleet's preference (clusters' priority, then
 * configuration order), and the other members that hold one; 404 when none does.
 */
export function getResponse(store: Store, scope: ReadScope, namespace: string, name: string, form: ResponseForm, includeObject?: IncludeObject): { body: Buffer; cluster: string; alsoIn: string[] } {
  const info = scope.resource.info;
  const [hit, ...others] = copiesOf(store, scope, namespace, name);
  if (!hit) throw notFound({ group: info.group, resource: info.resource }, name);
  const alsoIn = others.map((o) => o.cluster);
  // A Table of one row whose metadata holds the object's resourceVersion (as the apiserver's and
  // as a watch event's Table: a watch-list client compares the two); a PartialObjectMetadata; the object.
  const rv = form === 'table' ? store.metaOf(gvrKey(info), hit)?.rv : undefined;
  const tableMeta = rv ? `"resourceVersion":${JSON.stringify(encodeGlobalRV({ [hit.cluster]: rv }))}` : '';
  const frame = listFrame(store, { resource: scope.resource, form, includeObject, view: scope.view }, tableMeta, undefined, false);
  const item = itemBuffer(frame.item(hit));
  if (item.length === 0) throw notFound({ group: info.group, resource: info.resource }, name);
  if (form === 'table') return { body: Buffer.concat([frame.head, item, frame.tail]), cluster: hit.cluster, alsoIn };
  return { body: item, cluster: hit.cluster, alsoIn };
}
