import { setTimeout as sleep } from 'node:timers/promises';
import type { MemberClient } from '../members/member-client.js';
import { collectionPath, groupVersion, gvrKey, type ResourceInfo } from '../api/resource-info.js';
import type { IngestPool } from '../ingest/pool.js';
import type { CacheScope, Change, Store } from '../store/store.js';
import type { Semaphore } from '../util/semaphore.js';
import { Backoff } from './backoff.js';
import type { ProgressScope } from './member-progress.js';
import { compareMemberRV } from '../api/global-rv.js';
import { applyLinesInBatches } from './line-batches.js';
import { checkHistory, HistoryRewrittenError } from './history-check.js';
import { SILENT_LOG, type StructuredLog } from '../util/structured-log.js';
import { OwnRightsError, memberRefusal } from './own-rights.js';
import { CacherTransitions } from './transitions-log.js';
import { FirstSync } from './sync-progress.js';
import { peekRemainingItemCount } from './list-metadata.js';
import { listInPages } from './paged-list.js';
import { GoneError, openWatch } from './watch-request.js';
import type { CacherStatus } from './cacher-status.js';
import { SelectableFields } from './selectable-fields.js';
import { ScopeWriter } from './scope-writer.js';

/**
 * Keeps one (cluster, resource) of the store in step with its member: list in pages, then watch
 * from the list's RV with bookmarks, re-watch from the last RV when a watch ends, and relist with
 * reconcile when the member says the RV has expired (410). Before it watches from an RV it did
 * not just list at, it asks the member where its history is (history-check.ts): a member whose
 * resourceVersions went back (etcd restored from a backup) would take the watch from a future RV
 * and stay silent while the objects change, so its state is listed again and replaces the cached
 * one in one commit. This is the loop and its state (the RV, a pending rewrite, the status): what
 * to ask the member and when. The requests are paged-list.ts's and watch-request.ts's, what the
 * member answers is written into the store by scope-writer.ts, and the CRD's selectable fields
 * are selectable-fields.ts's.
 */

/**
 * Watch lines read ahead of the store while a batch is applied (line-batches.ts): about a hundred
 * events of pods as Table rows with their objects. Bounded because a batch is dispatched to the
 * watchers at once: 4 MiB batches (a thousand events) left 360 MB unsent in one fan-out flush to
 * 1000 watchers.
 */
const WATCH_READ_AHEAD_BYTES = 256 * 1024;

/** How often whenListedAgain looks: a relist takes seconds, and nothing waits on it but the identity check. */
const REWRITE_POLL_MS = 500;

export interface CacherOptions {
  pageSize: number;
  dropManagedFields: boolean;
  /** Upper bound of a watch request's server-side timeout; each watch picks a random share of it. */
  watchTimeoutSeconds?: number;
  /** Cache only this namespace of a namespaced resource (a rule's `namespaces`). */
  namespace?: string;
  /** Where pages and events are decoded: never on the event loop. */
  pool: IngestPool;
  /** Bounds the full lists running at once against this cacher's member. */
  listSlots: Semaphore;
  /** Bounds the list pages held at once by every cacher of the process, from request to commit. */
  pageSlots: Semaphore;
  log?: StructuredLog;
}

export class ResourceCacher {
  private readonly status: CacherStatus;
  private readonly abort = new AbortController();
  private readonly fields: SelectableFields;
  private readonly writer: ScopeWriter;
  private readonly key: string;
  private readonly scope: CacheScope;
  private readonly path: string;
  private running?: Promise<void>;
  private readonly syncedWaiters: (() => void)[] = [];
  /** Ends the watch in progress, when the cache manager finds the member's history rewritten. */
  private watchAbort?: AbortController;
  private rewrittenBy?: string;
  private readonly log: StructuredLog;
  private readonly transitions: CacherTransitions;
  private readonly firstSync: FirstSync;

