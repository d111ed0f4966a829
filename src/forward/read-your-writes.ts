/**
 * The last write each caller made per resource and cluster, so that caller's next read waits for
 * the cache to catch up with it (bounded): a client that writes and then reads sees its write,
 * as it would talking to one apiserver. Entries expire; the map stays small.
 */
const TTL_MS = 30_000;
const MAX_CALLERS = 10_000;

interface CallerWrites {
  until: number;
  /** resource → cluster → the member RV of the caller's last write there. */
  rvs: Map<string, Record<string, string>>;
}

export class WriteTracker {
  private readonly callers = new Map<string, CallerWrites>();

  record(caller: string, resource: string, cluster: string, rv: string): void {
    const now = Date.now();
    let c = this.callers.get(caller);
    if (!c || c.until < now) {
      if (this.callers.size >= MAX_CALLERS) this.sweep(now);
      c = { until: 0, rvs: new Map() };
      this.callers.set(caller, c);
    }
    c.until = now + TTL_MS;
    const byCluster = c.rvs.get(resource) ?? {};
    byCluster[cluster] = rv;
    c.rvs.set(resource, byCluster);
  }

  /** The RVs a read of `resource` by `caller` should wait for, if it wrote recently. */
  pending(caller: string, resource: string): Record<string, string> | undefined {
    const c = this.callers.get(caller);
    if (!c || c.until < Date.now()) return undefined;
    return c.rvs.get(resource);
  }

  private sweep(now: number): void {
    for (const [k, c] of this.callers) if (c.until < now) this.callers.delete(k);
    // Still full of live callers: drop the oldest entry rather than grow without bound.
    if (this.callers.size >= MAX_CALLERS) this.callers.delete(this.callers.keys().next().value!);
  }
}
