import type { FleetConfig, ResourceRule } from '../registry/fleet-config.js';
import { selectClusters } from '../registry/select-clusters.js';
import { gvrKey } from '../api/resource-info.js';
import { RBAC_GROUP, RBAC_RESOURCES } from '../api/rbac.js';

/**
 * Which scopes a fleet configuration asks to cache: its rules (with the RBAC objects authorization
 * needs), and from them one scope per (cluster, resource[, namespace]), each named by `scopeId`.
 * Pure: the cache manager compares what this says with the cachers it runs.
 */

/** One cacher's scope: a cluster's copy of a resource, or of one namespace of it. */
export interface WantedScope {
  rule: ResourceRule;
  cluster: string;
  namespace?: string;
}

export function scopeId(cluster: string, resource: string, namespace?: string): string {
  return `${cluster}/${resource}${namespace ? `@${namespace}` : ''}`;
}

/** The key of the resource a rule caches. */
export function ruleKey(rule: ResourceRule): string {
  return gvrKey({ group: rule.group, version: rule.version, resource: rule.resource });
}

/**
 * The configuration's rules, and the RBAC objects of every member whose reads flotilla authorizes
 * by RBAC: all of them, whatever a rule of the configuration restricts (a policy read in part
 * would decide wrongly). They are served only when the configuration asks for them too.
 */
export function cachedRules(config: FleetConfig): ResourceRule[] {
  const rbacClusters = config.clusters.filter((c) => c.authorization === 'rbac').map((c) => c.name);
  const rules = config.resources.filter((r) => !(r.group === RBAC_GROUP && (RBAC_RESOURCES as readonly string[]).includes(r.resource) && r.version === 'v1'));
  for (const resource of RBAC_RESOURCES) {
    const asked = config.resources.find((r) => r.group === RBAC_GROUP && r.resource === resource && r.version === 'v1');
    const clusters = new Set([...rbacClusters, ...(asked ? selectClusters(asked, config.clusters).map((c) => c.name) : [])]);
    if (clusters.size > 0) rules.push({ group: RBAC_GROUP, version: 'v1', resource, clusters: [...clusters] });
  }
  return rules;
}

/**
 * Every scope the configuration asks for, by scopeId, and its rules by resource key. `namespaced`
 * says what discovery knows of a resource: a rule's namespaces mean nothing for a cluster-scoped
 * one, and one not known yet is taken as namespaced.
 */
export function wantedScopes(config: FleetConfig, namespaced: (key: string) => boolean | undefined): { scopes: Map<string, WantedScope>; rules: Map<string, ResourceRule> } {
  const scopes = new Map<string, WantedScope>();
  const rules = new Map<string, ResourceRule>();
  for (const rule of cachedRules(config)) {
    const key = ruleKey(rule);
    rules.set(key, rule);
    const clusters = selectClusters(rule, config.clusters).map((c) => c.name);
    const namespaces = (namespaced(key) ?? true) && rule.namespaces?.length ? rule.namespaces : [undefined];
    for (const cluster of clusters) {
      for (const namespace of namespaces) {
        scopes.set(scopeId(cluster, key, namespace), { rule, cluster, namespace });
      }
    }
  }
  return { scopes, rules };
}
