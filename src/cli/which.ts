import { CLUSTER_ANNOTATION } from '../api/fleet-object/cluster-annotation.js';
import { collectionPath } from '../api/resource-info.js';
import { memberDiscovery, type DiscoveryDocuments } from '../resources/discovery.js';
import { connectToFlotilla, contextNamespace } from './connection.js';
import { CliError, EXIT_FAILED, EXIT_OK, type Io } from './io.js';
import type { WhichFlags } from './options.js';
import { renderTable } from './text-table.js';
import { CLI_REQUEST_TIMEOUT_MS } from '../registry/defaults.js';

/**
 * `kubectl flotilla which RESOURCE NAME`: which members hold an object of that name. One list
 * through flotilla with `fieldSelector=metadata.name=NAME` (served from its cache, or asked of
 * every member for a resource it does not cache); each item says its member in its
 * `search.flotilla.io/cluster` annotation.
 */
export interface ResolvedResource {
  group: string;
  version: string;
  resource: string;
  namespaced: boolean;
}

/**
 * A resource as kubectl names it: its plural, singular or a short name, optionally `.group`
 * (`pods`, `pod`, `po`, `deploy`, `deployments.apps`), resolved through flotilla's discovery; the
 * core group first, then the groups in discovery's order, each at its preferred version.
 */
export function resolveResource(docs: DiscoveryDocuments, name: string): ResolvedResource | undefined {
  const wanted = name.toLowerCase();
  for (const g of [...docs.legacy, ...docs.groups]) {
    const group = g.metadata.name ?? '';
    const version = g.versions[0];
    if (!version) continue;
    for (const r of version.resources) {
      const names = [r.resource, r.singularResource, ...(r.shortNames ?? [])].filter(Boolean);
      if (names.some((n) => n === wanted || (group && `${n}.${group}` === wanted))) {
        return { group, version: version.version, resource: r.resource, namespaced: r.scope === 'Namespaced' };
      }
    }
  }
  return undefined;
}

interface ListedItem {
  metadata?: { name?: string; namespace?: string; annotations?: Record<string, string> };
}

/** The rows `which` prints: each item's member (from its annotation), namespace and name. */
export function holders(items: readonly ListedItem[]): { cluster: string; namespace: string; name: string }[] {
  return items
    .map((item) => ({
      cluster: item.metadata?.annotations?.[CLUSTER_ANNOTATION] ?? '(unknown)',
      namespace: item.metadata?.namespace ?? '',
      name: item.metadata?.name ?? '',
    }))
    .sort((a, b) => a.cluster.localeCompare(b.cluster) || a.namespace.localeCompare(b.namespace));
}

export async function showWhich(resourceName: string, objectName: string, flags: WhichFlags, io: Io): Promise<number> {
  const flotilla = await connectToFlotilla(flags);
  try {
    const docs = await memberDiscovery(flotilla.client, AbortSignal.timeout(CLI_REQUEST_TIMEOUT_MS)).catch((e: unknown) => {
      throw new CliError(`flotilla's discovery: ${(e as Error).message}`);
    });
    const resource = resolveResource(docs, resourceName);
    if (!resource) throw new CliError(`the server doesn't have a resource type "${resourceName}"`);
    const namespace = resource.namespaced && !flags.allNamespaces ? (flags.namespace ?? contextNamespace(flotilla.kubeConfig)) : undefined;
    const path = `${collectionPath(resource, namespace)}?fieldSelector=${encodeURIComponent(`metadata.name=${objectName}`)}`;
    const list = await flotilla.getJson<{ items?: ListedItem[] }>(path);
    const rows = holders(list.items ?? []);
    const what = `${resource.resource}${resource.group ? `.${resource.group}` : ''} "${objectName}"`;
    if (rows.length === 0) {
      io.err(`${what} is on no member${namespace ? ` in namespace ${namespace}` : ''}\n`);
      return EXIT_FAILED;
    }
    io.out(renderTable(['CLUSTER', ...(resource.namespaced ? ['NAMESPACE'] : []), 'NAME'], rows.map((r) => [r.cluster, ...(resource.namespaced ? [r.namespace] : []), r.name]), io.color));
    return EXIT_OK;
  } finally {
    flotilla.close();
  }
}
