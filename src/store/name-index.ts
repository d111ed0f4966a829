import type { Database } from 'lmdb';
import type { Databases } from './environment.js';
import type { LabelIndex } from './label-index.js';
import { AFTER_SEP, KEY_SEP as SEP, PRESENT } from './keys.js';
import { fieldIndexEntry, fieldIndexKey } from './meta-record.js';
import type { Snapshot } from './types.js';

/**
 * The name index: name-contains and name-prefix terms read a few ranges of it instead of every
 * object's name (view/step-search.ts says when; the predicate still checks each object). Names are
 * lower-cased and cut into tokens at every character other than a-z and 0-9; a token holding a
 * vowel is a word (`checkout`, `ledger`), one without is generated (a pod-template-hash
 * `7d9f8b6c5d`, a pod's random suffix `x2k4q`: the apimachinery alphabet has no vowel) or a number.
 * Words, and generated tokens of GENERATED_INDEXED_MIN characters or more (hashes, not a pod's
 * five-character suffix), are indexed in the label index's database:
 * - per object, one entry per distinct word of its name: `resource · :name=<word> · namespace ·
 *   name · cluster`, the layout of a label entry, so the label index's reads (keysLabelled,
 *   isLabelled) serve it. A name never changes at its key: the entries are written when the
 *   object arrives and removed when it goes, never diffed. A long generated token before the
 *   name's first word (or in a name without one) is entered so too.
 * - per place, once however many objects share it: a long generated token after the name's first
 *   word, or a word and the word or short generated token after it (`ledger-reconciler`,
 *   `web-0`), at the start of the name up to that token's end (its stem, `ledger-7d9f8b6c5d` of
 *   `ledger-7d9f8b6c5d-x2k4q`): `resource · :name-gen=<token> | :name-pair=<word>-<next> ·
 *   namespace · first word · stem`. The objects at a place are the first word's entries of that
 *   namespace whose names start with the stem: one range. A Deployment's pods share their place
 *   (one hash), so it costs a write per ReplicaSet, not per pod, and a needle across two common
 *   words (`ledger-rec`) or a hash is a few ranges. A word and a long generated token after it
 *   are found at the token's places, by the word before it in their stems.
 * - per distinct indexed token of a resource: its suffixes but the whole, from its second
 *   character (a generated token's from its third, down to GENERATED_INSIDE_MIN characters),
 *   `resource · :name-inside=<suffix> · <token>`, so the tokens holding a needle further in are
 *   one range; a generated needle one character in is the start of a token after any one
 *   character (36 short ranges).
 * Each entry keyed by a hash is a write that lands anywhere in the tree, the dearest kind (about
 * ten times a write beside the last; docs/search.md, the index's costs): a ReplicaSet's pods
 * cost one, their hash's place.
 * A needle with a vowel can only be inside words, and one of GENERATED_INDEXED_MIN characters or
 * more only inside indexed tokens, so these find every object whose name can hold it: at a
 * token's start always, past it when the needle has GENERATED_INSIDE_MIN characters or a vowel
 * (isIndexed). A shorter needle without one (a pod's suffix, a number) may be inside tokens the
 * index leaves out; such searches read the resource's range (docs/search.md, "How searches are
 * served").
 */
export const NAME_TOKEN_KEY = fieldIndexKey('name');
export const NAME_GENERATED_KEY = fieldIndexKey('name-gen');
export const NAME_PAIR_KEY = fieldIndexKey('name-pair');
const TOKEN_ENTRY = fieldIndexEntry('name', '');
const GENERATED_ENTRY = fieldIndexEntry('name-gen', '');
const PAIR_ENTRY = fieldIndexEntry('name-pair', '');
const INSIDE_ENTRY = fieldIndexEntry('name-inside', '');

/** Where a name's tokens end: at every character other than a-z and 0-9, once lower-cased. */
export const TOKEN_END = /[^a-z0-9]+/;

/** A generated token this long or longer is indexed (a ReplicaSet's or revision's hash); a pod's five-character suffix is not. */
export const GENERATED_INDEXED_MIN = 6;

/**
 * A generated token's suffixes are entered down to this length, so a generated needle this long
 * is found anywhere in a token; a shorter one only where a token starts. A 10-character hash, the
 * commonest, has none (insideStart).
 */
export const GENERATED_INSIDE_MIN = 9;

