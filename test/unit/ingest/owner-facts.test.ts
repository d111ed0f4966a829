import { describe, expect, it } from 'vitest';
import { decodeListPage, decodeListPageByParsing, decodeObject, decodeWatchLine, type IngestContext } from '../../../src/ingest/decode.js';
import { RENAMED_OWNERS_FIELD, indexEntries } from '../../../src/store/meta-record.js';
import { KEY_SEP } from '../../../src/store/keys.js';

/** Every ingest path puts the same owners in the meta record, and the owner index entries follow from it. */
const ctx: IngestContext = { cluster: 'east', apiVersion: 'v1', kind: 'Pod', dropManagedFields: true };

const pod = {
  kind: 'Pod',
  apiVersion: 'v1',
  metadata: {
    name: 'web-1',
    namespace: 'shop',
    uid: 'pod-uid',
    resourceVersion: '7',
    ownerReferences: [
      { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'web-rs', uid: 'rs-uid', controller: true },
      { apiVersion: 'v1', kind: 'ConfigMap', name: 'cm', uid: 'cm-uid' },
      // The same owner twice, and one without a uid: entered once, and not at all.
      { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'web-rs', uid: 'rs-uid' },
      { apiVersion: 'v1', kind: 'ConfigMap', name: 'no-uid' },
    ],
  },
  spec: {},
};
const OWNERS = ['apps/ReplicaSet/rs-uid', '/ConfigMap/cm-uid'];

describe('owners at ingest', () => {
  it('reads the same owners on the spliced, Table, watch and parsed paths', () => {
    const list = JSON.stringify({ kind: 'PodList', metadata: { resourceVersion: '9' }, items: [pod] });
    const table = JSON.stringify({ kind: 'Table', metadata: { resourceVersion: '9' }, rows: [{ cells: ['web-1'], object: pod }] });
    const metas = [
      decodeListPage(list, ctx).objects[0]!.meta,
      decodeListPage(table, ctx).objects[0]!.meta,
      decodeListPageByParsing(list, ctx).objects[0]!.meta,
      decodeObject(structuredClone(pod), ctx).meta,
    ];
    const event = decodeWatchLine(JSON.stringify({ type: 'ADDED', object: pod }), ctx);
    if (event.type !== 'ADDED') throw new Error(event.type);
    metas.push(event.object.meta);
    for (const meta of metas) expect(meta.owners).toEqual(OWNERS);
  });

  it('enters the uid and each owner in the label index, and none for an object without owners', () => {
    const meta = decodeObject(structuredClone(pod), ctx).meta;
    expect(indexEntries(meta).split(KEY_SEP)).toEqual([':metadata.uid=pod-uid', ':metadata.ownerReferences=apps/ReplicaSet/rs-uid', ':metadata.ownerReferences=/ConfigMap/cm-uid']);
    const alone = decodeObject({ metadata: { name: 'x', uid: 'x-uid' } }, ctx).meta;
    expect(alone.owners).toBeUndefined();
    expect(indexEntries(alone)).toBe(':metadata.uid=x-uid');
  });

  it('still marks owners a tenant reads renamed, from the same read', () => {
    const owned = decodeObject({ metadata: { name: 'x', uid: 'x', ownerReferences: [{ apiVersion: 'acme.example.com/v1', kind: 'App', name: 'a', uid: 'a-uid' }] } }, ctx).meta;
    expect(owned.fields?.[RENAMED_OWNERS_FIELD]).toBe('true');
    expect(owned.owners).toEqual(['acme.example.com/App/a-uid']);
  });
});
