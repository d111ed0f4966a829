import { statfsSync } from 'node:fs';
import { open, type Database, type RootDatabase } from 'lmdb';
import type { ResourceInfo } from '../api/resource-info.js';
import { FORMAT, FORMAT_KEY } from './keys.js';
import { OBJECT_COMPRESSION } from './object-compression.js';
import { DICTIONARY_DIGEST } from './object-dictionary.js';
import { slabValues } from './slab-values.js';
import type { ChangeType, SyncRecord } from './types.js';

/**
 * The LMDB environment the store's parts share, and what keeps it readable and writable: the
 * options it is opened with, every database it holds and the shape of their records (opened here,
 * once, so that the format check can empty all of them before any part reads one), the format
 * check itself, and the free-space check each write transaction makes first.
 */

/**
 * A write refused because the data directory's filesystem is nearly full. The writer changes
 * the memory-mapped file in place (useWritemap), and a page the filesystem has no block for
 * kills the process with SIGBUS; refusing first keeps flotilla serving what it has, and the
 * cachers retry the write (from the RV they hold) once space is free.
 */
export class StoreFullError extends Error {}

/**
 * Default free space kept. A transaction writes at most OBJECTS_PER_TRANSACTION (store.ts) objects
 * and their index entries (a few MB for pods; 200 objects at the apiserver's 1.5 MB object limit
 * would be 300 MB, which no resource comes near in practice), and the file grows by no more than
 * the pages it dirties.
 */
export const MIN_FREE_BYTES = 256 * 1024 ** 2;

/** Databases of older layouts, dropped by the upgrade. */
const RETIRED_DBS = ['labelsOf', 'labels'];
const PAGE_SIZE = 8192;
const MAP_SIZE = 64 * 1024 ** 3;

/** A resource's event log window (the `logs` database, by resource). */
export interface LogState {
  /** Per cluster: the RV up to which events are missing from the log (trimmed or never logged). */
  start: Record<string, string>;
  count: number;
  firstSeq: number;
}

/** One logged change (the `events` database). */
export interface LoggedRecord {
  c: string;
  t: ChangeType;
  n: string;
  m: string;
  rv: string;
  o: Buffer;
  x: Buffer;
  /** The previous meta record of a MODIFIED change (StoreEvent.prevMeta). */
  p?: Buffer;
  /** The previous bytes of a MODIFIED change (StoreEvent.prevBytes). */
  q?: Buffer;
}

/** The environment's databases; keys.ts builds their keys. */
export interface Databases {
  objects: Database<Buffer, string>;
  /** The same database for `entries`' range reads: values as views of shared slabs (slab-values.ts). */
  objectsInSlabs: Database<Buffer, string>;
  /**
   * The same database as it is kept, not decompressed: what writes of already compressed objects
   * (StoredForms) go through. Reading a compressed value through it gives the compressed bytes.
   */
  objectsAsStored: Database<Buffer, string>;
  // Meta records arrive msgpack-encoded from the ingest workers and are stored as those bytes.
  meta: Database<Buffer, string>;
  /**
   * Per-cluster index: `resource · cluster · namespace · name`. What one cacher owns is one
   * range of it, so reconciles and counts never walk the other clusters' objects.
   */
  byCluster: Database<Buffer, string>;
  /**
   * Label index: `resource · key=value · namespace · name · cluster` → nothing; a label query is
   * one range. Keys are UTF-8 bytes compared by LMDB's memcmp, not lmdb-js string keys with its
   * 4-bytes-at-a-time comparator: with ~10 entries per pod, all sharing long prefixes with their
   * neighbours, comparing keys was most of an insert (labelKey).
   */
  labelIndex: Database<Buffer, Buffer>;
  sync: Database<SyncRecord, string>;
  /** What discovery said of each cached resource, so a restart with every member down still serves. */
  resourceInfos: Database<ResourceInfo, string>;
  events: Database<LoggedRecord, [string, number]>;
  /** [resource, cluster, member RV, seq] of every logged event: where a watch resumes in the log. */
  eventRVs: Database<boolean, [string, string, number, number]>;
  /** Per resource its LogState; the sequence number (SEQ_KEY), the format (FORMAT_KEY) and each member's identity (memberIdentityKey). */
  logs: Database<LogState | { seq: number } | { format: number; dictionary: string } | { uid: string }, string>;
}

/**
 * The objects are LZ4-compressed with a dictionary of the API's vocabulary (object-dictionary.ts).
 * The ingest workers compress them (object-compression.ts) and the store writes them through
 * `objectsAsStored`, which does not compress; lmdb-js decompresses as it reads through the other
 * handles, before any of our code sees the bytes. Bench pods (2.5 KB served) take 1.3 KB of file
 * instead of 4.1 KB, which is most of flotilla's memory at rest; a range read of them costs about
 * 0.5 ms per MB more. Objects below the threshold are stored as they are.
 */