/** How a pair entry joins its word and the next token, whatever separated them in the name (the predicate checks the name itself). */
export const PAIR_JOIN = '-';

/** Whether a token (or a needle) holds a vowel, which no generated name part has: then it is a word. */
export function isWord(token: string): boolean {
  return VOWEL.test(token);
}

/**
 * Whether every token holding this needle (`inside`: past the token's start too) is in the index,
 * with a way to it: a word's, or a long enough generated one's.
 */
export function isIndexed(needle: string, inside = true): boolean {
  return isWord(needle) || needle.length >= (inside ? GENERATED_INSIDE_MIN : GENERATED_INDEXED_MIN);
}

const VOWEL = /[aeiouy]/;
const TOKEN_CHAR = /[a-zA-Z0-9]/;
/** Every character a token holds. */
const TOKEN_ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789';
/** A token of a lower-cased name (TOKEN_END's complement); global, so reset before each use. */
const TOKEN = /[a-z0-9]+/g;

/** A generated token or a word pair of a name, at its stem (the name up to the token's end, as the name has it). */
export interface NamePlace {
  kind: 'generated' | 'pair';
  /** The token, or `<word>-<next>`, lower-cased. */
  value: string;
  /** The name's first word, lower-cased: the stem's objects are in its entries. */
  anchor: string;
  stem: string;
}

/** What the index holds of a name: its per-object tokens and its places. */
export interface NameEntries {
  tokens: string[];
  places: NamePlace[];
}

/** A name's entries: distinct words (and long generated tokens before the first word) per object, and its places. */
export function nameEntries(name: string): NameEntries {
  const out: NameEntries = { tokens: [], places: [] };
  const lower = name.toLowerCase();
  scanTokens(name, lower, 0, lower.length, { anchor: undefined, previous: undefined }, out);
  return out;
}

/** Where a scan of a name stands: its first word, and the token before the next. */
interface ScanState {
  anchor: string | undefined;
  previous: string | undefined;
}

/**
 * Adds to `out` the entries of the tokens of `lower` (the name lower-cased) that start at `from`
 * or after and before `to`, going on from `state` (and leaving it where the scan stops).
 */
function scanTokens(name: string, lower: string, from: number, to: number, state: ScanState, out: NameEntries): void {
  // Stems are cut from the name as it is; where lower-casing moves characters (a few non-ASCII letters), a place's stem is the whole name.
  const cut = lower.length === name.length;
  TOKEN.lastIndex = from;
  for (let m = TOKEN.exec(lower); m && m.index < to; m = TOKEN.exec(lower)) {
    const t = m[0];
    const end = m.index + t.length;
    const { anchor, previous } = state;
    // A word and a long generated token after it are found at the token's place (NameIndex.keysOf).
    if (previous !== undefined && anchor !== undefined && isWord(previous) && (isWord(t) || t.length < GENERATED_INDEXED_MIN)) out.places.push({ kind: 'pair', value: previous + PAIR_JOIN + t, anchor, stem: cut ? name.slice(0, end) : name });
    state.previous = t;
    if (isWord(t)) {
      state.anchor ??= t;
      if (!out.tokens.includes(t)) out.tokens.push(t);
    } else if (t.length >= GENERATED_INDEXED_MIN) {
      if (anchor !== undefined) out.places.push({ kind: 'generated', value: t, anchor, stem: cut ? name.slice(0, end) : name });
      else if (!out.tokens.includes(t)) out.tokens.push(t);
    }
  }
}

/** Where the last token of a lower-cased name starts (its length when it has none). */
function lastTokenStart(lower: string): number {
  let i = lower.length;
  while (i > 0 && !isTokenCode(lower.charCodeAt(i - 1))) i--;
  while (i > 0 && isTokenCode(lower.charCodeAt(i - 1))) i--;
  return i;
}

function isTokenCode(c: number): boolean {
  return (c >= 97 && c <= 122) || (c >= 48 && c <= 57);
}

/** How the tokens of a lookup are found: starting with its value, or holding it anywhere. */
export type TokenMatch = 'prefixed' | 'containing';

/** How a pair lookup's pieces meet its tokens: the first piece is the word or ends it; the second is the next token or starts it. */
export interface PairMatch {
  first: 'whole' | 'ending';
  second: 'whole' | 'prefixed';
}

