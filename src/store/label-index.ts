import type { Database } from 'lmdb';
import type { Databases } from './environment.js';
import { AFTER_SEP, KEY_SEP as SEP, PRESENT } from './keys.js';
import { decodeMeta, indexEntries } from './meta-record.js';
import type { Snapshot } from './types.js';

const SEP_BYTE = SEP.charCodeAt(0);

/**
 * The label index (labelIndex): label and indexed-field selectors read one range of it instead
 * of every object of a resource. A commit keeps it in step with the objects in the same
 * transaction; what an object was indexed under before is worked out from its previous meta
 * record, so the index stores nothing else.
 */
export class LabelIndex {
  private readonly labelIndex: Database<Buffer, Buffer>;
  private readonly keys = new EntryKeys();

  constructor(dbs: Pick<Databases, 'labelIndex'>) {
    this.labelIndex = dbs.labelIndex;
  }

  /**
   * Brings the label index of one object from what it held to `labels` (Change.labels). What it
   * held comes from this transaction's earlier writes, else from the stored meta record, which
   * carries the labels and fields the entries were made from. A `fresh` object held nothing
   * (CommitOptions.fresh), and nothing else in its transaction touches it.
   */
  reindex(resource: string, key: string, labels: string, fresh: boolean, storedMeta: Buffer | undefined): void {
    const old = fresh || !storedMeta ? '' : indexEntries(decodeMeta(storedMeta));
    if (old === labels) return;
    const keys = this.keys;
    keys.forObject(resource, key);
    if (old === '') {
      // A new object, the usual case of a first list: no arrays to diff.
      keys.eachEntryOf(labels, (entry) => this.labelIndex.put(entry, PRESENT));
      return;
    }
    const before = old.split(SEP);
    const after = labels === '' ? [] : labels.split(SEP);
    for (const l of before) if (!after.includes(l)) this.labelIndex.remove(keys.entry(l));
    for (const l of after) if (!before.includes(l)) this.labelIndex.put(keys.entry(l), PRESENT);
  }

  /** The keys of a resource's objects labelled key=value, in key order. */
  *keysLabelled(resource: string, label: string, value: string, snapshot?: Snapshot): Generator<string> {
    const range = `${resource}${SEP}${label}=${value}`;
    const start = Buffer.from(range + SEP);
    // Entries hold the object key from its first separator on.
    const from = start.length - 1;
    for (const k of this.labelIndex.getKeys({ start, end: Buffer.from(range + AFTER_SEP), transaction: snapshot })) {
      yield resource + k.toString('utf8', from);
    }
  }

  /**
   * The keys of a resource's objects whose `label` value is `from` or above and below `to` (text
   * order; either open), in value order, then key order within a value.
   */
  *keysInRange(resource: string, label: string, from: string | undefined, to: string | undefined, snapshot?: Snapshot): Generator<string> {
    const at = `${resource}${SEP}${label}=`;
    const start = Buffer.from(at + (from ?? ''));
    // An entry is `<value><SEP><key less its resource>`: values below `to` sort below `to` itself.
    const end = to === undefined ? Buffer.from(`${resource}${SEP}${label}>`) : Buffer.from(at + to);
    for (const k of this.labelIndex.getKeys({ start, end, transaction: snapshot })) {
      const s = k.toString('utf8');
      yield resource + s.slice(s.indexOf(SEP, at.length));
    }
  }

  /** Whether some object of a resource has a value of this label (or indexed field) starting with `prefix`: one probe. */
  hasValuePrefixed(resource: string, label: string, prefix: string, snapshot?: Snapshot): boolean {
    const start = Buffer.from(`${resource}${SEP}${label}=${prefix}`);
    // Every value starting with `prefix` sorts below the prefix with its last byte one higher.
    const end = Buffer.from(start);
    end[end.length - 1]! += 1;
    for (const _ of this.labelIndex.getKeys({ start, end, limit: 1, transaction: snapshot })) return true;
    return false;
  }

  /** Whether the object at `objectKey` is labelled key=value (or has that indexed field value). */
  isLabelled(resource: string, label: string, value: string, objectKey: string, snapshot?: Snapshot): boolean {
    const entry = Buffer.from(`${resource}${SEP}${label}=${value}${objectKey.slice(resource.length)}`);
    return this.labelIndex.get(entry, { transaction: snapshot }) !== undefined;
  }
}

/**
 * An object's label index keys (`resource · entry · object key less its resource`), written into
 * one reused buffer: lmdb-js copies a key as it is put, so no string or Buffer is made per entry
 * but the view handed to it: a bench pod has 13 entries, each a joined string and a Buffer of it
 * before, on the main thread of a first sync.
 */
class EntryKeys {
  private buf = Buffer.allocUnsafe(4096);
  /** Where the key being built starts, and where its entry goes (after the resource's prefix). */
  private keyAt = 0;
  private entryAt = 0;
  /** Where the object's key less its resource was written, and its length. */
  private suffixAt = 0;
  private suffixLength = 0;

  /** Prepares the keys of the object at `key` (its objectKey, which starts with `resource`). */
  forObject(resource: string, key: string): void {
    // Room for the worst case: every character three bytes in UTF-8.
    const need = 3 * (key.length + resource.length + 1) + 64;
    if (this.buf.length < need) this.buf = Buffer.allocUnsafe(2 * need);
    const b = this.buf;
    // The object key first: what follows its resource is every key's suffix. Then the keys' start.
    const written = b.write(key, 0);
    const resourceBytes = b.write(resource, written);
    this.suffixAt = resourceBytes;
    this.suffixLength = written - resourceBytes;
    this.keyAt = written;
    this.entryAt = written + resourceBytes;
    b[this.entryAt++] = SEP_BYTE;
  }

  /** The key of one entry (`key=value`) of the prepared object. */
  entry(entry: string): Buffer {
    this.reserve(3 * entry.length);
    return this.finish(this.entryAt + this.buf.write(entry, this.entryAt));
  }

  /** Calls `put` with the key of each entry of `entries` (Change.labels: entries joined by KEY_SEP). */
  eachEntryOf(entries: string, put: (key: Buffer) => void): void {
    if (entries === '') return;
    this.reserve(2 * 3 * entries.length);
    const b = this.buf;
    // The entries as bytes, after the room one key of them takes; KEY_SEP is one byte in UTF-8,
    // and no byte of a longer character.
    const at = this.entryAt + 3 * entries.length + this.suffixLength;
    const end = at + b.write(entries, at);
    for (let from = at; from < end; ) {
      let to = from;
      while (to < end && b[to] !== SEP_BYTE) to++;
      b.copyWithin(this.entryAt, from, to);
      put(this.finish(this.entryAt + to - from));
      from = to + 1;
    }
  }

  private reserve(bytes: number): void {
    const need = this.entryAt + bytes + this.suffixLength + 64;
    if (this.buf.length >= need) return;
    const grown = Buffer.allocUnsafe(2 * need);
    this.buf.copy(grown, 0, 0, this.entryAt);
    this.buf = grown;
  }

  /** Appends the object's suffix after the entry ending at `end`; the key from its start. */
  private finish(end: number): Buffer {
    this.buf.copyWithin(end, this.suffixAt, this.suffixAt + this.suffixLength);
    return this.buf.subarray(this.keyAt, end + this.suffixLength);
  }
}
