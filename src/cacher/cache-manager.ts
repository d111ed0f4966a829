import { setMaxListeners } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ClusterConfig, FleetConfig, ResourceRule } from '../registry/fleet-config.js';
import { selectClusters } from '../registry/select-clusters.js';
import { MemberClient } from '../members/member-client.js';
import { Heartbeat, type MemberHeartbeat } from '../members/heartbeat.js';
import { discoverResource } from '../resources/discovery.js';
import { NAMESPACES_KEY, gvrKey, type ResourceInfo } from '../api/resource-info.js';
import { RBAC_GROUP, RBAC_RESOURCES } from '../api/rbac.js';
import type { Store } from '../store/store.js';
import { IngestPool } from '../ingest/pool.js';
import { Semaphore } from '../util/semaphore.js';
import { ResourceCacher, type CacherStatus } from './cacher.js';
import { watchIdentity } from './member-identity.js';
import { DeferredLog, type StructuredLog } from '../util/structured-log.js';
import { logMemberChange } from './transitions-log.js';
import { MemberProgress, type MemberAnswer, type ProgressScope } from './member-progress.js';
import { DEFERRED_LOG_LINES, DISCOVERY_RETRY_BASE_MS, DISCOVERY_RETRY_CAP_MS } from '../registry/defaults.js';

/**
 * Keeps the running cachers equal to what the fleet configuration asks for: one member client per
 * cluster, one ResourceInfo per cached resource (learned from the first member that serves it),
 * and one cacher per (cluster, resource[, namespace]). `apply` moves from one configuration to the
 * next by starting and stopping only the cachers whose scope appeared or disappeared (or whose
 * cluster's connection changed); every other cacher, and its watch, is left alone.
 * It is also the one place that sees every cacher and heartbeat at once, so the fleet-wide answers
 * read from them (FleetMembers, ResourceCatalog, CacheHealth: synced, stale clusters, status,
 * progress) are its methods: ~460 lines, each a few lines over the maps it owns.
 */
export interface CachedResource {
  info: ResourceInfo;
  /** The clusters whose copy of this resource flotilla caches. */
  clusters: string[];
  /** The namespaces cached of a namespaced resource, or undefined for all of them. */
  namespaces?: readonly string[];
  /** The fields a member's CRD makes selectable whose values its cached objects carry (none for a built-in resource). */
  selectableFields?(cluster: string): readonly string[];
}

/**
 * Whether a read or write names a cluster this resource is not cached from, or a namespace it is
 * not cached in: the cache cannot answer for it, the members can.
 */
export function outsideCache(resource: CachedResource, target: { cluster?: string; namespace?: string }): boolean {
  if (target.cluster !== undefined && !resource.clusters.includes(target.cluster)) return true;
  return target.namespace !== undefined && resource.namespaces !== undefined && !resource.namespaces.includes(target.namespace);
}

interface Member {
  config: ClusterConfig;
  client: MemberClient;
  listSlots: Semaphore;
  /** Ends the member's identity checks (member-identity.ts) when it leaves the fleet. */
  identity: AbortController;
}

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

function scopeId(cluster: string, resource: string, namespace?: string): string {
  return `${cluster}/${resource}${namespace ? `@${namespace}` : ''}`;
}

/**
 * The configuration's rules, and the RBAC objects of every member whose reads flotilla authorizes
 * by RBAC: all of them, whatever a rule of the configuration restricts (a policy read in part
 * would decide wrongly). They are served only when the configuration asks for them too.
 */
function cachedRules(config: FleetConfig): ResourceRule[] {
  const rbacClusters = config.clusters.filter((c) => c.authorization === 'rbac').map((c) => c.name);
  const rules = config.resources.filter((r) => !(r.group === RBAC_GROUP && (RBAC_RESOURCES as readonly string[]).includes(r.resource) && r.version === 'v1'));
  for (const resource of RBAC_RESOURCES) {
    const asked = config.resources.find((r) => r.group === RBAC_GROUP && r.resource === resource && r.version === 'v1');
    const clusters = new Set([...rbacClusters, ...(asked ? selectClusters(asked, config.clusters).map((c) => c.name) : [])]);
    if (clusters.size > 0) rules.push({ group: RBAC_GROUP, version: 'v1', resource, clusters: [...clusters] });
  }
  return rules;
}

/** What identifies a cluster's connection: a change here means new clients and fresh cachers. */
function connectionOf(c: ClusterConfig): string {
  return JSON.stringify([c.kubeconfig, c.context, c.server, c.caFile, c.tokenFile, c.insecureSkipTLSVerify]);
}

const NO_LABELS: Readonly<Record<string, string>> = Object.freeze({});

