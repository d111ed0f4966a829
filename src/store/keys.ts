import type { CacheScope } from './types.js';

/**
 * The store's key layout, in one place: each part builds its keys here, so a layout change is
 * made with FORMAT beside it, and a store written in another layout is emptied rather than
 * misread.
 */

/**
 * The separator of the parts of a store key (resource · namespace · name · cluster, and label
 * index entries): below every character a resource, namespace, name or label can hold. Not
 * \u0000-\u0004: lmdb's key encoding escapes those in strings shorter than 64 characters and writes
 * them raw in longer ones, so a long key would sort outside its prefix's range and vanish from lists.
 */
export const KEY_SEP = '\u0005';
/** Ends the range of a prefix: every key of `p · …` sorts below `p` + AFTER_SEP. */
export const AFTER_SEP = '\u0006';

/** Bumped whenever the key layout changes: a store written in another layout is emptied and relisted. */
export const FORMAT = 15; // 3: indexed fields (src/ingest/fields.ts) in the label index; 4: eventRVs; 5: labelsOf as one string; 6: metadataSpan; 7: no labelsOf, empty index values; 8: label index keys as bytes, object key without its resource; 9: owners renamed for tenants marked in the label index; 10: objects LZ4-compressed (object-dictionary.ts); 11: owners and uids in the label index (owner search); 12: name tokens and words in the label index (name-index.ts); 13: creation times in the label index (created-after/before); 14: generated name tokens, word pairs (name-index.ts); 15: no pair for a word and a long generated token, generated tokens' inside entries from their third character

/** Records of the `logs` database besides the per-resource log states, under keys no resource has. */
export const FORMAT_KEY = '\u0000format';
export const SEQ_KEY = '\u0000seq';

/** A member's identity (its kube-system namespace's uid), in the `logs` database beside them. */
export function memberIdentityKey(cluster: string): string {
  return `\u0000member${KEY_SEP}${cluster}`;
}

/**
 * The value of every index entry (label index, byCluster): the key is the information. Raw empty
 * bytes, not a msgpack `true`: encoding that value cost a msgpack pack per entry, about 10 per pod.
 */
export const PRESENT = Buffer.alloc(0);

export function objectKey(resource: string, namespace: string, name: string, cluster: string): string {
  return `${resource}${KEY_SEP}${namespace}${KEY_SEP}${name}${KEY_SEP}${cluster}`;
}

/** An object's key in the per-cluster index (byCluster): resource, cluster, namespace, name. */
export function ownKey(resource: string, cluster: string, namespace: string, name: string): string {
  return `${resource}${KEY_SEP}${cluster}${KEY_SEP}${namespace}${KEY_SEP}${name}`;
}

/** A scope's key in the sync records: resource, cluster, namespace ('' for a whole cluster). */
export function syncKey(s: CacheScope): string {
  return `${s.resource}${KEY_SEP}${s.cluster}${KEY_SEP}${s.namespace ?? ''}`;
}
