import { readFile } from 'node:fs/promises';
import { dirname, isAbsolute, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { labelSelectorFromObject, matchesLabels, validateLabelKey, validateLabelValue } from '../api/label-selector.js';
import {
  DEFAULT_EVENT_LOG_SIZE,
  DEFAULT_LIST_PAGE_SIZE,
  DEFAULT_MAX_INFLIGHT_LISTS_PER_MEMBER,
  DEFAULT_MAX_INFLIGHT_LIST_PAGES,
  DEFAULT_MAX_WATCH_BUFFER_MIB,
  DEFAULT_MEMBER_HEARTBEAT_MILLISECONDS,
  DEFAULT_MIN_WATCH_TIMEOUT_SECONDS,
  DEFAULT_TOKEN_CACHE_TTL_SECONDS,
  DEFAULT_TOKEN_REVIEW_STALE_SECONDS,
  DEFAULT_WATCH_BOOKMARK_INTERVAL_SECONDS,
  DEFAULT_WATCH_CATCH_UP_STALL_SECONDS,
  LIVE_BUFFER_MIB,
  LIVE_WATCHES,
  MEMBER_FAN_OUT,
} from './defaults.js';

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

/**
 * The fleet configuration file: which clusters, which resources to cache from which of them, and
 * options. Validation collects every problem and names the file and the field path of each.
 */
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
  liveReads: { enabled: boolean; exclude: string[]; concurrency: number; maxBufferMiB: number; maxWatches: number };
  /**
   * How often each member is probed (GET /readyz). A member whose probe has been outstanding
   * longer than this, or whose last probe failed, is silent: reads of its cached objects say so.
   */
  memberHeartbeatMilliseconds: number;
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

export interface FleetConfig {
  clusters: ClusterConfig[];
  resources: ResourceRule[];
  options: FleetOptions;
  authentication: AuthenticationSpec;
  tenants: TenantSpec[];
}

export class ConfigError extends Error {}

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
// A plural resource name, then its API group if not core: `secrets`, `leases.coordination.k8s.io`.
const RESOURCE_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const VERSION = /^v[0-9]+((alpha|beta)[0-9]+)?$/;

type Obj = Record<string, unknown>;

class Checker {
  readonly errors: string[] = [];
  constructor(private readonly file: string) {}

  fail(path: string, msg: string): void {
    this.errors.push(`${this.file}: ${path}: ${msg}`);
  }

  object(v: unknown, path: string, allowed: readonly string[]): Obj | undefined {
    if (typeof v !== 'object' || v === null || Array.isArray(v)) {
      this.fail(path, `must be a mapping, got ${describe(v)}`);
      return undefined;
    }
    for (const k of Object.keys(v)) {
      if (!allowed.includes(k)) this.fail(`${path}.${k}`.replace(/^\./, ''), `unknown field; allowed: ${allowed.join(', ')}`);
    }
    return v as Obj;
  }

  string(v: unknown, path: string, opts: { required?: boolean; pattern?: RegExp; patternDesc?: string } = {}): string | undefined {
    if (v === undefined || v === null) {
      if (opts.required) this.fail(path, 'is required');
      return undefined;
    }
    if (typeof v !== 'string') {
      this.fail(path, `must be a string, got ${describe(v)}`);
      return undefined;
    }
    if (opts.pattern && !opts.pattern.test(v)) {
      this.fail(path, `must be ${opts.patternDesc}, got ${JSON.stringify(v)}`);
      return undefined;
    }
    return v;
  }

  /** `v` when it is an integer from `min` to `max`; undefined (a failure named at `path` when given). */
  intIn(v: unknown, path: string, min: number, max: number): number | undefined {
    if (v === undefined) return undefined;
    if (typeof v === 'number' && Number.isInteger(v) && v >= min && v <= max) return v;
    this.fail(path, `must be an integer from ${min} to ${max}, got ${describe(v)}`);
    return undefined;
  }

  stringList(v: unknown, path: string, check?: (s: string, p: string) => void): string[] | undefined {
    if (v === undefined || v === null) return undefined;
    if (!Array.isArray(v)) {
      this.fail(path, `must be a list, got ${describe(v)}`);
      return undefined;
    }
    const out: string[] = [];
    v.forEach((item, i) => {
      const s = this.string(item, `${path}[${i}]`);
      if (s !== undefined) {
        check?.(s, `${path}[${i}]`);
        out.push(s);
      }
    });
    return out;
  }

  labels(v: unknown, path: string): Record<string, string> {
    if (v === undefined || v === null) return {};
    const o = this.object(v, path, Object.keys(v as Obj));
    const out: Record<string, string> = {};
    for (const [k, val] of Object.entries(o ?? {})) {
      const keyErr = validateLabelKey(k);
      if (keyErr) this.fail(`${path}.${k}`, keyErr);
      const s = this.string(val, `${path}.${k}`);
      if (s === undefined) continue;
      const valErr = validateLabelValue(s);
      if (valErr) this.fail(`${path}.${k}`, valErr);
      out[k] = s;
    }
    return out;
  }
}

function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'a list';
  return typeof v === 'object' ? 'a mapping' : `${typeof v} ${JSON.stringify(v)}`;
}

