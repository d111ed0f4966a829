import type { DiscoveryGroup, DiscoveryVersion } from '../resources/discovery.js';
import { nameOf, type FleetDocuments } from './union.js';

/**
 * The fleet's discovery as the API serves it: the legacy documents (`/api`, `/apis`,
 * `/apis/<group>[/<version>]`) and aggregated discovery (apidiscovery.k8s.io/v2), rendered from
 * the union (union.ts), as client-go derives the legacy ones from aggregated discovery.
 */

export function legacyVersions(docs: FleetDocuments, serverAddress: string): object {
  const versions = docs.legacy.flatMap((g) => g.versions.map((v) => v.version));
  return {
    kind: 'APIVersions',
    versions: versions.length ? versions : ['v1'],
    serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress }],
  };
}

function apiGroup(g: DiscoveryGroup): object {
  const vs = g.versions.map((v) => ({ groupVersion: `${nameOf(g)}/${v.version}`, version: v.version }));
  return { name: nameOf(g), versions: vs, preferredVersion: vs[0] };
}

export function groupList(docs: FleetDocuments): object {
  return { kind: 'APIGroupList', apiVersion: 'v1', groups: docs.groups.map(apiGroup) };
}

export function group(docs: FleetDocuments, name: string): object | undefined {
  const g = docs.groups.find((x) => nameOf(x) === name);
  return g ? { kind: 'APIGroup', apiVersion: 'v1', ...apiGroup(g) } : undefined;
}

function groupVersionOf(docs: FleetDocuments, grp: string, version: string): DiscoveryVersion | undefined {
  return (grp === '' ? docs.legacy : docs.groups).find((x) => nameOf(x) === grp)?.versions.find((x) => x.version === version);
}

/** Whether the fleet serves a group-version (its legacy document exists). */
export function servesGroupVersion(docs: FleetDocuments, grp: string, version: string): boolean {
  return groupVersionOf(docs, grp, version) !== undefined;
}

/**
 * A legacy APIResourceList, each resource followed by its subresources (`pods/log`), as the
 * apiserver lists them; `hashes`: resources' storageVersionHash (FleetDiscovery).
 */
export function resourceList(docs: FleetDocuments, grp: string, version: string, hashes?: ReadonlyMap<string, string>): object | undefined {
  const v = groupVersionOf(docs, grp, version);
  if (!v) return undefined;
  // A resource answering in another group/version (a subresource's Scale, say) names it, as the apiserver does.
  const gvk = (k: { group: string; version: string; kind: string } | undefined) => ({
    ...(k && (k.group !== grp || k.version !== version) ? { group: k.group, version: k.version } : {}),
    kind: k?.kind ?? '',
  });
  return {
    kind: 'APIResourceList',
    apiVersion: 'v1',
    groupVersion: grp ? `${grp}/${version}` : version,
    resources: v.resources.flatMap((r) => [
      {
        name: r.resource,
        singularName: r.singularResource,
        namespaced: r.scope === 'Namespaced',
        ...gvk(r.responseKind),
        verbs: r.verbs,
        ...(r.shortNames?.length ? { shortNames: r.shortNames } : {}),
        ...(r.categories?.length ? { categories: r.categories } : {}),
        ...(hashes?.has(r.resource) ? { storageVersionHash: hashes.get(r.resource) } : {}),
      },
      ...(r.subresources ?? []).map((s) => ({
        name: `${r.resource}/${s.subresource}`,
        singularName: '',
        namespaced: r.scope === 'Namespaced',
        ...gvk(s.responseKind),
        verbs: s.verbs,
      })),
    ]),
  };
}

/** Aggregated discovery (apidiscovery.k8s.io/v2): every group, version and resource in one document. */
export const AGGREGATED_DISCOVERY_V2 = 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList';

export function wantsAggregated(accept: string | undefined): boolean {
  // The first acceptable entry decides, as in negotiation: clients list v2 before plain JSON.
  for (const part of (accept ?? '').split(',')) {
    const p = part.replace(/\s+/g, '');
    if (p.startsWith('application/json') && p.includes('g=apidiscovery.k8s.io') && p.includes('v=v2') && !p.includes('v=v2beta1') && p.includes('as=APIGroupDiscoveryList')) return true;
    if (p === 'application/json' || p.startsWith('application/json;') && !p.includes('as=') || p === '*/*') return false;
  }
  return false;
}

export function aggregatedDiscovery(docs: FleetDocuments, legacy: boolean): object {
  return { kind: 'APIGroupDiscoveryList', apiVersion: 'apidiscovery.k8s.io/v2', metadata: {}, items: legacy ? docs.legacy : docs.groups };
}