/**
 * The roles the cache manager plays for the layers above it. Each reader or forwarder is given
 * only the roles it needs, not the manager: what a part can reach is visible in its options.
 */
export interface FleetMembers {
  clusterNames(): string[];
  member(name: string): MemberClient | undefined;
  /** A member's labels as the configuration has them now (empty for one it does not know). */
  clusterLabels(name: string): Readonly<Record<string, string>>;
}

export interface ResourceCatalog {
  resource(key: string): CachedResource | undefined;
  cachedResources(): CachedResource[];
}

/** A member's namespaces, when they are cached from it; undefined when they are not. */
export function cachedNamespaces(catalog: ResourceCatalog, store: Store, cluster: string): string[] | undefined {
  if (!catalog.resource(NAMESPACES_KEY)?.clusters.includes(cluster)) return undefined;
  return [...store.entries(NAMESPACES_KEY, { cluster })].map((e) => e.name);
}

/**
 * A cluster whose cached copy of a resource may be out of date: its cacher is failing (`since`,
 * `error`), or the member is silent (`silentForMs`, `error` for why its last probe failed).
 */
export interface StaleCluster {
  cluster: string;
  since?: string;
  error?: string;
  silentForMs?: number;
  /** Its history was rewritten (resourceVersions back, a new cluster): why; its state is being listed again. */
  rewritten?: string;
}

export interface CacheHealth {
  isSynced(): boolean;
  status(): CacherStatus[];
  staleClusters(resource: string): StaleCluster[];
  /** Each member's heartbeat: whether it answers, since when it does not. */
  heartbeats(): MemberHeartbeat[];
  /**
   * Resolves true once the cache of `resource` holds each cluster's RV in `rvs`, asking a member
   * whether it holds events up to it when a scope is behind (member-progress.ts); false at `timeoutMs`.
   */
  reachResourceVersion(resource: string, rvs: Record<string, string>, timeoutMs: number): Promise<boolean>;
  /** What `cluster` holds of `resource` in (from, to]: no event (`quiet`), some, its history gone, or not known. */
  memberQuietBetween(resource: string, cluster: string, from: string, to: string): Promise<MemberAnswer['kind']>;
}

/** What probing a member asks for: cheap, public, and not ready while the member cannot serve. */
const HEARTBEAT_PATH = '/readyz';

export class CacheManager implements FleetMembers, ResourceCatalog, CacheHealth {
  private config!: FleetConfig;
  private readonly members = new Map<string, Member>();
  private readonly resources = new Map<string, CachedResource>();
  private readonly cachers = new Map<string, CacherEntry>();
  private readonly pool = new IngestPool();
  /** The process's list-page budget, sized by the first configuration (a reload keeps it). */
  private pageSlots?: Semaphore;
  private readonly abort = abortForEach();
  /** Resource discovery still running (members may be starting); keyed by resource. */
  private readonly discovering = new Map<string, Promise<ResourceInfo | undefined>>();
  private applying: Promise<unknown> = Promise.resolve();
  /** The resources the configuration asks to serve (RBAC objects are cached for authorization besides). */
  private served = new Set<string>();
  /** Probes every member; its interval follows the configuration (500 ms until the first one). */
  private readonly heartbeat = new Heartbeat(500);
  /** Members found to be new clusters, while their cachers list them again: why. */
  private readonly rewrites = new Map<string, string>();
  /** What cachers and heartbeats log through: the logger set later (useLog), as they start before the server. */
  private readonly logs = new DeferredLog(DEFERRED_LOG_LINES);

