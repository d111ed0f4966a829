import { accessSync, constants, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statfsSync, statSync, writeFileSync } from 'node:fs';
import { userInfo } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { open, type Database, type RootDatabase } from 'lmdb';
import type { ResourceInfo } from '../api/resource-info.js';
import { FORMAT, FORMAT_KEY } from './keys.js';
import { OBJECT_COMPRESSION } from './object-compression.js';
import { DICTIONARY_DIGEST } from './object-dictionary.js';
import { verifyStore } from './integrity.js';
import { checkerScript, verifyStoreApart } from './integrity-apart.js';
import { STORE_MIN_FREE_BYTES } from '../registry/defaults.js';
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

/** The data directory cannot be used (not writable, not a directory): said in words, for the operator. */
export class DataDirError extends Error {}

/** The user the process runs as, as an operator would look it up. */
function whoAmI(): string {
  const uid = process.getuid?.();
  let name: string | undefined;
  try {
    name = userInfo().username;
  } catch {
    // no passwd entry (a container's arbitrary uid)
  }
  return uid === undefined ? (name ?? 'this user') : `uid ${uid}${name ? ` (${name})` : ''}`;
}

/** The closest ancestor of `path` that exists: the directory a mkdir of `path` has to write in. */
function existingAncestor(path: string): string {
  let dir = resolve(path);
  while (!existsSync(dir) && dirname(dir) !== dir) dir = dirname(dir);
  return dir;
}

/**
 * Makes the data directory if it is missing and checks that this process may write in it, with a
 * message that names the path, what is wrong and the user, instead of the errno of whichever
 * call came first.
 */
export function ensureDataDir(path: string): void {
  const who = whoAmI();
  const problem = (e: unknown, at: string): string => {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'EROFS') return `${at} is on a read-only filesystem`;
    if (code === 'ENOTDIR' || code === 'EEXIST') return `${at} is not a directory`;
    if (code === 'EACCES' || code === 'EPERM' || code === 'ENOENT') return `${at} is not writable by ${who}`;
    return `${at}: ${(e as Error).message}`;
  };
  if (!existsSync(path)) {
    try {
      mkdirSync(path, { recursive: true });
    } catch (e) {
      // A recursive mkdir reports ENOENT whatever stopped it: ask the directory it had to write in.
      const parent = existingAncestor(dirname(path));
      let cause = e;
      try {
        if (!statSync(parent).isDirectory()) throw Object.assign(new Error('not a directory'), { code: 'ENOTDIR' });
        accessSync(parent, constants.W_OK | constants.X_OK);
      } catch (denied) {
        cause = denied;
      }
      throw new DataDirError(`data directory ${path} cannot be created: ${problem(cause, parent)}`);
    }
  }
  try {
    if (!statSync(path).isDirectory()) throw Object.assign(new Error('not a directory'), { code: 'ENOTDIR' });
    accessSync(path, constants.W_OK | constants.X_OK);
  } catch (e) {
    throw new DataDirError(`data directory ${path} cannot be used: ${problem(e, path)}`);
  }
}


/** LMDB's files in the data directory: what a rebuild removes or sets aside (the directory also holds tls/). */
const STORE_FILES = ['data.mdb', 'lock.mdb'];
/** A store set aside is kept in `<data dir>/<prefix><time>/`: the last one only, so a bad disk cannot fill up with copies. */
const SET_ASIDE_PREFIX = 'corrupt-';
/**
 * Written when a read or write met LMDB's own corruption error while serving: the next open sets
 * the store aside whatever the check finds (the process is restarted to get there).
 */
