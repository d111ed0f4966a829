import { randomBytes } from 'node:crypto';
import type { Snapshot, Store } from '../store/store.js';

/**
 * The read snapshots behind continue tokens, so every page of a paged list reads the same state.
 * A snapshot lives `ttlMs` after its last use, and at most `max` are kept (oldest go first):
 * long-lived LMDB readers hold on to old pages, so they must be bounded. A token whose snapshot is
 * gone gets 410 with a fresh token, as the apiserver does when etcd compacted its revision.
 */
interface Held {
  snapshot: Snapshot;
  lastUsed: number;
}

export class SnapshotRegistry {
  private readonly held = new Map<string, Held>();
  private readonly sweeper: NodeJS.Timeout;

  constructor(
    private readonly store: Store,
    private readonly ttlMs = 60_000,
    private readonly max = 64,
  ) {
    this.sweeper = setInterval(() => this.sweep(), Math.min(ttlMs, 10_000));
    this.sweeper.unref();
  }

  create(): { id: string; snapshot: Snapshot } {
    const id = randomBytes(9).toString('base64url');
    const snapshot = this.store.snapshot();
    this.held.set(id, { snapshot, lastUsed: Date.now() });
    while (this.held.size > this.max) {
      const [oldest] = this.held.keys();
      this.release(oldest!);
    }
    return { id, snapshot };
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
