import type { Database } from 'lmdb';
import type { Databases } from './environment.js';
import { AFTER_SEP, KEY_SEP as SEP, PRESENT, objectKey, ownKey } from './keys.js';
import { decodeMeta, type MetaRecord } from './meta-record.js';
import type { CacheScope, Change, ObjectRef, Snapshot, StoredEntry } from './types.js';

/**
 * The stored objects: per (resource, namespace, name, cluster) the bytes served and the meta
 * record (objects, meta), and the per-cluster index (byCluster) that makes what one cacher owns
 * one range. Lists, gets and reconciles read here, and these reads are the hot paths of serving:
 * keep their loops free of per-object allocations beyond the entry they yield. The commit writes
 * each change through `write` in its transaction.
 */

/** An objects key's parts, for a range's start (a split makes an array: not for loops over objects). */
function splitKey(key: string): { namespace: string; name: string; cluster: string } {
  const parts = key.split(SEP);
  return { namespace: parts[1] ?? '', name: parts[2] ?? '', cluster: parts[3] ?? '' };
}

/**
 * A stored object as its key names it. The hot loop of every list: one object literal of a fixed
 * shape from three indexOf, where a split and a spread made an array, a temporary object and a
 * dictionary copy per object (a fleet list of 100k pods spent about half its main-thread time in
 * the store's range loop).
 */
/**
 * A key range of one resource: one cluster's or all, one namespace's or all, and `prefix`, what
 * the next key part starts with (a namespace's, or within `namespace` a name's): a tenant's
 * namespaces `acme-…` are one range.
 */
export interface RangeOptions {
  namespace?: string;
  cluster?: string;
  prefix?: string;
}

/** Ends the range of every key starting with `prefix`: its last character, one higher. */
function rangeEnd(prefix: string): string {
  return prefix.slice(0, -1) + String.fromCharCode(prefix.charCodeAt(prefix.length - 1) + 1);
}

function entryOf(key: string, bytes: Buffer): StoredEntry {
  const a = key.indexOf(SEP);
  const b = key.indexOf(SEP, a + 1);
  const c = key.indexOf(SEP, b + 1);
  return { namespace: key.slice(a + 1, b), name: key.slice(b + 1, c), cluster: key.slice(c + 1), bytes, key };
}

export class Objects {
  private readonly objects: Database<Buffer, string>;
  private readonly objectsInSlabs: Database<Buffer, string>;
  private readonly objectsAsStored: Database<Buffer, string>;
  private readonly meta: Database<Buffer, string>;
  private readonly byCluster: Database<Buffer, string>;
  /**
   * Meta records written in the transaction being built, by object key (null: deleted), which
   * LMDB reads do not show yet: what an object held before a change (its index entries, a
   * watch's transitions) may be an earlier change of the same batch.
   */
  private readonly batchMetas = new Map<string, Buffer | null>();
  /** The same for the objects' bytes, kept only for MODIFIED changes' previous states. */
  private readonly batchBytes = new Map<string, Buffer>();
  /**
   * The bytes the object written last had before a MODIFIED change (undefined otherwise): a
   * watch whose view the object leaves gets DELETED with that state, as the apiserver sends it.
   */
  prevBytes: Buffer | undefined;

  constructor(dbs: Pick<Databases, 'objects' | 'objectsInSlabs' | 'objectsAsStored' | 'meta' | 'byCluster'>) {
    this.objects = dbs.objects;
    this.objectsInSlabs = dbs.objectsInSlabs;
    this.objectsAsStored = dbs.objectsAsStored;
    this.meta = dbs.meta;
    this.byCluster = dbs.byCluster;
  }

  /** A write transaction begins: the last one has committed, and LMDB shows the records batchMetas kept. */
  newTransaction(): void {
    this.batchMetas.clear();
    this.batchBytes.clear();
  }

  /**
   * Writes one change of a cluster's object at `key` (its objectKey) in a write transaction;
   * returns the meta record the object had (undefined for a fresh one, CommitOptions.fresh).
   * Read once: the label index's diff and a MODIFIED event's transitions both need it.
   */
  write(resource: string, cluster: string, key: string, c: Change, fresh: boolean): Buffer | undefined {
    const own = ownKey(resource, cluster, c.namespace, c.name);
    const batched = fresh ? undefined : this.batchMetas.get(key);
    const prev = fresh ? undefined : batched !== undefined ? (batched ?? undefined) : this.meta.get(key);
    if (!fresh) this.batchMetas.set(key, c.type === 'DELETED' ? null : c.meta);
    this.prevBytes = undefined;
    if (c.type === 'MODIFIED' && prev !== undefined) {
      this.prevBytes = this.batchBytes.get(key) ?? this.objects.get(key);
      this.batchBytes.set(key, c.bytes);
    } else if (!fresh) this.batchBytes.delete(key);
    if (c.type === 'DELETED') {
      this.objects.remove(key);
      this.meta.remove(key);
      this.byCluster.remove(own);
    } else {
      if (c.stored) this.objectsAsStored.put(key, c.stored);
      else this.objects.put(key, c.bytes);
      this.meta.put(key, c.meta);
      this.byCluster.put(own, PRESENT);
    }
    return prev;
  }