const DNS_LABEL_DESC = "a DNS-1123 label (lowercase letters, digits, '-')";

export function parseFleetConfig(text: string, sourcePath: string): FleetConfig {
  const file = sourcePath.split('/').pop() ?? sourcePath;
  let doc: unknown;
  try {
    doc = parseYaml(text);
  } catch (e) {
    throw new ConfigError(`${file}: not valid YAML: ${(e as Error).message}`);
  }
  return parseFleetDocument(doc, { source: file, baseDir: dirname(resolve(sourcePath)) });
}

/**
 * Validates a fleet document already parsed (the YAML file's, or a Fleet object's `spec`): every
 * problem is collected and named `<source>: <field path>: <what is wrong>`. Relative paths are
 * resolved against `baseDir`; without one (a Fleet object has no directory) they are refused.
 */
export function parseFleetDocument(doc: unknown, where: { source: string; baseDir?: string }): FleetConfig {
  const { baseDir } = where;
  const c = new Checker(where.source);
  const abs = (p: string, field: string) => {
    if (isAbsolute(p)) return p;
    if (baseDir === undefined) c.fail(field, `must be an absolute path (there is no file to be relative to), got ${JSON.stringify(p)}`);
    return resolve(baseDir ?? '/', p);
  };
  const root = c.object(doc ?? {}, '', ['clusters', 'resources', 'options', 'authentication', 'tenants']) ?? {};

  const clusters: ClusterConfig[] = [];
  if (!Array.isArray(root.clusters) || root.clusters.length === 0) {
    c.fail('clusters', 'must list at least one cluster');
  } else {
    const seen = new Set<string>();
    root.clusters.forEach((raw, i) => {
      const p = `clusters[${i}]`;
      const o = c.object(raw, p, ['name', 'kubeconfig', 'context', 'server', 'caFile', 'tokenFile', 'insecureSkipTLSVerify', 'labels', 'authorization', 'priority']);
      if (!o) return;
      const name = c.string(o.name, `${p}.name`, { required: true, pattern: DNS_LABEL, patternDesc: DNS_LABEL_DESC });
      if (name !== undefined) {
        if (seen.has(name)) c.fail(`${p}.name`, `duplicate cluster name ${JSON.stringify(name)}`);
        seen.add(name);
      }
      const kubeconfig = c.string(o.kubeconfig, `${p}.kubeconfig`);
      const server = c.string(o.server, `${p}.server`, { pattern: /^https?:\/\/\S+$/, patternDesc: 'an http(s) URL' });
      if ((o.kubeconfig === undefined) === (o.server === undefined)) c.fail(p, 'needs exactly one of kubeconfig or server');
      if (kubeconfig !== undefined) {
        for (const f of ['caFile', 'tokenFile', 'insecureSkipTLSVerify']) {
          if (o[f] !== undefined) c.fail(`${p}.${f}`, 'only goes with server (the kubeconfig has its own)');
        }
      } else if (o.context !== undefined) {
        c.fail(`${p}.context`, 'only goes with kubeconfig');
      }
      if (o.insecureSkipTLSVerify !== undefined && typeof o.insecureSkipTLSVerify !== 'boolean') c.fail(`${p}.insecureSkipTLSVerify`, 'must be true or false');
      const caFile = c.string(o.caFile, `${p}.caFile`);
      const tokenFile = c.string(o.tokenFile, `${p}.tokenFile`);
      const context = c.string(o.context, `${p}.context`);
      const authorization = c.string(o.authorization, `${p}.authorization`, { pattern: /^(rbac|subjectAccessReview)$/, patternDesc: 'rbac or subjectAccessReview' }) as ClusterConfig['authorization'] | undefined;
      const priority = c.intIn(o.priority ?? 0, `${p}.priority`, -1000, 1000) ?? 0;
      if (name === undefined) return;
      clusters.push({
        name,
        ...(kubeconfig !== undefined ? { kubeconfig: abs(kubeconfig, `${p}.kubeconfig`) } : {}),
        ...(context !== undefined ? { context } : {}),
        ...(server !== undefined ? { server } : {}),
        ...(caFile !== undefined ? { caFile: abs(caFile, `${p}.caFile`) } : {}),
        ...(tokenFile !== undefined ? { tokenFile: abs(tokenFile, `${p}.tokenFile`) } : {}),
        ...(typeof o.insecureSkipTLSVerify === 'boolean' ? { insecureSkipTLSVerify: o.insecureSkipTLSVerify } : {}),
        labels: c.labels(o.labels, `${p}.labels`),
        authorization: authorization ?? 'rbac',
        priority,
      });
    });
  }

  const names = new Set(clusters.map((cl) => cl.name));
  const resources: ResourceRule[] = [];
  if (!Array.isArray(root.resources) || root.resources.length === 0) {
    c.fail('resources', 'must list at least one resource');
  } else {
    const seen = new Set<string>();
    root.resources.forEach((raw, i) => {
      const p = `resources[${i}]`;
      const o = c.object(raw, p, ['group', 'version', 'resource', 'namespaces', 'clusters', 'clusterSelector']);
      if (!o) return;
      const group = o.group === undefined || o.group === '' ? '' : c.string(o.group, `${p}.group`, { pattern: DNS_SUBDOMAIN, patternDesc: 'an API group (a DNS subdomain, or "" for core)' });
      const version = c.string(o.version, `${p}.version`, { required: true, pattern: VERSION, patternDesc: 'an API version such as v1 or v1beta1' });
      const resource = c.string(o.resource, `${p}.resource`, { required: true, pattern: DNS_LABEL, patternDesc: 'a lowercase plural resource name such as pods' });
      const namespaces = c.stringList(o.namespaces, `${p}.namespaces`, (s, sp) => {
        if (!DNS_LABEL.test(s)) c.fail(sp, `must be ${DNS_LABEL_DESC}, got ${JSON.stringify(s)}`);
      });
      const ruleClusters = c.stringList(o.clusters, `${p}.clusters`, (s, sp) => {
        if (!names.has(s)) c.fail(sp, `no cluster named ${JSON.stringify(s)} in clusters`);
      });
      let clusterSelector: LabelSelectorSpec | undefined;
      if (o.clusterSelector !== undefined) {
        const sel = c.object(o.clusterSelector, `${p}.clusterSelector`, ['matchLabels', 'matchExpressions']);
        if (sel) {
          clusterSelector = {};
          if (sel.matchLabels !== undefined) clusterSelector.matchLabels = c.labels(sel.matchLabels, `${p}.clusterSelector.matchLabels`);
          if (sel.matchExpressions !== undefined) {
            if (!Array.isArray(sel.matchExpressions)) c.fail(`${p}.clusterSelector.matchExpressions`, 'must be a list');
            else {
              clusterSelector.matchExpressions = [];
              sel.matchExpressions.forEach((e, j) => {
                const ep = `${p}.clusterSelector.matchExpressions[${j}]`;
                const eo = c.object(e, ep, ['key', 'operator', 'values']);
                if (!eo) return;
                const key = c.string(eo.key, `${ep}.key`, { required: true });
                const operator = c.string(eo.operator, `${ep}.operator`, { required: true, pattern: /^(In|NotIn|Exists|DoesNotExist)$/, patternDesc: 'one of In, NotIn, Exists, DoesNotExist' });
                const values = c.stringList(eo.values, `${ep}.values`) ?? [];
                if ((operator === 'In' || operator === 'NotIn') && values.length === 0) c.fail(`${ep}.values`, `must not be empty for ${operator}`);
                if ((operator === 'Exists' || operator === 'DoesNotExist') && values.length > 0) c.fail(`${ep}.values`, `must be empty for ${operator}`);
                if (key !== undefined && operator !== undefined) {
                  clusterSelector!.matchExpressions!.push({ key, operator: operator as 'In', values });
                }
              });
            }
          }
        }
      }
      if (ruleClusters && clusterSelector) c.fail(p, 'give clusters or clusterSelector, not both');
      if (version === undefined || resource === undefined || group === undefined) return;
      const id = `${group}/${version}/${resource}`;
      if (seen.has(id)) c.fail(p, `duplicate rule for ${group ? `${resource}.${group}` : resource}/${version}; merge its clusters and namespaces into one rule`);
      seen.add(id);
      resources.push({
        group,
        version,
        resource,
        ...(namespaces ? { namespaces } : {}),
        ...(ruleClusters ? { clusters: ruleClusters } : {}),
        ...(clusterSelector ? { clusterSelector } : {}),
      });
    });
  }

  const options: FleetOptions = {
    dropManagedFields: true,
    listPageSize: DEFAULT_LIST_PAGE_SIZE,
    maxInflightListsPerMember: DEFAULT_MAX_INFLIGHT_LISTS_PER_MEMBER,
    maxInflightListPages: DEFAULT_MAX_INFLIGHT_LIST_PAGES,
    watchBookmarkIntervalSeconds: DEFAULT_WATCH_BOOKMARK_INTERVAL_SECONDS,
    minWatchTimeoutSeconds: DEFAULT_MIN_WATCH_TIMEOUT_SECONDS,
    watchCatchUpStallSeconds: DEFAULT_WATCH_CATCH_UP_STALL_SECONDS,
    maxWatchBufferMiB: DEFAULT_MAX_WATCH_BUFFER_MIB,
    eventLogSize: DEFAULT_EVENT_LOG_SIZE,
    liveReads: { enabled: true, exclude: [], concurrency: MEMBER_FAN_OUT, maxBufferMiB: LIVE_BUFFER_MIB, maxWatches: LIVE_WATCHES },
    memberHeartbeatMilliseconds: DEFAULT_MEMBER_HEARTBEAT_MILLISECONDS,
  };
  if (root.options !== undefined) {
    const o = c.object(root.options, 'options', ['dropManagedFields', 'listPageSize', 'maxInflightListsPerMember', 'maxInflightListPages', 'watchBookmarkIntervalSeconds', 'minWatchTimeoutSeconds', 'watchCatchUpStallSeconds', 'maxWatchBufferMiB', 'eventLogSize', 'liveReads', 'memberHeartbeatMilliseconds']);
    if (o?.dropManagedFields !== undefined) {
      if (typeof o.dropManagedFields !== 'boolean') c.fail('options.dropManagedFields', 'must be true or false');
      else options.dropManagedFields = o.dropManagedFields;
    }
    const int = (field: 'listPageSize' | 'maxInflightListsPerMember' | 'maxInflightListPages' | 'watchBookmarkIntervalSeconds' | 'minWatchTimeoutSeconds' | 'watchCatchUpStallSeconds' | 'maxWatchBufferMiB' | 'eventLogSize' | 'memberHeartbeatMilliseconds', min: number, max: number) => {
      const n = c.intIn(o?.[field], `options.${field}`, min, max);
      if (n !== undefined) options[field] = n;
    };
    int('listPageSize', 1, 10000);
    int('maxInflightListsPerMember', 1, 100);
    int('maxInflightListPages', 1, 10_000);
    int('watchBookmarkIntervalSeconds', 1, 3600);
    int('minWatchTimeoutSeconds', 1, 86400);
    int('watchCatchUpStallSeconds', 1, 86400);
    int('maxWatchBufferMiB', 1, 1024);
    int('eventLogSize', 1000, 100_000_000);
    int('memberHeartbeatMilliseconds', 50, 60_000);
    if (o?.liveReads !== undefined) {
      const live = c.object(o.liveReads, 'options.liveReads', ['enabled', 'exclude', 'concurrency', 'maxBufferMiB', 'maxWatches']);
      if (live?.enabled !== undefined) {
        if (typeof live.enabled !== 'boolean') c.fail('options.liveReads.enabled', 'must be true or false');
        else options.liveReads.enabled = live.enabled;
      }
      const exclude = c.stringList(live?.exclude, 'options.liveReads.exclude', (s, sp) => {
        if (!RESOURCE_NAME.test(s)) c.fail(sp, `must be a resource as kubectl names it (resource, or resource.group), got ${JSON.stringify(s)}`);
      });
      if (exclude) options.liveReads.exclude = exclude;
      for (const [field, max] of [['concurrency', 10_000], ['maxBufferMiB', 1_048_576], ['maxWatches', 1_000_000]] as const) {
        const n = c.intIn(live?.[field], `options.liveReads.${field}`, 1, max);
        if (n !== undefined) options.liveReads[field] = n;
      }
    }
  }

  const authentication: AuthenticationSpec = { cacheTTLSeconds: DEFAULT_TOKEN_CACHE_TTL_SECONDS, tokenReviewStaleSeconds: DEFAULT_TOKEN_REVIEW_STALE_SECONDS, anonymous: false };
  if (root.authentication !== undefined) {
    const o = c.object(root.authentication, 'authentication', ['tokenReviewCluster', 'tokenFile', 'cacheTTLSeconds', 'tokenReviewStaleSeconds', 'anonymous']);
    const reviewer = c.string(o?.tokenReviewCluster, 'authentication.tokenReviewCluster');
    if (reviewer !== undefined) {
      if (!clusters.some((cl) => cl.name === reviewer)) c.fail('authentication.tokenReviewCluster', `names no cluster of this file: ${JSON.stringify(reviewer)}`);
      authentication.tokenReviewCluster = reviewer;
    }
    const tokenFile = c.string(o?.tokenFile, 'authentication.tokenFile');
    if (tokenFile !== undefined) authentication.tokenFile = abs(tokenFile, 'authentication.tokenFile');
    authentication.cacheTTLSeconds = c.intIn(o?.cacheTTLSeconds, 'authentication.cacheTTLSeconds', 0, 3600) ?? authentication.cacheTTLSeconds;
    authentication.tokenReviewStaleSeconds = c.intIn(o?.tokenReviewStaleSeconds, 'authentication.tokenReviewStaleSeconds', 0, 86400) ?? authentication.tokenReviewStaleSeconds;
    if (o?.anonymous !== undefined) {
      if (typeof o.anonymous !== 'boolean') c.fail('authentication.anonymous', 'must be true or false');
      else authentication.anonymous = o.anonymous;
    }
  }

  const tenants = parseTenants(c, root.tenants);

  if (c.errors.length > 0) throw new ConfigError(c.errors.join('\n'));
  return { clusters, resources, options, authentication, tenants };
}

