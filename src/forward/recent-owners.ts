import { RECENT_OWNERS_MAX, RECENT_OWNER_TTL_MS } from '../registry/defaults.js';

/**
 * Where a caller's named objects were lately created or found, so that its next write to one goes
 * there at once: the cache may not hold a create yet (it follows the member by watch), and asking
 * every member for an uncached object on each write would multiply a controller's requests by
 * the fleet's size. Per caller, since what a caller finds depends on what it may get. Entries
 * expire; a route that turns out wrong costs one member's 404, then the members are asked again.
 */

export interface ObjectRef {
  /** gvrKey of the resource. */
  resource: string;
  namespace?: string;
  name: string;
}

export class RecentOwners {
  private readonly entries = new Map<string, { cluster: string; until: number }>();

  remember(caller: string, ref: ObjectRef, cluster: string): void {
    const key = keyOf(caller, ref);
    this.entries.delete(key);
    if (this.entries.size >= RECENT_OWNERS_MAX) this.sweep();
    this.entries.set(key, { cluster, until: Date.now() + RECENT_OWNER_TTL_MS });
  }

  owner(caller: string, ref: ObjectRef): string | undefined {
    const key = keyOf(caller, ref);
    const e = this.entries.get(key);
    if (!e) return undefined;
    if (e.until < Date.now()) {
      this.entries.delete(key);
      return undefined;
    }
    return e.cluster;
  }

  forget(caller: string, ref: ObjectRef): void {
    this.entries.delete(keyOf(caller, ref));
  }

  private sweep(): void {
    const now = Date.now();
    for (const [k, e] of this.entries) if (e.until < now) this.entries.delete(k);
    // Oldest first (insertion order): still full, the oldest goes.
    if (this.entries.size >= RECENT_OWNERS_MAX) this.entries.delete(this.entries.keys().next().value!);
  }
}

function keyOf(caller: string, ref: ObjectRef): string {
  return JSON.stringify([caller, ref.resource, ref.namespace ?? '', ref.name]);
}
