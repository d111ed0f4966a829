import { gvrKey } from '../api/resource-info.js';
import { encodeGlobalRV } from '../api/global-rv.js';
import type { MetaRecord } from '../store/meta-record.js';
import { decodeMeta } from '../store/meta-record.js';
import type { Change, Store, StoredEntry } from '../store/store.js';
import type { ReadView } from '../view/read-view.js';
import { ownerTerms, type ResourceWatchers, type ViewGroup } from './resource-watchers.js';
import { lineKeyOf } from './watch-encoding.js';
import type { OwnerArrival, Watcher } from './watcher.js';

/**
 * Revises what running watches show when what decides their views changes: a member's RBAC (the
 * view itself is decided again), the namespace tree (objects are shown otherwise though stored
 * alike), an owner cached after what it owns (owner terms reach objects they did not). The client
 * hears the difference as events, as it would have seen had it started now.
 */


/** An object a revised view shows and the previous one did not (ADDED), or the other way (DELETED). */
interface ViewChange {
  type: 'ADDED' | 'DELETED';
  entry: StoredEntry;
  meta: () => MetaRecord | undefined;
}

export class ViewReviser {
  constructor(
    private readonly store: Store,
    /** The hub's watchers by resource, regrouped here when a view changes. */
    private readonly watchers: ReadonlyMap<string, ResourceWatchers>,
  ) {}

  /**
   * Decides the views of `targets` again and tells each client what its view gained (ADDED, the
   * object as it is) and lost (DELETED, as it is), at the current mark. Watchers whose views
   * change alike (the same caller, the same request) share one pass over the store; a watcher
   * still catching up is revised once live.
   */
  revise(targets: Iterable<Watcher>): void {
    const changes = new Map<string, ViewChange[]>();
    const encoded = new Map<string, Buffer[]>();
    for (const w of targets) {
      if (w.closed || !w.opts.revise) continue;
      if (w.pending) {
        w.revisePending = true;
        continue;
      }
      w.revisePending = false;
      const key = gvrKey(w.opts.resource.info);
      const set = this.watchers.get(key);
      const prev = w.opts.view;
      const next = w.opts.revise(prev);
      if (next.key === prev.key || !set) continue;
      set.delete(w);
      w.opts = { ...w.opts, view: next };
      w.lineKey = lineKeyOf(w.opts);
      set.add(w);
      const pair = `${key}\n${prev.key}\n${next.key}`;
      let changed = changes.get(pair);
      if (!changed) changes.set(pair, (changed = this.viewChanges(key, prev, next)));
      enqueueShared(w, encoded, `${pair}\n${w.lineKey}`, () => {
        const latest = w.clusterRVs();
        return changed.map((c) => {
          // As an initial event: the object's own RV for its cluster, the others' current.
          const own = c.type === 'ADDED' ? c.meta()?.rv : undefined;
          const mark = encodeGlobalRV(own ? { ...latest, [c.entry.cluster]: own } : latest);
          return w.encodeEvent(c.type, c.entry.cluster, c.entry.name, c.entry.bytes, c.meta, mark);
        });
      });
    }
  }

  /**
   * Tells the watchers of a resource that objects changed as they are shown though not as stored
   * (a namespace's tree labels, when a parent moved): a MODIFIED with the object as it is shown
   * now, at the current mark, to each watcher whose view shows it. A watcher still catching up
   * hears it once live (announcePendingTo; the event log has nothing of it to replay).
   */
  announce(resource: string, byCluster: ReadonlyMap<string, readonly string[]>): void {
    const set = this.watchers.get(resource);
    if (!set || byCluster.size === 0) return;
    const entries = this.announced(resource, byCluster);
    const encoded = new Map<string, Buffer[]>();
    for (const w of set) {
      if (w.closed) continue;
      if (w.pending) {
        for (const [cluster, names] of byCluster) {
          let held = (w.announcePending ??= new Map()).get(cluster);
          if (!held) w.announcePending.set(cluster, (held = new Set<string>()));
          for (const n of names) held.add(n);
        }
        continue;
      }
      this.announceTo(w, resource, entries, encoded);
    }
  }

  /** What was announced while `w` caught up, now that it is live. */
  announcePendingTo(w: Watcher): void {
    if (!w.announcePending) return;
    const resource = gvrKey(w.opts.resource.info);
    const held = this.announced(resource, w.announcePending);
    w.announcePending = undefined;
    this.announceTo(w, resource, held);
  }

  /** The stored objects (cluster-scoped) that `byCluster` names, as they are now. */
  private announced(resource: string, byCluster: ReadonlyMap<string, Iterable<string>>): StoredEntry[] {
    const out: StoredEntry[] = [];
    for (const [cluster, names] of byCluster) {
      for (const name of names) {
        const entry = this.store.lookup(resource, '', name, cluster).find((e) => e.cluster === cluster);
        if (entry) out.push(entry);
      }
    }
    return out;
  }

  private announceTo(w: Watcher, resource: string, entries: readonly StoredEntry[], encoded = new Map<string, Buffer[]>()): void {
    const { view } = w.opts;
    // Equal views (key) sharing lines (line key) get the same lines.
    enqueueShared(w, encoded, `${w.lineKey}\n${view.key}`, () => {
      const mark = w.currentMark();
      const lines: Buffer[] = [];
      for (const entry of entries) {
        let meta: MetaRecord | undefined;
        const metaOf = () => (meta ??= this.store.metaOf(resource, entry));
        if (!view.showsCluster(entry.cluster) || !view.admits(entry, () => (view.needsMeta ? metaOf() : undefined))) continue;
        lines.push(w.encodeEvent('MODIFIED', entry.cluster, entry.name, entry.bytes, metaOf, mark));
      }
      return lines;
    });
  }

