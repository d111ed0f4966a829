/**
 * The fleet configuration as flotilla runs with it: the parsed fleet file (config.ts) or a Fleet
 * object's spec (src/hub/fleet-spec.ts).
 */

/** How a tenant sees a cluster-scoped resource's objects: its own (prefixed names), shared read-only, or not at all. */
export type ClusterScopedPolicy = 'owned' | 'shared' | 'hidden';

/**
 * A tenant (KubeZoo-style views, src/tenancy): its id, who belongs to it, and how it sees
 * cluster-scoped resources beyond the defaults (src/tenancy/tenant.ts, DEFAULT_CLUSTER_SCOPED).
 */
export interface TenantSpec {
  id: string;
  users: string[];
  groups: string[];
  /** Per cluster-scoped resource as kubectl names it (`nodes`, `clusterroles.rbac.authorization.k8s.io`). */
  clusterScoped: Record<string, ClusterScopedPolicy>;
  /**
   * Who administers the tenant on the members (src/tenancy/member-policy.ts binds them): some of
   * its own users and groups. Absent: the member-side policy binds nobody.
   */
  admins?: { users: string[]; groups: string[] };
}

/** A member cluster (`clusters[]`): how to reach it, its labels, how its reads are authorized. */
export interface ClusterConfig {
  name: string;
  kubeconfig?: string;
  context?: string;
  server?: string;
  caFile?: string;
  tokenFile?: string;
  insecureSkipTLSVerify?: boolean;
  labels: Record<string, string>;
  /**
   * How flotilla decides what a caller may read of this member's cache: `rbac` evaluates the
   * member's cached RBAC objects itself; `subjectAccessReview` asks the member (for an authorizer
   * that is more than RBAC: webhooks, ABAC).
   */
  authorization: 'rbac' | 'subjectAccessReview';
  /** Which member's copy a get by name shows when several hold one: higher first, then configuration order. */
  priority: number;
}

export interface LabelSelectorSpec {
  matchLabels?: Record<string, string>;
  matchExpressions?: { key: string; operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist'; values?: string[] }[];
}

/** A resource cached (`resources[]`), from which clusters and namespaces. */
export interface ResourceRule {
  group: string;
  version: string;
  resource: string;
  namespaces?: string[];
  clusters?: string[];
  clusterSelector?: LabelSelectorSpec;
}

export interface FleetOptions {
  dropManagedFields: boolean;
  listPageSize: number;
  /** Full lists running at once against one member (the rest wait), so a restart cannot stampede it. */
  maxInflightListsPerMember: number;
  /**
   * List pages held at once across every member (being fetched, decoded or committed): bounds the
   * memory a first sync of many clusters takes, since more pages than the ingest can take in only wait.
   */
  maxInflightListPages: number;
  /** How often a watch that allows bookmarks gets one. */
  watchBookmarkIntervalSeconds: number;
  /** A client watch more than this far behind (bytes written but not yet taken by it) is ended. */
  maxWatchBufferMiB: number;
  /** A watch that names no timeoutSeconds ends after a random time between this and twice this. */
  minWatchTimeoutSeconds: number;
  /** A watch whose client takes nothing of its catch-up for this long is ended (it pins a read snapshot). */
  watchCatchUpStallSeconds: number;
  /** Events kept per resource for watches resuming from an older RV; older RVs get 410. */
  eventLogSize: number;
  /**
   * Resources flotilla does not cache, read live from the members as the caller (gets and lists
   * fanned out): on unless `enabled: false`; `exclude` names resources never read so, as kubectl
   * names them (`secrets`, `leases.coordination.k8s.io`).
   */
  liveReads: LiveReadsConfig;
  /**
   * How often each member is probed (GET /readyz). A member whose probe has been outstanding
   * longer than this, or whose last probe failed, is silent: reads of its cached objects say so.
   */
  memberHeartbeatMilliseconds: number;
  /**
   * Whether reads with resourceVersion unset (lists, gets, watch-lists) first confirm with the
   * members they address that the cache holds every write acknowledged before them (true), or are
   * served as the cache stands, as resourceVersion=0 (docs/fresh-reads.md).
   */
  freshReads: boolean;
  /**
   * Who operates flotilla: these users and members of these groups may always read `/status`,
   * `/metrics` and the status page, whatever the members' RBAC says (which may be what is broken).
   */
  operators: OperatorsConfig;
}

/** `options.operators`: identities as flotilla's authentication names them. */
export interface OperatorsConfig {
  users: string[];
  groups: string[];
}

/** Live reads of resources flotilla does not cache (`options.liveReads`; src/forward/live/). */
export interface LiveReadsConfig {
  /** Whether uncached resources are read live at all. */
  enabled: boolean;
  /** Resources never read live, as kubectl names them: `secrets`, `leases.coordination.k8s.io`. */
  exclude: string[];
  /** Members one list or get asks at once. */
  concurrency: number;
  /** The members' answers all live reads may hold at once, in MiB (src/forward/live-read-limits.ts). */
  maxBufferMiB: number;
  /** Live watches open at once (src/forward/live-read-limits.ts). */
  maxWatches: number;
}

/** How flotilla learns who calls it; writes are forwarded as that caller (Impersonate-*). */
export interface AuthenticationSpec {
  /** A member whose TokenReview API vouches for bearer tokens. */
  tokenReviewCluster?: string;
  /** A kube-apiserver static token file (absolute, or relative to the fleet file). */
  tokenFile?: string;
  cacheTTLSeconds: number;
  /**
   * How old a positive TokenReview verdict may be and still be reused while the reviewer cannot
   * answer (silent, failing, timing out); 0: never. A revoked token keeps working at most this long
   * while the reviewer is out.
   */
  tokenReviewStaleSeconds: number;
  /**
   * Whether a request without credentials is let in as `system:anonymous` (groups
   * `system:unauthenticated`), as kube-apiserver's --anonymous-auth does; otherwise it is a 401.
   */
  anonymous: boolean;
}

/** The fleet: which clusters, which resources to cache from which of them, options, callers, tenants. */
export interface FleetConfig {
  clusters: ClusterConfig[];
  resources: ResourceRule[];
  options: FleetOptions;
  authentication: AuthenticationSpec;
  tenants: TenantSpec[];
}