  constructor(
    private readonly member: MemberClient,
    private readonly info: ResourceInfo,
    private readonly store: Store,
    private readonly opts: CacherOptions,
  ) {
    this.key = gvrKey(info);
    this.path = collectionPath(info, opts.namespace);
    this.status = { cluster: member.cluster, resource: this.key, phase: 'pending', synced: false, objects: 0, relists: 0, watches: 0, historyResets: 0 };
    this.log = opts.log ?? SILENT_LOG;
    if (opts.namespace) this.status.namespace = opts.namespace;
    const fields = { cluster: member.cluster, resource: this.key, ...(opts.namespace ? { namespace: opts.namespace } : {}) };
    this.transitions = new CacherTransitions(this.log, fields);
    this.firstSync = new FirstSync(this.log, fields);
    this.fields = new SelectableFields(member, info, this.log, { cluster: member.cluster, resource: this.key });
    this.scope = { cluster: member.cluster, resource: this.key, namespace: opts.namespace };
    const ctx = { cluster: member.cluster, apiVersion: groupVersion(info), kind: info.kind, dropManagedFields: opts.dropManagedFields };
    this.writer = new ScopeWriter(store, opts.pool, this.scope, ctx, this.fields);
  }

  start(): void {
    const stored = this.store.syncState(this.scope);
    let rv = stored?.rv || undefined;
    this.writer.restoreColumns(stored?.columns);
    this.fields.restore(stored?.selectableFields);
    if (rv) {
      // Warm start: the store already holds a complete state at `rv`; resume watching from it.
      this.status.objects = this.store.countOf(this.scope);
      this.status.rv = rv;
      this.markSynced();
    }
    this.running = (async () => {
      const backoff = new Backoff();
      let rewritten: string | undefined;
      while (!this.abort.signal.aborted) {
        try {
          const asked = this.takeRewrite();
          if (asked !== undefined) {
            this.noteRewrite(asked);
            rewritten = asked;
            rv = undefined;
          }
          const fieldsChanged = await this.fields.learn(this.abort.signal);
          if (fieldsChanged !== undefined && rv) {
            // The stored objects' meta records hold the old fields' values: all are written again,
            // in one commit, as for a rewritten history (watchers from before it list again).
            this.noteRewrite(fieldsChanged);
            rewritten = fieldsChanged;
            rv = undefined;
            this.writer.refreshEveryObject = true;
          }
          let listed = false;
          if (!rv) {
            rv = await this.relist(rewritten);
            rewritten = undefined;
            listed = true;
          }
          if (!listed) await checkHistory(this.member, this.path, this.store, this.scope, rv, this.abort.signal);
          rv = await this.watch(rv);
          backoff.reset();
        } catch (e) {
          if (this.abort.signal.aborted) break;
          if (e instanceof GoneError) {
            this.transitions.expired(e.message);
            rv = undefined;
            continue;
          }
          if (e instanceof HistoryRewrittenError) {
            this.noteRewrite(e.message);
            rewritten = e.message;
            rv = undefined;
            continue;
          }
          // The cache manager ended the watch: the loop's top takes its reason.
          if (this.rewrittenBy !== undefined) continue;
          // A watch that failed after committing events resumes after them, as client-go's
          // reflector resumes from the last RV it handled: from its start, they would be logged twice.
          if (rv !== undefined && this.status.rv !== undefined) rv = this.status.rv;
          this.status.lastError = (e as Error).message;
          // A right flotilla's own identity lacks is the operator's to fix: /status and the log name it.
          const refused = e instanceof OwnRightsError ? { status: e.status, missingRight: e.right } : undefined;
          this.status.missingRight = refused?.missingRight;
          this.transitions.failed(this.status.lastError, refused);
          this.status.phase = 'backoff';
          await sleep(backoff.next(), undefined, { signal: this.abort.signal }).catch(() => undefined);
        }
      }
      this.status.phase = 'stopped';
    })();
  }

  async stop(): Promise<void> {
    this.abort.abort();
    await this.running;
  }

  getStatus(): CacherStatus {
    const progress = this.firstSync.view();
    return progress ? { ...this.status, progress } : { ...this.status };
  }

