import { describe, expect, it } from 'vitest';
import { refuseUnservableCreate } from '../../../src/forward/create-checks.js';
import type { StatusError } from '../../../src/api/status.js';
import type { ResourceTarget } from '../../../src/forward/owner.js';

const services: ResourceTarget = { type: 'resource', group: '', version: 'v1', resource: 'services', namespace: 'web' };
const configmaps: ResourceTarget = { ...services, resource: 'configmaps' };
const json = 'application/json';

function refusal(method: string, target: ResourceTarget, body: unknown, type = json): StatusError | undefined {
  try {
    refuseUnservableCreate(method, target, Buffer.from(typeof body === 'string' ? body : JSON.stringify(body)), type);
    return undefined;
  } catch (e) {
    return e as StatusError;
  }
}

describe('creates a member would fail badly on', () => {
  it('a Service with no name, or one no ClusterIP can be allocated for (kubernetes#135333): 422 before any member', () => {
    const nameless = refusal('POST', services, { apiVersion: 'v1', kind: 'Service', metadata: {} })!;
    expect(nameless.code).toBe(422);
    expect(nameless.message).toBe('Service "" is invalid: metadata.name: Required value: name or generateName is required');
    expect(nameless.details).toMatchObject({ kind: 'Service', name: '', causes: [{ reason: 'FieldValueRequired', field: 'metadata.name' }] });
    expect(refusal('POST', services, { kind: 'Service' })?.code).toBe(422);
    expect(refusal('POST', services, 'kind: Service\nmetadata: {}\n', 'application/yaml')?.code).toBe(422);
    for (const name of ['Web', 'system:controller:x', '1web', 'web-', 'a'.repeat(64)]) expect(refusal('POST', services, { metadata: { name } })?.code, name).toBe(422);
    expect(refusal('POST', services, { metadata: { generateName: 'X-' } })?.details?.causes?.[0]?.field).toBe('metadata.generateName');
    // PUT creates a Service that is not there: its name is the URL's.
    expect(refusal('PUT', { ...services, name: 'system:controller:namespace-controller' }, { metadata: {} })?.code).toBe(422);
  });

  it('lets through what the apiserver takes, and what it answers well itself', () => {
    for (const metadata of [{ name: 'web' }, { name: 'a'.repeat(63) }, { generateName: 'web-' }, { generateName: 'w' }]) expect(refusal('POST', services, { metadata }), JSON.stringify(metadata)).toBeUndefined();
    expect(refusal('PUT', { ...services, name: 'web' }, { metadata: { name: 'web' } })).toBeUndefined();
    expect(refusal('POST', configmaps, { metadata: {} })).toBeUndefined();
    expect(refusal('PATCH', { ...services, name: 'Web' }, { metadata: {} })).toBeUndefined();
    expect(refusal('POST', { ...services, name: 'web', subresource: 'proxy' }, {})).toBeUndefined();
    // Unreadable bodies go as they came: the member words its own refusal.
    expect(refusal('POST', services, '{not json')).toBeUndefined();
    expect(refusal('POST', services, 'k8s\0', 'application/vnd.kubernetes.protobuf')).toBeUndefined();
  });

  it('a create that names a resourceVersion is a 400 (the member’s storage answers 500)', () => {
    expect(refusal('POST', configmaps, { metadata: { name: 'a', resourceVersion: '5' } })?.code).toBe(400);
    expect(refusal('POST', configmaps, { metadata: { name: 'a', resourceVersion: '' } })).toBeUndefined();
    expect(refusal('PUT', { ...configmaps, name: 'a' }, { metadata: { name: 'a', resourceVersion: '5' } })).toBeUndefined();
  });
});