  /** One stored object by its key (a label index hit). */
  entryAt(key: string, snapshot?: Snapshot): StoredEntry | undefined {
    const bytes = this.objects.get(key, { transaction: snapshot });
    return bytes ? entryOf(key, bytes) : undefined;
  }

  /** The refs of every object stored for one scope: what a relist reconciles against. */
  refsOf(scope: CacheScope): ObjectRef[] {
    return this.refsPage(scope, undefined, Number.MAX_SAFE_INTEGER);
  }

  /**
   * The same, a page at a time with an event turn between pages: a scope of 100k objects read
   * in one go holds the event loop for hundreds of milliseconds.
   */
  async *refsOfPaged(scope: CacheScope, pageSize: number): AsyncGenerator<ObjectRef[]> {
    let after: ObjectRef | undefined;
    for (;;) {
      const page = this.refsPage(scope, after, pageSize);
      if (page.length === 0) return;
      yield page;
      after = page[page.length - 1]!;
      await new Promise((resolve) => setImmediate(resolve));
    }
  }

  private refsPage(scope: CacheScope, after: ObjectRef | undefined, limit: number): ObjectRef[] {
    const prefix = this.scopePrefix(scope);
    // Resume at the last key read (ordered-binary has no key "just after" a string to start from).
    const start = after === undefined ? prefix : ownKey(scope.resource, scope.cluster, after.namespace, after.name);
    const refs: ObjectRef[] = [];
    for (const key of this.byCluster.getKeys({ start, end: prefix.slice(0, -1) + AFTER_SEP, limit: after === undefined ? limit : limit + 1 })) {
      if (after !== undefined && key === start) continue;
      const parts = key.split(SEP);
      refs.push({ namespace: parts[2] ?? '', name: parts[3] ?? '' });
      if (refs.length === limit) break;
    }
    return refs;
  }

  /** How many objects one scope holds. */
  countOf(scope: CacheScope): number {
    const prefix = this.scopePrefix(scope);
    return this.byCluster.getCount({ start: prefix, end: prefix.slice(0, -1) + AFTER_SEP });
  }

  private scopePrefix(scope: CacheScope): string {
    return scope.namespace !== undefined
      ? `${scope.resource}${SEP}${scope.cluster}${SEP}${scope.namespace}${SEP}`
      : `${scope.resource}${SEP}${scope.cluster}${SEP}`;
  }

  /** Every object a scope holds as a DELETED change at `rv` carrying its last state (a dropped scope). */
  deletions(scope: CacheScope, rv: string): Change[] {
    const changes: Change[] = [];
    for (const r of this.refsOf(scope)) {
      const key = objectKey(scope.resource, r.namespace, r.name, scope.cluster);
      const bytes = this.objects.get(key);
      const meta = this.meta.get(key);
      if (bytes && meta) changes.push({ type: 'DELETED', namespace: r.namespace, name: r.name, rv, bytes, meta });
    }
    return changes;
  }

  /** The stored bytes and meta of an object (a reconcile's DELETED event carries its last state). */
  stored(scope: CacheScope, ref: ObjectRef): { bytes: Buffer; meta: Buffer } | undefined {
    const key = objectKey(scope.resource, ref.namespace, ref.name, scope.cluster);
    const bytes = this.objects.get(key);
    const meta = this.meta.get(key);
    return bytes && meta ? { bytes, meta } : undefined;
  }

  /**
   * Every stored object of a resource, optionally within one namespace, optionally of one cluster,
   * in key order, from `startKey` on. Iterate synchronously (lmdb-js reads in one tick share one
   * snapshot), or pass a snapshot. Without a cluster, the bytes are views of shared slabs: use
   * them, copy them, but do not keep them.
   */
  *entries(resource: string, opts: RangeOptions & { startKey?: string; snapshot?: Snapshot }): Generator<StoredEntry> {
    if (opts.cluster !== undefined) {
      yield* this.clusterEntries(resource, opts.cluster, opts);
      return;
    }
    for (const { key, value } of this.objectsInSlabs.getRange({ ...this.objectRange(resource, opts), transaction: opts.snapshot })) {
      yield entryOf(key, value);
    }
  }

