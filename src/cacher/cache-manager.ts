import { setMaxListeners } from 'node:events';
import type { ClusterConfig, FleetConfig } from '../registry/fleet-config.js';
import { selectClusters } from '../registry/select-clusters.js';
import type { MemberClient } from '../members/member-client.js';
import type { MemberHeartbeat } from '../members/heartbeat.js';
import { gvrKey, type ResourceInfo } from '../api/resource-info.js';
import type { Store } from '../store/store.js';
import { IngestPool } from '../ingest/pool.js';
import { Semaphore } from '../util/semaphore.js';
import { ResourceCacher } from './cacher.js';
import type { CacherStatus } from './cacher-status.js';
import { DeferredLog, type StructuredLog } from '../util/structured-log.js';
import { MemberProgress, type MemberAnswer, type ProgressScope } from './member-progress.js';
import { FreshReads, memberRevision, type FreshReadCounts, type Unconfirmed } from './fresh-reads.js';
import { DEFERRED_LOG_LINES } from '../registry/defaults.js';
import type { CachedResource, CacheHealth, FleetMembers, ResourceCatalog, StaleCluster } from './cache-roles.js';
import { cachedRules, ruleKey, scopeId, wantedScopes } from './cache-scopes.js';
import { MemberSet } from './member-set.js';
import { ResourceDiscovery } from './resource-discovery.js';

/**
 * Keeps the running cachers equal to what the fleet configuration asks for (cache-scopes.ts): one
 * cacher per (cluster, resource[, namespace]), over the members (member-set.ts) and the resources'
 * kinds (resource-discovery.ts). `apply` moves from one configuration to the next by starting and
 * stopping only the cachers whose scope appeared or disappeared (or whose cluster's connection
 * changed); every other cacher, and its watch, is left alone. It is also the one place that sees
 * every cacher and member at once, so it plays the roles the layers above read the fleet through
 * (cache-roles.ts): each of those answers is a few lines over the maps it owns.
 */

interface CacherEntry {
  cacher: ResourceCacher;
  cluster: string;
  resource: string;
  namespace?: string;
}

export interface ApplyResult {
  started: string[];
  stopped: string[];
}

export class CacheManager implements FleetMembers, ResourceCatalog, CacheHealth {
  private config!: FleetConfig;
  private readonly resources = new Map<string, CachedResource>();
  private readonly cachers = new Map<string, CacherEntry>();
  private readonly pool = new IngestPool();
  /** The process's list-page budget, sized by the first configuration (a reload keeps it). */
  private pageSlots?: Semaphore;
  private readonly abort = abortForEach();
  private readonly members: MemberSet;
  private readonly discovery: ResourceDiscovery;
  private applying: Promise<unknown> = Promise.resolve();
  /** The resources the configuration asks to serve (RBAC objects are cached for authorization besides). */
  private served = new Set<string>();
  /** Members found to be new clusters, while their cachers list them again: why. */
  private readonly rewrites = new Map<string, string>();
  /** What cachers and heartbeats log through: the logger set later (useLog), as they start before the server. */
  private readonly logs = new DeferredLog(DEFERRED_LOG_LINES);
  private readonly labelListeners = new Set<(clusters: readonly string[]) => void>();

  constructor(private readonly store: Store) {
    this.members = new MemberSet(store, this.logs, this.abort.signal, (cluster, reason) => this.relistMember(cluster, reason));
    this.discovery = new ResourceDiscovery(store, (cluster) => this.member(cluster), (key, info) => {
      const entry = this.resources.get(key);
      if (entry) entry.info = info;
    }, this.abort.signal);
  }

  useLog(log: StructuredLog): void {
    this.logs.use(log);
  }

  /** Moves to `config`; concurrent calls are applied one after another. */
  apply(config: FleetConfig): Promise<ApplyResult> {
    const next = this.applying.then(() => this.applyNow(config));
    this.applying = next.catch(() => undefined);
    return next;
  }

