import type { AuthenticationSpec, ClusterConfig, FleetOptions, LiveReadsConfig } from './fleet-config.js';

/**
 * Flotilla's timeouts, bounds and defaults, each declared once: the fleet file's defaults (its
 * section parsers start from them; a fallback for an option not passed on reads the same one),
 * then the fixed ones of the layers that ask members, watch them, and serve callers.
 */

// ---- The fleet file's fields (`clusters[]`, `options.*`, `authentication.*`) when it leaves them out.

/** A cluster's reads are authorized from its cached RBAC objects unless it asks for SubjectAccessReviews. */
export const DEFAULT_CLUSTER_AUTHORIZATION: ClusterConfig['authorization'] = 'rbac';
/** Clusters rank equal unless given a priority, so a get by name follows the configuration's order. */
export const DEFAULT_CLUSTER_PRIORITY = 0;
/** managedFields are dropped from cached objects: they are a third of a typical object and few readers want them. */
export const DEFAULT_DROP_MANAGED_FIELDS = true;
/** Objects a member is asked for in one list page, as client-go's pager asks. */
export const DEFAULT_LIST_PAGE_SIZE = 500;
/** Full lists one member runs at once, so a restart cannot stampede it. */
export const DEFAULT_MAX_INFLIGHT_LISTS_PER_MEMBER = 4;
/** List pages held at once across the fleet: bounds a first sync's memory, since more than the ingest takes only wait. */
export const DEFAULT_MAX_INFLIGHT_LIST_PAGES = 8;
/** How often a watch that allows bookmarks gets one, so a client resumes from a recent resourceVersion. */
export const DEFAULT_WATCH_BOOKMARK_INTERVAL_SECONDS = 30;
/** As the apiserver's --min-request-timeout. */
export const DEFAULT_MIN_WATCH_TIMEOUT_SECONDS = 1800;
/** A watch whose client takes nothing of its catch-up this long is ended: the catch-up pins a read snapshot. */
export const DEFAULT_WATCH_CATCH_UP_STALL_SECONDS = 60;
/** A client watch this far behind is ended, so one slow client cannot hold the process's memory. */
export const DEFAULT_MAX_WATCH_BUFFER_MIB = 16;
/** Events kept per resource for watches resuming from an older resourceVersion; older ones get 410. */
export const DEFAULT_EVENT_LOG_SIZE = 100_000;
/** How often each member's /readyz is probed: a stopped member is named silent within two intervals. */
export const DEFAULT_MEMBER_HEARTBEAT_MILLISECONDS = 2000;
/** How long a token's verdict is reused: a revoked token keeps working at most this long. */
export const DEFAULT_TOKEN_CACHE_TTL_SECONDS = 10;
/** How long a positive verdict outlives a token reviewer that cannot answer. */
export const DEFAULT_TOKEN_REVIEW_STALE_SECONDS = 120;
/**
 * Members one request asks at once, by default (a live list or get, a write's search for the
 * member holding its object): every member of a fleet of hundreds. Such a request waits for its
 * slowest member, and a member beyond the bound waits for an earlier one's answer first, so
 * members that do not answer would add up their timeouts, one per wave.
 */
export const MEMBER_FAN_OUT = 256;
/**
 * The members' answers all live reads may hold at once, in MiB (options.liveReads.maxBufferMiB):
 * a fleet list of 10k ConfigMaps holds ~17 MB (the answers and the merged one), so ~30 of those
 * at once, within the 2 GiB the deployment requests beside a cache of 1M objects.
 */
export const LIVE_BUFFER_MIB = 512;
/**
 * Live watches open at once (options.liveReads.maxWatches): each holds a connection to every
 * member it asks, so 1000 over 100 members are 100k connections.
 */
export const LIVE_WATCHES = 1000;
/** Uncached resources are read live unless the file says `enabled: false`. */
export const DEFAULT_LIVE_READS_ENABLED = true;
/** Callers without credentials are refused unless the file asks for anonymous access, as kube-apiserver's --anonymous-auth=false. */
export const DEFAULT_ANONYMOUS = false;
/**
 * Reads with resourceVersion unset reflect every write the members acknowledged before them, as a
 * Kubernetes 1.34 apiserver's do (docs/fresh-reads.md), unless the file says `freshReads: false`.
 */
