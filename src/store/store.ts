import { open, type Database, type RootDatabase } from 'lmdb';
import type { MetaRecord, TableColumn } from '../ingest/decode.js';
import { decodeMeta, type IngestedObject } from '../ingest/batch.js';

/**
 * The embedded cache: one LMDB environment holding, per (resource, namespace, name, cluster), the
 * ready-to-serve JSON bytes and a meta record, plus each (cluster, resource)'s sync state. Objects
 * and the RV they were read at are committed in one transaction, so a restart can resume watching
 * from the stored RV.
 *
 * Keys sort as resource \0 namespace \0 name \0 cluster: a fleet-wide list is one range, a namespace
 * is a sub-range, and a get by name finds every member's copy next to each other.
 */
export interface SyncRecord {
  /** The member RV the stored objects of this (cluster, resource) are complete up to. */
  rv: string;
  columns?: TableColumn[];
  listedAt?: string;
}

export interface StoredEntry {
  cluster: string;
  namespace: string;
  name: string;
  bytes: Buffer;
}

/** What one cacher owns: a resource of one cluster, or one namespace of it. */
export interface CacheScope {
  cluster: string;
  resource: string;
  namespace?: string;
}

export interface ObjectRef {
  namespace: string;
  name: string;
}

const SEP = '\u0000';
const AFTER_SEP = '\u0001';

export function objectKey(resource: string, namespace: string, name: string, cluster: string): string {
  return `${resource}${SEP}${namespace}${SEP}${name}${SEP}${cluster}`;
}

function splitKey(key: string): { namespace: string; name: string; cluster: string } {
  const parts = key.split(SEP);
  return { namespace: parts[1] ?? '', name: parts[2] ?? '', cluster: parts[3] ?? '' };
}

function syncKey(s: CacheScope): string {
  return `${s.resource}${SEP}${s.cluster}${SEP}${s.namespace ?? ''}`;
}

export class Store {
  private readonly objects: Database<Buffer, string>;
  // Meta records arrive msgpack-encoded from the ingest workers and are stored as those bytes.
  private readonly meta: Database<Buffer, string>;
  private readonly sync: Database<SyncRecord, string>;

  private constructor(private readonly root: RootDatabase) {
    this.objects = root.openDB<Buffer, string>({ name: 'objects', encoding: 'binary' });
    this.meta = root.openDB<Buffer, string>({ name: 'meta', encoding: 'binary' });
    this.sync = root.openDB<SyncRecord, string>({ name: 'sync' });
  }

  static open(path: string): Store {
    // One environment, several named databases; noSync trades the last few commits on power loss
    // for write speed: a lost commit only means a re-watch from a slightly older RV.
    return new Store(open({ path, maxDbs: 16, noSync: true, mapSize: 64 * 1024 ** 3 }));
  }

  /** Applies a batch of changes from one (cluster, resource) and its new sync state atomically. */
  async commit(scope: CacheScope, puts: readonly IngestedObject[], deletes: readonly ObjectRef[], sync: SyncRecord): Promise<void> {
    const { cluster, resource } = scope;
    await this.root.transaction(() => {
      for (const o of puts) {
        const key = objectKey(resource, o.namespace, o.name, cluster);
        this.objects.put(key, o.bytes);
        this.meta.put(key, o.meta);
      }
      for (const d of deletes) {
        const key = objectKey(resource, d.namespace, d.name, cluster);
        this.objects.remove(key);
        this.meta.remove(key);
      }
      this.sync.put(syncKey(scope), sync);
    });
  }

  /** The refs of every object stored for one (cluster, resource): what a relist reconciles against. */
  refsOf(scope: CacheScope): ObjectRef[] {
    const refs: ObjectRef[] = [];
    const prefix = scope.namespace !== undefined ? `${scope.resource}${SEP}${scope.namespace}${SEP}` : `${scope.resource}${SEP}`;
    for (const key of this.objects.getKeys({ start: prefix, end: prefix.slice(0, -1) + AFTER_SEP })) {
      const k = splitKey(key);
      if (k.cluster === scope.cluster) refs.push({ namespace: k.namespace, name: k.name });
    }
    return refs;
  }

  /** Forgets a scope entirely: its objects and its sync record (a cluster or rule was removed). */
  async dropScope(scope: CacheScope): Promise<void> {
    const refs = this.refsOf(scope);
    await this.root.transaction(() => {
      for (const r of refs) {
        const key = objectKey(scope.resource, r.namespace, r.name, scope.cluster);
        this.objects.remove(key);
        this.meta.remove(key);
      }
      this.sync.remove(syncKey(scope));
    });
  }

  syncState(scope: CacheScope): SyncRecord | undefined {
    return this.sync.get(syncKey(scope));
  }

  /** Every sync record of a resource: the RVs a list of it is as fresh as, and the Table columns. */
  syncStates(resource: string): { cluster: string; namespace: string; sync: SyncRecord }[] {
    const out: { cluster: string; namespace: string; sync: SyncRecord }[] = [];
    for (const { key, value } of this.sync.getRange({ start: `${resource}${SEP}`, end: `${resource}${AFTER_SEP}` })) {
      const parts = key.split(SEP);
      out.push({ cluster: parts[1] ?? '', namespace: parts[2] ?? '', sync: value });
    }
    return out;
  }

  /**
   * Every stored object of a resource, optionally within one namespace, optionally of one cluster,
   * in key order. Iterate synchronously: lmdb-js reads in one tick share one snapshot.
   */
  *entries(resource: string, opts: { namespace?: string; cluster?: string } = {}): Generator<StoredEntry> {
    const prefix = opts.namespace !== undefined ? `${resource}${SEP}${opts.namespace}${SEP}` : `${resource}${SEP}`;
    const end = prefix.slice(0, -1) + AFTER_SEP;
    for (const { key, value } of this.objects.getRange({ start: prefix, end })) {
      const k = splitKey(key);
      if (opts.cluster !== undefined && k.cluster !== opts.cluster) continue;
      yield { ...k, bytes: value };
    }
  }

  /** Every member's copy of namespace/name. */
  lookup(resource: string, namespace: string, name: string, cluster?: string): StoredEntry[] {
    return [...this.entriesNamed(resource, namespace, name)].filter((e) => cluster === undefined || e.cluster === cluster);
  }

  private *entriesNamed(resource: string, namespace: string, name: string): Generator<StoredEntry> {
    const prefix = `${resource}${SEP}${namespace}${SEP}${name}${SEP}`;
    for (const { key, value } of this.objects.getRange({ start: prefix, end: prefix.slice(0, -1) + AFTER_SEP })) {
      yield { ...splitKey(key), bytes: value };
    }
  }

  metaOf(resource: string, e: { namespace: string; name: string; cluster: string }): MetaRecord | undefined {
    const bytes = this.meta.get(objectKey(resource, e.namespace, e.name, e.cluster));
    return bytes ? decodeMeta(bytes) : undefined;
  }

  async close(): Promise<void> {
    await this.root.close();
  }
}
