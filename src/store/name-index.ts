import type { Database } from 'lmdb';
import type { Databases } from './environment.js';
import { AFTER_SEP, KEY_SEP as SEP, PRESENT } from './keys.js';
import { fieldIndexEntry, fieldIndexKey } from './meta-record.js';
import type { Snapshot } from './types.js';

/**
 * The name index: name-contains and name-prefix terms read a few ranges of it instead of every
 * object's name (view/step-search.ts says when; the predicate still checks each object). Names are
 * lower-cased and cut into tokens at every character other than a-z and 0-9; a token holding a
 * vowel is a word (`checkout`, `ledger`), one without is generated (a pod-template-hash
 * `7d9f8b6c5d`, a pod's random suffix `x2k4q`: the apimachinery alphabet has no vowel) or a number.
 * Only words are indexed, in the label index's database, in two kinds of entries:
 * - per object, one per distinct word of its name: `resource · :name=<word> · namespace · name ·
 *   cluster`, the layout of a label entry, so the label index's reads (keysLabelled, isLabelled)
 *   serve it. A name never changes at its key: the entries are written when the object arrives and
 *   removed when it goes, never diffed.
 * - per distinct word of a resource, once however many objects hold it: each of its suffixes but
 *   the whole, `resource · :name-inside=<suffix> · <word>`, so the words holding a needle past
 *   their first character are one range.
 * A needle with a vowel can only be inside words, so the two find every object whose name can hold
 * it. A needle without one (a hash, a suffix, a number) may be inside tokens the index leaves out:
 * entries for those would be one or two more per object, most of the index; such searches read
 * the resource's range (docs/search.md, "How searches are served").
 */
export const NAME_WORD_KEY = fieldIndexKey('name');
const WORD_ENTRY = fieldIndexEntry('name', '');
const INSIDE_ENTRY = fieldIndexEntry('name-inside', '');

/** Where a name's tokens end: at every character other than a-z and 0-9, once lower-cased. */
export const TOKEN_END = /[^a-z0-9]+/;

/** The distinct words of a name. */
export function nameWords(name: string): string[] {
  const words: string[] = [];
  for (const t of name.toLowerCase().split(TOKEN_END)) if (isWord(t) && !words.includes(t)) words.push(t);
  return words;
}

/** Whether a token (or a needle) holds a vowel, which no generated name part has: then it is a word. */
export function isWord(token: string): boolean {
  return VOWEL.test(token);
}

const VOWEL = /[aeiouy]/;

/** How the words of a lookup are found: starting with its value, or holding it anywhere. */
export type WordMatch = 'prefixed' | 'containing';

export class NameIndex {
  private readonly labelIndex: Database<Buffer, Buffer>;
  /** Per resource, the words its `inside` entries are written for: read from the store on the first write of the resource. */
  private readonly wordSets = new Map<string, Set<string>>();
  /** Per resource, words whose last object may have gone: their `inside` entries are removed at the next transaction if so. */
  private readonly maybeUnused = new Map<string, Set<string>>();

  constructor(dbs: Pick<Databases, 'labelIndex'>) {
    this.labelIndex = dbs.labelIndex;
  }

  /** An object arrived at `key` (its objectKey): its words entered, and the resource's new words. */
  add(resource: string, key: string, name: string): void {
    const prefix = `${resource}${SEP}${WORD_ENTRY}`;
    const suffix = key.slice(resource.length);
    for (const t of nameWords(name)) {
      this.labelIndex.put(Buffer.from(prefix + t + suffix), PRESENT);
      const known = this.wordsOf(resource);
      if (known.has(t)) continue;
      known.add(t);
      for (let i = 1; i < t.length; i++) this.labelIndex.put(insideEntry(resource, t.slice(i), t), PRESENT);
    }
  }

