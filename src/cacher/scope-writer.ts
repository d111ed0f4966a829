import type { IngestContext } from '../ingest/decode.js';
import type { TableColumn } from '../api/table.js';
import { EVENT_TYPES, viewObjects } from '../ingest/batch.js';
import type { IngestPool } from '../ingest/pool.js';
import type { CacheScope, Change, ObjectRef, Store } from '../store/store.js';
import { compareMemberRV } from '../api/global-rv.js';
import type { SelectableFields } from './selectable-fields.js';

/**
 * What one cacher writes into the store for its scope: list pages and the reconcile that ends a
 * list, runs of watch events, and a quiet RV raised as a bookmark would (member-progress.ts), each
 * decoded in a worker and committed with the scope's sync record (RV, Table columns, CRD fields).
 * The cacher (cacher.ts) decides what to ask the member and when; this is the store's side of it,
 * as the apiserver's watch cache is of its reflector.
 */

/** A list page as committed: how many objects, the list's RV, the next page's token. */
export interface CommittedPage {
  objects: number;
  rv: string;
  continueToken?: string;
}

/** A run of watch lines as committed: the last RV seen, what the commit moved, and the ERROR event that ended the run. */
export interface AppliedEvents {
  lastRV: string;
  committed?: { rv: string; objectsDelta: number };
  error?: { code?: number; message?: string };
}

export class ScopeWriter {
  /** The member's Table columns, as the last page or event batch that had them said. */
  private columns?: TableColumn[];
  /** Every object of the next list is written again, unchanged or not: its selectable fields changed. */
  refreshEveryObject = false;
  /**
   * Since the last list: the RV the member said nothing happened up to (raiseQuiet), and the
   * last RV the watch's batches handed to the store; neither may lower the other.
   */
  private quietMarks: { floor?: string; queued?: string } = {};
  private ctx: IngestContext;

  constructor(
    private readonly store: Store,
    private readonly pool: IngestPool,
    private readonly scope: CacheScope,
    ctx: IngestContext,
    private readonly fields: SelectableFields,
  ) {
    this.ctx = ctx;
  }

  restoreColumns(columns: TableColumn[] | undefined): void {
    this.columns = columns;
  }

  /** The ingest context with the CRD fields as they are now. */
  private context(): IngestContext {
    if (this.ctx.selectableFields !== this.fields.current) this.ctx = { ...this.ctx, selectableFields: this.fields.current };
    return this.ctx;
  }

  private syncRecord(rv: string): { rv: string; columns?: TableColumn[]; selectableFields?: string[] } {
    return { rv, columns: this.columns, ...this.fields.record() };
  }

  /**
   * Decodes a list page in a worker and commits it. A relist (`diff`) writes only what changed
   * and notes every object it saw in `seen`, for the reconcile at the end; `held` keeps the
   * changes for that commit instead.
   */
  async commitPage(body: Buffer, diff: boolean, seen: Set<string>, held?: Change[]): Promise<CommittedPage> {
    const page = await this.pool.decodePage(body, this.context());
    const objects = viewObjects(page.objects);
    if (page.columns?.length) this.columns = page.columns;
    const changes: Change[] = [];
    for (let i = 0; i < objects.length; i++) {
      const o = objects[i]!;
      const rv = page.objectRVs[i]!;
      if (!diff) {
        changes.push({ type: 'ADDED', ...o, rv });
        continue;
      }
      // Only a relist reconciles against what it saw; a first list would keep 100k strings
      // alive through its whole list for nothing, and the old-generation GC would trace them.
      seen.add(refKey(o));
      const stored = this.store.storedRV(this.scope, o);
      if (stored !== rv || this.refreshEveryObject) changes.push({ type: stored === undefined ? 'ADDED' : 'MODIFIED', ...o, rv });
    }
    const committed = { objects: objects.length, rv: page.rv, ...(page.continueToken ? { continueToken: page.continueToken } : {}) };
    if (held) {
      for (const c of changes) held.push(c);
      return committed;
    }
    // Pages are written as they arrive with no RV: a crash mid-list leaves a state the next
    // start relists rather than trusts. The RV is written with the reconcile after the last page.
    await this.store.commit(this.scope, changes, this.syncRecord(''), { log: diff, fresh: !diff });
    return committed;
  }

