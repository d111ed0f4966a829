import { DNS_LABEL, DNS_SUBDOMAIN, RESOURCE_NAME } from './config-checker.js';
import * as d from './defaults.js';

/**
 * The fleet file's one schema (JSON Schema, draft 2020-12 subset): every field, its type, default,
 * bounds and meaning. It validates the file and a Fleet object's spec before the section parsers
 * (schema-problems.ts), and docs/configuration.md and the Fleet CRD's openAPIV3Schema are generated
 * from it (scripts/config-reference.ts), so the three cannot disagree. What a schema cannot say
 * (unique names, references between sections, label syntax, relative paths) stays in the parsers.
 */
export interface SchemaNode {
  type: 'object' | 'array' | 'string' | 'integer' | 'boolean';
  description: string;
  default?: unknown;
  properties?: Record<string, SchemaNode>;
  required?: string[];
  /** false: a field not in `properties` is an error; a node: the mapping's values (a map type). */
  additionalProperties?: false | SchemaNode;
  items?: SchemaNode;
  minItems?: number;
  minimum?: number;
  maximum?: number;
  pattern?: string;
  enum?: string[];
  /** How a pattern or enum reads in a message: `must be <this>, got "x"`. */
  patternDescription?: string;
  /** What the list must have at least one of, in a message: `must list at least <this>`. */
  minItemsDescription?: string;
  /** null is taken as the field left out (YAML's `field:` with nothing after it). */
  nullable?: boolean;
  /** A value shown in the reference's example where the default is none. */
  example?: unknown;
}

const str = (description: string, more: Partial<SchemaNode> = {}): SchemaNode => ({ type: 'string', description, nullable: true, ...more });
const int = (description: string, minimum: number, maximum: number, dflt: number): SchemaNode => ({ type: 'integer', description, minimum, maximum, default: dflt });
const bool = (description: string, dflt: boolean): SchemaNode => ({ type: 'boolean', description, default: dflt });
const strings = (description: string, item: Partial<SchemaNode> = {}, more: Partial<SchemaNode> = {}): SchemaNode => ({ type: 'array', description, items: str('', item), nullable: true, ...more });
const stringMap = (description: string): SchemaNode => ({ type: 'object', description, additionalProperties: str(''), nullable: true });
const mapping = (description: string, properties: Record<string, SchemaNode>, more: Partial<SchemaNode> = {}): SchemaNode => ({ type: 'object', description, properties, additionalProperties: false, ...more });

const resourceName = { pattern: RESOURCE_NAME.source, patternDescription: 'a resource as kubectl names it (resource, or resource.group)' };
const dnsLabel = { pattern: DNS_LABEL.source, patternDescription: "a DNS-1123 label (lowercase letters, digits, '-')" };
const liveDefaults = d.defaultLiveReads();

