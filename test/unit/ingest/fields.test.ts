import { describe, expect, it } from 'vitest';
import { selectableFieldNames, selectableFieldValues } from '../../../src/ingest/fields.js';
import { bytesView, parsedView } from '../../../src/util/json-view.js';
import { crdFieldName } from '../../../src/api/field-selector.js';

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

describe('a custom resource\'s selectable fields, as its member\'s CRD declares them', () => {
  const declared = ['spec.color', 'spec.size', 'spec.ready', 'status.zone', 'spec.shape'];
  const read = (obj: object) => {
    const parsed = selectableFieldValues('stable.example.com', 'Widget', parsedView(obj), declared);
    expect(selectableFieldValues('stable.example.com', 'Widget', bytesView(Buffer.from(JSON.stringify(obj)), 0), declared)).toEqual(parsed);
    return parsed;
  };

  it('a string as it is, an integer or boolean written out, "" when absent (the apiserver\'s values)', () => {
    expect(read({ spec: { color: 'red', size: 3, ready: false, shape: { sides: 4 } } })).toEqual({ 'spec.color': 'red', 'spec.size': '3', 'spec.ready': 'false', 'status.zone': '', 'spec.shape': '' });
  });

  it('a custom resource whose CRD declares none has no field values (its generic fields are read from its key)', () => {
    expect(selectableFieldValues('stable.example.com', 'Widget', parsedView({ spec: { color: 'red' } }))).toBeUndefined();
  });

  it('names a CRD\'s jsonPath as the field selector does; a path with brackets is not followed', () => {
    expect(crdFieldName('.spec.color')).toBe('spec.color');
    expect(crdFieldName('.status.conditions[0].type')).toBeUndefined();
    expect(crdFieldName(".spec['a.b']")).toBeUndefined();
    expect(crdFieldName('spec.color')).toBeUndefined();
  });
});