/**
 * Tenants: ids short enough that `<id>-<namespace>` stays a DNS label for namespaces of up to 42
 * characters, none another's id plus separator (`ab` and `ab-c` could not be told apart), each
 * user and group in one tenant only.
 */
function parseTenants(c: Checker, raw: unknown): TenantSpec[] {
  if (raw === undefined || raw === null) return [];
  if (!Array.isArray(raw)) {
    c.fail('tenants', `must be a list, got ${describe(raw)}`);
    return [];
  }
  const tenants: TenantSpec[] = [];
  const members = new Map<string, string>();
  raw.forEach((item, i) => {
    const p = `tenants[${i}]`;
    const o = c.object(item, p, ['id', 'users', 'groups', 'clusterScoped', 'admins']);
    if (!o) return;
    const id = c.string(o.id, `${p}.id`, { required: true, pattern: TENANT_ID, patternDesc: 'a DNS-1123 label of at most 20 characters' });
    const users = c.stringList(o.users, `${p}.users`) ?? [];
    const groups = c.stringList(o.groups, `${p}.groups`) ?? [];
    if (users.length + groups.length === 0) c.fail(p, 'names no users and no groups: nobody would see this tenant');
    if (id === undefined) return;
    for (const [kind, list] of [['user', users], ['group', groups]] as const) {
      for (const name of list) {
        const other = members.get(`${kind}:${name}`);
        if (other !== undefined && other !== id) c.fail(`${p}.${kind}s`, `${kind} ${JSON.stringify(name)} is already in tenant ${JSON.stringify(other)}: a caller belongs to one tenant`);
        members.set(`${kind}:${name}`, id);
      }
    }
    const clusterScoped: Record<string, ClusterScopedPolicy> = {};
    if (o.clusterScoped !== undefined) {
      const cs = c.object(o.clusterScoped, `${p}.clusterScoped`, Object.keys(o.clusterScoped as Obj));
      for (const [resource, policy] of Object.entries(cs ?? {})) {
        if (!RESOURCE_NAME.test(resource)) c.fail(`${p}.clusterScoped.${resource}`, 'must be a resource as kubectl names it (resource, or resource.group)');
        const v = c.string(policy, `${p}.clusterScoped.${resource}`, { required: true, pattern: /^(owned|shared|hidden)$/, patternDesc: 'owned, shared or hidden' });
        if (v !== undefined) clusterScoped[resource] = v as ClusterScopedPolicy;
      }
    }
    const admins = parseTenantAdmins(c, o.admins, p, users, groups);
    if (tenants.some((t) => t.id === id)) c.fail(`${p}.id`, `duplicate tenant id ${JSON.stringify(id)}`);
    const clash = clashingTenantIds([...tenants.map((t) => t.id), id]);
    if (clash) c.fail(`${p}.id`, `tenant ids ${JSON.stringify(clash[0])} and ${JSON.stringify(clash[1])} clash: names of the second start with the first's id and separator`);
    tenants.push({ id, users, groups, clusterScoped, ...(admins ? { admins } : {}) });
  });
  return tenants;
}

