import { setTimeout as sleep } from 'node:timers/promises';
import type { IncomingMessage } from 'node:http';
import type { MemberClient } from '../members/member-client.js';
import { collectionPath, groupVersion, gvrKey, type ResourceInfo } from '../api/resource-info.js';
import type { IngestContext } from '../ingest/decode.js';
import { CrdUnreadableError, crdSelectableFields, type CrdFields } from '../resources/crd-selectable-fields.js';
import type { TableColumn } from '../api/table.js';
import { EVENT_TYPES, viewObjects } from '../ingest/batch.js';
import type { IngestPool } from '../ingest/pool.js';
import type { Change, ObjectRef, Store } from '../store/store.js';
import type { Semaphore } from '../util/semaphore.js';
import { Backoff } from './backoff.js';
import type { ProgressScope } from './member-progress.js';
import { compareMemberRV } from '../api/global-rv.js';
import { applyLinesInBatches } from './line-batches.js';
import { LIST_PAGE_IDLE_TIMEOUT_MS, MEMBER_WATCH_IDLE_GRACE_SECONDS } from '../registry/defaults.js';
import { checkHistory, HistoryRewrittenError } from './history-check.js';
import { SILENT_LOG, type StructuredLog } from '../util/structured-log.js';
import { OwnRightsError, memberRefusal } from './own-rights.js';
import { CacherTransitions } from './transitions-log.js';
import { FirstSync, type SyncProgress } from './sync-progress.js';
import { peekContinue, peekRemainingItemCount } from './list-metadata.js';

/**
 * Keeps one (cluster, resource) of the store in step with its member: list in pages, then watch
 * from the list's RV with bookmarks, re-watch from the last RV when a watch ends, and relist with
 * reconcile when the member says the RV has expired (410). Before it watches from an RV it did
 * not just list at, it asks the member where its history is (history-check.ts): a member whose
 * resourceVersions went back (etcd restored from a backup) would take the watch from a future RV
 * and stay silent while the objects change, so its state is listed again and replaces the cached
 * one in one commit. List, watch and that relist share the loop's state (the RV, a pending
 * rewrite, the quiet floor member-progress.ts raises), hence one class of ~500 lines; the
 * questions to the member live beside it.
 */
export type CacherPhase = 'pending' | 'listing' | 'watching' | 'backoff' | 'stopped';

export interface CacherStatus {
  cluster: string;
  resource: string;
  namespace?: string;
  phase: CacherPhase;
  synced: boolean;
  rv?: string;
  objects: number;
  relists: number;
  /** Watch requests made; unchanged across a config reload for cachers the reload did not touch. */
  watches: number;
  lastError?: string;
  /** While the member refuses flotilla's own credentials: the right they lack (`list clusterroles.rbac.authorization.k8s.io`); lastError has the member's words. */
  missingRight?: string;
  lastEventAt?: string;
  /** Times the member's history was found rewritten (resourceVersions back, a new cluster) and listed again. */
  historyResets: number;
  /** The last of them: when and why. */
  lastHistoryReset?: { at: string; reason: string };
  /** While the state of a rewritten history is being listed: why (reads name it in a Warning). */
  rewriting?: string;
  /** While the first list runs: how far it got (sync-progress.ts). */
  progress?: SyncProgress;
}

// Table rows with the whole object: the member prints the cells (exactly what kubectl shows for
// every kind, CRD columns included), and the object rides along.
const TABLE_ACCEPT = 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json';

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

export class GoneError extends Error {}

