import type { Database } from 'lmdb';
import type { Databases } from './environment.js';
import { AFTER_SEP, KEY_SEP as SEP, PRESENT } from './keys.js';
import { decodeMeta, indexEntries } from './meta-record.js';
import type { Snapshot } from './types.js';

/**
 * The label index (labelIndex): label and indexed-field selectors read one range of it instead
 * of every object of a resource. A commit keeps it in step with the objects in the same
 * transaction; what an object was indexed under before is worked out from its previous meta
 * record, so the index stores nothing else.
 */
export class LabelIndex {
  private readonly labelIndex: Database<Buffer, Buffer>;

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
    const prefix = `${resource}${SEP}`;
    // The object key less its resource, which the entry's own prefix already names.
    const suffix = key.slice(resource.length);
    if (old === '') {
      // A new object, the usual case of a first list: no arrays to diff.
      for (let from = 0; from < labels.length; ) {
        let end = labels.indexOf(SEP, from);
        if (end < 0) end = labels.length;
        this.labelIndex.put(Buffer.from(prefix + labels.slice(from, end) + suffix), PRESENT);
        from = end + 1;
      }
      return;
    }
    const before = old.split(SEP);
    const after = labels === '' ? [] : labels.split(SEP);
    for (const l of before) if (!after.includes(l)) this.labelIndex.remove(Buffer.from(prefix + l + suffix));
    for (const l of after) if (!before.includes(l)) this.labelIndex.put(Buffer.from(prefix + l + suffix), PRESENT);
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
