import { Environment, type StoreHealth } from './environment.js';
import { EventLog, type CommitListener } from './event-log.js';
import { memberIdentityKey, objectKey } from './keys.js';
import { LabelIndex } from './label-index.js';
import { NAME_GENERATED_KEY, NAME_PAIR_KEY, NAME_TOKEN_KEY, NameIndex, type PlaceLookup, type TokenMatch } from './name-index.js';
import { CREATED_FIELD, OWNERS_FIELD, UID_FIELD, fieldIndexKey, type MetaRecord } from './meta-record.js';
import { Objects, type RangeOptions } from './objects.js';
import { SyncState } from './sync-state.js';
import { TransactionQueue } from './transaction-queue.js';
import type { ResourceInfo } from '../api/resource-info.js';
import { DEFAULT_EVENT_LOG_SIZE, OBJECTS_PER_TRANSACTION } from '../registry/defaults.js';
import type { CacheScope, Change, ObjectRef, Snapshot, StoreEvent, StoredEntry, StoreListener, SyncRecord } from './types.js';

/**
 * The embedded cache: one LMDB environment holding, per (resource, namespace, name, cluster), the
 * ready-to-serve JSON bytes and a meta record, plus each (cluster, resource)'s sync state. Objects
 * and the RV they were read at are committed in one transaction, so a restart can resume watching
 * from the stored RV.
 *
 * Keys sort as resource · namespace · name · cluster (· is KEY_SEP): a fleet-wide list is one range, a namespace
 * is a sub-range, and a get by name finds every member's copy next to each other.
 *
 * Every change gets a sequence number and, unless it comes from a scope's very first list, goes
 * into a bounded per-resource event log, so a watch can resume from an older global RV. Listeners
 * (live watches) hear about each committed batch right after its transaction.
 *
 * Store is the one face of the store to the rest of flotilla, over parts that each do one job
 * (docs/ARCHITECTURE.md, "Store"): environment.ts, objects.ts, label-index.ts, event-log.ts and
 * sync-state.ts. It keeps what spans them: the write queue, and the commit, which writes a batch
 * to every part in one transaction and then tells listeners and waiters. It is over 400 lines
 * because it is that face: some 45 short methods, most handing a question to one part; split, its
 * callers would hold two stores for one.
 */
export type { CacheScope, Change, ChangeType, ObjectRef, Snapshot, StoreEvent, StoredEntry, StoreListener, SyncRecord } from './types.js';
export { KEY_SEP, objectKey } from './keys.js';
export { StoreFullError, DataDirError, ensureDataDir, isStoreCorruption, DAMAGE_MARKER, type StoreHealth } from './environment.js';

export interface CommitOptions {
  /** Write the changes to the event log (everything but a scope's first list). */
  log: boolean;
  /** Events of this cluster up to this RV are not in the log (set by a scope's first list). */
  logStartRV?: string;
  /**
   * The member's history was rewritten (its resourceVersions went back, or it is a new cluster
   * under the same name): the cluster's logged events of the resource are forgotten before this
   * commit's are logged, and its log starts again at `logStartRV`.
   */
  restartLog?: boolean;
  /** Remove the scope's sync record instead of writing one (the scope was dropped). */
  dropSync?: boolean;
  /**
   * Every change is an object the store does not hold: a page of a scope's first list. Its index
   * entries are then written without looking up what the object held before, a B-tree read per
   * object that was a fifth of the store's main-thread time in a first sync. It holds because
   * scopes of one cluster and resource cover disjoint namespaces, the cache manager drops a scope
   * it removes before it starts the scopes that replace it, and a first list that starts over
   * (its snapshot expired) goes on as a relist.
   */
  fresh?: boolean;
}

export interface StoreOptions {
  /** Events kept per resource; older ones are trimmed and make older RVs expire (410). */
  eventLogSize?: number;
  /** Free bytes the data directory's filesystem must keep: below it, writes fail with StoreFullError. */
  minFreeBytes?: number;
  /** Check a store kept from an earlier run before serving it (integrity.ts); true unless a test says otherwise. */
  verify?: boolean;
  /**
   * Keep the name index (name-index.ts); true unless the bench compares a store without it.
   * A store is written with it or without it for its whole life.
   */
  indexNames?: boolean;
  /**
   * Serve created-after/before from the creation-time index; true unless the bench compares a
   * store without it, whose commits it gives batches without those entries (the ingest makes them).
   */
  indexCreated?: boolean;
}


