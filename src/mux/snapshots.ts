import { randomBytes } from 'node:crypto';
import type { Snapshot, Store } from '../store/store.js';

/**
 * The read snapshots behind continue tokens, so every page of a paged list reads the same state.
 * A snapshot lives `ttlMs` after its last use. Long-lived LMDB readers hold on to old pages, so
 * they are bounded: at most `perOwner` for one caller (its own oldest go first), so that one
 * caller's lists can never expire another's continue tokens, and at most `max` in all (then the
 * oldest of whichever caller holds the most goes). A page whose snapshot is not here is read at
 * its list's RV from the event log instead (list-plan.ts).
 */
interface Held {
  snapshot: Snapshot;
  owner: string;
  lastUsed: number;
}

export class SnapshotRegistry {
  private readonly held = new Map<string, Held>();
  private readonly owners = new Map<string, number>();
  private readonly sweeper: NodeJS.Timeout;

  constructor(
    private readonly store: Store,
    private readonly ttlMs = 60_000,
    private readonly max = 1024,
    private readonly perOwner = 16,
  ) {
    this.sweeper = setInterval(() => this.sweep(), Math.min(ttlMs, 10_000));
    this.sweeper.unref();
  }

  /** A snapshot held for `owner` (who the caller is: the same key for all of one caller's lists). */
  create(owner: string): { id: string; snapshot: Snapshot } {
    if ((this.owners.get(owner) ?? 0) >= this.perOwner) this.releaseOldestOf(owner);
    while (this.held.size >= this.max) this.releaseOldestOf(this.largestOwner());
    const id = randomBytes(9).toString('base64url');
    const snapshot = this.store.snapshot();
    this.held.set(id, { snapshot, owner, lastUsed: Date.now() });
    this.owners.set(owner, (this.owners.get(owner) ?? 0) + 1);
    return { id, snapshot };
  }

  private releaseOldestOf(owner: string): void {
    for (const [id, h] of this.held) {
      if (h.owner === owner) return this.release(id);
    }
  }

  private largestOwner(): string {
    let most = '';
    let count = -1;
    for (const [owner, n] of this.owners) {
      if (n > count) [most, count] = [owner, n];
    }
    return most;
  }

  /** Whether the snapshot is held here (a token another replica issued names one that is not). */
  holds(id: string | undefined): boolean {
    return id !== undefined && this.held.has(id);
  }

  get(id: string): Snapshot | undefined {
    const h = this.held.get(id);
    if (!h) return undefined;
    h.lastUsed = Date.now();
    return h.snapshot;
  }

  release(id: string): void {
    const h = this.held.get(id);
    if (!h) return;
    this.held.delete(id);
    const left = (this.owners.get(h.owner) ?? 1) - 1;
    if (left > 0) this.owners.set(h.owner, left);
    else this.owners.delete(h.owner);
    h.snapshot.done();
  }

  get size(): number {
    return this.held.size;
  }

  private sweep(): void {
    const now = Date.now();
    for (const [id, h] of this.held) if (now - h.lastUsed > this.ttlMs) this.release(id);
  }

  close(): void {
    clearInterval(this.sweeper);
    for (const id of [...this.held.keys()]) this.release(id);
  }
}