const cluster = mapping('A member cluster: how to reach it (a kubeconfig, or a server with its CA and token), its labels, how its reads are authorized.', {
  name: str('The member\'s name: shown in the CLUSTER column and the `search.flotilla.io/cluster` annotation, and addressed as `/clusters/<name>/`. Unique in the fleet.', { ...dnsLabel, example: 'east' }),
  kubeconfig: str('A kubeconfig file for the member (absolute, or relative to the fleet file). Give this or `server`, not both.', { example: 'east.kubeconfig' }),
  context: str('The kubeconfig context to use; the file\'s current context when left out. Only with `kubeconfig`.', { example: 'admin@east' }),
  server: str('The member apiserver\'s URL, instead of a kubeconfig.', { pattern: '^https?://\\S+$', patternDescription: 'an http(s) URL', example: 'https://10.0.0.2:6443' }),
  caFile: str('With `server`: the CA bundle the member\'s serving certificate is checked against (absolute, or relative to the fleet file).', { example: 'west-ca.crt' }),
  tokenFile: str('With `server`: a file holding flotilla\'s bearer token for the member, read again every minute (a projected service account token is rotated in place).', { example: 'west.token' }),
  insecureSkipTLSVerify: { type: 'boolean', description: 'With `server`: do not check the member\'s serving certificate. For trials only.', example: false },
  labels: stringMap('Labels of the cluster (`region: eu`, `env: prod`), for `resources[].clusterSelector`; shown by `/status`, `flotilla status`, `kubectl flotilla clusters` and the status page. A reload applies a change of labels alone at once, without listing the member again. Keys and values as Kubernetes labels.'),
  authorization: str('How flotilla decides what a caller may read of this member\'s cache: `rbac` evaluates the member\'s cached RBAC objects itself; `subjectAccessReview` asks the member (for an authorizer that is more than RBAC: webhooks, ABAC).', { enum: ['rbac', 'subjectAccessReview'], patternDescription: 'rbac or subjectAccessReview', default: d.DEFAULT_CLUSTER_AUTHORIZATION }),
  priority: { ...int('Which member\'s copy a get by name shows when several hold one: the highest priority first, then the order of `clusters`.', -1000, 1000, d.DEFAULT_CLUSTER_PRIORITY), nullable: true },
}, { required: ['name'] });

const labelSelector = mapping('Selects clusters by their `labels`, as a Kubernetes LabelSelector is written.', {
  matchLabels: stringMap('Labels a cluster must have, each with this value.'),
  matchExpressions: {
    type: 'array',
    description: 'Requirements on a cluster\'s labels, all of which must hold.',
    items: mapping('One requirement.', {
      key: str('The label key.'),
      operator: str('How the label is compared with `values`.', { enum: ['In', 'NotIn', 'Exists', 'DoesNotExist'], patternDescription: 'one of In, NotIn, Exists, DoesNotExist' }),
      values: strings('The values for In and NotIn (at least one); empty for Exists and DoesNotExist.'),
    }, { required: ['key', 'operator'] }),
  },
});

const resourceRule = mapping('A resource cached from the members: which clusters, and which namespaces. Resources not listed are read live (`options.liveReads`).', {
  group: str('The API group; `""` (or left out) for the core group.', { pattern: `^$|${DNS_SUBDOMAIN.source}`, patternDescription: 'an API group (a DNS subdomain, or "" for core)', default: '', example: 'apps' }),
  version: str('The API version.', { pattern: '^v[0-9]+((alpha|beta)[0-9]+)?$', patternDescription: 'an API version such as v1 or v1beta1', example: 'v1' }),
  resource: str('The resource, lowercase and plural as in its URL.', { ...dnsLabel, patternDescription: 'a lowercase plural resource name such as pods', example: 'deployments' }),
  namespaces: strings('Cache only these namespaces (reads of others are live). All namespaces when left out.', dnsLabel, { example: ['kube-system'] }),
  clusters: strings('Cache only from these clusters (names from `clusters`). Every cluster when left out; not with `clusterSelector`.', {}, { example: ['east'] }),
  clusterSelector: labelSelector,
}, { required: ['version', 'resource'] });

const subjects = (what: string) => mapping(what, {
  users: strings('User names.'),
  groups: strings('Group names.'),
}, { nullable: true });