  /** The object at `key` went: its entries removed; its words' own entries go once no object has them (newTransaction). */
  remove(resource: string, key: string, name: string): void {
    const prefix = `${resource}${SEP}${WORD_ENTRY}`;
    const suffix = key.slice(resource.length);
    for (const t of nameWords(name)) {
      this.labelIndex.remove(Buffer.from(prefix + t + suffix));
      let maybe = this.maybeUnused.get(resource);
      if (!maybe) this.maybeUnused.set(resource, (maybe = new Set()));
      maybe.add(t);
    }
  }

  /**
   * A write transaction begins, the last one committed: the words no object holds any more lose
   * their entries (the store read here shows every earlier transaction, and this one has written
   * nothing yet, so a word one of its objects brings back is entered again after).
   */
  newTransaction(): void {
    if (this.maybeUnused.size === 0) return;
    for (const [resource, maybe] of this.maybeUnused) {
      const known = this.wordsOf(resource);
      for (const w of maybe) {
        if (this.holdsWord(resource, w)) continue;
        known.delete(w);
        for (let i = 1; i < w.length; i++) this.labelIndex.remove(insideEntry(resource, w.slice(i), w));
      }
    }
    this.maybeUnused.clear();
  }

  /**
   * The distinct words of a resource's names that start with `needle` or (`containing`) hold it
   * anywhere, at most `max`; undefined when there are more (the caller scans instead). `needle`
   * must be a word: the tokens starting with it or holding it are then words too.
   */
  words(resource: string, needle: string, match: WordMatch, max: number, snapshot?: Snapshot): string[] | undefined {
    const found = new Set<string>();
    // The words one after the other: a seek past each word's entries to the next word.
    const base = `${resource}${SEP}${WORD_ENTRY}`;
    const end = rangeEnd(Buffer.from(base + needle));
    let start = Buffer.from(base + needle);
    for (;;) {
      let next: Buffer | undefined;
      for (const k of this.labelIndex.getKeys({ start, end, limit: 1, transaction: snapshot })) next = k;
      if (!next) break;
      const from = Buffer.byteLength(base);
      const token = next.toString('utf8', from, next.indexOf(SEP, from));
      found.add(token);
      if (found.size > max) return undefined;
      start = Buffer.from(base + token + AFTER_SEP);
    }
    if (match === 'containing') {
      const inside = insideEntry(resource, needle, '');
      const stop = rangeEnd(inside.subarray(0, inside.length - 1));
      for (const k of this.labelIndex.getKeys({ start: inside.subarray(0, inside.length - 1), end: stop, transaction: snapshot })) {
        found.add(k.toString('utf8', k.lastIndexOf(SEP) + 1));
        if (found.size > max) return undefined;
      }
    }
    return [...found];
  }

  /** Whether some object of the resource has this word in its name (the store as last committed). */
  private holdsWord(resource: string, word: string): boolean {
    const start = Buffer.from(`${resource}${SEP}${WORD_ENTRY}${word}${SEP}`);
    for (const _ of this.labelIndex.getKeys({ start, end: Buffer.from(`${resource}${SEP}${WORD_ENTRY}${word}${AFTER_SEP}`), limit: 1 })) return true;
    return false;
  }

  /** The words a resource's `inside` entries are written for, read from the store the first time. */
  private wordsOf(resource: string): Set<string> {
    let known = this.wordSets.get(resource);
    if (known) return known;
    known = new Set();
    const start = Buffer.from(`${resource}${SEP}${INSIDE_ENTRY}`);
    for (const k of this.labelIndex.getKeys({ start, end: rangeEnd(start) })) known.add(k.toString('utf8', k.lastIndexOf(SEP) + 1));
    this.wordSets.set(resource, known);
    return known;
  }
}

/** `resource · :metadata.name.inside=<suffix> · <word>`. */
function insideEntry(resource: string, suffix: string, word: string): Buffer {
  return Buffer.from(`${resource}${SEP}${INSIDE_ENTRY}${suffix}${SEP}${word}`);
}

/** Ends the range of every key starting with `prefix`: its last byte one higher. */
function rangeEnd(prefix: Buffer): Buffer {
  const end = Buffer.from(prefix);
  end[end.length - 1]! += 1;
  return end;
}