export class Store {
  private readonly objects: Objects;
  private readonly labels: LabelIndex;
  /** Undefined in a store the bench keeps without it (StoreOptions.indexNames). */
  private readonly names: NameIndex | undefined;
  private readonly indexCreated: boolean;
  private readonly log: EventLog;
  private readonly syncs: SyncState;
  private readonly writes: TransactionQueue;
  private commits = 0;

  private constructor(
    private readonly env: Environment,
    opts: StoreOptions,
  ) {
    this.objects = new Objects(env.dbs);
    this.labels = new LabelIndex(env.dbs);
    this.names = opts.indexNames === false ? undefined : new NameIndex(env.dbs, this.labels);
    this.indexCreated = opts.indexCreated !== false;
    this.syncs = new SyncState(env.dbs);
    // Numbered on from the last change stored: after Environment.open's format check, which
    // empties the log of a store in another layout.
    this.log = new EventLog(env.dbs, opts.eventLogSize ?? DEFAULT_EVENT_LOG_SIZE);
    // Plain puts, not transaction(): lmdb-js then does the B-tree work on its writer thread and
    // the main thread only encodes write instructions (a 100-byte-key put inside transaction()
    // costs ~5 µs of main thread; outside, ~1 µs). Puts of one event turn commit as one LMDB
    // transaction, and the queue runs one transaction per turn and waits for its commit, so every
    // task is atomic. Reads in a task see every earlier transaction, but not the writes of its own
    // (lmdb-js applies puts on its writer thread): the writes later tasks of the same transaction
    // must see (log state, an object's meta record) are kept by the parts until the next one
    // (newTransaction). A put that threw would leave the task's earlier puts queued; none can: our
    // longest key (a label index entry, at most ~900 bytes from Kubernetes' name limits) is far
    // below LMDB's 1978.
    this.writes = new TransactionQueue((fn) => {
      env.prepareWrite();
      // The last transaction has committed: LMDB holds what the batch overlays kept.
      this.log.newTransaction();
      this.objects.newTransaction();
      this.names?.newTransaction();
      fn();
      return env.root.committed;
    }, OBJECTS_PER_TRANSACTION);
  }

  static open(path: string, opts: StoreOptions = {}): Store {
    const env = Environment.open(path, opts.minFreeBytes, opts.verify ?? true);
    try {
      return new Store(env, opts);
    } catch (e) {
      void env.root.close();
      throw e;
    }
  }

  /** Whether writes go through, and whether the store was rebuilt at open (shown at /status, asked by readiness). */
  health(): StoreHealth {
    return this.env.status();
  }

  /** LMDB said the store is damaged while serving (isStoreCorruption): marked for a rebuild at the next open. */
  markDamaged(reason: string): void {
    this.env.markDamaged(reason);
  }

  /** Tells `listener` each time the health changes (the volume fills up, or has room again). */
  onHealth(listener: (health: StoreHealth) => void): void {
    this.env.onHealth = listener;
  }

  /** The discovery answer last saved for a resource (by gvrKey). */
  resourceInfo(resource: string): ResourceInfo | undefined {
    return this.syncs.resourceInfo(resource);
  }

  saveResourceInfo(resource: string, info: ResourceInfo): Promise<void> {
    return this.writes.run(() => this.syncs.putResourceInfo(resource, info), true);
  }

  /** The identity a member had when its state was cached (its kube-system namespace's uid). */
  memberIdentity(cluster: string): string | undefined {
    return (this.env.dbs.logs.get(memberIdentityKey(cluster)) as { uid: string } | undefined)?.uid;
  }

  saveMemberIdentity(cluster: string, uid: string): Promise<void> {
    return this.writes.run(() => void this.env.dbs.logs.put(memberIdentityKey(cluster), { uid }), true);
  }

  /** Hears every committed batch of a resource's changes, in commit order. */
  subscribe(resource: string, listener: StoreListener): () => void {
    return this.log.subscribe(resource, listener);
  }

  /** Hears every committed batch of every resource (after the resource's own listeners), as committed. */
  subscribeEvery(listener: CommitListener): () => void {
    return this.log.subscribeEvery(listener);
  }