/** A lookup of generated tokens (`match` as for words) or of pairs, answered with the keys of the objects holding them. */
export type PlaceLookup = { kind: 'generated'; needle: string; match?: TokenMatch } | { kind: 'pair'; first: string; second: string; match: PairMatch };

/** Tokens a resource's inside entries were written for lately, not written again while remembered; past this many, forgotten (and rewritten if seen again: the same keys). */
const KNOWN_TOKENS_MAX = 65_536;

/** A place lookup reading more of them than this is not used: the list reads another lookup, or scans. */
const PLACES_READ_MAX = 8192;

export class NameIndex {
  private readonly labelIndex: Database<Buffer, Buffer>;
  /** Per resource, tokens whose inside entries are written. */
  private readonly known = new Map<string, Set<string>>();
  /** The last name's head, whose places and inside entries are written (add). */
  private head: { resource: string; namespace: string; text: string; own: string[]; state: ScanState } | undefined;
  /** Per resource, tokens whose last object may have gone: their inside entries are removed at the next transaction if so. */
  private readonly maybeUnused = new Map<string, Set<string>>();
  /** Place entries whose last object may have gone, as their keys: removed at the next transaction if so. */
  private readonly placesMaybeUnused = new Map<string, { resource: string; namespace: string; place: NamePlace }>();

  /** `labels` reads the per-object entries, which have a label entry's layout. */
  constructor(
    dbs: Pick<Databases, 'labelIndex'>,
    private readonly labels: LabelIndex,
  ) {
    this.labelIndex = dbs.labelIndex;
  }

  /**
   * An object arrived at `key` (its objectKey): its tokens entered, its places, and the inside
   * entries of tokens new to the resource. A name up to its last token (its head) is read once
   * for the siblings that follow it (a ReplicaSet's pods, listed one after another, differ in
   * their last token only): their head's places and inside entries are written by the first.
   */
  add(resource: string, key: string, namespace: string, name: string): void {
    const suffix = key.slice(resource.length);
    const entries = `${resource}${SEP}${TOKEN_ENTRY}`;
    const lower = name.toLowerCase();
    const at = lastTokenStart(lower);
    let head = this.head;
    if (!head || head.text.length !== at || head.namespace !== namespace || head.resource !== resource || !name.startsWith(head.text)) {
      const state: ScanState = { anchor: undefined, previous: undefined };
      const out: NameEntries = { tokens: [], places: [] };
      scanTokens(name, lower, 0, at, state, out);
      for (const t of out.tokens) this.writeInside(resource, t);
      this.writePlaces(resource, namespace, out.places);
      head = { resource, namespace, text: name.slice(0, at), own: out.tokens, state };
      // A place's stem is the whole name where lower-casing moves characters: no sibling shares it.
      this.head = lower.length === name.length ? head : undefined;
    }
    for (const t of head.own) this.labelIndex.put(Buffer.from(entries + t + suffix), PRESENT);
    // A pod's random suffix after its hash, the commonest tail, is no entry: a short generated token after no word.
    const { previous } = head.state;
    if (lower.length - at < GENERATED_INDEXED_MIN && !isWord(lower.slice(at)) && !(previous !== undefined && isWord(previous))) return;
    const tail: NameEntries = { tokens: [], places: [] };
    scanTokens(name, lower, at, lower.length, { ...head.state }, tail);
    for (const t of tail.tokens) {
      if (head.own.includes(t)) continue;
      this.labelIndex.put(Buffer.from(entries + t + suffix), PRESENT);
      this.writeInside(resource, t);
    }
    this.writePlaces(resource, namespace, tail.places);
  }

  /** Enters places (a write each, whatever was written before: the same keys), and their generated tokens' inside entries. */
  private writePlaces(resource: string, namespace: string, places: readonly NamePlace[]): void {
    for (const p of places) {
      this.labelIndex.put(Buffer.from(placeEntry(resource, namespace, p)), PRESENT);
      if (p.kind === 'generated') this.writeInside(resource, p.value);
    }
  }