  constructor(private readonly store: Store) {
    this.heartbeat.onChange = (change) => logMemberChange(this.logs, change);
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
    this.heartbeat.setInterval(config.options.memberHeartbeatMilliseconds);

    // Members: drop removed ones and ones whose connection changed (their cachers go with them).
    const wanted = new Map(config.clusters.map((c) => [c.name, c]));
    for (const [name, m] of this.members) {
      const c = wanted.get(name);
      if (!c || connectionOf(c) !== connectionOf(m.config)) {
        for (const [id, e] of this.cachers) {
          if (e.cluster === name) {
            await this.stopCacher(id, e, !c);
            stopped.push(id);
          }
        }
        this.heartbeat.untrack(name);
        m.identity.abort();
        m.client.close();
        this.members.delete(name);
      } else {
        m.config = c;
      }
    }
    for (const c of config.clusters) {
      if (!this.members.has(c.name)) {
        const client = await MemberClient.create(c);
        const identity = new AbortController();
        this.members.set(c.name, { config: c, client, listSlots: new Semaphore(config.options.maxInflightListsPerMember), identity });
        if (!this.abort.signal.aborted) {
          client.onAnswer = () => this.heartbeat.heard(c.name);
          this.heartbeat.track(c.name, (signal) => client.probe(HEARTBEAT_PATH, signal));
          void watchIdentity(c.name, client, this.store, (cluster, reason) => this.relistMember(cluster, reason), this.logs, AbortSignal.any([this.abort.signal, identity.signal]));
        }
      }
    }

    // Resources and scopes wanted now.
    const desired = new Map<string, { rule: ResourceRule; cluster: string; namespace?: string }>();
    const rulesByKey = new Map<string, ResourceRule>();
    this.served = new Set(config.resources.map((r) => gvrKey(r)));
    for (const rule of cachedRules(config)) {
      const key = gvrKey({ group: rule.group, version: rule.version, resource: rule.resource });
      rulesByKey.set(key, rule);
      const clusters = selectClusters(rule, config.clusters).map((c) => c.name);
      // A rule's namespaces mean nothing for a cluster-scoped resource (known once discovered).
      const namespaced = this.resources.get(key)?.info.namespaced ?? true;
      for (const cluster of clusters) {
        for (const namespace of namespaced && rule.namespaces?.length ? rule.namespaces : [undefined]) {
          desired.set(scopeId(cluster, key, namespace), { rule, cluster, namespace });
        }
      }
    }
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
      void this.resourceInfo(key, rule, clusters).then((info) => {
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
    return { started, stopped };
  }

  /**
   * A resource's kind and scope: known already, else what discovery said last time (saved in the
   * store, so a restart while every member is unreachable still serves the cache), refreshed from
   * a member in the background; else from a member now.
   */
  private resourceInfo(key: string, rule: ResourceRule, clusters: string[]): Promise<ResourceInfo | undefined> {
    const known = this.resources.get(key);
    if (known) return Promise.resolve(known.info);
    let pending = this.discovering.get(key);
    if (!pending) {
      pending = this.discover(rule, clusters)
        .then(async (info) => {
          if (info) {
            // Kept only for a restart with every member down: on a full volume the answer is used unsaved (a later start discovers again).
            await this.store.saveResourceInfo(key, info).catch(() => undefined);
            const entry = this.resources.get(key);
            if (entry) entry.info = info;
          }
          return info;
        })
        .finally(() => this.discovering.delete(key));
      this.discovering.set(key, pending);
    }
    const saved = this.store.resourceInfo(key);
    return saved ? Promise.resolve(saved) : pending;
  }

  private async discover(rule: ResourceRule, clusters: string[]): Promise<ResourceInfo | undefined> {
    const gvr = { group: rule.group, version: rule.version, resource: rule.resource };
    for (let attempt = 0; !this.abort.signal.aborted; attempt++) {
      for (const name of clusters) {
        const m = this.members.get(name);
        if (!m) continue;
        try {
          return await discoverResource(m.client, gvr, this.abort.signal);
        } catch {
          // ask the next member
        }
      }
      await sleep(Math.min(DISCOVERY_RETRY_CAP_MS, DISCOVERY_RETRY_BASE_MS * 2 ** attempt), undefined, { signal: this.abort.signal }).catch(() => undefined);
    }
    return undefined;
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
      const key = gvrKey({ group: rule.group, version: rule.version, resource: rule.resource });
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

  /** The members in the fleet's order of preference: priority (higher first), then configuration order. */
  clusterNames(): string[] {
    return [...this.members.values()].sort((a, b) => b.config.priority - a.config.priority).map((m) => m.config.name);
  }

  member(name: string): MemberClient | undefined {
    return this.members.get(name)?.client;
  }

  clusterLabels(name: string): Readonly<Record<string, string>> {
    return this.members.get(name)?.config.labels ?? NO_LABELS;
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
      const silence = stale.has(cluster) ? undefined : this.heartbeat.silence(cluster);
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
    return this.heartbeat.silence(cluster) !== undefined;
  }

  heartbeats(): MemberHeartbeat[] {
    return this.heartbeat.status();
  }

  status(): CacherStatus[] {
    return [...this.cachers.values()].map((e) => e.cacher.getStatus());
  }

  private memberProgress?: MemberProgress;

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

  async stop(): Promise<void> {
    this.abort.abort();
    this.heartbeat.stop();
    await this.applying;
    for (const m of this.members.values()) m.identity.abort();
    await Promise.all([...this.cachers.values()].map((e) => e.cacher.stop()));
    await Promise.allSettled([...this.discovering.values()]);
    for (const m of this.members.values()) m.client.close();
    await this.pool.close();
  }
}

/** One stop for all: every resource's discovery and backoff listens to it at once, more than Node's default warning count of 10. */
function abortForEach(): AbortController {
  const abort = new AbortController();
  setMaxListeners(0, abort.signal);
  return abort;
}
