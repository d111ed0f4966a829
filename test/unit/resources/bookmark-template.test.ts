import { describe, expect, it } from 'vitest';
import { templateOf } from '../../../src/resources/bookmark-template.js';

describe('bookmark templates', () => {
  it('take the member’s empty object and printer cells from its initial-events-end bookmark', () => {
    const line = JSON.stringify({
      type: 'BOOKMARK',
      object: {
        kind: 'Table', apiVersion: 'meta.k8s.io/v1', metadata: { resourceVersion: '9' }, columnDefinitions: [],
        rows: [{ cells: ['', '0/0', 'Pending', '0', '<unknown>'], object: { kind: 'Pod', apiVersion: 'v1', metadata: { resourceVersion: '9', annotations: { 'k8s.io/initial-events-end': 'true' } }, spec: { containers: null }, status: {} } }],
      },
    });
    expect(templateOf(line, 'Pod')).toEqual({ fields: ',"spec":{"containers":null},"status":{}', cells: ['', '0/0', 'Pending', '0', '<unknown>'] });
  });

  it('are nothing for another event, another kind or a plain object', () => {
    const row = { cells: [], object: { kind: 'Pod', apiVersion: 'v1', metadata: {} } };
    expect(templateOf(JSON.stringify({ type: 'ADDED', object: { kind: 'Table', rows: [row] } }), 'Pod')).toBeUndefined();
    expect(templateOf(JSON.stringify({ type: 'BOOKMARK', object: { kind: 'Table', rows: [row] } }), 'ConfigMap')).toBeUndefined();
    expect(templateOf(JSON.stringify({ type: 'BOOKMARK', object: { kind: 'Pod', metadata: {} } }), 'Pod')).toBeUndefined();
  });
});