const options = mapping('How flotilla caches and serves. Each option left out takes its default.', {
  dropManagedFields: bool('Drop `metadata.managedFields` from cached objects: they are a third of a typical object and few readers want them.', d.DEFAULT_DROP_MANAGED_FIELDS),
  listPageSize: int('Objects a member is asked for in one list page.', 1, 10_000, d.DEFAULT_LIST_PAGE_SIZE),
  maxInflightListsPerMember: int('Full lists running at once against one member (the rest wait), so a restart cannot stampede it.', 1, 100, d.DEFAULT_MAX_INFLIGHT_LISTS_PER_MEMBER),
  maxInflightListPages: int('List pages held at once across every member (fetched, decoded or committed): bounds the memory a first sync of many clusters takes. Read at start.', 1, 10_000, d.DEFAULT_MAX_INFLIGHT_LIST_PAGES),
  watchBookmarkIntervalSeconds: int('How often a watch that allows bookmarks gets one, so its client resumes from a recent resourceVersion.', 1, 3600, d.DEFAULT_WATCH_BOOKMARK_INTERVAL_SECONDS),
  minWatchTimeoutSeconds: int('A watch that names no timeoutSeconds ends after a random time between this and twice this (as the apiserver\'s --min-request-timeout).', 1, 86_400, d.DEFAULT_MIN_WATCH_TIMEOUT_SECONDS),
  watchCatchUpStallSeconds: int('A watch whose client takes nothing of its catch-up (a watch-list snapshot, replayed events) for this long is ended: the catch-up pins a read snapshot.', 1, 86_400, d.DEFAULT_WATCH_CATCH_UP_STALL_SECONDS),
  maxWatchBufferMiB: int('A client watch further behind than this in live events (bytes written but not yet taken) is ended, so one slow client cannot hold the process\'s memory.', 1, 1024, d.DEFAULT_MAX_WATCH_BUFFER_MIB),
  eventLogSize: int('Events kept per resource for watches resuming from an older resourceVersion; older ones get 410 Gone.', 1000, 100_000_000, d.DEFAULT_EVENT_LOG_SIZE),
  memberHeartbeatMilliseconds: int('How often each member\'s /readyz is probed (not while it answers other requests). A member whose probe is outstanding longer than this, or failed, is silent: reads of its cached objects say so.', 50, 60_000, d.DEFAULT_MEMBER_HEARTBEAT_MILLISECONDS),
  freshReads: bool('Reads with `resourceVersion` unset or `""` (lists, gets, watches with `sendInitialEvents=true`) reflect every write the members they address acknowledged before the request, as a Kubernetes 1.34 apiserver\'s do: flotilla confirms its cache with each such member first (a list of up to 100 objects\' metadata; for a quiet resource of more objects than that, a short watch, 1–2 s). `false`: they are served as the cache stands, as `resourceVersion=0` is (docs/fresh-reads.md).', d.DEFAULT_FRESH_READS),
  liveReads: mapping('Resources flotilla does not cache, read live from the members as the caller (gets and lists fanned out to members, watches joined).', {
    enabled: bool('Whether uncached resources are read live at all.', liveDefaults.enabled),
    exclude: { ...strings('Resources never read live, as kubectl names them (resource, or resource.group).', resourceName), default: liveDefaults.exclude, example: ['secrets', 'leases.coordination.k8s.io'] },
    concurrency: int('Members one live list or get asks at once.', 1, 10_000, liveDefaults.concurrency),
    maxBufferMiB: int('The members\' answers all live reads may hold at once, in MiB; past it, 429.', 1, 1_048_576, liveDefaults.maxBufferMiB),
    maxWatches: int('Live watches open at once (each holds a connection to every member it asks); past it, 429.', 1, 1_000_000, liveDefaults.maxWatches),
  }),
  operators: subjects('Users and groups who may always read flotilla\'s `/status`, whatever their rights on the members (an on-call identity). Nobody when left out.'),
});

const authentication = mapping('How flotilla learns who calls it; writes are forwarded to members as that caller. Read at start only. Flotilla needs one way to authenticate callers: a token reviewer, a token file, `--client-ca-file`, a hub, or `anonymous: true`.', {
  tokenReviewCluster: str('A member (a name from `clusters`) whose TokenReview API checks bearer tokens.', { example: 'east' }),
  tokenFile: str('A kube-apiserver static token file (`token,user,uid,"group1,group2"` lines), absolute or relative to the fleet file.', { example: 'tokens.csv' }),
  cacheTTLSeconds: int('How long a token\'s verdict is reused: a revoked token keeps working at most this long.', 0, 3600, d.DEFAULT_TOKEN_CACHE_TTL_SECONDS),
  tokenReviewStaleSeconds: int('How old a positive TokenReview verdict may be and still be reused while the reviewer cannot answer (silent, failing, timing out); 0: never.', 0, 86_400, d.DEFAULT_TOKEN_REVIEW_STALE_SECONDS),
  anonymous: bool('Let requests without credentials in as `system:anonymous` (group `system:unauthenticated`), as kube-apiserver\'s --anonymous-auth does; otherwise they get 401.', d.DEFAULT_ANONYMOUS),
});

