import type { Database } from 'lmdb';
import { compareMemberRV } from '../api/global-rv.js';
import type { Databases, LoggedRecord, LogState } from './environment.js';
import { SEQ_KEY } from './keys.js';
import type { Change, Snapshot, StoreEvent, StoreListener } from './types.js';

/**
 * The event log: every change gets a sequence number, and all but a scope's first list go into a
 * bounded per-resource log (events, with eventRVs to find where a member RV resumes), so a watch
 * can resume from an older global RV instead of relisting. Live watches subscribe here and hear
 * of each committed batch. The commit numbers and logs its changes through next/append/seal in
 * its transaction, and publishes after it.
 */

/** A member RV as the integer it is in practice (an etcd revision); undefined when it is not one. */
function numericRV(rv: string): number | undefined {
  if (!/^[0-9]{1,15}$/.test(rv)) return undefined;
  return Number(rv);
}

/** Hears a commit of any resource: its changes as committed (no event is made for it). */
export type CommitListener = (resource: string, cluster: string, changes: readonly Change[]) => void;

export class EventLog {
  private readonly events: Database<LoggedRecord, [string, number]>;
  private readonly eventRVs: Database<boolean, [string, string, number, number]>;
  private readonly logs: Database<LogState | { seq: number } | { format: number; dictionary: string } | { uid: string }, string>;
  /** Log states written in the transaction being built, which LMDB reads do not show yet. */
  private readonly batchLogs = new Map<string, LogState>();
  private readonly listeners = new Map<string, Set<StoreListener>>();
  private readonly everyListeners = new Set<CommitListener>();
  private seq: number;

  /** `size`: events kept per resource (StoreOptions.eventLogSize). */
  constructor(
    dbs: Pick<Databases, 'events' | 'eventRVs' | 'logs'>,
    private readonly size: number,
  ) {
    this.events = dbs.events;
    this.eventRVs = dbs.eventRVs;
    this.logs = dbs.logs;
    this.seq = this.lastSeq();
  }

  /** Hears every committed batch of a resource's changes, in commit order. */
  subscribe(resource: string, listener: StoreListener): () => void {
    let set = this.listeners.get(resource);
    if (!set) this.listeners.set(resource, (set = new Set()));
    set.add(listener);
    return () => set.delete(listener);
  }

  subscribeEvery(listener: CommitListener): () => void {
    this.everyListeners.add(listener);
    return () => this.everyListeners.delete(listener);
  }

  /** The sequence number of the last committed change (read it in the same pass as a snapshot). */
  lastSeq(snapshot?: Snapshot): number {
    return (this.logs.get(SEQ_KEY, { transaction: snapshot }) as { seq: number } | undefined)?.seq ?? 0;
  }

  /** Per cluster, the RV below which the log cannot replay events of a resource. */
  logStart(resource: string): Record<string, string> {
    return ((this.logs.get(resource) as LogState | undefined)?.start ?? {});
  }

  /**
   * Where in a resource's log a watch resuming from `since` (per cluster, the member RV it has)
   * starts: the sequence number just before the first logged event it has not seen, or undefined
   * when it has seen every logged event. Found through the eventRVs index, so a watch resumes
   * without reading the log from its beginning.
   */
  resumeSeq(resource: string, since: Record<string, string>, snapshot?: Snapshot): number | undefined {
    let first: number | undefined;
    for (const [cluster, rv] of Object.entries(since)) {
      const n = numericRV(rv);
      // An RV we cannot order numerically: read the log from its start, as before the index.
      if (n === undefined) return 0;
      for (const key of this.eventRVs.getKeys({ start: [resource, cluster, n + 1], end: [resource, cluster, Number.MAX_SAFE_INTEGER], limit: 1, transaction: snapshot })) {
        if (first === undefined || key[3] < first) first = key[3];
      }
    }
    return first === undefined ? undefined : first - 1;
  }

  /** The logged events of a resource after `afterSeq`, in order. Iterate synchronously, or pass a snapshot. */
  *logged(resource: string, afterSeq: number, snapshot?: Snapshot): Generator<StoreEvent> {
    for (const { key, value } of this.events.getRange({ start: [resource, afterSeq + 1], end: [resource, Number.MAX_SAFE_INTEGER], transaction: snapshot })) {
      // A DELETED's previous meta is for pages read at an earlier RV (loggedAfter); a watch reads a DELETED as it always did.
      const modified = value.t === 'MODIFIED';
      yield { seq: key[1], cluster: value.c, type: value.t, namespace: value.n, name: value.m, rv: value.rv, bytes: value.o, meta: value.x, ...(modified && value.p ? { prevMeta: value.p } : {}), ...(modified && value.q ? { prevBytes: value.q } : {}) };
    }
  }

  /** A write transaction begins: the last one has committed, and LMDB shows the states batchLogs kept. */
  newTransaction(): void {
    this.batchLogs.clear();
  }

  /** A resource's log state as this transaction has it so far (undefined: nothing was ever logged). */
  stateOf(resource: string): LogState | undefined {
    return this.batchLogs.get(resource) ?? (this.logs.get(resource) as LogState | undefined);
  }

  /**
   * Numbers the `count` changes of a commit written in its earlier transactions (the slices of a
   * first list, numbered with the last); returns the number of the commit's first change.
   */
  skip(count: number): number {
    const first = this.seq + 1;
    this.seq += count;
    return first;
  }

  /** The sequence number of the next change, logged or not. */
  next(): number {
    return ++this.seq;
  }

