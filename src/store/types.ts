import type { Transaction } from 'lmdb';
import type { TableColumn } from '../api/table.js';

/**
 * The store's vocabulary, shared by the store's parts and its callers. It lives apart from
 * store.ts, which re-exports it, so that the parts can name it without importing the facade that
 * imports them (a cycle the layering check refuses).
 */

/** A scope's sync record: how far its stored objects go, and what the member printed them with. */
export interface SyncRecord {
  /** The member RV the stored objects of this (cluster, resource) are complete up to. */
  rv: string;
  columns?: TableColumn[];
  listedAt?: string;
  /** The fields of a custom resource its CRD made selectable when the stored objects were ingested (their meta records hold their values). */
  selectableFields?: string[];
}

export interface StoredEntry {
  cluster: string;
  namespace: string;
  name: string;
  bytes: Buffer;
  /** The entry's store key, where a continue token resumes a paged list. */
  key: string;
}

/** A read snapshot: every read given it sees the store as it was when it was taken. */
export type Snapshot = Transaction;

/** What one cacher owns: a resource of one cluster, or one namespace of it. */
export interface CacheScope {
  cluster: string;
  resource: string;
  namespace?: string;
}

export interface ObjectRef {
  namespace: string;
  name: string;
}

export type ChangeType = 'ADDED' | 'MODIFIED' | 'DELETED';

/** One change to one object: its new bytes and meta (for DELETED, its last state). */
export interface Change {
  type: ChangeType;
  namespace: string;
  name: string;
  /** The object's label index entries (`key=value`) joined by KEY_SEP; unused for DELETED. */
  labels?: string;
  /** The member RV of the change (for a reconcile's DELETED, the list RV that noticed it). */
  rv: string;
  bytes: Buffer;
  /**
   * The bytes as the objects database keeps them (StoredForms), when the ingest worker made
   * them; otherwise the store has `bytes` compressed as they are written.
   */
  stored?: Buffer | undefined;
  meta: Buffer;
}

export interface StoreEvent extends Change {
  seq: number;
  cluster: string;
  /**
   * For MODIFIED, the meta record the object had before: a watch whose selection the object
   * enters or leaves sends ADDED or DELETED. Absent from events logged before it was kept.
   */
  prevMeta?: Buffer;
  /** For MODIFIED, the object's bytes before, with prevMeta: what a watch it leaves is sent. */
  prevBytes?: Buffer;
}

export type StoreListener = (events: readonly StoreEvent[]) => void;