const tenant = mapping('A tenant view: its callers see their own namespaces and names (prefixed `<id>-` on the members) as if they had a cluster of their own.', {
  id: str('The tenant\'s id, the prefix of its names on the members; no id may be another\'s id plus `-`.', { pattern: '^[a-z0-9]([-a-z0-9]{0,18}[a-z0-9])?$', patternDescription: 'a DNS-1123 label of at most 20 characters', example: 'acme' }),
  users: strings('Callers of this tenant, by user name. A user belongs to one tenant.', {}, { example: ['admin@acme'] }),
  groups: strings('Callers of this tenant, by group. A group belongs to one tenant.', {}, { example: ['acme-devs'] }),
  clusterScoped: {
    type: 'object',
    description: 'How the tenant sees cluster-scoped resources beyond the defaults (namespaces, clusterroles, … owned; nodes, … shared; the rest hidden), per resource as kubectl names it: `owned` (its own, prefixed names), `shared` (read-only) or `hidden`.',
    additionalProperties: str('', { enum: ['owned', 'shared', 'hidden'], patternDescription: 'owned, shared or hidden', nullable: false }),
    example: { persistentvolumes: 'owned' },
  },
  admins: subjects('Whom `flotilla tenant-policy` makes the tenant\'s admins on the members: some of its own users and groups. Nobody when left out.'),
}, { required: ['id'] });

/** The fleet file (and a Fleet object's `spec`). */
export const FLEET_SCHEMA: SchemaNode = mapping('The fleet: which clusters, which resources to cache from which of them, options, how callers are authenticated, tenants.', {
  clusters: { type: 'array', description: 'The member clusters.', items: cluster, minItems: 1, minItemsDescription: 'one cluster' },
  resources: { type: 'array', description: 'The resources cached, one rule per group, version and resource.', items: resourceRule, minItems: 1, minItemsDescription: 'one resource' },
  options: options,
  authentication: authentication,
  tenants: { type: 'array', description: 'Tenant views (optional). Reloaded with the file.', items: tenant, nullable: true },
}, { required: ['clusters', 'resources'] });

/** A Secret of the hub referenced by a Fleet's cluster, and the key its value is under unless `key` says. */
const secretRef = (what: string, key: string) => mapping(`${what} (key \`${key}\` unless \`key\` says).`, {
  namespace: str('The Secret\'s namespace.'),
  name: str('The Secret\'s name.'),
  key: str('The key in the Secret.', { default: key }),
}, { required: ['namespace', 'name'] });

/**
 * A Fleet object's spec (src/hub/fleet-spec.ts): the file's fields, with member credentials in
 * Secrets of the hub in place of files on flotilla's disk.
 */
export function fleetObjectSchema(): SchemaNode {
  const c = structuredClone(cluster);
  c.properties = {
    ...c.properties,
    kubeconfigSecretRef: secretRef('In place of `kubeconfig`: a Secret of the hub holding the member\'s kubeconfig', 'kubeconfig'),
    caSecretRef: secretRef('With `server`, in place of `caFile`: a Secret of the hub holding the member\'s CA bundle', 'ca.crt'),
    tokenSecretRef: secretRef('With `server`, in place of `tokenFile`: a Secret of the hub holding flotilla\'s bearer token for the member', 'token'),
  };
  const fleet = structuredClone(FLEET_SCHEMA);
  fleet.properties!.clusters!.items = c;
  return fleet;
}
