import { READ_YOUR_WRITES_MAX_CALLERS, READ_YOUR_WRITES_MAX_DELETED, READ_YOUR_WRITES_TTL_MS } from '../registry/defaults.js';

/**
 * The last write each caller made per resource and cluster, so that caller's next read waits for
 * the cache to catch up with it (bounded): a client that writes and then reads sees its write,
 * as it would talking to one apiserver. A delete has no resourceVersion of its own to wait for
 * (its answer is the object as it was): what the caller deleted is kept instead, and its next
 * read waits until the cache no longer holds it. Entries expire; the map stays small.
 */

export interface DeletedObject {
  cluster: string;
  namespace: string;
  name: string;
}

interface CallerWrites {
  until: number;
  /** resource → cluster → the member RV of the caller's last write there. */
  rvs: Map<string, Record<string, string>>;
  /** resource → objects the caller deleted, by `cluster/namespace/name`. */
  deleted: Map<string, Map<string, DeletedObject>>;
}

export class WriteTracker {
  private readonly callers = new Map<string, CallerWrites>();

  record(caller: string, resource: string, cluster: string, rv: string): void {
    const c = this.entry(caller);
    const byCluster = c.rvs.get(resource) ?? {};
    byCluster[cluster] = rv;
    c.rvs.set(resource, byCluster);
  }

  /** The caller deleted these objects. */
  recordDeleted(caller: string, resource: string, objects: readonly DeletedObject[]): void {
    const c = this.entry(caller);
    const set = c.deleted.get(resource) ?? new Map<string, DeletedObject>();
    if (set.size + objects.length > READ_YOUR_WRITES_MAX_DELETED) return;
    for (const o of objects) set.set(keyOf(o), o);
    c.deleted.set(resource, set);
  }

  /** Made again, or gone from the cache: reads need not wait for it any more. */
  forgetDeleted(caller: string, resource: string, object: DeletedObject): void {
    this.callers.get(caller)?.deleted.get(resource)?.delete(keyOf(object));
  }

  /** The RVs a read of `resource` by `caller` should wait for, if it wrote recently. */
  pending(caller: string, resource: string): Record<string, string> | undefined {
    return this.live(caller)?.rvs.get(resource);
  }

  /** What the caller recently deleted of `resource`, that its reads should not show. */
  deleted(caller: string, resource: string): DeletedObject[] | undefined {
    const set = this.live(caller)?.deleted.get(resource);
    return set && set.size > 0 ? [...set.values()] : undefined;
  }

  private live(caller: string): CallerWrites | undefined {
    const c = this.callers.get(caller);
    return c && c.until >= Date.now() ? c : undefined;
  }

  private entry(caller: string): CallerWrites {
    const now = Date.now();
    let c = this.callers.get(caller);
    if (!c || c.until < now) {
      if (this.callers.size >= READ_YOUR_WRITES_MAX_CALLERS) this.sweep(now);
      c = { until: 0, rvs: new Map(), deleted: new Map() };
      this.callers.set(caller, c);
    }
    c.until = now + READ_YOUR_WRITES_TTL_MS;
    return c;
  }

  private sweep(now: number): void {
    for (const [k, c] of this.callers) if (c.until < now) this.callers.delete(k);
    // Still full of live callers: drop the oldest entry rather than grow without bound.
    if (this.callers.size >= READ_YOUR_WRITES_MAX_CALLERS) this.callers.delete(this.callers.keys().next().value!);
  }
}

function keyOf(o: DeletedObject): string {
  return `${o.cluster}/${o.namespace}/${o.name}`;
}