  /** The object at `key` went: its entries removed; its tokens' inside entries and its places go once no object has them (newTransaction). */
  remove(resource: string, key: string, namespace: string, name: string): void {
    const suffix = key.slice(resource.length);
    const tokens = `${resource}${SEP}${TOKEN_ENTRY}`;
    const { tokens: own, places } = nameEntries(name);
    let maybe = this.maybeUnused.get(resource);
    if (!maybe) this.maybeUnused.set(resource, (maybe = new Set()));
    for (const t of own) {
      this.labelIndex.remove(Buffer.from(tokens + t + suffix));
      maybe.add(t);
    }
    for (const p of places) {
      this.placesMaybeUnused.set(placeEntry(resource, namespace, p), { resource, namespace, place: p });
      if (p.kind === 'generated') maybe.add(p.value);
    }
  }

  /**
   * A write transaction begins, the last one committed: the places and tokens no object holds any
   * more lose their entries (the store read here shows every earlier transaction, and this one has
   * written nothing yet, so a place or token one of its objects brings back is entered again after).
   */
  newTransaction(): void {
    if (this.placesMaybeUnused.size === 0 && this.maybeUnused.size === 0) return;
    const gone = new Set<string>();
    for (const [entry, { resource, namespace, place }] of this.placesMaybeUnused) {
      if (this.holdsPlace(resource, namespace, place)) continue;
      gone.add(entry);
      this.labelIndex.remove(Buffer.from(entry));
    }
    this.placesMaybeUnused.clear();
    // A place or a token's inside entries removed may be the last head's: the next of its siblings writes them again.
    if (gone.size > 0) this.head = undefined;
    for (const [resource, maybe] of this.maybeUnused) {
      for (const t of maybe) {
        if (this.holdsToken(resource, t, gone)) continue;
        this.known.get(resource)?.delete(t);
        this.head = undefined;
        for (let i = insideStart(t); i <= insideEnd(t); i++) this.labelIndex.remove(insideEntry(resource, t.slice(i), t));
      }
    }
    this.maybeUnused.clear();
  }

  /**
   * The distinct words (and generated tokens entered per object) of a resource's names that start
   * with `needle` or (`containing`) hold it anywhere, at most `max`; undefined when there are more
   * (the caller scans instead). `needle` must be a word: the tokens holding it are then words too.
   */
  tokens(resource: string, needle: string, match: TokenMatch, max: number, snapshot?: Snapshot): string[] | undefined {
    const found = new Set<string>();
    return this.matchingTokens(resource, [TOKEN_ENTRY], needle, match, found, max, snapshot) ? [...found] : undefined;
  }

  /**
   * The keys of every object a place lookup finds, in key order (each at most once); undefined when
   * it matches more than `max` distinct tokens or pairs, or reads more than PLACES_READ_MAX places.
   */
  keysOf(resource: string, lookup: PlaceLookup, max: number, snapshot?: Snapshot): string[] | undefined {
    const keys = new Set<string>();
    const values = new Set<string>();
    if (lookup.kind === 'generated') {
      // The long generated tokens matching (and words, when a word holds the needle): entered per object, or at places.
      const { needle, match } = lookup;
      if (match === undefined) values.add(needle);
      else if (!this.matchingTokens(resource, [GENERATED_ENTRY, TOKEN_ENTRY], needle, match, values, max, snapshot)) return undefined;
      for (const t of values) for (const k of this.labels.keysLabelled(resource, NAME_TOKEN_KEY, t, snapshot)) keys.add(k);
    } else {
      const { first, second, match } = lookup;
      const firsts = match.first === 'whole' ? [first] : [first, ...this.tokensWithSuffix(resource, first, true, snapshot)];
      for (const w of firsts) {
        const pair = w + PAIR_JOIN + second;
        if (match.second === 'whole') values.add(pair);
        else if (!this.distinctValues(`${resource}${SEP}${PAIR_ENTRY}`, pair, values, max, snapshot)) return undefined;
        if (values.size > max) return undefined;
      }
    }
    const read = { places: 0 };
    const base = `${resource}${SEP}${lookup.kind === 'generated' ? GENERATED_ENTRY : PAIR_ENTRY}`;
    for (const value of values) {
      for (const place of this.placesIn(base, lookup.kind, value, 'whole', read, snapshot)) for (const key of this.keysAtPlace(resource, place, snapshot)) keys.add(key);
      if (read.places > PLACES_READ_MAX) return undefined;
    }
    if (lookup.kind === 'pair' && !isWord(lookup.second)) {
      // A word and a long generated token after it are no pair entry: the token's places whose stem has the word before it.
      const { first, second, match } = lookup;
      if (match.second === 'prefixed' || second.length >= GENERATED_INDEXED_MIN) {
        const generated = this.placesIn(`${resource}${SEP}${GENERATED_ENTRY}`, 'generated', second, match.second, read, snapshot);
        for (const place of generated) if (followsWord(place, first, match.first)) for (const key of this.keysAtPlace(resource, place, snapshot)) keys.add(key);
      }
    }
    return read.places > PLACES_READ_MAX ? undefined : [...keys].sort();
  }

