import type { Database } from 'lmdb';
import { compareMemberRV } from '../api/global-rv.js';
import type { ResourceInfo } from '../api/resource-info.js';
import type { Databases } from './environment.js';
import { AFTER_SEP, KEY_SEP as SEP, syncKey } from './keys.js';
import type { CacheScope, Snapshot, SyncRecord } from './types.js';

/**
 * How far the stored objects go: each scope's sync record (the member RV its objects are complete
 * up to, its Table columns) and each resource's discovery answer, so a restart resumes watching
 * and serves without asking the members first. Reads wait here for the store to reach an RV. The
 * commit writes a scope's record in its transaction (write) and reports it after (committed).
 */

/** Per cluster, the oldest non-empty RV of its scopes (a scope in the middle of a list has none). */
function oldestPerCluster(scopes: Iterable<{ cluster: string; rv: string }>): Record<string, string> {
  const rvs: Record<string, string> = {};
  for (const { cluster, rv } of scopes) {
    if (!rv) continue;
    const prior = rvs[cluster];
    if (prior === undefined || compareMemberRV(rv, prior) < 0) rvs[cluster] = rv;
  }
  return rvs;
}

export class SyncState {
  private readonly sync: Database<SyncRecord, string>;
  private readonly resourceInfos: Database<ResourceInfo, string>;
  /** Woken after every commit of a resource, with changes or only a newer RV (waitFor). */
  private readonly progress = new Map<string, Set<() => void>>();
  private readonly latest = new Map<string, Record<string, string>>();
  /**
   * Per resource, each scope's committed sync RV, by sync key: what `latest` is computed from.
   * Read from LMDB once, then kept by commit. Reading the sync records after every commit
   * decoded each scope's Table columns: ~1 ms per commit of a resource in 100 clusters, paid by
   * every batch of watch events a watcher listened to.
   */
  private readonly scopeRVs = new Map<string, Map<string, { cluster: string; rv: string }>>();

  constructor(dbs: Pick<Databases, 'sync' | 'resourceInfos'>) {
    this.sync = dbs.sync;
    this.resourceInfos = dbs.resourceInfos;
  }

  /** The discovery answer last saved for a resource (by gvrKey). */
  resourceInfo(resource: string): ResourceInfo | undefined {
    return this.resourceInfos.get(resource);
  }

  /** Saves a resource's discovery answer; call it in a write transaction. */
  putResourceInfo(resource: string, info: ResourceInfo): void {
    void this.resourceInfos.put(resource, info);
  }

  syncState(scope: CacheScope): SyncRecord | undefined {
    return this.sync.get(syncKey(scope));
  }

  /** Every sync record of a resource: the RVs a list of it is as fresh as, and the Table columns. */
  syncStates(resource: string, snapshot?: Snapshot): { cluster: string; namespace: string; sync: SyncRecord }[] {
    const out: { cluster: string; namespace: string; sync: SyncRecord }[] = [];
    for (const { key, value } of this.sync.getRange({ start: `${resource}${SEP}`, end: `${resource}${AFTER_SEP}`, transaction: snapshot })) {
      const parts = key.split(SEP);
      out.push({ cluster: parts[1] ?? '', namespace: parts[2] ?? '', sync: value });
    }
    return out;
  }

  /**
   * Each cluster's RV the stored objects of a resource are complete up to (the oldest of its
   * scopes; a scope in the middle of a list has none). Cached between commits; computed afresh
   * when read from a snapshot.
   */
  latestRVs(resource: string, snapshot?: Snapshot): Record<string, string> {
    if (snapshot) return oldestPerCluster(this.syncStates(resource, snapshot).map((s) => ({ cluster: s.cluster, rv: s.sync.rv })));
    const cached = this.latest.get(resource);
    if (cached) return cached;
    let scopes = this.scopeRVs.get(resource);
    if (!scopes) {
      scopes = new Map();
      for (const s of this.syncStates(resource)) scopes.set(syncKey({ resource, cluster: s.cluster, namespace: s.namespace }), { cluster: s.cluster, rv: s.sync.rv });
      this.scopeRVs.set(resource, scopes);
    }
    const rvs = oldestPerCluster(scopes.values());
    this.latest.set(resource, rvs);
    return rvs;
  }

  /**
   * Resolves once the stored state of `resource` has reached each cluster's RV in `rvs` (true), or
   * when `timeoutMs` passes first (false). Woken by commits, not by polling.
   */
  waitFor(resource: string, rvs: Record<string, string>, timeoutMs: number): Promise<boolean> {
    return this.waitUntil(resource, () => {
      const latest = this.latestRVs(resource);
      return Object.entries(rvs).every(([c, rv]) => latest[c] !== undefined && compareMemberRV(latest[c]!, rv) >= 0);
    }, timeoutMs);
  }

  /** Resolves once `reached()` holds (true), checked after each commit of `resource`, or at `timeoutMs` (false). */
  waitUntil(resource: string, reached: () => boolean, timeoutMs: number): Promise<boolean> {
    if (reached()) return Promise.resolve(true);
    return new Promise((resolve) => {
      const done = (ok: boolean) => {
        clearTimeout(timer);
        unsubscribe();
        resolve(ok);
      };
      const timer = setTimeout(() => done(false), timeoutMs);
      const check = () => {
        if (reached()) done(true);
      };
      let set = this.progress.get(resource);
      if (!set) this.progress.set(resource, (set = new Set()));
      set.add(check);
      const unsubscribe = () => {
        set.delete(check);
        if (set.size === 0) this.progress.delete(resource);
      };
    });
  }

  /** Writes a scope's sync record, or removes it (`drop`: the scope was dropped), in a write transaction. */
  write(scope: CacheScope, sync: SyncRecord, drop: boolean): void {
    if (drop) this.sync.remove(syncKey(scope));
    else this.sync.put(syncKey(scope), sync);
  }

  /** After the transaction that wrote it has committed: what `write` wrote becomes the scope's latest RV. */
  committed(scope: CacheScope, sync: SyncRecord, drop: boolean): void {
    const scopes = this.scopeRVs.get(scope.resource);
    if (drop) scopes?.delete(syncKey(scope));
    else scopes?.set(syncKey(scope), { cluster: scope.cluster, rv: sync.rv });
    this.latest.delete(scope.resource);
  }

  /** Wakes what waits on a resource's progress (waitFor), after each of its commits. */
  wake(resource: string): void {
    const waiting = this.progress.get(resource);
    if (waiting) for (const w of [...waiting]) w();
  }
}