  /**
   * Logs change `seq` of a cluster, and `prev`, the meta record a MODIFIED or DELETED object had
   * (a DELETED's bytes carry the deletion's RV: a page read at an earlier RV gives it back); returns
   * the resource's log state counting it (`state` as stateOf gave it, or as the last append left it).
   */
  append(resource: string, cluster: string, seq: number, c: Change, prev: Buffer | undefined, prevBytes: Buffer | undefined, state: LogState | undefined): LogState {
    this.events.put([resource, seq], { c: cluster, t: c.type, n: c.namespace, m: c.name, rv: c.rv, o: c.bytes, x: c.meta, ...((c.type === 'MODIFIED' || c.type === 'DELETED') && prev ? { p: prev, ...(prevBytes ? { q: prevBytes } : {}) } : {}) });
    const rvNumber = numericRV(c.rv);
    if (rvNumber !== undefined) this.eventRVs.put([resource, cluster, rvNumber, seq], true);
    state ??= { start: {}, count: 0, firstSeq: seq };
    state.count++;
    return state;
  }

  /**
   * Forgets every logged event of one cluster's resource, in the transaction being built: its
   * member's history was rewritten (an etcd restored from a backup, a new cluster under the same
   * name), so those events and their RVs belong to a history no watch may resume through. The
   * caller moves the cluster's log start (seal's `logStartRV`).
   */
  forget(resource: string, cluster: string, state: LogState | undefined): LogState | undefined {
    if (!state) return state;
    let removed = 0;
    for (const { key, value } of this.events.getRange({ start: [resource, state.firstSeq], end: [resource, Number.MAX_SAFE_INTEGER] })) {
      if (value.c !== cluster) continue;
      this.events.remove(key);
      removed++;
      const rvNumber = numericRV(value.rv);
      if (rvNumber !== undefined) this.eventRVs.remove([resource, cluster, rvNumber, key[1]]);
    }
    return { ...state, start: { ...state.start }, count: Math.max(0, state.count - removed) };
  }

  /**
   * Ends a commit's part of the log: moves the cluster's log start to `logStartRV` when given,
   * trims the window, and writes the state and the sequence number.
   */
  seal(resource: string, cluster: string, state: LogState | undefined, logStartRV: string | undefined): void {
    if (logStartRV !== undefined) {
      state ??= { start: {}, count: 0, firstSeq: this.seq + 1 };
      state.start[cluster] = logStartRV;
    }
    if (state && state.count > this.size) this.trim(resource, state);
    if (state) {
      this.logs.put(resource, state);
      this.batchLogs.set(resource, state);
    }
    this.logs.put(SEQ_KEY, { seq: this.seq });
  }

  /** Drops the oldest events past the window; their RVs become the per-cluster log start. */
  private trim(resource: string, log: LogState): void {
    let excess = log.count - this.size;
    // From the log's first sequence number: what an earlier task of this transaction trimmed is
    // still in LMDB's view, and must not be counted twice.
    for (const { key, value } of this.events.getRange({ start: [resource, log.firstSeq], end: [resource, Number.MAX_SAFE_INTEGER] })) {
      if (excess-- <= 0) break;
      this.events.remove(key);
      const rvNumber = numericRV(value.rv);
      if (rvNumber !== undefined) this.eventRVs.remove([resource, value.c, rvNumber, key[1]]);
      log.count--;
      log.firstSeq = key[1] + 1;
      const prior = log.start[value.c];
      if (prior === undefined || compareMemberRV(value.rv, prior) > 0) log.start[value.c] = value.rv;
    }
  }

  /**
   * Tells a resource's listeners of a committed batch of one cluster's changes, numbered from
   * `firstSeq`; `prevMetas[i]` and `prevBytes[i]` are what changes[i] replaced, for MODIFIED. Events are built only
   * when a watch listens: a first sync with nobody watching would allocate an object per change
   * for nothing (GC pauses were most of its long event turns).
   */
  publish(resource: string, cluster: string, changes: readonly Change[], firstSeq: number, prevMetas: readonly (Buffer | undefined)[], prevBytes: readonly (Buffer | undefined)[]): void {
    const listeners = this.listeners.get(resource);
    if (listeners && listeners.size > 0 && changes.length > 0) {
      const events = changes.map((c, i): StoreEvent => {
        const prevMeta = prevMetas[i];
        const before = prevBytes[i];
        if (!prevMeta) return { ...c, seq: firstSeq + i, cluster };
        return before ? { ...c, seq: firstSeq + i, cluster, prevMeta, prevBytes: before } : { ...c, seq: firstSeq + i, cluster, prevMeta };
      });
      for (const l of listeners) l(events);
    }
    if (changes.length > 0) for (const l of this.everyListeners) l(resource, cluster, changes);
  }

  /**
   * The logged events of each cluster of `since` after that cluster's RV, cluster by cluster in
   * RV order: what changed after a list's RV, which a page read at that RV undoes. Found through
   * the eventRVs index; an RV too long to order that way reads the resource's whole log.
   */
  *loggedAfter(resource: string, since: Record<string, string>, snapshot?: Snapshot): Generator<StoreEvent> {
    for (const [cluster, rv] of Object.entries(since)) {
      const n = numericRV(rv);
      if (n === undefined) {
        for (const ev of this.logged(resource, 0, snapshot)) if (ev.cluster === cluster && compareMemberRV(ev.rv, rv) > 0) yield ev;
        continue;
      }
      for (const key of this.eventRVs.getKeys({ start: [resource, cluster, n + 1], end: [resource, cluster, Number.MAX_SAFE_INTEGER], transaction: snapshot })) {
        const value = this.events.get([resource, key[3]], { transaction: snapshot });
        if (!value) continue;
        yield { seq: key[3], cluster: value.c, type: value.t, namespace: value.n, name: value.m, rv: value.rv, bytes: value.o, meta: value.x, ...(value.p ? { prevMeta: value.p } : {}), ...(value.q ? { prevBytes: value.q } : {}) };
      }
    }
  }
}