  /** Why flotilla's own credentials cannot keep this cache, while a member refuses them (OwnRightsError's message). */
  rightsShortfall(): string | undefined {
    return this.status.missingRight !== undefined ? this.status.lastError : undefined;
  }

  /**
   * The member is not the cluster this cache followed (the cache manager found a new identity):
   * end the watch and list its state afresh, as for resourceVersions that went back.
   */
  rewriteHistory(reason: string): void {
    this.rewrittenBy = reason;
    this.watchAbort?.abort();
  }

  /** Resolves once the cacher has listed its member since `historyResets` was `before`, or it stopped. */
  async whenListedAgain(before: number): Promise<void> {
    while (!this.abort.signal.aborted && (this.status.historyResets <= before || this.status.rewriting !== undefined)) {
      await sleep(REWRITE_POLL_MS, undefined, { signal: this.abort.signal }).catch(() => undefined);
    }
  }

  private takeRewrite(): string | undefined {
    const reason = this.rewrittenBy;
    this.rewrittenBy = undefined;
    return reason;
  }

  private noteRewrite(reason: string): void {
    this.status.historyResets++;
    this.status.lastHistoryReset = { at: new Date().toISOString(), reason };
    this.status.rewriting = reason;
    this.log.warn({ cluster: this.member.cluster, resource: this.key, ...(this.opts.namespace ? { namespace: this.opts.namespace } : {}), event: 'history-rewritten', reason }, 'member history rewritten; listing its state again');
  }

  /** The fields the member's CRD makes selectable whose values the cached objects carry (none for a built-in resource). */
  selectableFields(): readonly string[] {
    return this.fields.served();
  }

  /** getStatus().synced without the copy: /readyz asks it of every cacher. */
  isSynced(): boolean {
    return this.status.synced;
  }

  /** Resolves once the cache holds a complete list of this member's objects. */
  whenSynced(): Promise<void> {
    if (this.status.synced) return Promise.resolve();
    return new Promise((resolve) => this.syncedWaiters.push(resolve));
  }

  private markSynced(): void {
    this.status.synced = true;
    for (const w of this.syncedWaiters.splice(0)) w();
  }

  private async relist(rewritten?: string): Promise<string> {
    this.status.phase = 'listing';
    const release = await this.opts.listSlots.acquire(this.abort.signal);
    try {
      return await this.listAll(rewritten !== undefined);
    } finally {
      release();
    }
  }

  /**
   * Lists the member's state into the store. `rewritten`: the member's history was rewritten, so
   * the changes are held until the whole list is read and replace the cached state in one commit
   * (reads never see old and new mixed), which also restarts the cluster's event log at the list.
   */
  private async listAll(rewritten: boolean): Promise<string> {
    this.status.relists++;
    // A relist over an existing state is logged as a diff, so watchers resuming from an older RV
    // see what changed; a scope's first list is not logged (there is nothing to diff against).
    // The first page of any list writes the scope's sync record, so its absence means a first list.
    let diff = this.store.syncState(this.scope) !== undefined;
    const held: Change[] | undefined = rewritten && diff ? [] : undefined;
    const seen = new Set<string>();
    let listRV = '';
    let count = 0;
    const first = !this.status.synced;
    const startedAt = Date.now();
    if (first) this.firstSync.start();
    else this.transitions.relisting();
    await listInPages({
      member: this.member,
      path: this.path,
      pageSize: this.opts.pageSize,
      pageSlots: this.opts.pageSlots,
      signal: this.abort.signal,
      refusal: (status, body) => memberRefusal(this.member.cluster, this.info, this.opts.namespace, 'list', status, body),
      name: `list ${this.key} from ${this.member.cluster}`,
    }, {
      restart: () => {
        // Pages already written make the rest of it a relist: diffed against them, and
        // reconciled at the end, or objects deleted meanwhile would stay.
        if (count > 0) diff = true;
        seen.clear();
        if (held) held.length = 0;
        count = 0;
        if (first) this.firstSync.restart();
      },
      page: async (body, firstPage) => {
        const page = await this.writer.commitPage(body, diff, seen, held);
        if (firstPage) listRV = page.rv;
        count += page.objects;
        // A first list shows its progress in /status; a relist keeps the count it had.
        if (!this.status.synced) this.status.objects = count;
        if (first) this.firstSync.page(count, peekRemainingItemCount(body));
        return page.continueToken;
      },
    });
    const changes = await this.writer.commitList(listRV, diff, seen, held);
    if (held) this.log.info({ cluster: this.member.cluster, resource: this.key, event: 'history-relisted', rv: listRV, changes }, 'member state listed again after its history was rewritten');
    this.fields.listed();
    this.status.objects = count;
    this.status.rv = listRV;
    this.status.lastError = undefined;
    this.status.missingRight = undefined;
    this.status.rewriting = undefined;
    if (first) this.firstSync.done(count);
    else this.transitions.relisted(count, (Date.now() - startedAt) / 1000);
    this.markSynced();
    return listRV;
  }

