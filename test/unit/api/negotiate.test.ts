import { describe, expect, it } from 'vitest';
import { negotiate, prefersProtobufMetadata, protobufOnly } from '../../../src/api/negotiate.js';

const KUBECTL_GET = 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json';

describe('negotiate', () => {
  it('serves plain JSON by default and for wildcards', () => {
    expect(negotiate(undefined, { list: true })).toBe('object');
    expect(negotiate('*/*', { list: true })).toBe('object');
    expect(negotiate('application/json, */*', { list: false })).toBe('object');
  });

  it("serves kubectl get's Table request as a Table", () => {
    expect(negotiate(KUBECTL_GET, { list: true })).toBe('table');
    expect(negotiate('application/json;as=Table;v=v1beta1;g=meta.k8s.io', { list: false })).toBe('table');
  });

  it('serves PartialObjectMetadata for objects and PartialObjectMetadataList for lists only', () => {
    expect(negotiate('application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json', { list: true })).toBe('metadata');
    expect(negotiate('application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json', { list: true })).toBe('object');
    expect(negotiate('application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1', { list: false })).toBe('metadata');
  });

  it('falls back to JSON when protobuf comes first but JSON is acceptable', () => {
    expect(negotiate('application/vnd.kubernetes.protobuf,application/json', { list: true })).toBe('object');
  });

  it('answers a protobuf-only or unknown-view request with 406', () => {
    expect(() => negotiate('application/vnd.kubernetes.protobuf', { list: true })).toThrow(expect.objectContaining({ code: 406, reason: 'NotAcceptable' }));
    expect(() => negotiate('application/json;as=Table;v=v2;g=meta.k8s.io', { list: true })).toThrow(expect.objectContaining({ code: 406 }));
  });
});

describe('q=0', () => {
  it('an entry with q=0 is not acceptable', () => {
    expect(() => negotiate('application/json;q=0', { list: true })).toThrow(expect.objectContaining({ code: 406 }));
    expect(() => negotiate('application/json; q=0.000', { list: false })).toThrow(expect.objectContaining({ code: 406 }));
    expect(negotiate('application/json;q=0, */*;q=0.5', { list: true })).toBe('object');
    expect(negotiate('application/json;q=0.5', { list: true })).toBe('object');
  });
});

describe('prefersProtobufMetadata', () => {
  const METADATA_CLIENT_LIST = 'application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json';
  const METADATA_CLIENT_GET = 'application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json';

  it('is true for client-go’s metadata client, list and get, each in its own form', () => {
    expect(prefersProtobufMetadata(METADATA_CLIENT_LIST, { list: true })).toBe(true);
    expect(prefersProtobufMetadata(METADATA_CLIENT_GET, { list: false })).toBe(true);
    expect(prefersProtobufMetadata(METADATA_CLIENT_LIST, { list: false })).toBe(false);
    expect(prefersProtobufMetadata(METADATA_CLIENT_GET, { list: true })).toBe(false);
  });

  it('is false when a JSON form comes first, for plain protobuf, Tables and refused entries', () => {
    expect(prefersProtobufMetadata(undefined, { list: true })).toBe(false);
    expect(prefersProtobufMetadata(`application/json,${METADATA_CLIENT_LIST}`, { list: true })).toBe(false);
    expect(prefersProtobufMetadata(`application/json;as=Table;v=v1;g=meta.k8s.io,${METADATA_CLIENT_LIST}`, { list: true })).toBe(false);
    expect(prefersProtobufMetadata('application/vnd.kubernetes.protobuf,application/json', { list: true })).toBe(false);
    expect(prefersProtobufMetadata('application/vnd.kubernetes.protobuf;as=Table;g=meta.k8s.io;v=v1,application/json', { list: true })).toBe(false);
    expect(prefersProtobufMetadata(`application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1;q=0,application/json`, { list: true })).toBe(false);
    // A JSON entry negotiate() would pass over does not stop it.
    expect(prefersProtobufMetadata(`application/json;as=Unknown;g=meta.k8s.io;v=v1,${METADATA_CLIENT_LIST}`, { list: true })).toBe(true);
  });
});

describe('protobufOnly', () => {
  it('is a client that takes plain protobuf and no JSON form', () => {
    expect(protobufOnly('application/vnd.kubernetes.protobuf', { list: false })).toBe(true);
    expect(protobufOnly('application/vnd.kubernetes.protobuf;q=0.9, application/json;q=0', { list: true })).toBe(true);
  });

  it('is not one that also takes JSON, a wildcard, or protobuf only as a view', () => {
    expect(protobufOnly(undefined, { list: false })).toBe(false);
    expect(protobufOnly('application/vnd.kubernetes.protobuf, application/json', { list: false })).toBe(false);
    expect(protobufOnly('application/vnd.kubernetes.protobuf, */*', { list: false })).toBe(false);
    expect(protobufOnly('application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1', { list: false })).toBe(false);
    expect(protobufOnly('application/vnd.kubernetes.protobuf;q=0', { list: false })).toBe(false);
    expect(protobufOnly('text/plain', { list: false })).toBe(false);
  });
});
