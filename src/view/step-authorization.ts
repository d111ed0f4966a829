import { createHash } from 'node:crypto';
import type { AccessSet } from '../api/rbac.js';
import type { ViewStep } from './view-step.js';

/**
 * What the caller may read, as each member would decide it (the access the router got from
 * src/authz): a cluster where it may read nothing is taken away (and named); where it may read some
 * namespaces only, the view keeps those (one key range each when no shown cluster grants more) and
 * tests each object's (cluster, namespace). A `/clusters/<name>/` request gets that member's
 * verdict exactly: an all-namespaces read there needs the right in every namespace, as the member
 * would refuse it otherwise.
 */
export const authorization: ViewStep = {
  name: 'authorization',
  apply(view, req) {
    const access = req.access;
    if (!access) return;
    const exact = req.cluster !== undefined;
    for (const c of view.clustersLeft) {
      const a = access.get(c);
      if (!a || !(a.everywhere || (!exact && a.namespaces.size > 0))) view.deny(c);
    }
    const shown = view.clustersLeft.map((c) => [c, access.get(c)!] as const);
    if (shown.every(([, a]) => a.everywhere)) return;
    const partial = shown.filter(([, a]) => !a.everywhere);
    if (partial.length === shown.length) view.keepNamespaces([...new Set(partial.flatMap(([, a]) => [...a.namespaces]))]);
    // One key range per namespace covers it when every cluster grants the same namespaces.
    const same = partial.length === shown.length && partial.every(([, a]) => sameNamespaces(a, partial[0]![1]));
    if (same) return;
    const byCluster = new Map(shown);
    const id = createHash('sha256').update(JSON.stringify(shown.map(([c, a]) => [c, a.everywhere || [...a.namespaces].sort()]))).digest('base64url');
    view.require({
      name: `authorization:${id}`,
      needsMeta: false,
      test: (o) => {
        const a = byCluster.get(o.cluster);
        return a !== undefined && (a.everywhere || a.namespaces.has(o.namespace));
      },
    });
  },
};

function sameNamespaces(a: AccessSet, b: AccessSet): boolean {
  if (a.namespaces.size !== b.namespaces.size) return false;
  for (const n of a.namespaces) if (!b.namespaces.has(n)) return false;
  return true;
}
