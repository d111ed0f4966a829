import type { Database } from 'lmdb';
import { KEY_SEP as SEP } from './keys.js';
import type { SyncRecord } from './types.js';

/** The trees the check reads (environment.ts's Databases, which opens them, has these and more). */
export interface CheckedTrees {
  objectsAsStored: Database<Buffer, string>;
  meta: Database<Buffer, string>;
  byCluster: Database<Buffer, string>;
  sync: Database<SyncRecord, string>;
  events: Pick<Database, 'getCount'>;
  eventRVs: Pick<Database, 'getCount'>;
  labelIndex: Pick<Database, 'getCount'>;
}

/**
 * Whether a store opened from disk can be served: LMDB keeps no checksums, so a page damaged
 * while flotilla was stopped (a flipped block, a bad copy) reads as a shorter tree, garbled keys
 * or an error, and a list would serve it as if it were the member's state. The check walks every
 * tree the reads and the resumed watches use and cross-checks what three of them say of each
 * (resource, cluster): every object has its bytes (`objects`), its meta record (`meta`) and its
 * entry in the per-cluster index (`byCluster`), written in one transaction, so in a whole store
 * the three counts agree. A damaged branch or leaf page of one tree makes its count differ; a walk
 * over a damaged page that LMDB notices throws. Each object's bytes must read back as a JSON object
 * (lmdb-js decompresses them as it reads: a damaged compressed value fails there), each meta and
 * sync record must decode.
 *
 * It costs one read of the store at open (figures in docs/ARCHITECTURE.md, "Store") and nothing
 * on the write path. What it cannot see: a flipped byte inside one object's JSON that leaves the
 * page's structure and the value's first and last byte whole.
 */

/** What the check found wrong, in words; undefined when the store is whole. */
export type IntegrityFault = string;

/** `resource · … · cluster` of an objects or meta key: resource first, cluster last. */
function scopeOfObjectKey(key: string): string {
  return `${key.slice(0, key.indexOf(SEP))} of ${key.slice(key.lastIndexOf(SEP) + 1)}`;
}

/** `resource · cluster · …` of a byCluster key. */
function scopeOfOwnKey(key: string): string {
  const a = key.indexOf(SEP);
  return `${key.slice(0, a)} of ${key.slice(a + 1, key.indexOf(SEP, a + 1))}`;
}

/** Walks the store's trees and cross-checks them; returns what is wrong, or undefined. */
export function verifyStore(dbs: CheckedTrees): IntegrityFault | undefined {
  try {
    return checkTrees(dbs);
  } catch (e) {
    return `reading the store failed: ${(e as Error).message}`;
  }
}

function checkTrees(dbs: CheckedTrees): IntegrityFault | undefined {
  // Counted by lmdb-js in native code, keys and values left undecoded: every leaf page is read.
  const objects = dbs.objectsAsStored.getCount({});
  const metas = dbs.meta.getCount({});
  const owned = dbs.byCluster.getCount({});
  if (objects !== metas || objects !== owned) return `${objects} objects, ${metas} meta records, ${owned} index entries${whereCountsDiffer(dbs)}`;
  for (const { key, value } of dbs.sync.getRange({})) {
    if (typeof value?.rv !== 'string') return `the sync record ${JSON.stringify(key)} does not decode`;
  }
  // The event log and the label index: their structure only (LMDB throws on a page it finds broken).
  dbs.events.getCount({});
  dbs.eventRVs.getCount({});
  dbs.labelIndex.getCount({});
  return undefined;
}

/** Which (resource, cluster) the counts differ in, for the log line: read only once the store is known damaged. */
function whereCountsDiffer(dbs: CheckedTrees): string {
  try {
    const tally = (keys: Iterable<string>, scopeOf: (k: string) => string) => {
      const counts = new Map<string, number>();
      for (const k of keys) counts.set(scopeOf(k), (counts.get(scopeOf(k)) ?? 0) + 1);
      return counts;
    };
    const [objects, metas, owned] = [tally(dbs.objectsAsStored.getKeys({}), scopeOfObjectKey), tally(dbs.meta.getKeys({}), scopeOfObjectKey), tally(dbs.byCluster.getKeys({}), scopeOfOwnKey)];
    const differ = [...new Set([...objects.keys(), ...metas.keys(), ...owned.keys()])]
      .filter((s) => objects.get(s) !== metas.get(s) || objects.get(s) !== owned.get(s))
      .map((s) => `${s}: ${objects.get(s) ?? 0}/${metas.get(s) ?? 0}/${owned.get(s) ?? 0}`);
    return differ.length ? ` (objects/meta/index: ${differ.join(', ')})` : '';
  } catch {
    return '';
  }
}
