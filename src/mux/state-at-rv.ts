import { compareMemberRV, encodeGlobalRV } from '../api/global-rv.js';
import { withResourceVersion } from '../api/fleet-object/index.js';
import { decodeMeta, type MetaRecord } from '../store/meta-record.js';
import { KEY_SEP, objectKey, type Snapshot, type Store, type StoredEntry, type StoreEvent } from '../store/store.js';

/**
 * A list's state at an earlier global RV, read from the current store and its event log (MVCC):
 * what a page of a paged list serves when the read snapshot its first page took is not here (the
 * token came from another replica, or the snapshot was let go). The current objects are the state
 * at the RV except the keys changed after it; for each of those the log's first change after the
 * RV says what the key held then: a MODIFIED its previous bytes and meta record, a DELETED its
 * last state (at the RV it had), an ADDED nothing. It holds only while the log reaches back to the RV for every
 * cluster (and the store has reached the RV: the caller waits for that first).
 */

/** What a key held at the RV: its bytes and meta record, or null where it did not exist. */
interface PastObject {
  bytes: Buffer;
  meta: Buffer;
}

export class StateAtRV {
  private constructor(
    /** Every key changed after the RV (from the start key on), with what it held at the RV. */
    private readonly changed: ReadonlyMap<string, PastObject | null>,
    /** The keys that existed at the RV among them, as entries in key order. */
    private readonly existed: readonly StoredEntry[],
  ) {}

  /**
   * The state at `rvs` (each cluster's member RV) of one resource, from `startKey` on, read from
   * `snapshot`; undefined when the log does not reach back to the RV for some cluster (trimmed,
   * or its first list came after it): that state is gone, as etcd's after a compaction.
   */
  static read(store: Store, resource: string, rvs: Record<string, string>, startKey: string | undefined, snapshot: Snapshot): StateAtRV | undefined {
    const logStart = store.logStart(resource);
    for (const [cluster, rv] of Object.entries(rvs)) {
      const first = logStart[cluster];
      if (first !== undefined && compareMemberRV(rv, first) < 0) return undefined;
    }
    const changed = new Map<string, PastObject | null>();
    for (const ev of store.loggedAfter(resource, rvs, snapshot)) {
      const key = objectKey(resource, ev.namespace, ev.name, ev.cluster);
      // Keys before the continue point were served by earlier pages; the first change after the RV decides.
      if ((startKey !== undefined && key < startKey) || changed.has(key)) continue;
      // Copied: a logged record's buffers are views of the read buffer the next read reuses.
      if (ev.type === 'DELETED') changed.set(key, lastState(ev));
      // A MODIFIED without a previous state changed an object the store did not hold.
      else if (ev.type === 'MODIFIED' && ev.prevMeta && ev.prevBytes) changed.set(key, { bytes: Buffer.from(ev.prevBytes), meta: Buffer.from(ev.prevMeta) });
      else changed.set(key, null);
    }
    const existed: StoredEntry[] = [];
    for (const [key, past] of changed) if (past) existed.push(entryAt(key, past.bytes));
    existed.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    return new StateAtRV(changed, existed);
  }

  /**
   * `current` (the store's entries in key order, from the start key on) as they were at the RV:
   * keys changed since left out, and what those held at the RV merged in, in key order. Which of
   * them a view shows is still the view's to decide, on `metaOf`.
   */
  *entries(current: Iterable<StoredEntry>): Generator<StoredEntry> {
    const { existed, changed } = this;
    let i = 0;
    for (const e of current) {
      while (i < existed.length && existed[i]!.key < e.key) yield existed[i++]!;
      if (!changed.has(e.key)) yield e;
    }
    while (i < existed.length) yield existed[i++]!;
  }

  /** The meta record of an entry `entries` gave: the one it had at the RV, else as stored. */
  metaOf(store: Store, resource: string, e: StoredEntry, snapshot: Snapshot): MetaRecord | undefined {
    const past = this.changed.get(e.key);
    return past ? decodeMeta(past.meta) : store.metaOf(resource, e, snapshot);
  }

  /**
   * How many of the keys from `startKey` on that `inRange` holds the count of the current store
   * is off by: plus those that existed at the RV, minus those that exist now.
   */
  countCorrection(store: Store, resource: string, startKey: string, inRange: (e: StoredEntry) => boolean, snapshot: Snapshot): number {
    let n = 0;
    for (const [key, past] of this.changed) {
      if (key < startKey) continue;
      const e = entryAt(key, EMPTY);
      if (!inRange(e)) continue;
      if (past) n++;
      if (store.metaOf(resource, e, snapshot)) n--;
    }
    return n;
  }
}

/**
 * A deleted object as it was before: the member's DELETED carries its last state at the
 * deletion's RV, the meta record logged with it says the RV it had (a reconcile's DELETED is
 * already as stored).
 */
function lastState(ev: StoreEvent): PastObject {
  if (!ev.prevMeta) return { bytes: Buffer.from(ev.bytes), meta: Buffer.from(ev.meta) };
  const rv = decodeMeta(ev.prevMeta).rv;
  return { bytes: Buffer.from(rv ? withResourceVersion(ev.bytes, encodeGlobalRV({ [ev.cluster]: rv })) : ev.bytes), meta: Buffer.from(ev.prevMeta) };
}

const EMPTY = Buffer.alloc(0);

/** An entry named by its objects key (resource · namespace · name · cluster). */
function entryAt(key: string, bytes: Buffer): StoredEntry {
  const a = key.indexOf(KEY_SEP);
  const b = key.indexOf(KEY_SEP, a + 1);
  const c = key.indexOf(KEY_SEP, b + 1);
  return { namespace: key.slice(a + 1, b), name: key.slice(b + 1, c), cluster: key.slice(c + 1), bytes, key };
}