  /**
   * Objects committed before their owner (a pod cached before its ReplicaSet) came when no chain
   * of owners reached an owner term's owner, and need not change again: when owners are committed
   * (`changes` of `resource` in `cluster`), each watch with owner terms is sent, as ADDED, the objects those
   * owners own that its view now shows and did not without them. One that is catching up hears
   * it once live (admitPendingTo).
   */
  admitDependents(resource: string, cluster: string, changes: readonly Change[]): void {
    let any = false;
    for (const set of this.watchers.values()) any ||= set.owned.size > 0;
    if (!any || !changes.some((c) => c.type === 'ADDED')) return;
    const groups = [...this.watchers].flatMap(([key, set]) => [...set.owned].map((g) => ({ key, g })));
    // The resource's objects own nothing cached: no arrival of it can bring anything.
    const kind = ownerTerms(groups[0]!.g.view)[0]?.ownerKindOf(resource);
    if (kind === undefined) return;
    const arrivals: OwnerArrival[] = [];
    for (const c of changes) {
      const uid = c.type === 'ADDED' ? decodeMeta(c.meta).uid : undefined;
      if (uid) arrivals.push({ cluster, owner: `${kind}/${uid}` });
    }
    if (arrivals.length === 0) return;
    for (const { key, g } of groups) {
      for (const w of g.watchers) {
        if (w.closed) continue;
        if (w.pending) (w.arrivalsPending ??= []).push(...arrivals);
      }
      const live = [...g.watchers].filter((w) => !w.closed && !w.pending);
      if (live.length > 0) this.admitTo(live, key, g, arrivals);
    }
  }

  /** What arrived while `w` caught up, now that it is live. */
  admitPendingTo(w: Watcher): void {
    const arrivals = w.arrivalsPending;
    w.arrivalsPending = undefined;
    if (!arrivals) return;
    const key = gvrKey(w.opts.resource.info);
    this.admitTo([w], key, { view: w.opts.view, watchers: new Set([w]) }, arrivals);
  }

  private admitTo(watchers: readonly Watcher[], key: string, g: ViewGroup, arrivals: readonly OwnerArrival[]): void {
    const { view } = g;
    const terms = ownerTerms(view);
    const admitted: ViewChange[] = [];
    const seen = new Set<string>();
    for (const { cluster, owner } of arrivals) {
      if (!view.showsCluster(cluster)) continue;
      for (const term of terms) {
        for (const k of term.dependentsOf(key, cluster, owner)) {
          const entry = seen.has(k) ? undefined : this.store.entryAt(k);
          seen.add(k);
          if (!entry) continue;
          let meta: MetaRecord | undefined;
          const metaOf = () => (meta ??= this.store.metaOf(key, entry));
          if (!view.admits(entry, metaOf)) continue;
          // Admitted without this owner: the watch has had it all along.
          if (terms.every((t) => t.admitsWithout(entry, metaOf, owner))) continue;
          admitted.push({ type: 'ADDED', entry, meta: metaOf });
        }
      }
    }
    if (admitted.length === 0) return;
    const encoded = new Map<string, Buffer[]>();
    for (const w of watchers) {
      enqueueShared(w, encoded, `${w.lineKey}\n${view.key}\narrived`, () => {
        const latest = w.clusterRVs();
        return admitted.map((c) => {
          const own = c.meta()?.rv;
          const mark = encodeGlobalRV(own ? { ...latest, [c.entry.cluster]: own } : latest);
          return w.encodeEvent('ADDED', c.entry.cluster, c.entry.name, c.entry.bytes, c.meta, mark);
        });
      });
    }
  }

  /** What `next` shows of a resource's stored objects that `prev` did not, and the other way round. */
  private viewChanges(key: string, prev: ReadView, next: ReadView): ViewChange[] {
    const out: ViewChange[] = [];
    const clusters = [...new Set([...prev.clusters, ...next.clusters])];
    const namespaces = prev.namespaces === undefined || next.namespaces === undefined
      ? [undefined]
      : [...new Set([...prev.namespaces, ...next.namespaces])].sort();
    const needsMeta = prev.needsMeta || next.needsMeta;
    for (const cluster of clusters) {
      for (const namespace of namespaces) {
        for (const entry of this.store.entries(key, { ...(namespace !== undefined ? { namespace } : {}), cluster })) {
          if (entry.cluster !== cluster) continue;
          let meta: MetaRecord | undefined;
          const metaOf = () => (meta ??= this.store.metaOf(key, entry));
          const was = prev.admits(entry, () => (needsMeta ? metaOf() : undefined));
          const now = next.admits(entry, () => (needsMeta ? metaOf() : undefined));
          if (was !== now) out.push({ type: now ? 'ADDED' : 'DELETED', entry, meta: metaOf });
        }
      }
    }
    return out;
  }
}

/**
 * Enqueues lines made once for every watcher of one pass whose `shareKey` is equal (a Table's
 * first line carries its column definitions, so Table lines are each watcher's own).
 */
function enqueueShared(w: Watcher, encoded: Map<string, Buffer[]>, shareKey: string, make: () => Buffer[]): void {
  const shared = w.opts.form !== 'table';
  let lines = shared ? encoded.get(shareKey) : undefined;
  if (!lines) {
    lines = make();
    if (shared) encoded.set(shareKey, lines);
  }
  for (const line of lines) w.enqueue(line);
}