export const DEFAULT_FRESH_READS = true;

/** `options.liveReads` when the file leaves it out: a fresh value, so one file's exclude list is never another's. */
export function defaultLiveReads(): LiveReadsConfig {
  return { enabled: DEFAULT_LIVE_READS_ENABLED, exclude: [], concurrency: MEMBER_FAN_OUT, maxBufferMiB: LIVE_BUFFER_MIB, maxWatches: LIVE_WATCHES };
}

/** `options` when the file leaves it out (fresh, as defaultLiveReads). */
export function defaultFleetOptions(): FleetOptions {
  return {
    dropManagedFields: DEFAULT_DROP_MANAGED_FIELDS,
    listPageSize: DEFAULT_LIST_PAGE_SIZE,
    maxInflightListsPerMember: DEFAULT_MAX_INFLIGHT_LISTS_PER_MEMBER,
    maxInflightListPages: DEFAULT_MAX_INFLIGHT_LIST_PAGES,
    watchBookmarkIntervalSeconds: DEFAULT_WATCH_BOOKMARK_INTERVAL_SECONDS,
    minWatchTimeoutSeconds: DEFAULT_MIN_WATCH_TIMEOUT_SECONDS,
    watchCatchUpStallSeconds: DEFAULT_WATCH_CATCH_UP_STALL_SECONDS,
    maxWatchBufferMiB: DEFAULT_MAX_WATCH_BUFFER_MIB,
    eventLogSize: DEFAULT_EVENT_LOG_SIZE,
    liveReads: defaultLiveReads(),
    memberHeartbeatMilliseconds: DEFAULT_MEMBER_HEARTBEAT_MILLISECONDS,
    freshReads: DEFAULT_FRESH_READS,
    // None: /status is read only by callers every member lets get it.
    operators: { users: [], groups: [] },
  };
}

/** `authentication` when the file leaves it out: no token reviewer, no token file, no anonymous callers. */
export function defaultAuthentication(): AuthenticationSpec {
  return { cacheTTLSeconds: DEFAULT_TOKEN_CACHE_TTL_SECONDS, tokenReviewStaleSeconds: DEFAULT_TOKEN_REVIEW_STALE_SECONDS, anonymous: DEFAULT_ANONYMOUS };
}

// ---- The configuration's sources (src/registry/watch.ts).

/** How long the fleet file's directory stays quiet before the file is read again: an editor's save is several events. */
export const CONFIG_RELOAD_DEBOUNCE_MS = 200;

// ---- The command line (src/cli): `flotilla serve`'s flags, and what `flotilla kubeconfig` points at by default.

/** Where `flotilla serve` listens: loopback only, unless told otherwise. */
export const DEFAULT_SERVE_BIND = '127.0.0.1';
export const DEFAULT_SERVE_PORT = 8443;
/** The store, the self-signed serving pair and the hub's last Fleet, relative to where flotilla is started. */
export const DEFAULT_DATA_DIR = './flotilla-data';
export const DEFAULT_LOG_LEVEL = 'warn';
/** How long `flotilla status` and `kubectl flotilla` wait for one answer of flotilla's. */
export const CLI_REQUEST_TIMEOUT_MS = 15_000;

// ---- Members asked on a caller's behalf (src/forward).

/**
 * How long a member asked for its part of a fleet-wide read may take: a live get, list or the
 * headers of its watch, and the search for the member holding a named object. The read waits for
 * its slowest member; one that does not answer in time is named in a Warning.
 */