  /**
   * The places of the entries under `base` whose value is `text` (or starts with it), counted in
   * `read`; none past PLACES_READ_MAX.
   */
  private *placesIn(base: string, kind: NamePlace['kind'], text: string, match: 'whole' | 'prefixed', read: { places: number }, snapshot?: Snapshot): Generator<NamePlace & { namespace: string }> {
    const start = Buffer.from(match === 'whole' ? base + text + SEP : base + text);
    const end = match === 'whole' ? Buffer.from(base + text + AFTER_SEP) : rangeEnd(start);
    const from = Buffer.byteLength(base);
    for (const k of this.labelIndex.getKeys({ start, end, transaction: snapshot })) {
      if (++read.places > PLACES_READ_MAX) return;
      const [value, namespace, anchor, stem] = k.toString('utf8', from).split(SEP) as [string, string, string, string];
      yield { kind, value, namespace, anchor, stem };
    }
  }

  /**
   * The keys of the objects at a place: the anchor word's entries in the namespace whose names
   * start with the stem and end a token there.
   */
  private *keysAtPlace(resource: string, place: NamePlace & { namespace: string }, snapshot?: Snapshot): Generator<string> {
    const entries = `${resource}${SEP}${TOKEN_ENTRY}${place.anchor}`;
    const start = Buffer.from(`${entries}${SEP}${place.namespace}${SEP}${place.stem}`);
    // Entries hold the object key from its first separator on.
    const keyFrom = Buffer.byteLength(entries);
    for (const k of this.labelIndex.getKeys({ start, end: rangeEnd(start), transaction: snapshot })) {
      // `checkout-7d9f8b6c5d` is no stem of `checkout-7d9f8b6c5d9-x`: the token must end there.
      if (k.length > start.length && TOKEN_CHAR.test(String.fromCharCode(k[start.length]!))) continue;
      yield resource + k.toString('utf8', keyFrom);
    }
  }

  /** Whether some object is at a place (the store as last committed). Leaving the loop closes the range's cursor and read transaction. */
  private holdsPlace(resource: string, namespace: string, place: NamePlace): boolean {
    for (const _ of this.keysAtPlace(resource, { ...place, namespace })) return true;
    return false;
  }

  /** Writes a token's inside entries unless remembered as written. */
  private writeInside(resource: string, token: string): void {
    let known = this.known.get(resource);
    if (!known) this.known.set(resource, (known = new Set()));
    if (known.has(token)) return;
    if (known.size >= KNOWN_TOKENS_MAX) known.clear();
    known.add(token);
    for (let i = insideStart(token); i <= insideEnd(token); i++) this.labelIndex.put(insideEntry(resource, token.slice(i), token), PRESENT);
  }

  /**
   * Adds to `found` the indexed tokens, of the entries of the kinds `entries` and the inside
   * entries, that start with `needle` or (`containing`) hold it anywhere; false once more than
   * `max` are found.
   */
  private matchingTokens(resource: string, entries: readonly string[], needle: string, match: TokenMatch, found: Set<string>, max: number, snapshot?: Snapshot): boolean {
    for (const e of entries) if (!this.distinctValues(`${resource}${SEP}${e}`, needle, found, max, snapshot)) return false;
    if (match === 'prefixed') return true;
    // A generated token holding the needle one character in has no inside entry for it (insideStart).
    if (!isWord(needle)) for (const c of TOKEN_ALPHABET) for (const e of entries) if (!this.distinctValues(`${resource}${SEP}${e}`, c + needle, found, max, snapshot)) return false;
    for (const t of this.tokensWithSuffix(resource, needle, false, snapshot)) {
      found.add(t);
      if (found.size > max) return false;
    }
    return true;
  }

