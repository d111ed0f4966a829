import { describe, expect, it } from 'vitest';
import { decodeEventsTask, decodePageTask } from '../../../src/ingest/worker.js';
import { decodeMeta } from '../../../src/store/meta-record.js';
import { EVENT_TYPES, viewObjects } from '../../../src/ingest/batch.js';
import type { IngestContext } from '../../../src/ingest/decode.js';

const ctx: IngestContext = { cluster: 'west', apiVersion: 'v1', kind: 'ConfigMap', dropManagedFields: true };
const cm = (name: string, rv: string) => ({ metadata: { name, namespace: 'ns', uid: `u-${name}`, resourceVersion: rv, labels: { l: name } }, data: { k: 'ünïcode' } });
const bytes = (s: string) => new Uint8Array(Buffer.from(s));

describe('ingest worker tasks', () => {
  it('decodes a page into one buffer of served bytes and packed meta records', () => {
    const page = { kind: 'ConfigMapList', metadata: { resourceVersion: '9', continue: 'c' }, items: [cm('a', '3'), cm('b', '4')] };
    const out = decodePageTask(bytes(JSON.stringify(page)), ctx);
    expect(out).toMatchObject({ rv: '9', continueToken: 'c' });
    const objs = viewObjects(out.objects);
    expect(objs.map((o) => o.name)).toEqual(['a', 'b']);
    // Views share the one transferred buffer: nothing was copied per object.
    expect(objs[0]!.bytes.buffer).toBe(out.objects.buffer);
    expect(JSON.parse(objs[1]!.bytes.toString()).data.k).toBe('ünïcode');
    expect(decodeMeta(objs[1]!.meta)).toMatchObject({ uid: 'u-b', rv: '4', labels: { l: 'b' } });
  });

  it('decodes a run of watch lines in order, and stops at an ERROR', () => {
    const lines = [
      { type: 'ADDED', object: cm('a', '5') },
      { type: 'BOOKMARK', object: { kind: 'ConfigMap', metadata: { resourceVersion: '6' } } },
      { type: 'DELETED', object: cm('a', '7') },
      { type: 'ERROR', object: { kind: 'Status', code: 410, message: 'gone' } },
      { type: 'ADDED', object: cm('late', '8') },
    ].map((l) => JSON.stringify(l)).join('\n') + '\n';
    const out = decodeEventsTask(bytes(lines), ctx);
    expect([...out.types].map((t) => EVENT_TYPES[t])).toEqual(['ADDED', 'BOOKMARK', 'DELETED', 'ERROR']);
    expect(out.bookmarkRVs).toEqual(['6']);
    expect(out.objectRVs).toEqual(['5', '7']);
    expect(out.error).toMatchObject({ code: 410 });
    expect(viewObjects(out.objects).map((o) => o.name)).toEqual(['a', 'a']);
  });
});