export const MEMBER_READ_TIMEOUT_MS = 10_000;
/** How long a member may take to say whether it has a namespace a create names. */
export const NAMESPACE_LOOKUP_TIMEOUT_MS = 5_000;
/** How long a member may take to answer a forwarded write or subresource read. */
export const FORWARD_TIMEOUT_MS = 60_000;
/** How long a member may take to make the RoleBinding of a namespace a tenant created. */
export const TENANT_GRANT_TIMEOUT_MS = 10_000;
/** How long a member may take to switch protocols for exec, attach, portforward or a proxy. */
export const UPGRADE_HANDSHAKE_TIMEOUT_MS = 60_000;
/** After one side of a joined upgrade has closed, how long the other gets to flush and close. */
export const UPGRADE_LINGER_MS = 30_000;
/**
 * The most of a member's error answer to a streamed subresource or an upgrade that flotilla holds
 * (to send it whole, or reworded for a tenant): a member's Status is a few hundred bytes, a proxied
 * application's error may be more, and is cut here.
 */
export const STREAMED_ERROR_MAX_BYTES = 1024 * 1024;
/** How long a caller's named object is remembered where it was created or found; callers remembered at most. */
export const RECENT_OWNER_TTL_MS = 30_000;
export const RECENT_OWNERS_MAX = 10_000;
/** How long a caller's last write is waited for by its next read; callers remembered at most. */
export const READ_YOUR_WRITES_TTL_MS = 30_000;
export const READ_YOUR_WRITES_MAX_CALLERS = 10_000;
/** Deleted objects kept per caller and resource: a larger deletecollection is not waited for. */
export const READ_YOUR_WRITES_MAX_DELETED = 1000;

// ---- Cached reads (src/router/reads/cached.ts).

/** How long a read waits for the cache to reach the caller's last write before it answers anyway. */
export const READ_YOUR_WRITES_WAIT_MS = 2000;
/** How long a read from a resourceVersion ahead of the cache waits for it before its 504. */
export const RESOURCE_VERSION_WAIT_MS = 3000;
/**
 * How long a fresh read (src/cacher/fresh-reads.ts) waits for its members to confirm that the cache
 * holds their latest writes; a member that has not by then is named in a Warning and its cached
 * state served. A member's watch asked about a quiet resource answers in 1–2 s (its bookmark).
 */
export const FRESH_READ_CONFIRM_MS = 4000;
/** How long a fresh read waits for the resource's own event before asking the member's watch: a write's event arrives within milliseconds. */
export const FRESH_READ_EVENT_WAIT_MS = 100;
/** A fresh read's revision list asks for this many objects' metadata: a scope that fits is compared with the cache at once, with no bookmark to wait for. */
export const FRESH_READ_COMPARE_MAX = 100;
/**
 * A resource cached in up to this many namespaces of a member has each namespace's page compared:
 * a namespace-scoped short watch gets no bookmark while the resource's last write, in another
 * namespace, is the member's revision, so comparison is what confirms a quiet namespace.
 */
export const FRESH_READ_COMPARE_SCOPES = 8;
/** How often a fresh read waiting on a member looks whether the heartbeat has found it silent (it is then not waited for). */
export const FRESH_READ_SILENCE_CHECK_MS = 50;

// ---- The tenants' member-side policy kept on the members (src/tenancy/member-policy-apply.ts).

/** How often the policy is applied again: a namespace made on a member directly waits at most this long for its admins' RoleBinding. */
export const TENANT_POLICY_REAPPLY_MS = 5 * 60_000;
/** How soon a member that refused the policy is tried again. */
export const TENANT_POLICY_RETRY_MS = 30_000;
/** How long a member may take to answer one of the policy's requests. */
export const TENANT_POLICY_REQUEST_TIMEOUT_MS = 30_000;

// ---- Members (src/members).

