import { describe, expect, it } from 'vitest';
import { selectableFieldNames, selectableFieldValues } from '../../../src/ingest/fields.js';
import { bytesView, parsedView } from '../../../src/util/json-view.js';

/** Field values of an object parsed, checked to be the same when read in place from its bytes. */
function fieldsOf(group: string, kind: string, obj: object) {
  const parsed = selectableFieldValues(group, kind, parsedView(obj));
  expect(selectableFieldValues(group, kind, bytesView(Buffer.from(JSON.stringify(obj)), 0))).toEqual(parsed);
  return parsed;
}

describe('selectable fields', () => {
  it('reads a pod’s fields as the apiserver formats them', () => {
    const pod = { spec: { nodeName: 'n1', restartPolicy: 'Always', schedulerName: 'default-scheduler', serviceAccountName: 'default' }, status: { phase: 'Running', podIP: '10.0.0.1' } };
    expect(fieldsOf('', 'Pod', pod)).toEqual({
      'spec.nodeName': 'n1',
      'spec.restartPolicy': 'Always',
      'spec.schedulerName': 'default-scheduler',
      'spec.serviceAccountName': 'default',
      'spec.hostNetwork': 'false',
      'status.phase': 'Running',
      'status.podIP': '10.0.0.1',
      'status.nominatedNodeName': '',
    });
  });

  it('knows which kinds have which fields, by group', () => {
    expect(selectableFieldNames('', 'Secret')).toEqual(['type']);
    expect(selectableFieldNames('', 'Node')).toEqual(['spec.unschedulable']);
    expect(fieldsOf('', 'Node', { spec: { unschedulable: true } })).toEqual({ 'spec.unschedulable': 'true' });
    expect(selectableFieldNames('apps', 'ReplicaSet')).toEqual(['status.replicas']);
    expect(selectableFieldNames('', 'ConfigMap')).toEqual([]);
    expect(fieldsOf('example.com', 'Pod', {})).toBeUndefined();
  });
});