  private async applyNow(config: FleetConfig): Promise<ApplyResult> {
    const started: string[] = [];
    const stopped: string[] = [];
    this.config = config;

    // Members: drop removed ones and ones whose connection changed (their cachers go with them).
    const relabelled = await this.members.apply(config.clusters, config.options.maxInflightListsPerMember, config.options.memberHeartbeatMilliseconds, async (name, removed) => {
      for (const [id, e] of this.cachers) {
        if (e.cluster === name) {
          await this.stopCacher(id, e, removed);
          stopped.push(id);
        }
      }
    });

    // Resources and scopes wanted now.
    const { scopes: desired, rules: rulesByKey } = wantedScopes(config, (key) => this.resources.get(key)?.info.namespaced);
    this.served = new Set(config.resources.map((r) => gvrKey(r)));
    for (const [id, e] of this.cachers) {
      if (!desired.has(id)) {
        await this.stopCacher(id, e, true);
        stopped.push(id);
      }
    }
    for (const key of [...this.resources.keys()]) {
      if (!rulesByKey.has(key)) this.resources.delete(key);
    }

    // Start what is missing. A resource's kind and scope come from discovery, which may wait for
    // members to come up; that happens in the background so one slow member delays nobody else.
    for (const [key, rule] of rulesByKey) {
      const clusters = selectClusters(rule, config.clusters).map((c) => c.name);
      const namespaces = rule.namespaces?.length ? [...rule.namespaces] : undefined;
      const known = this.resources.get(key);
      if (known) Object.assign(known, { clusters, namespaces: known.info.namespaced ? namespaces : undefined });
      const scopes = [...desired].filter(([id, d]) => d.rule === rule && !this.cachers.has(id));
      if (scopes.length === 0) continue;
      started.push(...scopes.map(([id]) => id));
      const info = known ? Promise.resolve(known.info) : this.discovery.infoOf(key, rule, clusters);
      void info.then((info) => {
        if (!info || this.abort.signal.aborted || this.config !== config) return;
        const entry = this.resources.get(key) ?? { info, clusters, selectableFields: (cluster: string) => this.crdFieldsOf(key, cluster) };
        Object.assign(entry, { clusters, namespaces: info.namespaced ? namespaces : undefined });
        this.resources.set(key, entry);
        for (const [, d] of scopes) {
          const namespace = info.namespaced ? d.namespace : undefined;
          const id = scopeId(d.cluster, key, namespace);
          if (!this.cachers.has(id)) this.startCacher(id, d.cluster, info, namespace);
        }
      });
    }
    if (relabelled.length > 0) for (const l of this.labelListeners) l(relabelled);
    return { started, stopped };
  }

  /** Lists again the state of every cacher of a member whose history was rewritten; resolves when all have. */
  private async relistMember(cluster: string, reason: string): Promise<void> {
    // A cacher of the member started meanwhile (its resource discovered later) lists again too.
    this.rewrites.set(cluster, reason);
    try {
      const cachers = [...this.cachers.values()].filter((e) => e.cluster === cluster).map((e) => e.cacher);
      await Promise.all(cachers.map((c) => {
        const before = c.getStatus().historyResets;
        c.rewriteHistory(reason);
        return c.whenListedAgain(before);
      }));
    } finally {
      this.rewrites.delete(cluster);
    }
  }

  /** The CRD fields every cacher of a member's copy of a resource (one a namespace, or one in all) has values of. */
  private crdFieldsOf(resource: string, cluster: string): readonly string[] {
    let common: readonly string[] | undefined;
    for (const e of this.cachers.values()) {
      if (e.resource !== resource || e.cluster !== cluster) continue;
      const fields = e.cacher.selectableFields();
      common = common === undefined ? fields : common.filter((f) => fields.includes(f));
    }
    return common ?? [];
  }

  private startCacher(id: string, cluster: string, info: ResourceInfo, namespace?: string): void {
    const m = this.members.get(cluster);
    if (!m) return;
    const cacher = new ResourceCacher(m.client, info, this.store, {
      pageSize: this.config.options.listPageSize,
      dropManagedFields: this.config.options.dropManagedFields,
      namespace,
      pool: this.pool,
      listSlots: m.listSlots,
      pageSlots: (this.pageSlots ??= new Semaphore(this.config.options.maxInflightListPages)),
      log: this.logs,
    });
    this.cachers.set(id, { cacher, cluster, resource: gvrKey(info), namespace });
    const rewritten = this.rewrites.get(cluster);
    if (rewritten !== undefined) cacher.rewriteHistory(rewritten);
    cacher.start();
  }

  private async stopCacher(id: string, e: CacherEntry, forget: boolean): Promise<void> {
    this.cachers.delete(id);
    await e.cacher.stop();
    // A scope no longer configured must not linger in reads or in the data directory.
    if (forget) await this.store.dropScope({ cluster: e.cluster, resource: e.resource, namespace: e.namespace });
  }

  isSynced(): boolean {
    if (!this.config) return false;
    // Cheapest first: while a fleet syncs, some cacher has not listed yet, and /readyz is polled
    // often (every 50 ms by the bench, across 500 cachers at 100 clusters).
    for (const e of this.cachers.values()) if (!e.cacher.isSynced()) return false;
    const expected = new Set<string>();
    for (const rule of cachedRules(this.config)) {
      const key = ruleKey(rule);
      if (!this.resources.has(key)) return false;
      for (const c of selectClusters(rule, this.config.clusters)) expected.add(c.name + '/' + key);
    }
    const running = new Set([...this.cachers.values()].map((e) => `${e.cluster}/${e.resource}`));
    for (const x of expected) if (!running.has(x)) return false;
    return true;
  }

  resource(key: string): CachedResource | undefined {
    return this.served.has(key) ? this.resources.get(key) : undefined;
  }

  cachedResources(): CachedResource[] {
    return [...this.resources].filter(([key]) => this.served.has(key)).map(([, r]) => r);
  }

  /** How flotilla decides what callers may read of a member's cache (`rbac` for one it does not know). */
  authorizationMode(cluster: string): ClusterConfig['authorization'] {
    return this.members.get(cluster)?.config.authorization ?? 'rbac';
  }