/** How long a token read from a cluster's `tokenFile` is used before the file is read again, as client-go's file token source: a projected service account token is rotated in place. */
export const TOKEN_FILE_REREAD_MS = 60_000;
/** A heartbeat probe outstanding for this many intervals has failed: a slow /readyz is not yet a lost member. */
export const HEARTBEAT_PROBE_TIMEOUT_INTERVALS = 10;
/** ...and for at least this long, so a short interval does not fail a member that answers in a few seconds. */
export const HEARTBEAT_MIN_PROBE_TIMEOUT_MS = 5_000;
/** How long a member may take to answer a SubjectAccessReview before the verdict is a failure. */
export const ACCESS_REVIEW_TIMEOUT_MS = 5_000;
/** How long a member's SubjectAccessReview verdict is reused, and verdicts kept at most (AccessReviews' defaults). */
export const ACCESS_VERDICT_TTL_MS = 10_000;
export const ACCESS_VERDICTS_MAX = 10_000;
/** How long a read's SubjectAccessReview verdict is reused: a member's changed policy shows within this. */
export const READ_ACCESS_VERDICT_TTL_MS = 5_000;

// ---- Caching members (src/cacher).

/**
 * A list page that sends nothing for this long has failed: the list backs off and starts again,
 * and its page slot goes to another member (a member lost without a reset must not hold it).
 */
export const LIST_PAGE_IDLE_TIMEOUT_MS = 60_000;
/** A member's watch that sends nothing this long past its own timeoutSeconds is lost: the member should have ended it. */
export const MEMBER_WATCH_IDLE_GRACE_SECONDS = 90;
/**
 * How often each member's identity (its kube-system namespace's uid) is read: a new cluster under
 * a known name is found within this, and its cached state listed again. A member's resourceVersions
 * going back are found sooner, before each watch (history-check.ts).
 */
export const MEMBER_IDENTITY_CHECK_MS = 30_000;
/** The objects a cacher compares with the member before each watch (history-check.ts): one page of metadata. */
export const HISTORY_CHECK_SAMPLE = 100;
/** The first retry of a failed list or watch, doubling with full jitter up to the cap: many cachers failing at once must not retry in step. */
/**
 * The timeoutSeconds of a watch that asks a member which events of a scope it holds after a
 * resourceVersion (src/cacher/member-progress.ts): the apiserver replays them at once and sends
 * its bookmark 2 s before a watch's deadline, so 3 is the least that brings one (after about 1 s).
 */
export const MEMBER_PROGRESS_WATCH_SECONDS = 3;
/** Past that timeout, how long the asking watch may take to end before its answer is "unknown". */
export const MEMBER_PROGRESS_GRACE_MS = 2000;
/** Events of one scope a fresh read's confirmation notes before it gives up (the member's watch between two of its versions). */
export const MEMBER_PROGRESS_MAX_EVENTS = 10_000;
/** How long a fresh read's confirmation waits before it asks a member that gave no answer again. */
export const MEMBER_PROGRESS_RETRY_MS = 200;
/**
 * Such watches open at once per process (replicas' questions one per scope at most, shared by the
 * reads that need them; fresh reads' too, asked again shortly past it); past it, reads only wait. A
 * fleet-wide fresh read of a quiet resource asks every member at once.
 */
export const MEMBER_PROGRESS_MAX_IN_FLIGHT = MEMBER_FAN_OUT;
export const BACKOFF_BASE_MS = 250;
export const BACKOFF_CAP_MS = 30_000;
/** A resource no member could describe is asked about again after this, doubling, up to the cap. */
export const DISCOVERY_RETRY_BASE_MS = 500;
export const DISCOVERY_RETRY_CAP_MS = 10_000;
/**
 * Free space the store keeps on its volume (environment.ts): below it, writes are refused
 * (StoreFullError) rather than dying of SIGBUS on a page of the mapped file the filesystem has no
 * block for. A transaction writes at most OBJECTS_PER_TRANSACTION objects and their index entries
 * (a few MB for pods; 200 objects at the apiserver's 1.5 MB object limit would be 300 MB, which no
 * resource comes near in practice), and the file grows by no more than the pages it dirties.
 */
export const STORE_MIN_FREE_BYTES = 256 * 1024 ** 2;
/**
 * The store's check at open (src/store/integrity.ts) may take this long in its own process before
 * the store is taken for damaged: 2–4 s at 1M objects, so only a store that reads impossibly slowly
 * (a failing disk) comes near it.
 */
