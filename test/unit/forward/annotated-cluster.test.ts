import { describe, expect, it } from 'vitest';
import { annotatedCluster } from '../../../src/forward/annotated-cluster.js';
import { requestBodyForMember } from '../../../src/forward/translate.js';
import { CLUSTER_ANNOTATION, CLUSTER_ANNOTATION_POINTER } from '../../../src/api/fleet-object/index.js';

/** Which member a write body names by flotilla's cluster annotation, and that the member never gets the annotation. */
const json = (doc: unknown) => Buffer.from(JSON.stringify(doc));
const manifest = (cluster: string) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x', annotations: { [CLUSTER_ANNOTATION]: cluster } } });

describe('annotatedCluster', () => {
  it('reads an update, a merge patch that sets it, and server-side apply YAML', () => {
    expect(annotatedCluster(json(manifest('west')), 'application/json')).toBe('west');
    expect(annotatedCluster(json({ metadata: { annotations: { [CLUSTER_ANNOTATION]: 'east' } } }), 'application/merge-patch+json')).toBe('east');
    const yaml = `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  annotations:\n    ${CLUSTER_ANNOTATION}: north\n`;
    expect(annotatedCluster(Buffer.from(yaml), 'application/apply-patch+yaml')).toBe('north');
  });

  it('reads kubectl apply’s patch through the manifest it records as last applied', () => {
    // The three-way patch leaves the annotation out when the current copy has the same value.
    const patch = { metadata: { annotations: { 'kubectl.kubernetes.io/last-applied-configuration': JSON.stringify(manifest('west')) } }, data: { a: '1' } };
    expect(annotatedCluster(json(patch), 'application/strategic-merge-patch+json')).toBe('west');
  });

  it('reads a JSON patch operation that sets it', () => {
    expect(annotatedCluster(json([{ op: 'add', path: CLUSTER_ANNOTATION_POINTER, value: 'west' }]), 'application/json-patch+json')).toBe('west');
    expect(annotatedCluster(json([{ op: 'remove', path: CLUSTER_ANNOTATION_POINTER }]), 'application/json-patch+json')).toBeUndefined();
  });

  it('names nothing for a body without it, or one that does not parse', () => {
    expect(annotatedCluster(json({ spec: { replicas: 3 } }), 'application/merge-patch+json')).toBeUndefined();
    expect(annotatedCluster(Buffer.from(`{"${CLUSTER_ANNOTATION}": `), 'application/json')).toBeUndefined();
    expect(annotatedCluster(undefined, 'application/json')).toBeUndefined();
  });
});

describe('the annotation is not written to the member', () => {
  it('is dropped from objects, merge patches and JSON patches', () => {
    const sent = (body: Buffer, type: string) => JSON.parse(requestBodyForMember(body, type, 'west')!.toString('utf8'));
    expect(sent(json(manifest('west')), 'application/json').metadata.annotations).toBeUndefined();
    const ops = sent(json([{ op: 'add', path: CLUSTER_ANNOTATION_POINTER, value: 'west' }, { op: 'add', path: '/metadata/annotations', value: { [CLUSTER_ANNOTATION]: 'west', keep: 'me' } }]), 'application/json-patch+json');
    expect(ops).toEqual([{ op: 'add', path: '/metadata/annotations', value: { keep: 'me' } }]);
  });
});