  clusterNames(): string[] {
    return this.members.clusterNames();
  }

  member(name: string): MemberClient | undefined {
    return this.members.get(name)?.client;
  }

  clusterLabels(name: string): Readonly<Record<string, string>> {
    return this.members.clusterLabels(name);
  }

  onLabelsChange(listener: (clusters: readonly string[]) => void): () => void {
    this.labelListeners.add(listener);
    return () => this.labelListeners.delete(listener);
  }

  /**
   * Clusters whose copy of a resource may be out of date, so reads serve what was cached last:
   * their cacher is not watching (the member is unreachable, or failing), or the member is silent
   * (its watch may still look open while nothing answers on it).
   */
  staleClusters(resource: string): StaleCluster[] {
    const stale = new Map<string, StaleCluster>();
    const clusters = new Set<string>();
    for (const e of this.cachers.values()) {
      if (e.resource !== resource) continue;
      clusters.add(e.cluster);
      const s = e.cacher.getStatus();
      if (s.rewriting !== undefined) stale.set(e.cluster, { cluster: e.cluster, rewritten: s.rewriting });
      else if (s.synced && s.phase !== 'watching' && s.lastError && !stale.has(e.cluster)) stale.set(e.cluster, { cluster: e.cluster, since: s.lastEventAt, error: s.lastError });
    }
    // A failing cacher says more (its error, its last event) than the heartbeat does.
    for (const cluster of clusters) {
      const silence = stale.has(cluster) ? undefined : this.members.silence(cluster);
      if (silence) stale.set(cluster, { cluster, silentForMs: silence.forMs, ...(silence.error ? { error: silence.error } : {}) });
    }
    return [...stale.values()];
  }

  /** Why flotilla's own credentials cannot keep a member's copy of a (cluster-wide) resource, while the member refuses them. */
  rightsShortfall(cluster: string, resource: string): string | undefined {
    return this.cachers.get(scopeId(cluster, resource))?.cacher.rightsShortfall();
  }

  /** Whether a member has gone silent (see Heartbeat): a request to it now would likely hang. */
  isSilent(cluster: string): boolean {
    return this.members.silence(cluster) !== undefined;
  }

  heartbeats(): MemberHeartbeat[] {
    return this.members.heartbeats();
  }

  status(): CacherStatus[] {
    return [...this.cachers.values()].map((e) => e.cacher.getStatus());
  }

  private memberProgress?: MemberProgress;
  private freshReads?: FreshReads;

  /** The scopes of a resource (of one cluster, when given) for questions to their members. */
  private progressScopes(resource: string, cluster?: string): ProgressScope[] {
    return [...this.cachers.values()].filter((e) => e.resource === resource && (cluster === undefined || e.cluster === cluster)).map((e) => e.cacher.progressScope());
  }

  reachResourceVersion(resource: string, rvs: Record<string, string>, timeoutMs: number): Promise<boolean> {
    this.memberProgress ??= new MemberProgress(this.abort.signal);
    return this.memberProgress.reach(this.store, resource, this.progressScopes(resource), rvs, timeoutMs);
  }

  memberQuietBetween(resource: string, cluster: string, from: string, to: string): Promise<MemberAnswer['kind']> {
    this.memberProgress ??= new MemberProgress(this.abort.signal);
    return this.memberProgress.quietBetween(this.progressScopes(resource, cluster), from, to);
  }

  confirmFresh(resource: string, clusters: readonly string[], timeoutMs: number): Promise<Unconfirmed[]> {
    // A member whose copy is stale already (failing, silent, being listed again) is named as such: nothing to wait for.
    const stale = new Set(this.staleClusters(resource).map((s) => s.cluster));
    return this.freshReadsNow().confirm(resource, this.progressScopes(resource), clusters.filter((c) => !stale.has(c)), timeoutMs);
  }

  freshReadStats(): FreshReadCounts {
    return this.freshReadsNow().stats();
  }

  private freshReadsNow(): FreshReads {
    return (this.freshReads ??= new FreshReads({
      revision: memberRevision,
      latestRVs: (resource) => this.store.latestRVs(resource),
      waitUntil: (resource, reached, timeoutMs) => this.store.waitUntil(resource, reached, timeoutMs),
      settle: (resource, scopes, rvs, timeoutMs) => {
        this.memberProgress ??= new MemberProgress(this.abort.signal);
        return this.memberProgress.settle(this.store, resource, scopes, rvs, timeoutMs);
      },
      silent: (cluster) => this.isSilent(cluster),
    }, this.abort.signal));
  }

  async stop(): Promise<void> {
    this.abort.abort();
    this.members.stopProbes();
    await this.applying;
    await Promise.all([...this.cachers.values()].map((e) => e.cacher.stop()));
    await this.discovery.settled();
    this.members.close();
    await this.pool.close();
  }
}

/** One stop for all: every resource's discovery and backoff listens to it at once, more than Node's default warning count of 10. */
function abortForEach(): AbortController {
  const abort = new AbortController();
  setMaxListeners(0, abort.signal);
  return abort;
}