  /**
   * How many commits this store has made since it opened, read from memory: a memo of what the
   * store held (owner search's walks) is good while it stays the same.
   */
  get commitCount(): number {
    return this.commits;
  }

  /** The sequence number of the last committed change (read it in the same pass as a snapshot). */
  lastSeq(snapshot?: Snapshot): number {
    return this.log.lastSeq(snapshot);
  }

  /**
   * Each cluster's RV the stored objects of a resource are complete up to (the oldest of its
   * scopes; a scope in the middle of a list has none). Cached between commits; computed afresh
   * when read from a snapshot.
   */
  latestRVs(resource: string, snapshot?: Snapshot): Record<string, string> {
    return this.syncs.latestRVs(resource, snapshot);
  }

  /**
   * Resolves once the stored state of `resource` has reached each cluster's RV in `rvs` (true), or
   * when `timeoutMs` passes first (false). Woken by commits, not by polling.
   */
  waitFor(resource: string, rvs: Record<string, string>, timeoutMs: number): Promise<boolean> {
    return this.syncs.waitFor(resource, rvs, timeoutMs);
  }

  /** Resolves once `reached()` holds, checked after each commit of the resource (true), or at the timeout (false). */
  waitUntil(resource: string, reached: () => boolean, timeoutMs: number): Promise<boolean> {
    return this.syncs.waitUntil(resource, reached, timeoutMs);
  }

  /** Per cluster, the RV below which the log cannot replay events of a resource. */
  logStart(resource: string): Record<string, string> {
    return this.log.logStart(resource);
  }

  /**
   * Where in a resource's log a watch resuming from `since` (per cluster, the member RV it has)
   * starts: the sequence number just before the first logged event it has not seen, or undefined
   * when it has seen every logged event.
   */
  resumeSeq(resource: string, since: Record<string, string>, snapshot?: Snapshot): number | undefined {
    return this.log.resumeSeq(resource, since, snapshot);
  }

  /** The logged events of a resource after `afterSeq`, in order. Iterate synchronously, or pass a snapshot. */
  logged(resource: string, afterSeq = 0, snapshot?: Snapshot): Generator<StoreEvent> {
    return this.log.logged(resource, afterSeq, snapshot);
  }

  /**
   * Applies a batch of changes from one (cluster, resource) and its new sync state atomically.
   * An unlogged batch (a scope's first list, which no watcher resumes through) is written in
   * slices of OBJECTS_PER_TRANSACTION, the sync state with the last: a crash in between leaves
   * objects a resumed list writes again, and no event turn holds more than one slice.
   */
  async commit(scope: CacheScope, changes: readonly Change[], sync: SyncRecord, opts: CommitOptions): Promise<void> {
    const { cluster, resource } = scope;
    const urgent = changes.length <= OBJECTS_PER_TRANSACTION;
    let from = 0;
    if (!opts.log) {
      for (; changes.length - from > OBJECTS_PER_TRANSACTION; from += OBJECTS_PER_TRANSACTION) {
        const slice = changes.slice(from, from + OBJECTS_PER_TRANSACTION);
        await this.writes.run(() => {
          for (const c of slice) this.applyObject(resource, cluster, c, opts.fresh === true);
        }, false);
        this.commits++;
      }
    }
    // The changes are numbered in order, in this transaction (slices written before included).
    let firstSeq = 0;
    // What each MODIFIED object's meta record was, for watches' selection transitions.
    const prevMetas: (Buffer | undefined)[] = [];
    const prevBytes: (Buffer | undefined)[] = [];
    await this.writes.run(() => {
      const log = this.log;
      let state = log.stateOf(resource);
      if (opts.restartLog) state = log.forget(resource, cluster, state);
      firstSeq = log.skip(from);
      for (let i = from; i < changes.length; i++) {
        const c = changes[i]!;
        const prev = this.applyObject(resource, cluster, c, opts.fresh === true);
        const before = this.objects.prevBytes;
        if (c.type === 'MODIFIED') {
          prevMetas[i] = prev;
          prevBytes[i] = before;
        }
        const seq = log.next();
        if (opts.log) state = log.append(resource, cluster, seq, c, prev, before, state);
      }
      log.seal(resource, cluster, state, opts.logStartRV);
      this.syncs.write(scope, sync, opts.dropSync === true);
    }, urgent, Math.max(1, changes.length - from));
    this.syncs.committed(scope, sync, opts.dropSync === true);
    // Before listeners hear of the batch: what they read then must not come from a memo of before it.
    this.commits++;
    this.log.publish(resource, cluster, changes, firstSeq, prevMetas, prevBytes);
    this.syncs.wake(resource);
  }