  /**
   * One cluster's objects through its own index (same order: namespace, name), so a
   * `/clusters/<name>/` list of one member of a hundred reads that member's bytes only.
   */
  private *clusterEntries(resource: string, cluster: string, opts: RangeOptions & { startKey?: string; snapshot?: Snapshot }): Generator<StoredEntry> {
    const range = this.clusterRange(resource, cluster, opts);
    // Namespace and name after the `resource · cluster ·` prefix, sliced (a split makes an array per object).
    const from = resource.length + cluster.length + 2 * SEP.length;
    for (const own of this.byCluster.getKeys({ ...range, transaction: opts.snapshot })) {
      const at = own.indexOf(SEP, from);
      const namespace = own.slice(from, at);
      const name = own.slice(at + SEP.length);
      const key = objectKey(resource, namespace, name, cluster);
      const bytes = this.objects.get(key, { transaction: opts.snapshot });
      if (bytes) yield { namespace, name, cluster, bytes, key };
    }
  }

  /** The objects' keys of a resource (or one namespace, or names with a prefix), from `startKey` on. */
  private objectRange(resource: string, opts: RangeOptions & { startKey?: string }): { start: string; end: string } {
    const prefix = (opts.namespace !== undefined ? `${resource}${SEP}${opts.namespace}${SEP}` : `${resource}${SEP}`) + (opts.prefix ?? '');
    const start = opts.startKey !== undefined && opts.startKey > prefix ? opts.startKey : prefix;
    return { start, end: rangeEnd(prefix) };
  }

  /** The same for one cluster, in its own index; `startKey` is an objects key. */
  private clusterRange(resource: string, cluster: string, opts: RangeOptions & { startKey?: string }): { start: string; end: string } {
    const prefix = this.scopePrefix({ resource, cluster, namespace: opts.namespace }) + (opts.prefix ?? '');
    let start = prefix;
    if (opts.startKey !== undefined) {
      const k = splitKey(opts.startKey);
      const from = ownKey(resource, cluster, k.namespace, k.name);
      if (from > prefix) start = from;
    }
    return { start, end: rangeEnd(prefix) };
  }

  /** How many objects `entries` would yield from `startKey` on, counted by LMDB without reading them. */
  countFrom(resource: string, opts: RangeOptions & { startKey: string; snapshot?: Snapshot }): number {
    if (opts.cluster !== undefined) return this.byCluster.getCount({ ...this.clusterRange(resource, opts.cluster, opts), transaction: opts.snapshot });
    return this.objects.getCount({ ...this.objectRange(resource, opts), transaction: opts.snapshot });
  }

  /** Every member's copy of namespace/name. */
  lookup(resource: string, namespace: string, name: string, cluster?: string): StoredEntry[] {
    return [...this.entriesNamed(resource, namespace, name)].filter((e) => cluster === undefined || e.cluster === cluster);
  }

  private *entriesNamed(resource: string, namespace: string, name: string): Generator<StoredEntry> {
    const prefix = `${resource}${SEP}${namespace}${SEP}${name}${SEP}`;
    for (const { key, value } of this.objects.getRange({ start: prefix, end: prefix.slice(0, -1) + AFTER_SEP })) {
      yield entryOf(key, value);
    }
  }

  /** The meta record of the object at `key` (an index hit). */
  metaAt(key: string, snapshot?: Snapshot): MetaRecord | undefined {
    const bytes = this.meta.get(key, { transaction: snapshot });
    return bytes ? decodeMeta(bytes) : undefined;
  }

  /** The namespaces where one cluster holds an object of this name, from its own index's keys (no object read). */
  namespacesOfName(resource: string, cluster: string, name: string, snapshot?: Snapshot): string[] {
    const prefix = this.scopePrefix({ resource, cluster });
    const out: string[] = [];
    for (const own of this.byCluster.getKeys({ start: prefix, end: rangeEnd(prefix), transaction: snapshot })) {
      const at = own.indexOf(SEP, prefix.length);
      if (own.length - at - SEP.length === name.length && own.endsWith(name)) out.push(own.slice(prefix.length, at));
    }
    return out;
  }

  metaOf(resource: string, e: { namespace: string; name: string; cluster: string }, snapshot?: Snapshot): MetaRecord | undefined {
    const bytes = this.meta.get(objectKey(resource, e.namespace, e.name, e.cluster), { transaction: snapshot });
    return bytes ? decodeMeta(bytes) : undefined;
  }
}
