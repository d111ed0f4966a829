import { setTimeout as sleep } from 'node:timers/promises';
import type { ResourceRule } from '../registry/fleet-config.js';
import type { MemberClient } from '../members/member-client.js';
import { discoverResource } from '../resources/discovery.js';
import type { ResourceInfo } from '../api/resource-info.js';
import type { Store } from '../store/store.js';
import { DISCOVERY_RETRY_BASE_MS, DISCOVERY_RETRY_CAP_MS } from '../registry/defaults.js';

/**
 * A configured resource's kind and scope, learned from the first member whose discovery serves
 * it, retried in the background (members may be starting) until one does, and saved in the store
 * so that a restart while every member is unreachable still serves the cache.
 */
export class ResourceDiscovery {
  /** Discovery still running, keyed by resource: a second ask waits for the same one. */
  private readonly discovering = new Map<string, Promise<ResourceInfo | undefined>>();

  constructor(
    private readonly store: Store,
    private readonly member: (cluster: string) => MemberClient | undefined,
    /** Told what a member's discovery said, to replace what the store said of it. */
    private readonly discovered: (key: string, info: ResourceInfo) => void,
    private readonly signal: AbortSignal,
  ) {}

  /**
   * What discovery said last time (saved in the store), refreshed from a member in the
   * background; else what a member says now.
   */
  infoOf(key: string, rule: ResourceRule, clusters: string[]): Promise<ResourceInfo | undefined> {
    let pending = this.discovering.get(key);
    if (!pending) {
      pending = this.discover(rule, clusters)
        .then(async (info) => {
          if (info) {
            // Kept only for a restart with every member down: on a full volume the answer is used unsaved (a later start discovers again).
            await this.store.saveResourceInfo(key, info).catch(() => undefined);
            this.discovered(key, info);
          }
          return info;
        })
        .finally(() => this.discovering.delete(key));
      this.discovering.set(key, pending);
    }
    const saved = this.store.resourceInfo(key);
    return saved ? Promise.resolve(saved) : pending;
  }

  /** Resolves once no discovery runs (each ends at the signal). */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.discovering.values()]);
  }

  private async discover(rule: ResourceRule, clusters: string[]): Promise<ResourceInfo | undefined> {
    const gvr = { group: rule.group, version: rule.version, resource: rule.resource };
    for (let attempt = 0; !this.signal.aborted; attempt++) {
      for (const name of clusters) {
        const client = this.member(name);
        if (!client) continue;
        try {
          return await discoverResource(client, gvr, this.signal);
        } catch {
          // ask the next member
        }
      }
      await sleep(Math.min(DISCOVERY_RETRY_CAP_MS, DISCOVERY_RETRY_BASE_MS * 2 ** attempt), undefined, { signal: this.signal }).catch(() => undefined);
    }
    return undefined;
  }
}