  /**
   * Adds to `found` the distinct values of the entries under `base` that start with `text`, one
   * seek per value past its entries; false once more than `max` are found.
   */
  private distinctValues(base: string, text: string, found: Set<string>, max: number, snapshot?: Snapshot): boolean {
    const from = Buffer.byteLength(base);
    const end = rangeEnd(Buffer.from(base + text));
    let start = Buffer.from(base + text);
    for (;;) {
      let next: Buffer | undefined;
      for (const k of this.labelIndex.getKeys({ start, end, limit: 1, transaction: snapshot })) next = k;
      if (!next) return true;
      const value = next.toString('utf8', from, next.indexOf(SEP, from));
      found.add(value);
      if (found.size > max) return false;
      start = Buffer.from(base + value + AFTER_SEP);
    }
  }

  /** The indexed tokens holding `text` past their first character (`ending`: as their end). */
  private *tokensWithSuffix(resource: string, text: string, ending: boolean, snapshot?: Snapshot): Generator<string> {
    // `ending`: the entries of exactly this suffix; else of every suffix starting with it.
    const at = `${resource}${SEP}${INSIDE_ENTRY}${text}`;
    const start = Buffer.from(ending ? at + SEP : at);
    const end = ending ? Buffer.from(at + AFTER_SEP) : rangeEnd(start);
    for (const k of this.labelIndex.getKeys({ start, end, transaction: snapshot })) yield k.toString('utf8', k.lastIndexOf(SEP) + 1);
  }

  /** Whether some object of the resource has this token in its name (the store as last committed, less the places in `gone`). */
  private holdsToken(resource: string, token: string, gone: ReadonlySet<string>): boolean {
    const own = `${resource}${SEP}${TOKEN_ENTRY}${token}`;
    for (const _ of this.labelIndex.getKeys({ start: Buffer.from(own + SEP), end: Buffer.from(own + AFTER_SEP), limit: 1 })) return true;
    if (isWord(token)) return false;
    const places = `${resource}${SEP}${GENERATED_ENTRY}${token}`;
    for (const k of this.labelIndex.getKeys({ start: Buffer.from(places + SEP), end: Buffer.from(places + AFTER_SEP) })) if (!gone.has(k.toString('utf8'))) return true;
    return false;
  }
}

/**
 * Whether a place's token follows `first` in its stem (`ending`: a word ending with it). Every
 * occurrence is tried: where lower-casing moved characters, the stem is the whole name.
 */
function followsWord(place: NamePlace, first: string, how: PairMatch['first']): boolean {
  const lower = place.stem.toLowerCase();
  let previous: string | undefined;
  TOKEN.lastIndex = 0;
  for (let m = TOKEN.exec(lower); m; m = TOKEN.exec(lower)) {
    if (m[0] === place.value && previous !== undefined && (how === 'whole' ? previous === first : previous.endsWith(first))) return true;
    previous = m[0];
  }
  return false;
}

/** `resource · :name-gen=<token> | :name-pair=<pair> · namespace · anchor · stem`. */
function placeEntry(resource: string, namespace: string, p: NamePlace): string {
  return `${resource}${SEP}${p.kind === 'generated' ? GENERATED_ENTRY : PAIR_ENTRY}${p.value}${SEP}${namespace}${SEP}${p.anchor}${SEP}${p.stem}`;
}

/**
 * Where a token's inside entries start: a word's at its second character; a generated token's at
 * its third, as a generated needle one character in is found by the tokens starting with it after
 * any one character (matchingTokens), so a ten-character hash, the commonest, has none.
 */
function insideStart(token: string): number {
  return isWord(token) ? 1 : 2;
}

/** Where a token's inside entries stop: every suffix of a word, a generated token's down to GENERATED_INSIDE_MIN characters (shorter needles are not looked up in it). */
function insideEnd(token: string): number {
  return isWord(token) ? token.length - 1 : token.length - GENERATED_INSIDE_MIN;
}

/** `resource · :name-inside=<suffix> · <token>`. */
function insideEntry(resource: string, suffix: string, token: string): Buffer {
  return Buffer.from(`${resource}${SEP}${INSIDE_ENTRY}${suffix}${SEP}${token}`);
}

/** Ends the range of every key starting with `prefix`: its last byte one higher. */
function rangeEnd(prefix: Buffer): Buffer {
  const end = Buffer.from(prefix);
  end[end.length - 1]! += 1;
  return end;
}