function openDatabases(root: RootDatabase): Databases {
  return {
    objects: root.openDB<Buffer, string>({ name: 'objects', encoding: 'binary', compression: OBJECT_COMPRESSION }),
    objectsAsStored: root.openDB<Buffer, string>({ name: 'objects', encoding: 'binary' }),
    // `encoder` is lmdb-js's option for a custom value encoder; its types list it for the root only.
    objectsInSlabs: root.openDB<Buffer, string>({ name: 'objects', encoder: slabValues(), compression: OBJECT_COMPRESSION } as { name: string }),
    meta: root.openDB<Buffer, string>({ name: 'meta', encoding: 'binary' }),
    sync: root.openDB<SyncRecord, string>({ name: 'sync' }),
    events: root.openDB<LoggedRecord, [string, number]>({ name: 'events' }),
    eventRVs: root.openDB<boolean, [string, string, number, number]>({ name: 'eventRVs' }),
    logs: root.openDB<LogState | { seq: number } | { format: number; dictionary: string } | { uid: string }, string>({ name: 'logs' }),
    labelIndex: root.openDB<Buffer, Buffer>({ name: 'labelIndex', encoding: 'binary', keyEncoding: 'binary' }),
    byCluster: root.openDB<Buffer, string>({ name: 'byCluster', encoding: 'binary' }),
    resourceInfos: root.openDB<ResourceInfo, string>({ name: 'resources' }),
  };
}

export class Environment {
  readonly dbs: Databases;

  private constructor(
    readonly root: RootDatabase,
    private readonly path: string,
    private readonly minFreeBytes: number,
  ) {
    this.dbs = openDatabases(root);
  }

  /** Opens the environment at `path`, emptied first if it was written in another key layout. */
  static open(path: string, minFreeBytes = MIN_FREE_BYTES): Environment {
    // One environment, several named databases; noSync trades the last few commits on power loss
    // for write speed: a lost commit only means a re-watch from a slightly older RV.
    // noReadAhead (MDB_NORDAHEAD, in lmdb-js's options but not its types): once the file is larger
    // than the memory a container may use for it, every index page an insert touches would fault
    // in a whole readahead window. Measured with 300k objects (a 2.5 GB file) under a 700 MB cgroup
    // limit: the first sync did not finish in 120 s with readahead and took 68 s without. A full
    // scan from disk is slower without it; from the page cache there is no difference.
    // 8 KB pages (LMDB keeps a file's page size, so this applies to new stores): a served pod of
    // about 2.5 KB either took a 4 KB overflow page or filled a 4 KB leaf alone, so the objects
    // used about 4 KB each. Bench ingest at 300k objects: VmRSS 2281 -> 1910 MB, fleet list and
    // event-loop lag unchanged within noise.
    // useWritemap (MDB_WRITEMAP): the writer changes pages in the mapped file itself instead of
    // copying each dirty page into a buffer and write()ing it at commit. A first sync inserts
    // keys all over the trees (a page of one cluster's objects lands next to every other
    // cluster's copies), so each commit dirtied pages worth ~95 KB per object written. Bench
    // ingest, alternating runs: at 300k objects 6698 and 7261 objects/s against 4980 and 5034,
    // CPU per object 159 and 146 µs against 225 and 223; at 1M 6631 and 7292 against 4926 and
    // 5877, 156 and 141 µs against 222 and 188. The file's size is then the map size at once, as
    // a sparse file (`du` shows what it holds); a page the filesystem has no block for is a
    // SIGBUS, hence ensureFreeSpace. A crashed process loses nothing it committed: the pages
    // are the kernel's.
    const options = { path, maxDbs: 16, noSync: true, mapSize: MAP_SIZE, noReadAhead: true, pageSize: PAGE_SIZE, useWritemap: true };
    const root = open(options);
    try {
      const env = new Environment(root, path, minFreeBytes);
      env.upgradeFormat();
      return env;
    } catch (e) {
      void root.close();
      throw e;
    }
  }

  /** Throws StoreFullError (before anything of the transaction is queued) when space is short. */
  ensureFreeSpace(): void {
    const fs = statfsSync(this.path);
    const free = fs.bavail * fs.bsize;
    if (free < this.minFreeBytes) {
      const mib = (n: number) => `${Math.floor(n / 1024 ** 2)} MiB`;
      throw new StoreFullError(`cache volume nearly full: ${mib(free)} free at ${this.path}, ${mib(this.minFreeBytes)} kept free; not writing`);
    }
  }

  /**
   * A store in an older key layout, or with objects compressed with another dictionary, cannot be
   * read correctly: start empty, the cachers relist.
   */
  private upgradeFormat(): void {
    const stored = this.dbs.logs.get(FORMAT_KEY) as { format?: number; dictionary?: string } | undefined;
    if (stored?.format === FORMAT && stored.dictionary === DICTIONARY_DIGEST) return;
    // These writes bypass the transaction queue: check here, or a full volume fails with SIGBUS.
    this.ensureFreeSpace();
    const { objects, meta, sync, events, eventRVs, logs, labelIndex, byCluster, resourceInfos } = this.dbs;
    for (const db of [objects, meta, sync, events, eventRVs, logs, labelIndex, byCluster, resourceInfos]) db.clearSync();
    for (const name of RETIRED_DBS) this.root.openDB({ name }).dropSync();
    this.dbs.logs.putSync(FORMAT_KEY, { format: FORMAT, dictionary: DICTIONARY_DIGEST });
  }
}