export const DAMAGE_MARKER = 'store-damaged';
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
export function openStoreDatabases(root: RootDatabase): Databases {
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

/** What /status shows of the store, and what readiness asks of it. */
export interface StoreHealth {
  /** Writes go through: false while the volume is nearly full (the cachers fall behind, retrying). */
  writable: boolean;
  /** Since when, and why, writes are refused. */
  full?: { since: string; message: string };
  /** The store was found damaged at open, set aside and started empty: the cachers list everything again. */
  rebuilt?: { at: string; fault: string; keptAt: string };
  /** LMDB reported the store damaged while serving: the process stops, and the next open rebuilds it. */
  damaged?: { since: string; reason: string };
}

/** LMDB's own errors for a tree it finds broken (lmdb-js puts the code in the message). */
const CORRUPTION = /MDB_CORRUPTED|MDB_PAGE_NOTFOUND|MDB_BAD_TXN|MDB_INVALID|MDB_BAD_VALSIZE/;

/** Whether an error is LMDB saying the store's file is damaged. */
export function isStoreCorruption(e: unknown): boolean {
  return e instanceof Error && CORRUPTION.test(`${(e as { code?: unknown }).code ?? ''} ${e.message}`);
}

/** Opens the LMDB environment at `path` with the store's options (see Environment.open); `readOnly` for the check's own process. */
export function openStoreRoot(path: string, { readOnly = false }: { readOnly?: boolean } = {}): RootDatabase {
  return open(storeRootOptions(path, readOnly));
}

/**
 * The options openStoreRoot opens with. The read-only opener is the check at open
 * (integrity-check-main.ts), one pass over every page of the file, which reads ahead: with a fault
 * per page, checking a large store after its page cache was dropped took minutes, and flotilla
 * does not listen until its store is checked (docs/ARCHITECTURE.md, "Store").
 */
export function storeRootOptions(path: string, readOnly: boolean) {
  // One environment, several named databases; noSync trades the last few commits on power loss
  // for write speed: a lost commit only means a re-watch from a slightly older RV.
  // noReadAhead (MDB_NORDAHEAD, in lmdb-js's options but not its types): once the file is larger
  // than the memory a container may use for it, every index page an insert touches would fault
  // in a whole readahead window. Measured with 300k objects (a 2.5 GB file) under a 700 MB cgroup
  // limit: the first sync did not finish in 120 s with readahead and took 68 s without. A full
  // scan from disk is far slower without it, hence readahead for the read-only check.
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
  // SIGBUS, hence prepareWrite. A crashed process loses nothing it committed: the pages
  // are the kernel's.
  return { path, maxDbs: 16, noSync: true, mapSize: MAP_SIZE, noReadAhead: !readOnly, pageSize: PAGE_SIZE, useWritemap: !readOnly, readOnly };
}

export class Environment {
  dbs: Databases;
  private health: StoreHealth = { writable: true };
  /** The format record is written with the first write transaction: the volume had no room at open. */
  private formatPending = false;
  /** Told of every change of health (the volume filled up or has room again). */
  onHealth?: (health: StoreHealth) => void;

  private constructor(
    public root: RootDatabase,
    private readonly path: string,
    private readonly minFreeBytes: number,
  ) {
    this.dbs = openStoreDatabases(root);
  }

  /** The store's state as /status shows it. */
  status(): StoreHealth {
    return this.health;
  }

  /**
   * A read or write met LMDB's corruption error while serving: the next open sets the store aside
   * (DAMAGE_MARKER) whatever its check finds. Not writable from now on.
   */
  markDamaged(reason: string): void {
    if (this.health.damaged) return;
    try {
      writeFileSync(join(this.path, DAMAGE_MARKER), `${new Date().toISOString()} ${reason}\n`);
    } catch {
      // A volume that takes no marker: the open's own check is still there.
    }
    this.setHealth({ ...this.health, writable: false, damaged: { since: new Date().toISOString(), reason } });
  }

  /**
   * Opens the environment at `path`: emptied first if it was written in another key layout, set
   * aside and started empty if it is damaged.
   */
  static open(path: string, minFreeBytes = STORE_MIN_FREE_BYTES, verify = true): Environment {
    // `verify` (the default) checks a store kept from an earlier run before anything reads it (integrity.ts).
    const env = new Environment(openStoreRoot(path), path, minFreeBytes);
    try {
      env.upgradeFormat();
      if (!env.formatPending) env.verify(verify);
      return env;
    } catch (e) {
      void env.root.close();
      throw e;
    }
  }

  /**
   * Before each write transaction: throws StoreFullError (before anything of the transaction is
   * queued) when space is short, and writes the format record if the volume had no room for it at
   * open. The health follows: not writable from the first refusal to the next write that goes through.
   */
  prepareWrite(): void {
    const fs = statfsSync(this.path);
    const free = fs.bavail * fs.bsize;
    if (free < this.minFreeBytes) {
      const mib = (n: number) => `${Math.floor(n / 1024 ** 2)} MiB`;
      const message = `cache volume nearly full: ${mib(free)} free at ${this.path}, ${mib(this.minFreeBytes)} kept free; not writing`;
      if (this.health.writable) this.setHealth({ ...this.health, writable: false, full: { since: new Date().toISOString(), message } });
      throw new StoreFullError(message);
    }
    if (this.health.damaged) throw new Error(`the store is damaged (${this.health.damaged.reason}); not writing`);
    if (!this.health.writable) {
      const { full: _full, ...rest } = this.health;
      this.setHealth({ ...rest, writable: true });
    }
    if (this.formatPending) {
      this.formatPending = false;
      void this.dbs.logs.put(FORMAT_KEY, { format: FORMAT, dictionary: DICTIONARY_DIGEST });
    }
  }

  private setHealth(health: StoreHealth): void {
    this.health = health;
    this.onHealth?.(health);
  }

  /**
   * A store in an older key layout, or with objects compressed with another dictionary, cannot be
   * read correctly: start empty, the cachers relist. The files are removed rather than the trees
   * cleared: that frees the disk instead of writing to it, so it works on a volume with no room.
   */
  private upgradeFormat(): void {
    const stored = this.dbs.logs.get(FORMAT_KEY) as { format?: number; dictionary?: string } | undefined;
    if (stored?.format === FORMAT && stored.dictionary === DICTIONARY_DIGEST) return;
    if (stored !== undefined || this.dbs.objects.getKeysCount({ limit: 1 }) > 0 || this.dbs.sync.getKeysCount({ limit: 1 }) > 0) {
      this.reopenEmpty(() => {
        for (const f of [...STORE_FILES, DAMAGE_MARKER]) rmSync(join(this.path, f), { force: true });
      });
    }
    this.writeFormatWhenRoom();
  }

  /** The format record now if there is room for it (no write path is ready yet), else with the first write transaction. */
  private writeFormatWhenRoom(): void {
    this.formatPending = true;
    try {
      this.prepareWrite();
    } catch (e) {
      if (!(e instanceof StoreFullError)) throw e;
    }
  }

  /**
   * Sets aside a damaged store (integrity.ts, or DAMAGE_MARKER left by a run that met LMDB's
   * corruption error) and starts empty: never serve it. The copy is kept for inspection in
   * `<data dir>/corrupt-<time>/` (a rename, so it costs no space beyond what it held); an older one goes.
   */
  private verify(check: boolean): void {
    const marker = join(this.path, DAMAGE_MARKER);
    const marked = existsSync(marker) ? `damaged while serving: ${readFileSync(marker, 'utf8').trim()}` : undefined;
    // In a process of its own where there is one to run (integrity-apart.ts); from the sources, here.
    const script = check ? checkerScript() : undefined;
    const fault = marked ?? (!check ? undefined : script ? verifyStoreApart(this.path, script) : verifyStore(this.dbs));
    if (fault === undefined) return;
    const at = new Date().toISOString();
    const keptAt = join(this.path, `${SET_ASIDE_PREFIX}${at.replace(/[:.]/g, '-')}`);
    this.reopenEmpty(() => {
      for (const old of readdirSync(this.path)) if (old.startsWith(SET_ASIDE_PREFIX)) rmSync(join(this.path, old), { recursive: true, force: true });
      mkdirSync(keptAt);
      for (const f of [...STORE_FILES, DAMAGE_MARKER]) if (existsSync(join(this.path, f))) renameSync(join(this.path, f), join(keptAt, f));
    });
    this.health = { ...this.health, rebuilt: { at, fault, keptAt } };
    this.writeFormatWhenRoom();
  }

  /** Closes the environment, lets `clear` take its files away, and opens an empty one in their place. */
  private reopenEmpty(clear: () => void): void {
    void this.root.close();
    clear();
    this.root = openStoreRoot(this.path);
    this.dbs = openStoreDatabases(this.root);
  }
}