export const STORE_CHECK_TIMEOUT_MS = 300_000;
/** A decoding worker idle this long ends (one is kept): a quiet fleet holds no spare threads. */
export const INGEST_WORKER_IDLE_MS = 60_000;
/** The ingest workers' nice value (their threads' own, above the process's 0): see src/ingest/worker.ts. */
export const INGEST_WORKER_NICE = 10;

// ---- Who may read what (src/authz, src/hierarchy).

/** Reviews in flight at once for one all-namespaces read of a member asked per namespace. */
export const AUTHZ_REVIEWS_AT_ONCE = 16;
/** Questions whose answers are kept; a caller asks a handful (verbs × resources). */
export const AUTHZ_ANSWERS_MAX = 10_000;
/**
 * Distinct namespace sets kept to be shared by the answers that grant them. Callers of a team
 * get the same namespaces, and a fleet rolled out alike grants them on every member: without
 * sharing, 10k callers asking about 100 members kept a million sets (about 230 B each).
 */
export const AUTHZ_NAMESPACE_SETS_MAX = 10_000;
/** How long RBAC changes are gathered before the policies' listeners hear them. */
export const POLICY_SETTLE_MS = 100;
/** Past namespace trees kept per member: a watch resumed from before more moves than this lists again. */
export const NAMESPACE_TREE_HISTORY = 8;
/** How long namespace changes are gathered before listeners hear them (namespaces come in bursts). */
export const NAMESPACE_TREE_SETTLE_MS = 100;

// ---- The hub (src/hub).

/** How often the Fleet's status is computed and written back to the hub. */
export const FLEET_STATUS_INTERVAL_MS = 2_000;
/** How long the Fleet's changes are gathered before it is read again: a Fleet and its Secrets change together. */
export const FLEET_RELOAD_DEBOUNCE_MS = 100;
/** The hub's watch retries at most this far apart, sooner than a member's: the running configuration follows it. */
export const HUB_WATCH_BACKOFF_CAP_MS = 10_000;
/** A hub watch silent this long past its own timeoutSeconds is lost. */
export const HUB_WATCH_IDLE_GRACE_SECONDS = 30;

// ---- Callers (src/auth).

/** A TokenReview unanswered this long has failed: the caller is not kept waiting on a hung member. */
export const TOKEN_REVIEW_TIMEOUT_MS = 2_000;
/** A rejected token is remembered at most this long: it may be a token that just got created. */
export const REJECTED_TOKEN_TTL_MS = 2_000;
/** Token verdicts kept, the oldest evicted first. */
export const TOKEN_VERDICTS_MAX = 10_000;
/** How long the hub may take to give its front proxy's settings (the extension-apiserver-authentication ConfigMap). */
export const HUB_AUTHENTICATION_READ_TIMEOUT_MS = 10_000;
/** How long a member's verdict on an impersonation is reused, and verdicts kept at most. */
export const IMPERSONATION_VERDICT_TTL_MS = 10_000;
export const IMPERSONATION_VERDICTS_MAX = 10_000;

// ---- The HTTP surface (src/router).

/** How long an answer in progress may hold the connection after what follows it failed to parse. */
export const IN_FLIGHT_ANSWER_WAIT_MS = 10_000;
/**
 * How long an answer waits for a GET body still arriving: a body flotilla accepts arrives in far
 * less; a client that announces one it never sends gets its answer after this.
 */
export const BODY_DRAIN_WAIT_MS = 2_000;
/** How long a member may take to answer a caller's self review (rules or access) that flotilla asks of it. */
export const RULES_REVIEW_TIMEOUT_MS = 10_000;
/** How long the fleet's discovery is reused before the members are asked again: a CRD added on a member shows within this. */
export const FLEET_DISCOVERY_TTL_MS = 10_000;
/** How long a member may take to give its discovery or a group version's storage hashes. */
export const FLEET_DISCOVERY_TIMEOUT_MS = 5_000;
/** How long a member may take to give its OpenAPI v3 index. */
export const MEMBER_OPENAPI_TIMEOUT_MS = 10_000;
/** How long the members' /version answer is reused: it changes only with an upgrade. */
export const VERSION_CACHE_TTL_MS = 60_000;