  /**
   * Ends a list at `listRV`: a relist (`diff`) deletes, at the list RV, what it did not see;
   * `held` changes are committed with it, restarting the cluster's event log at the list.
   * Returns how many changes the commit wrote.
   */
  async commitList(listRV: string, diff: boolean, seen: Set<string>, held?: Change[]): Promise<number> {
    const gone: Change[] = [];
    // A first list started from nothing: everything stored is what it just wrote.
    if (diff) {
      for await (const refs of this.store.refsOfPaged(this.scope)) {
        for (const r of refs) {
          if (seen.has(refKey(r))) continue;
          const last = this.store.stored(this.scope, r);
          // Deleted at some point up to the list RV: that is the RV its DELETED event carries.
          if (last) gone.push({ type: 'DELETED', ...r, rv: listRV, ...last });
        }
      }
    }
    const logged = this.store.logStart(this.scope.resource)[this.scope.cluster] !== undefined;
    await this.store.commit(this.scope, held ? [...held, ...gone] : gone, { ...this.syncRecord(listRV), listedAt: new Date().toISOString() }, {
      log: diff,
      ...(logged && !held ? {} : { logStartRV: listRV }),
      ...(held ? { restartLog: true } : {}),
    });
    this.refreshEveryObject = false;
    this.quietMarks = {};
    return (held?.length ?? 0) + gone.length;
  }

  /** Decodes a run of watch lines in a worker and commits them, in order, in one transaction. */
  async applyEvents(lines: Buffer, fromRV: string): Promise<AppliedEvents> {
    const batch = await this.pool.decodeEvents(lines, this.context());
    const objects = viewObjects(batch.objects);
    const changes: Change[] = [];
    let lastRV = fromRV;
    let objectsDelta = 0;
    let oi = 0;
    let bi = 0;
    for (const t of batch.types) {
      const type = EVENT_TYPES[t];
      if (type === 'ERROR') break;
      if (type === 'BOOKMARK') {
        lastRV = batch.bookmarkRVs[bi++]!;
        continue;
      }
      const o = objects[oi]!;
      lastRV = batch.objectRVs[oi]!;
      oi++;
      changes.push({ type: type!, ...o, rv: lastRV });
      if (type === 'ADDED') objectsDelta++;
      else if (type === 'DELETED') objectsDelta--;
    }
    if (batch.columns) this.columns = batch.columns;
    let committed: AppliedEvents['committed'];
    if (changes.length > 0 || lastRV !== fromRV) {
      const rv = this.notBelowQuietFloor(lastRV);
      await this.store.commit(this.scope, changes, this.syncRecord(rv), { log: true });
      committed = { rv, objectsDelta };
    }
    return { lastRV, ...(committed ? { committed } : {}), ...(batch.error ? { error: batch.error } : {}) };
  }

  /**
   * Whether the scope's RV, now `at`, is to be raised to `to` (a quiet stretch the member vouched
   * for): not when `at` or a batch already queued is there. When it is, `to` becomes the floor a
   * later, older bookmark of the watch cannot lower; commitQuiet then writes it.
   */
  raiseQuiet(at: string, to: string): boolean {
    const marks = this.quietMarks;
    if (compareMemberRV(at, to) >= 0 || (marks.queued !== undefined && compareMemberRV(marks.queued, to) >= 0)) return false;
    marks.floor = to;
    marks.queued = to;
    return true;
  }

  /** Commits the scope's RV raised by raiseQuiet, in the store's order with the watch's own batches. */
  async commitQuiet(to: string): Promise<void> {
    await this.store.commit(this.scope, [], this.syncRecord(to), { log: true });
  }

  /** The RV a watch batch commits: `rv`, or the quiet floor above it. */
  private notBelowQuietFloor(rv: string): string {
    const marks = this.quietMarks;
    const committed = marks.floor !== undefined && compareMemberRV(marks.floor, rv) > 0 ? marks.floor : rv;
    marks.queued = committed;
    return committed;
  }
}

function refKey(r: ObjectRef): string {
  return `${r.namespace}/${r.name}`;
}
