import { describe, expect, it } from 'vitest';
import { CLUSTER_ANNOTATION } from '../../../src/api/fleet-object/index.js';
import { CLUSTER_COLUMN } from '../../../src/api/table.js';
import { StatusError } from '../../../src/api/status.js';
import { editedAnswer, editedEventObject, type AnswerEdits } from '../../../src/forward/live/answer-edits.js';

/**
 * A live answer kept where the namespace tree selects it (src/forward/live/answer-edits.ts): each
 * item read for the (cluster, namespace) the read view's predicate takes.
 */
const selected = new Set(['east/team-a', 'west/team-a-child']);
const edits: AnswerEdits = {
  selects: (o) => selected.has(`${o.cluster}/${o.namespace}`),
  target: { type: 'resource', group: '', version: 'v1', resource: 'configmaps' },
};
const item = (cluster: string, namespace: string, name: string) => ({ metadata: { name, namespace, annotations: { [CLUSTER_ANNOTATION]: cluster } } });
const names = (b: Buffer) => (JSON.parse(b.toString()) as { items: { metadata: { name: string } }[] }).items.map((i) => i.metadata.name);

describe('live answer edits', () => {
  it('a list keeps the items whose cluster annotation and namespace the tree selects', () => {
    const list = { kind: 'ConfigMapList', apiVersion: 'v1', metadata: {}, items: [item('east', 'team-a', 'a'), item('west', 'team-a', 'b'), item('west', 'team-a-child', 'c')] };
    expect(names(editedAnswer(Buffer.from(JSON.stringify(list)), edits))).toEqual(['a', 'c']);
  });

  it('a Table keeps the rows whose Cluster cell and object namespace the tree selects', () => {
    const columns = [{ name: 'Name', type: 'string', format: 'name' }, CLUSTER_COLUMN];
    const row = (cluster: string, namespace: string, name: string) => ({ cells: [name, cluster], object: { metadata: { name, namespace } } });
    const table = { kind: 'Table', apiVersion: 'meta.k8s.io/v1', columnDefinitions: columns, rows: [row('east', 'team-a', 'a'), row('east', 'other', 'b')] };
    const shown = JSON.parse(editedAnswer(Buffer.from(JSON.stringify(table)), edits).toString()) as { rows: { cells: string[] }[] };
    expect(shown.rows.map((r) => r.cells[0])).toEqual(['a']);
  });

  it('a Table asked without row objects is read with them and shown without: rows selected by name, objects null', () => {
    const columns = [{ name: 'Name', type: 'string', format: 'name' }, CLUSTER_COLUMN];
    const row = (cluster: string, name: string) => ({ cells: [name, cluster], object: { kind: 'PartialObjectMetadata', metadata: { name, namespace: 'team-a' } } });
    const table = { kind: 'Table', apiVersion: 'meta.k8s.io/v1', columnDefinitions: columns, rows: [row('east', 'api-1'), row('east', 'web')] };
    const byName: AnswerEdits = { ...edits, selects: (o) => o.name.includes('api'), rowObjects: 'None' };
    const shown = JSON.parse(editedAnswer(Buffer.from(JSON.stringify(table)), byName).toString()) as { rows: { cells: string[]; object: unknown }[] };
    expect(shown.rows).toEqual([{ cells: ['api-1', 'east'], object: null }]);
    const event = editedEventObject(table, byName, 'east') as { rows: { object: unknown }[] };
    expect(event.rows).toEqual([{ cells: ['api-1', 'east'], object: null }]);
  });

  it('a watch event’s object is read as its member’s; one not selected is left out', () => {
    expect(editedEventObject({ metadata: { name: 'a', namespace: 'team-a' } }, edits, 'east')).toBeDefined();
    expect(editedEventObject({ metadata: { name: 'a', namespace: 'team-a' } }, edits, 'west')).toBeUndefined();
  });

  it('a single object not selected is a 404 naming it', () => {
    const one = Buffer.from(JSON.stringify(item('east', 'other', 'x')));
    expect(() => editedAnswer(one, { ...edits, target: { ...edits.target, name: 'x' } })).toThrow(StatusError);
  });

  it('each item is decided on its cluster, namespace, name and creationTimestamp (search terms)', () => {
    const seen: unknown[] = [];
    const search: AnswerEdits = { ...edits, selects: (o) => (seen.push(o), o.name.includes('api') && (o.created ?? '') >= '2026-01-01T00:00:00Z') };
    const at = (name: string, created: string) => ({ metadata: { name, namespace: 'n', creationTimestamp: created, annotations: { [CLUSTER_ANNOTATION]: 'east' } } });
    const list = { kind: 'ConfigMapList', apiVersion: 'v1', metadata: {}, items: [at('api-1', '2026-02-01T00:00:00Z'), at('api-0', '2025-02-01T00:00:00Z'), at('web', '2026-02-01T00:00:00Z')] };
    expect(names(editedAnswer(Buffer.from(JSON.stringify(list)), search))).toEqual(['api-1']);
    expect(seen[0]).toEqual({ cluster: 'east', namespace: 'n', name: 'api-1', created: '2026-02-01T00:00:00Z' });
  });
});