  /** Watches from `rv` until the member closes the watch; returns the last RV seen. */
  private async watch(rv: string): Promise<string> {
    this.status.phase = 'watching';
    this.status.watches++;
    const watchAbort = (this.watchAbort = new AbortController());
    const res = await openWatch({
      member: this.member,
      path: this.path,
      rv,
      maxTimeoutSeconds: this.opts.watchTimeoutSeconds ?? 600,
      signal: AbortSignal.any([this.abort.signal, watchAbort.signal]),
      refusal: (status, body) => memberRefusal(this.member.cluster, this.info, this.opts.namespace, 'watch', status, body),
    });
    this.status.lastError = undefined;
    this.status.missingRight = undefined;
    this.transitions.recovered();
    let lastRV = rv;
    await applyLinesInBatches(res, async (lines) => {
      lastRV = await this.applyEvents(lines, lastRV);
    }, WATCH_READ_AHEAD_BYTES);
    return lastRV;
  }

  /** Commits a run of watch lines (scope-writer.ts) and notes what it moved; an ERROR event ends the watch. */
  private async applyEvents(lines: Buffer, fromRV: string): Promise<string> {
    const applied = await this.writer.applyEvents(lines, fromRV);
    if (applied.committed) {
      this.status.objects += applied.committed.objectsDelta;
      this.status.rv = applied.committed.rv;
    }
    this.status.lastEventAt = new Date().toISOString();
    const error = applied.error;
    if (error) {
      if (error.code === 410) throw new GoneError(error.message ?? 'expired');
      throw new Error(`watch ${this.key} from ${this.member.cluster}: ${error.message ?? JSON.stringify(error)}`);
    }
    return applied.lastRV;
  }

  private progressView?: ProgressScope;

  /** The member and path of this scope, and its progress, for the questions member-progress.ts asks (one object: questions are shared by it). */
  progressScope(): ProgressScope {
    return (this.progressView ??= {
      cluster: this.member.cluster,
      member: this.member,
      path: this.path,
      watchingAt: () => (this.status.phase === 'watching' && this.status.synced ? this.status.rv : undefined),
      advanceQuiet: (from, to) => this.advanceQuiet(from, to),
      holds: (objects) => this.store.countOf(this.scope) === objects.length && objects.every((o) => this.store.storedRV(this.scope, o) === o.rv),
    });
  }

  /**
   * Raises the scope's RV from `from` to `to`, as a bookmark would, once the member has said it
   * holds no event of the scope in (from, to]. Committed in the store's order with the watch's own
   * batches; a later bookmark of the watch that is older than `to` does not lower it.
   */
  private async advanceQuiet(from: string, to: string): Promise<boolean> {
    const at = this.status.rv;
    if (this.status.phase !== 'watching' || at === undefined || compareMemberRV(at, from) < 0) return false;
    if (!this.writer.raiseQuiet(at, to)) return true;
    this.status.rv = to;
    await this.writer.commitQuiet(to);
    return true;
  }
}