  /** Writes one change to the objects and the label index; returns the meta record the object had (undefined for a fresh one). */
  private applyObject(resource: string, cluster: string, c: Change, fresh: boolean): Buffer | undefined {
    const key = objectKey(resource, c.namespace, c.name, cluster);
    const prev = this.objects.write(resource, cluster, key, c, fresh);
    if (c.type === 'DELETED') {
      this.labels.reindex(resource, key, '', false, prev);
      if (prev !== undefined) this.names?.remove(resource, key, c.namespace, c.name);
    } else {
      this.labels.reindex(resource, key, c.labels ?? '', fresh, prev);
      // A name never changes at its key: entered when the object arrives, removed when it goes.
      if (fresh || prev === undefined) this.names?.add(resource, key, c.namespace, c.name);
    }
    return prev;
  }

  /** The keys of a resource's objects labelled key=value, in key order. */
  keysLabelled(resource: string, label: string, value: string, snapshot?: Snapshot): Generator<string> {
    return this.labels.keysLabelled(resource, label, value, snapshot);
  }

  /**
   * Whether the label index holds this index key's entries: not the creation-time index, nor the
   * name index's, in a store kept without them (StoreOptions.indexCreated, indexNames).
   */
  indexes(label: string): boolean {
    if (label === fieldIndexKey(CREATED_FIELD)) return this.indexCreated;
    if (label === NAME_TOKEN_KEY || label === NAME_GENERATED_KEY || label === NAME_PAIR_KEY) return this.names !== undefined;
    return true;
  }

  /** The keys of a resource's objects whose `label` value lies in [from, to) as text, in value order (LabelIndex.keysInRange). */
  keysInRange(resource: string, label: string, from: string | undefined, to: string | undefined, snapshot?: Snapshot): Generator<string> {
    return this.labels.keysInRange(resource, label, from, to, snapshot);
  }

  /** Whether the object at `objectKey` is labelled key=value (or has that indexed field value). */
  isLabelled(resource: string, label: string, value: string, objectKey: string, snapshot?: Snapshot): boolean {
    return this.labels.isLabelled(resource, label, value, objectKey, snapshot);
  }

  /**
   * The distinct indexed tokens of a resource's names starting with `needle` or holding it
   * (name-index.ts), at most `max`; undefined when there are more, or the store keeps no name index.
   */
  nameTokens(resource: string, needle: string, match: TokenMatch, max: number, snapshot?: Snapshot): string[] | undefined {
    return this.names?.tokens(resource, needle, match, max, snapshot);
  }

  /** The keys of the objects a lookup of long generated tokens or word pairs finds, in key order (NameIndex.keysOf); undefined as nameTokens. */
  nameKeys(resource: string, lookup: PlaceLookup, max: number, snapshot?: Snapshot): string[] | undefined {
    return this.names?.keysOf(resource, lookup, max, snapshot);
  }

  /** The keys of a resource's objects with this uid: one per member holding it, normally (owner search). */
  keysWithUid(resource: string, uid: string, snapshot?: Snapshot): Generator<string> {
    return this.labels.keysLabelled(resource, fieldIndexKey(UID_FIELD), uid, snapshot);
  }

  /** The keys of a resource's objects that `owner` (ownerValue: `<group>/<Kind>/<uid>`) owns directly. */
  keysOwnedBy(resource: string, owner: string, snapshot?: Snapshot): Generator<string> {
    return this.labels.keysLabelled(resource, fieldIndexKey(OWNERS_FIELD), owner, snapshot);
  }

  /** Whether some object of a resource is owned by an object of this `<group>/<Kind>`: one index probe. */
  hasOwnersOfKind(resource: string, groupKind: string, snapshot?: Snapshot): boolean {
    return this.labels.hasValuePrefixed(resource, fieldIndexKey(OWNERS_FIELD), `${groupKind}/`, snapshot);
  }

  /** The meta record of the object at a store key (an index hit). */
  metaAt(key: string, snapshot?: Snapshot): MetaRecord | undefined {
    return this.objects.metaAt(key, snapshot);
  }