// ---- Bounds of the layers that keep and serve the cache.

/**
 * Objects written in one store transaction. Bench ingest at 300k objects: 100 a transaction 5.5k
 * objects/s, event-loop p99 50 ms; 200: 7.5k/s, 42 ms; 500: 7.1k/s, 68 ms. Larger transactions
 * commit more cheaply per object but hold a turn longer.
 */
export const OBJECTS_PER_TRANSACTION = 200;
/**
 * Owner search (src/view/owner-predicate.ts): levels an owner term follows when it names no depth
 * (a Deployment's pods are two levels down; an operator's CRs owning Deployments, four). A bound,
 * not a need: owner references can form a cycle.
 */
export const OWNER_SEARCH_MAX_DEPTH = 8;
/**
 * Objects a list's walk down from an owner reads to narrow the list to the owner's descendants
 * (their uids, from their meta records); beyond it the list scans its range and tests each object
 * by walking up. A Deployment's pods take its ReplicaSets only: pods own nothing.
 */
export const OWNER_SEARCH_WALK_MAX_OBJECTS = 10_000;
/** Owner lookups a search keeps between the store's commits, shared by every view (a list's pods share a few ReplicaSets). */
export const OWNER_SEARCH_MEMO_MAX = 10_000;
/** Impersonated attributes (user, each group, uid, each extra) whose reviews are in flight at once, per member. */
export const IMPERSONATION_REVIEWS_AT_ONCE = 4;
/** Longest Fleet condition message written: the validation messages of a very wrong Fleet can be long. */
export const FLEET_CONDITION_MESSAGE_MAX = 8192;
/** Selections kept per namespace tree: a caller sending ever new selectors must not grow what a tree keeps. */
export const TREE_SELECTIONS_MAX = 1000;
/**
 * How often the status page (/ui/) asks /status again: a stopped member shows within two heartbeat
 * intervals plus this, and one open page costs one small request a second and a half.
 */
export const STATUS_PAGE_POLL_MS = 1_500;
/** /metrics (the watch counts) is read every this many polls of /status: at a hundred members it is far larger. */
export const STATUS_PAGE_METRICS_EVERY_POLLS = 4;

// ---- The log (util/structured-log.ts, cacher/transitions-log.ts, router/plugins/request-log.ts).

/** The same transition repeated (a cacher failing the same way, a relist loop, 429s) is logged at most this often, with how many were left out. */
export const LOG_REPEAT_WINDOW_MS = 60_000;
/** A first sync still listing says how far it got at most this often (cacher/sync-progress.ts). */
export const SYNC_PROGRESS_LOG_INTERVAL_MS = 10_000;
/** Lines kept from before the server's logger exists (cachers and heartbeats start first); more are dropped. */
export const DEFERRED_LOG_LINES = 1000;

/** A find across kinds (router/reads/find.ts) answers this many objects per page unless `limit` says otherwise, and never more than FIND_MAX_LIMIT. */
export const FIND_DEFAULT_LIMIT = 100;
export const FIND_MAX_LIMIT = 1000;

/**
 * A name search reads the name index's entries of at most this many distinct words matching its
 * needle (store/name-index.ts); a needle matching more (`a`, `e`) reads the resource's range
 * instead. Finding each is one seek, a few microseconds.
 */
export const NAME_SEARCH_MAX_WORDS = 256;

/**
 * The most keys a list gathers and sorts from an index range (a created-after/before range drives
 * a list, its keys in time order, served in key order). A wider range is left
 * to another lookup of the list, or a scan. Measured: 100,000 keys take about 35 MB and 0.3 s of
 * CPU to sort, 1,000,000 about 350 MB and 4 s (a scan of a million pods' meta records: 23 s).
 */
export const INDEX_RANGE_SORT_MAX = 100_000;
