import { describe, expect, it } from 'vitest';
import { negotiate, prefersProtobuf, prefersProtobufMetadata, protobufOnly, requireServedMedia } from '../../../src/api/negotiate.js';

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

describe('prefersProtobuf', () => {
  it('is true when plain protobuf comes before any JSON form, as client-go’s controllers ask', () => {
    expect(prefersProtobuf('application/vnd.kubernetes.protobuf, application/json')).toBe(true);
    expect(prefersProtobuf('application/vnd.kubernetes.protobuf')).toBe(true);
    expect(prefersProtobuf('application/json;q=0.5, application/vnd.kubernetes.protobuf')).toBe(true);
    // A JSON entry negotiate() would pass over does not stop it.
    expect(prefersProtobuf('application/json;as=Unknown;g=meta.k8s.io;v=v1, application/vnd.kubernetes.protobuf')).toBe(true);
  });

  it('is false for JSON first, a protobuf form with `as`, a refused entry, or no Accept', () => {
    expect(prefersProtobuf(undefined)).toBe(false);
    expect(prefersProtobuf('application/json, application/vnd.kubernetes.protobuf')).toBe(false);
    expect(prefersProtobuf('*/*')).toBe(false);
    expect(prefersProtobuf('application/vnd.kubernetes.protobuf;q=0, application/json')).toBe(false);
    expect(prefersProtobuf('application/json;as=Table;v=v1;g=meta.k8s.io, application/vnd.kubernetes.protobuf')).toBe(false);
    expect(prefersProtobuf('application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1, application/json')).toBe(false);
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

describe('CBOR (served by none of flotilla, answered as the apiserver without it)', () => {
  const refusal = (f: () => unknown) => {
    try {
      f();
    } catch (e) {
      const s = e as { code: number; reason: string; message: string; details?: unknown };
      return { code: s.code, reason: s.reason, message: s.message, details: s.details };
    }
    return undefined;
  };

  it('a read asking for CBOR alone is 406 naming what flotilla answers in; a list or watch names the stream too', () => {
    expect(refusal(() => negotiate('application/cbor', { list: false }))).toEqual({ code: 406, reason: 'NotAcceptable', message: '406: Not Acceptable\n\nAvailable representations: application/json', details: {} });
    expect(refusal(() => negotiate('application/cbor', { list: true }))?.message).toBe('406: Not Acceptable\n\nAvailable representations: application/json, application/json;stream=watch');
    expect(refusal(() => negotiate('application/cbor-seq', { list: false, watchable: true }))?.message).toContain('application/json;stream=watch');
  });

  it('CBOR preferred with JSON allowed, in either order, is JSON (client-go’s dynamic client and its CBOR gates)', () => {
    expect(negotiate('application/cbor;q=1, application/json;q=0.9', { list: true })).toBe('object');
    expect(negotiate('application/json;q=0.9,application/cbor;q=1', { list: true })).toBe('object');
    expect(negotiate('application/cbor, */*', { list: false })).toBe('object');
  });

  it('entries are tried by preference as the apiserver tries them: a higher q first, a concrete type before a wildcard', () => {
    expect(negotiate('application/json;as=Table;v=v1;g=meta.k8s.io;q=0.5, application/json;q=0.9', { list: true })).toBe('object');
    expect(negotiate('*/*, application/json;as=Table;v=v1;g=meta.k8s.io', { list: true })).toBe('table');
  });

  it('a write sending CBOR is 415 as the apiserver words it (a patch its own way); one taking only CBOR is 406', () => {
    expect(refusal(() => requireServedMedia('POST', 'application/json', 'application/cbor'))).toEqual({ code: 415, reason: 'UnsupportedMediaType', message: 'the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf', details: undefined });
    expect(refusal(() => requireServedMedia('PATCH', undefined, 'application/apply-patch+cbor'))).toEqual({ code: 415, reason: 'UnsupportedMediaType', message: '415: Unsupported Media Type', details: {} });
    expect(refusal(() => requireServedMedia('PUT', 'application/cbor', 'application/json'))).toEqual({ code: 406, reason: 'NotAcceptable', message: '406: Not Acceptable\n\nAvailable representations: application/json, application/yaml, application/vnd.kubernetes.protobuf', details: {} });
  });

  it('the apiserver’s order: a patch’s type before the answer’s; a create’s answer before its body', () => {
    expect(refusal(() => requireServedMedia('PATCH', 'application/cbor', 'application/cbor'))?.code).toBe(415);
    expect(refusal(() => requireServedMedia('POST', 'application/cbor', 'application/cbor'))?.code).toBe(406);
  });

  it('passes JSON, YAML and protobuf writes, wildcards and CBOR preferred with JSON allowed', () => {
    for (const [accept, type] of [[undefined, 'application/json'], ['application/vnd.kubernetes.protobuf', 'application/vnd.kubernetes.protobuf'], ['application/cbor;q=1, application/json;q=0.9', 'application/merge-patch+json'], ['*/*', 'application/apply-patch+yaml'], ['application/yaml', undefined]] as const) {
      expect(refusal(() => requireServedMedia('PATCH', accept, type))).toBeUndefined();
    }
  });
});
