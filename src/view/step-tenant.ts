import { RENAMED_OWNERS_FIELD, fieldIndexKey, type MetaRecord } from '../store/meta-record.js';
import { CRDS, resourceName, type ResourcePolicy } from '../tenancy/tenant.js';
import { storedMetadataAt, editsInPlace, namespaceCut, rewrittenForTenant, tenantCells } from '../tenancy/object-bytes.js';
import type { ObjectNaming } from '../tenancy/naming-direction.js';
import { storeKeyToTenant } from '../tenancy/request-names.js';
import type { Presentation } from './read-view.js';
import type { ViewStep } from './view-step.js';

/**
 * A tenant's view (src/tenancy): only its own objects, shown in its names. Its namespaces (or
 * owned cluster-scoped names) are one key range of the store, `acme-…`, so a tenant's list reads
 * only its objects and pages count right; a hidden resource shows nothing; a shared one shows
 * every object as it is. The request already speaks the member's names (rewritten at the edge).
 */
export const tenantView: ViewStep = {
  name: 'tenant',
  apply(view, req) {
    const naming = req.tenant;
    if (!naming) return;
    const { tenant } = naming;
    const info = req.resource.info;
    const policy = tenant.policy(info.group, info.resource, info.namespaced);
    switch (policy) {
      case 'hidden':
        view.keepClusters(() => false);
        return;
      case 'shared':
        return;
      case 'namespaced':
        view.keepPrefixed(tenant.prefix, true);
        break;
      case 'owned':
        if (resourceName(info.group, info.resource) === CRDS) {
          // A CRD's name holds its group (`widgets.acme.example.com`): not a prefix of the name.
          view.require({ name: `tenant-crds:${tenant.id}`, needsMeta: false, test: (o) => tenant.tenantName(info.group, info.resource, o.name, 'owned') !== undefined });
        } else {
          view.keepPrefixed(tenant.prefix, false);
        }
        break;
      case 'group':
        break;
    }
    view.present(tenantNames(naming, info, policy));
  },
};

const OWNERS_RENAMED = { key: fieldIndexKey(RENAMED_OWNERS_FIELD), value: 'true' };

/** Objects, Table cells and continue tokens in the tenant's names. */
function tenantNames(naming: ObjectNaming, info: { group: string; version?: string; resource: string; kind: string; namespaced: boolean }, policy: ResourcePolicy): Presentation {
  const { tenant } = naming;
  const inPlace = editsInPlace(tenant, info);
  // Where every stored object's metadata starts; a layout found otherwise is walked instead.
  const metadataAt = info.version !== undefined ? storedMetadataAt(info.kind, info.group ? `${info.group}/${info.version}` : info.version) : -1;
  const withCells = (meta: MetaRecord | undefined, span: [number, number] | undefined, renamed?: { from: string; to: string }): MetaRecord | undefined =>
    meta && { ...meta, ...(span ? { metadataSpan: span } : {}), ...(meta.cells ? { cells: tenantCells(meta.cells, tenant, renamed) } : {}) };
  return {
    name: `tenant:${tenant.id}`,
    ...(inPlace ? { marks: OWNERS_RENAMED } : {}),
    ...(inPlace ? {
      // Objects no mark names (most): their namespace cut in place, nothing else read.
      presentBytes: (o: { name: string }, bytes: Buffer, marked: boolean | undefined) => (marked === false ? namespaceCut(bytes, tenant, metadataAt, o.name) : undefined),
    } : {}),
    present(o, bytes, metaOf) {
      // Marked at ingest: an owner reference the tenant reads renamed (the whole object is rewritten).
      if (inPlace && !(o.marked ?? metaOf()?.fields?.[RENAMED_OWNERS_FIELD] === 'true')) {
        const cut = namespaceCut(bytes, tenant, metadataAt, o.name);
        if (cut) {
          return {
            bytes: [bytes.subarray(0, cut.from), bytes.subarray(cut.to)],
            meta: () => {
              const meta = metaOf();
              return withCells(meta, meta ? [meta.metadataSpan[0], meta.metadataSpan[1] - (cut.to - cut.from)] : undefined);
            },
          };
        }
      }
      const rewritten = rewrittenForTenant(bytes, naming);
      // In the tenant's range but naming another tenant's: not shown.
      if (!rewritten) return undefined;
      return { bytes: rewritten.bytes, meta: () => withCells(metaOf(), rewritten.metadataSpan, rewritten.renamed) };
    },
    shownKey: (key) => storeKeyToTenant(key, tenant, { group: info.group, resource: info.resource, policy }),
  };
}
