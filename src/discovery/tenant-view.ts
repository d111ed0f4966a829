import { SELF_REVIEWS, type FleetNames } from '../tenancy/request-names.js';
import type { KindLookup } from '../tenancy/naming-direction.js';
import type { Tenant } from '../tenancy/tenant.js';
import type { NamedResource } from '../tenancy/answers.js';
import type { DiscoveryGroup } from '../resources/discovery.js';
import { nameOf, READ_VERBS, type FleetDocuments } from './union.js';

/**
 * What a tenant's request and objects are rewritten against (src/tenancy): which groups the fleet
 * serves, each resource's scope, and which resource a kind is.
 */
export interface DiscoveryIndex extends FleetNames {
  kind: KindLookup;
  resource(group: string, resource: string): NamedResource | undefined;
}

export function discoveryIndex(docs: FleetDocuments): DiscoveryIndex {
  const groups = new Set<string>();
  const scopes = new Map<string, boolean>();
  const kinds = new Map<string, { resource: string; namespaced: boolean }>();
  const resources = new Map<string, NamedResource>();
  for (const g of [...docs.legacy, ...docs.groups]) {
    const group = nameOf(g);
    groups.add(group);
    for (const v of g.versions) {
      for (const r of v.resources) {
        const namespaced = r.scope === 'Namespaced';
        if (!scopes.has(`${group}/${r.resource}`)) scopes.set(`${group}/${r.resource}`, namespaced);
        if (r.responseKind?.kind && !resources.has(`${group}/${r.resource}`)) resources.set(`${group}/${r.resource}`, { group, resource: r.resource, kind: r.responseKind.kind, namespaced });
        if (r.responseKind?.kind && !kinds.has(`${group}/${r.responseKind.kind}`)) kinds.set(`${group}/${r.responseKind.kind}`, { resource: r.resource, namespaced });
      }
    }
  }
  return {
    hasGroup: (group) => groups.has(group),
    namespaced: (group, resource) => scopes.get(`${group}/${resource}`),
    kind: (group, kind) => kinds.get(`${group}/${kind}`),
    resource: (group, resource) => resources.get(`${group}/${resource}`),
  };
}

/**
 * Discovery as a tenant sees it: another tenant's CRD groups are gone, its own are named without
 * its id (and hide a group of that name it would otherwise see), hidden cluster-scoped resources
 * are gone, and shared ones have only the read verbs.
 */
export function tenantDocuments(docs: FleetDocuments, tenant: Tenant): FleetDocuments {
  const own = new Set(docs.groups.map(nameOf).filter((g) => g.startsWith(`${tenant.id}.`)));
  const view = (groups: DiscoveryGroup[]): DiscoveryGroup[] => groups.flatMap((g) => {
    const member = nameOf(g);
    const shown = tenant.tenantGroup(member);
    if (shown === undefined || (shown === member && own.has(`${tenant.id}.${member}`))) return [];
    const versions = g.versions.map((v) => ({
      ...v,
      resources: v.resources.flatMap((r) => {
        // Reviews of the caller itself are everyone's.
        const policy = SELF_REVIEWS.has(r.resource) ? 'namespaced' : tenant.policy(member, r.resource, r.scope === 'Namespaced');
        if (policy === 'hidden') return [];
        const kind = r.responseKind ? { responseKind: { ...r.responseKind, group: shown } } : {};
        return [{ ...r, ...kind, ...(policy === 'shared' ? { verbs: r.verbs.filter((verb) => READ_VERBS.has(verb)) } : {}) }];
      }),
    })).filter((v) => v.resources.length > 0);
    return versions.length > 0 || member === '' ? [{ ...g, metadata: member ? { name: shown } : {}, versions }] : [];
  });
  return { legacy: view(docs.legacy), groups: view(docs.groups) };
}
