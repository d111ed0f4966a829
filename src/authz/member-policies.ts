import { gvrKey } from '../api/resource-info.js';
import { RBAC_GROUP, RBAC_RESOURCES, indexPolicy, policyOf, type IndexedPolicy, type PolicyObjects, type RbacResource } from '../api/rbac.js';
import type { Store } from '../store/store.js';
import { POLICY_SETTLE_MS } from '../registry/defaults.js';

/**
 * Each member's RBAC policy, as its cached Roles, ClusterRoles, RoleBindings and
 * ClusterRoleBindings say: rebuilt from the store on first need after a change, and indexed by
 * subject so that deciding for a caller reads only the bindings that name it or its groups.
 *
 * Every commit of an RBAC object bumps the epoch (access sets computed before it are stale) and,
 * a moment later (changes come in bursts: a `kubectl apply` of a Role and its binding), tells the
 * listeners which members changed, so running watches can be shown or hidden what the change
 * concerns.
 */
export const rbacKey = (resource: RbacResource): string => gvrKey({ group: RBAC_GROUP, version: 'v1', resource });

export type PolicyListener = (clusters: ReadonlySet<string>) => void;

export class MemberPolicies {
  private readonly policies = new Map<string, IndexedPolicy>();
  private readonly listeners = new Set<PolicyListener>();
  private readonly unsubscribe: (() => void)[] = [];
  private changed = new Set<string>();
  private settle?: NodeJS.Timeout;
  /** Bumped by every RBAC change anywhere: what was decided before it is decided again. */
  epoch = 0;

  constructor(
    private readonly store: Store,
    /** Why flotilla's own credentials cannot keep a member's copy of a resource (gvrKey), while its member refuses them. */
    private readonly rightsShortfall: (cluster: string, resource: string) => string | undefined = () => undefined,
  ) {
    for (const r of RBAC_RESOURCES) {
      this.unsubscribe.push(store.subscribe(rbacKey(r), (events) => {
        for (const ev of events) this.invalidate(ev.cluster);
      }));
    }
  }

  /** The member's policy as cached now (empty before its RBAC objects are listed: nothing is allowed). */
  policy(cluster: string): IndexedPolicy {
    let p = this.policies.get(cluster);
    if (!p) this.policies.set(cluster, (p = indexPolicy(policyOf(this.read(cluster)))));
    return p;
  }

  /**
   * Why the member's policy as cached is not its policy, when flotilla's own credentials cannot
   * list or watch one of its RBAC resources: a decision from it would blame the caller for what
   * flotilla lacks.
   */
  incomplete(cluster: string): string | undefined {
    for (const r of RBAC_RESOURCES) {
      const why = this.rightsShortfall(cluster, rbacKey(r));
      if (why !== undefined) return why;
    }
    return undefined;
  }

  onChange(listener: PolicyListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** A member whose policy may have changed without an event (the configuration changed). */
  invalidate(cluster?: string): void {
    this.epoch++;
    if (cluster === undefined) this.policies.clear();
    else this.policies.delete(cluster);
    this.changed.add(cluster ?? '*');
    this.settle ??= setTimeout(() => {
      this.settle = undefined;
      const changed = this.changed;
      this.changed = new Set();
      for (const l of this.listeners) l(changed);
    }, POLICY_SETTLE_MS);
  }

  close(): void {
    for (const u of this.unsubscribe) u();
    clearTimeout(this.settle);
  }

  private read(cluster: string): PolicyObjects {
    const all = <T>(resource: RbacResource): T[] => {
      const out: T[] = [];
      for (const e of this.store.entries(rbacKey(resource), { cluster })) {
        if (e.cluster === cluster) out.push(JSON.parse(e.bytes.toString('utf8')) as T);
      }
      return out;
    };
    return { roles: all('roles'), clusterRoles: all('clusterroles'), roleBindings: all('rolebindings'), clusterRoleBindings: all('clusterrolebindings') };
  }
}
