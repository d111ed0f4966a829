/**
 * The separator of the parts of a store key (resource · namespace · name · cluster, and label
 * index entries): below every character a resource, namespace, name or label can hold. Not
 * \u0000-\u0004: lmdb's key encoding escapes those in strings shorter than 64 characters and writes
 * them raw in longer ones, so a long key would sort outside its prefix's range and vanish from lists.
 */
export const KEY_SEP = '\u0005';