  /** The namespaces where a cluster holds an object of a resource by this name ('' for a cluster-scoped one). */
  namespacesOfName(resource: string, cluster: string, name: string, snapshot?: Snapshot): string[] {
    return this.objects.namespacesOfName(resource, cluster, name, snapshot);
  }

  /** One stored object by its key (a label index hit). */
  entryAt(key: string, snapshot?: Snapshot): StoredEntry | undefined {
    return this.objects.entryAt(key, snapshot);
  }

  /** The refs of every object stored for one scope: what a relist reconciles against. */
  refsOf(scope: CacheScope): ObjectRef[] {
    return this.objects.refsOf(scope);
  }

  /**
   * The same, a page at a time with an event turn between pages: a scope of 100k objects read
   * in one go holds the event loop for hundreds of milliseconds.
   */
  refsOfPaged(scope: CacheScope, pageSize = 2000): AsyncGenerator<ObjectRef[]> {
    return this.objects.refsOfPaged(scope, pageSize);
  }

  /** How many objects one scope holds. */
  countOf(scope: CacheScope): number {
    return this.objects.countOf(scope);
  }

  /**
   * Forgets a scope entirely (its cluster or rule was removed): its objects go as DELETED events,
   * so watchers drop them too, and its sync record goes.
   */
  async dropScope(scope: CacheScope): Promise<void> {
    const rv = this.syncState(scope)?.rv || '0';
    await this.commit(scope, this.objects.deletions(scope, rv), { rv: '' }, { log: true, dropSync: true });
  }

  /** The member RV an object is stored at, if it is stored. */
  storedRV(scope: CacheScope, ref: ObjectRef): string | undefined {
    return this.objects.metaOf(scope.resource, { ...ref, cluster: scope.cluster })?.rv;
  }

  /** The stored bytes and meta of an object (a reconcile's DELETED event carries its last state). */
  stored(scope: CacheScope, ref: ObjectRef): { bytes: Buffer; meta: Buffer } | undefined {
    return this.objects.stored(scope, ref);
  }

  syncState(scope: CacheScope): SyncRecord | undefined {
    return this.syncs.syncState(scope);
  }

  /** A snapshot to read consistently across ticks (paged lists); call done() on it when finished. */
  snapshot(): Snapshot {
    return this.env.root.useReadTransaction();
  }

  /** Every sync record of a resource: the RVs a list of it is as fresh as, and the Table columns. */
  syncStates(resource: string, snapshot?: Snapshot): { cluster: string; namespace: string; sync: SyncRecord }[] {
    return this.syncs.syncStates(resource, snapshot);
  }

  /**
   * Every stored object of a resource, optionally within one namespace, optionally of one cluster,
   * in key order, from `startKey` on. Iterate synchronously (lmdb-js reads in one tick share one
   * snapshot), or pass a snapshot. Without a cluster, the bytes are views of shared slabs: use
   * them, copy them, but do not keep them.
   */
  entries(resource: string, opts: RangeOptions & { startKey?: string; snapshot?: Snapshot } = {}): Generator<StoredEntry> {
    // The part's own generator, not one wrapping it: a list's loop resumes one generator per object.
    return this.objects.entries(resource, opts);
  }

  /** How many objects `entries` would yield from `startKey` on, counted by LMDB without reading them. */
  countFrom(resource: string, opts: RangeOptions & { startKey: string; snapshot?: Snapshot }): number {
    return this.objects.countFrom(resource, opts);
  }

  /** Every member's copy of namespace/name. */
  lookup(resource: string, namespace: string, name: string, cluster?: string): StoredEntry[] {
    return this.objects.lookup(resource, namespace, name, cluster);
  }

  metaOf(resource: string, e: { namespace: string; name: string; cluster: string }, snapshot?: Snapshot): MetaRecord | undefined {
    return this.objects.metaOf(resource, e, snapshot);
  }

  async close(): Promise<void> {
    await this.env.root.close();
  }

  /**
   * The logged events of each cluster of `since` after that cluster's RV, cluster by cluster in
   * RV order (what a page read at that RV undoes). Iterate synchronously, or pass a snapshot.
   */
  loggedAfter(resource: string, since: Record<string, string>, snapshot?: Snapshot): Generator<StoreEvent> {
    return this.log.loggedAfter(resource, since, snapshot);
  }
}
