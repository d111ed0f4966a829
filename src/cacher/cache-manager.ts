import { setTimeout as sleep } from 'node:timers/promises';
import type { FleetConfig, ResourceRule } from '../registry/config.js';
import { selectClusters } from '../registry/config.js';
import { MemberClient } from '../members/member-client.js';
import { discoverResource, gvrKey, type ResourceInfo } from '../resources/resource-info.js';
import type { Store } from '../store/store.js';
import { IngestPool } from '../ingest/pool.js';
import { Semaphore } from '../util/semaphore.js';
import { ResourceCacher, type CacherStatus } from './cacher.js';

/**
 * Turns the fleet configuration into running cachers: one member client per cluster, one
 * ResourceInfo per cached resource (learned from the first member that serves it), and one cacher
 * per (cluster, resource, namespace) the rules select.
 */
export interface CachedResource {
  info: ResourceInfo;
  /** The clusters whose copy of this resource flotilla caches. */
  clusters: string[];
}

export class CacheManager {
  private readonly members = new Map<string, MemberClient>();
  private readonly listSlots = new Map<string, Semaphore>();
  private readonly pool = new IngestPool();
  private readonly resources = new Map<string, CachedResource>();
  private readonly cachers: ResourceCacher[] = [];
  private readonly abort = new AbortController();
  private readonly pending: Promise<void>[] = [];

  constructor(
    private readonly config: FleetConfig,
    private readonly store: Store,
  ) {}

  async start(): Promise<void> {
    for (const c of this.config.clusters) {
      this.members.set(c.name, await MemberClient.create(c));
      this.listSlots.set(c.name, new Semaphore(this.config.options.maxInflightListsPerMember));
    }
    for (const rule of this.config.resources) this.pending.push(this.startRule(rule));
  }

  private async startRule(rule: ResourceRule): Promise<void> {
    const clusters = selectClusters(rule, this.config.clusters).map((c) => c.name);
    const gvr = { group: rule.group ?? '', version: rule.version, resource: rule.resource };
    // Members may still be starting, or down: keep asking until one of them describes the resource.
    let info: ResourceInfo | undefined;
    for (let attempt = 0; !info && !this.abort.signal.aborted; attempt++) {
      for (const name of clusters) {
        try {
          info = await discoverResource(this.members.get(name)!, gvr, this.abort.signal);
          break;
        } catch {
          // try the next member
        }
      }
      if (!info) await sleep(Math.min(10_000, 500 * 2 ** attempt), undefined, { signal: this.abort.signal }).catch(() => undefined);
    }
    if (!info) return;
    this.resources.set(gvrKey(info), { info, clusters });
    const namespaces = info.namespaced && rule.namespaces?.length ? rule.namespaces : [undefined];
    for (const cluster of clusters) {
      for (const namespace of namespaces) {
        const cacher = new ResourceCacher(this.members.get(cluster)!, info, this.store, {
          pageSize: this.config.options.listPageSize,
          dropManagedFields: this.config.options.dropManagedFields,
          namespace,
          pool: this.pool,
          listSlots: this.listSlots.get(cluster)!,
        });
        this.cachers.push(cacher);
        cacher.start();
      }
    }
  }

  /** Resolves once every configured resource is known and every cacher has listed once. */
  async whenSynced(): Promise<void> {
    await Promise.all(this.pending);
    await Promise.all(this.cachers.map((c) => c.whenSynced()));
  }

  isSynced(): boolean {
    return this.resources.size === this.config.resources.length && this.cachers.every((c) => c.getStatus().synced);
  }

  resource(key: string): CachedResource | undefined {
    return this.resources.get(key);
  }

  cachedResources(): CachedResource[] {
    return [...this.resources.values()];
  }

  clusterNames(): string[] {
    return [...this.members.keys()];
  }

  member(name: string): MemberClient | undefined {
    return this.members.get(name);
  }

  status(): CacherStatus[] {
    return this.cachers.map((c) => c.getStatus());
  }

  async stop(): Promise<void> {
    this.abort.abort();
    await Promise.all(this.cachers.map((c) => c.stop()));
    await Promise.allSettled(this.pending);
    for (const m of this.members.values()) m.close();
    await this.pool.close();
  }
}