/** A tenant's admins: its own users and groups only, so the member-side policy never binds an outsider. */
function parseTenantAdmins(c: Checker, raw: unknown, p: string, users: readonly string[], groups: readonly string[]): TenantSpec['admins'] {
  if (raw === undefined || raw === null) return undefined;
  const o = c.object(raw, `${p}.admins`, ['users', 'groups']);
  if (!o) return undefined;
  const own = (kind: 'user' | 'group', list: readonly string[]) => (s: string, sp: string) => {
    if (!list.includes(s)) c.fail(sp, `${kind} ${JSON.stringify(s)} is not one of this tenant's ${kind}s`);
  };
  const admins = { users: c.stringList(o.users, `${p}.admins.users`, own('user', users)) ?? [], groups: c.stringList(o.groups, `${p}.admins.groups`, own('group', groups)) ?? [] };
  if (admins.users.length + admins.groups.length === 0) c.fail(`${p}.admins`, 'names no users and no groups: leave it out to bind nobody');
  return admins;
}

const TENANT_ID = /^[a-z0-9]([-a-z0-9]{0,18}[a-z0-9])?$/;

/**
 * Two tenant ids whose names could not be told apart, or undefined: one is the other's id plus
 * separator (`ab` and `ab-c`: the namespace `ab-c-x` would be both tenants').
 */
export function clashingTenantIds(ids: readonly string[]): [string, string] | undefined {
  for (const a of ids) for (const b of ids) if (a !== b && b.startsWith(`${a}-`)) return [a, b];
  return undefined;
}

export async function loadFleetConfig(path: string): Promise<FleetConfig> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (e) {
    throw new ConfigError(`${path}: cannot read the fleet configuration: ${(e as Error).message}`);
  }
  return parseFleetConfig(text, path);
}

/**
 * The clusters a rule applies to: by name, by label selector, or all of them; in the fleet's
 * order of preference (priority, then configuration order), which a get by name follows.
 */
export function selectClusters(rule: ResourceRule, clusters: ClusterConfig[]): ClusterConfig[] {
  let selected = clusters;
  if (rule.clusters) selected = clusters.filter((c) => rule.clusters!.includes(c.name));
  else if (rule.clusterSelector) {
    const sel = labelSelectorFromObject(rule.clusterSelector);
    selected = clusters.filter((c) => matchesLabels(sel, c.labels));
  }
  // Stable: equal priorities keep the configuration's order.
  return [...selected].sort((a, b) => b.priority - a.priority);
}