export class ResourceCacher {
  private readonly status: CacherStatus;
  private readonly abort = new AbortController();
  private ctx: IngestContext;
  /** The member has no CRD for this resource (a built-in or aggregated one): its CRD is not asked again. */
  private notCustom = false;
  /** Every object of the next list is written again, unchanged or not: its selectable fields changed. */
  private refreshEveryObject = false;
  private lastFieldsError?: string;
  /** The CRD fields whose values the served objects carry: those of the last whole list (or the stored state's). */
  private servedFields: readonly string[] = [];
  private readonly key: string;
  private readonly scope: { cluster: string; resource: string; namespace?: string };
  private readonly path: string;
  private columns?: TableColumn[];
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
    this.scope = { cluster: member.cluster, resource: this.key, namespace: opts.namespace };
    this.path = collectionPath(info, opts.namespace);
    this.status = { cluster: member.cluster, resource: this.key, phase: 'pending', synced: false, objects: 0, relists: 0, watches: 0, historyResets: 0 };
    this.log = opts.log ?? SILENT_LOG;
    if (opts.namespace) this.status.namespace = opts.namespace;
    const fields = { cluster: member.cluster, resource: this.key, ...(opts.namespace ? { namespace: opts.namespace } : {}) };
    this.transitions = new CacherTransitions(this.log, fields);
    this.firstSync = new FirstSync(this.log, fields);
    this.ctx = { cluster: member.cluster, apiVersion: groupVersion(info), kind: info.kind, dropManagedFields: opts.dropManagedFields };
  }

  start(): void {
    const stored = this.store.syncState(this.scope);
    let rv = stored?.rv || undefined;
    this.columns = stored?.columns;
    if (stored?.selectableFields?.length) this.ctx = { ...this.ctx, selectableFields: stored.selectableFields };
    this.servedFields = this.ctx.selectableFields ?? [];
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
          const fieldsChanged = await this.learnSelectableFields();
          if (fieldsChanged !== undefined && rv) {
            // The stored objects' meta records hold the old fields' values: all are written again,
            // in one commit, as for a rewritten history (watchers from before it list again).
            this.noteRewrite(fieldsChanged);
            rewritten = fieldsChanged;
            rv = undefined;
            this.refreshEveryObject = true;
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
    return this.servedFields;
  }

  /**
   * Reads the member's CRD of this resource for its selectable fields, before each list and watch
   * (a CRD edited since is seen at the next one); says why when they differ from those the cached
   * objects carry. A CRD the member refuses leaves the fields as they were (none at first), logged;
   * a member that does not answer leaves them too, its list or watch says why.
   */
  private async learnSelectableFields(): Promise<string | undefined> {
    if (this.notCustom) return undefined;
    let learned: CrdFields;
    try {
      learned = await crdSelectableFields(this.member, this.info, this.abort.signal);
    } catch (e) {
      // Not answered (unreachable, stopped): the list or watch that follows meets it and says so.
      if (!(e instanceof CrdUnreadableError)) return undefined;
      const error = e.message;
      if (error !== this.lastFieldsError) {
        this.log.warn({ cluster: this.member.cluster, resource: this.key, event: 'selectable-fields-unknown', error }, 'cannot read the resource\'s CustomResourceDefinition: field selectors on its own fields are refused until it is read');
      }
      this.lastFieldsError = error;
      return undefined;
    }
    this.lastFieldsError = undefined;
    if (learned.kind === 'not-custom') this.notCustom = true;
    const fields = learned.kind === 'declared' ? learned.fields : [];
    const before = this.ctx.selectableFields ?? [];
    if (fields.join('\n') === before.join('\n')) return undefined;
    this.ctx = { ...this.ctx, selectableFields: fields };
    return `the CustomResourceDefinition's selectable fields changed from [${before.join(', ')}] to [${fields.join(', ')}]`;
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

  /** What the sync record says of the stored objects' selectable fields. */
  private fieldsRecord(): { selectableFields?: string[] } {
    const fields = this.ctx.selectableFields;
    return fields?.length ? { selectableFields: [...fields] } : {};
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
    let continueToken: string | undefined;
    let count = 0;
    const first = !this.status.synced;
    const startedAt = Date.now();
    if (first) this.firstSync.start();
    else this.transitions.relisting();
    const pageSlots = this.opts.pageSlots;
    /** A page request holding one of the process's page slots until the page is committed. */
    const fetchPage = (slot: () => void, token?: string) => {
      const q = new URLSearchParams({ limit: String(this.opts.pageSize), includeObject: 'Object' });
      if (token) q.set('continue', token);
      const response = this.member.fetch({ path: `${this.path}?${q}`, headers: { accept: TABLE_ACCEPT }, signal: this.abort.signal, idleTimeoutMs: LIST_PAGE_IDLE_TIMEOUT_MS });
      // A prefetched page nobody awaits any more (the list failed or stopped) must not crash the
      // process with an unhandled rejection; whoever awaits it still sees the error.
      response.catch(() => undefined);
      return { response, release: slot };
    };
    // One page ahead when a slot is free: the next page is on its way while this one is decoded
    // and committed. Waiting for a slot happens only with none held, so holders always finish.
    let inFlight = fetchPage(await pageSlots.acquire(this.abort.signal));
    try {
      for (;;) {
        const current = inFlight;
        try {
          const res = await current.response;
          if (res.status === 410 && continueToken) {
            // The snapshot behind the continue token was compacted away: start the list over.
            // Pages already written make the rest of it a relist: diffed against them, and
            // reconciled at the end, or objects deleted meanwhile would stay.
            if (count > 0) diff = true;
            seen.clear();
            if (held) held.length = 0;
            continueToken = undefined;
            count = 0;
            if (first) this.firstSync.restart();
            current.release();
            inFlight = fetchPage(await pageSlots.acquire(this.abort.signal));
            continue;
          }
          if (res.status !== 200) throw memberRefusal(this.member.cluster, this.info, this.opts.namespace, 'list', res.status, res.body.toString('utf8', 0, 2000));
          const nextToken = peekContinue(res.body);
          const slot = nextToken ? pageSlots.tryAcquire() : undefined;
          if (slot) inFlight = fetchPage(slot, nextToken);
          const page = await this.commitPage(res.body, diff, seen, held);
          if (!continueToken) listRV = page.rv;
          count += page.objects;
          // A first list shows its progress in /status; a relist keeps the count it had.
          if (!this.status.synced) this.status.objects = count;
          if (first) this.firstSync.page(count, peekRemainingItemCount(res.body));
          continueToken = page.continueToken;
          if (continueToken !== nextToken) throw new Error(`list ${this.key} from ${this.member.cluster}: continue token misread`);
        } finally {
          current.release();
        }
        if (!continueToken) break;
        // Not prefetched (no slot was free then): wait for one now.
        if (inFlight === current) inFlight = fetchPage(await pageSlots.acquire(this.abort.signal), continueToken);
      }
    } finally {
      // A failed list's prefetched page gives its slot back (releasing twice is harmless).
      inFlight.release();
    }

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
    const logged = this.store.logStart(this.key)[this.member.cluster] !== undefined;
    await this.store.commit(this.scope, held ? [...held, ...gone] : gone, { rv: listRV, columns: this.columns, ...this.fieldsRecord(), listedAt: new Date().toISOString() }, {
      log: diff,
      ...(logged && !held ? {} : { logStartRV: listRV }),
      ...(held ? { restartLog: true } : {}),
    });
    if (held) this.log.info({ cluster: this.member.cluster, resource: this.key, event: 'history-relisted', rv: listRV, changes: held.length + gone.length }, 'member state listed again after its history was rewritten');
    this.refreshEveryObject = false;
    this.servedFields = this.ctx.selectableFields ?? [];
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

  /**
   * Decodes a list page in a worker and commits it. A relist (`diff`) writes only what changed
   * and notes every object it saw in `seen`, for the reconcile at the end; `held` keeps the
   * changes for that commit instead.
   */
  private async commitPage(body: Buffer, diff: boolean, seen: Set<string>, held?: Change[]): Promise<{ objects: number; rv: string; continueToken?: string }> {
    const page = await this.opts.pool.decodePage(body, this.ctx);
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
    if (held) {
      for (const c of changes) held.push(c);
      return { objects: objects.length, rv: page.rv, ...(page.continueToken ? { continueToken: page.continueToken } : {}) };
    }
    // Pages are written as they arrive with no RV: a crash mid-list leaves a state the next
    // start relists rather than trusts. The RV is written with the reconcile after the last page.
    await this.store.commit(this.scope, changes, { rv: '', columns: this.columns, ...this.fieldsRecord() }, { log: diff, fresh: !diff });
    return { objects: objects.length, rv: page.rv, ...(page.continueToken ? { continueToken: page.continueToken } : {}) };
  }

  /** Watches from `rv` until the member closes the watch; returns the last RV seen. */
  private async watch(rv: string): Promise<string> {
    this.status.phase = 'watching';
    this.status.watches++;
    const maxTimeout = this.opts.watchTimeoutSeconds ?? 600;
    const timeoutSeconds = Math.floor(maxTimeout / 2 + Math.random() * (maxTimeout / 2));
    const q = new URLSearchParams({
      watch: '1',
      allowWatchBookmarks: 'true',
      resourceVersion: rv,
      timeoutSeconds: String(timeoutSeconds),
      includeObject: 'Object',
    });
    const watchAbort = (this.watchAbort = new AbortController());
    const res: IncomingMessage = await this.member.send({
      path: `${this.path}?${q}`,
      headers: { accept: TABLE_ACCEPT },
      signal: AbortSignal.any([this.abort.signal, watchAbort.signal]),
      idleTimeoutMs: (timeoutSeconds + MEMBER_WATCH_IDLE_GRACE_SECONDS) * 1000,
      lane: 'long-running',
    });
    if (res.statusCode === 410) {
      res.resume();
      throw new GoneError('watch RV expired');
    }
    if (res.statusCode !== 200) {
      const chunks: Buffer[] = [];
      for await (const c of res) chunks.push(c as Buffer);
      throw memberRefusal(this.member.cluster, this.info, this.opts.namespace, 'watch', res.statusCode ?? 0, Buffer.concat(chunks).toString('utf8', 0, 2000));
    }
    this.status.lastError = undefined;
    this.status.missingRight = undefined;
    this.transitions.recovered();
    let lastRV = rv;
    await applyLinesInBatches(res, async (lines) => {
      lastRV = await this.applyEvents(lines, lastRV);
    }, WATCH_READ_AHEAD_BYTES);
    return lastRV;
  }

  /** Decodes a run of watch lines in a worker and commits them, in order, in one transaction. */
  private async applyEvents(lines: Buffer, fromRV: string): Promise<string> {
    const batch = await this.opts.pool.decodeEvents(lines, this.ctx);
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
    if (changes.length > 0 || lastRV !== fromRV) {
      const rv = this.notBelowQuietFloor(lastRV);
      await this.store.commit(this.scope, changes, { rv, columns: this.columns, ...this.fieldsRecord() }, { log: true });
      this.status.objects += objectsDelta;
      this.status.rv = rv;
    }
    this.status.lastEventAt = new Date().toISOString();
    if (batch.error) {
      if (batch.error.code === 410) throw new GoneError(batch.error.message ?? 'expired');
      throw new Error(`watch ${this.key} from ${this.member.cluster}: ${batch.error.message ?? JSON.stringify(batch.error)}`);
    }
    return lastRV;
  }

  /**
   * Since the last list: the RV the member said nothing happened up to (advanceQuiet), and the
   * last RV the watch's batches handed to the store; neither may lower the other.
   */
  private quietMarks?: { relists: number; floor?: string; queued?: string };

  private progressView?: ProgressScope;

  /** The member and path of this scope, and its progress, for the questions member-progress.ts asks (one object: questions are shared by it). */
  progressScope(): ProgressScope {
    return (this.progressView ??= {
      cluster: this.member.cluster,
      member: this.member,
      path: this.path,
      watchingAt: () => (this.status.phase === 'watching' && this.status.synced ? this.status.rv : undefined),
      advanceQuiet: (from, to) => this.advanceQuiet(from, to),
    });
  }

  private marksOfThisList(): { relists: number; floor?: string; queued?: string } {
    if (this.quietMarks?.relists !== this.status.relists) this.quietMarks = { relists: this.status.relists };
    return this.quietMarks;
  }

  /**
   * Raises the scope's RV from `from` to `to`, as a bookmark would, once the member has said it
   * holds no event of the scope in (from, to]. Committed in the store's order with the watch's own
   * batches; a later bookmark of the watch that is older than `to` does not lower it.
   */
  private async advanceQuiet(from: string, to: string): Promise<boolean> {
    const at = this.status.rv;
    if (this.status.phase !== 'watching' || at === undefined || compareMemberRV(at, from) < 0) return false;
    const marks = this.marksOfThisList();
    if (compareMemberRV(at, to) >= 0 || (marks.queued !== undefined && compareMemberRV(marks.queued, to) >= 0)) return true;
    marks.floor = to;
    marks.queued = to;
    this.status.rv = to;
    await this.store.commit(this.scope, [], { rv: to, columns: this.columns, ...this.fieldsRecord() }, { log: true });
    return true;
  }

  /** The RV a watch batch commits: `rv`, or the quiet floor above it. */
  private notBelowQuietFloor(rv: string): string {
    const marks = this.marksOfThisList();
    const committed = marks.floor !== undefined && compareMemberRV(marks.floor, rv) > 0 ? marks.floor : rv;
    marks.queued = committed;
    return committed;
  }
}



function refKey(r: ObjectRef): string {
  return `${r.namespace}/${r.name}`;
}
