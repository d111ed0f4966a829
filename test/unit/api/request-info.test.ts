import { describe, expect, it } from 'vitest';
import { canonicalPath, memberRequestPath, parseRequestPath } from '../../../src/api/request-info.js';

describe('parseRequestPath', () => {
  it('reads discovery paths', () => {
    expect(parseRequestPath('/api')).toEqual({ type: 'legacyVersions', cluster: undefined });
    expect(parseRequestPath('/apis')).toEqual({ type: 'groups', cluster: undefined });
    expect(parseRequestPath('/apis/apps')).toEqual({ type: 'group', cluster: undefined, group: 'apps' });
    expect(parseRequestPath('/api/v1')).toEqual({ type: 'resources', cluster: undefined, group: '', version: 'v1' });
    expect(parseRequestPath('/apis/apps/v1?x=1')).toEqual({ type: 'resources', cluster: undefined, group: 'apps', version: 'v1' });
  });

  it('reads namespaced and cluster-scoped resource paths', () => {
    expect(parseRequestPath('/api/v1/pods')).toMatchObject({ type: 'resource', group: '', version: 'v1', resource: 'pods' });
    expect(parseRequestPath('/api/v1/namespaces/a/pods/p/log?follow=true')).toEqual({
      type: 'resource', cluster: undefined, group: '', version: 'v1', namespace: 'a', resource: 'pods', name: 'p', subresource: 'log',
    });
    expect(parseRequestPath('/apis/apps/v1/namespaces/a/deployments/d/scale')).toMatchObject({ namespace: 'a', resource: 'deployments', name: 'd', subresource: 'scale' });
    expect(parseRequestPath('/api/v1/nodes/n1')).toEqual({ type: 'resource', cluster: undefined, group: '', version: 'v1', resource: 'nodes', name: 'n1' });
  });

  it('treats a namespace URL as the cluster-scoped namespaces resource', () => {
    expect(parseRequestPath('/api/v1/namespaces')).toEqual({ type: 'resource', cluster: undefined, group: '', version: 'v1', resource: 'namespaces' });
    expect(parseRequestPath('/api/v1/namespaces/kube-system')).toEqual({ type: 'resource', cluster: undefined, group: '', version: 'v1', resource: 'namespaces', name: 'kube-system' });
    expect(parseRequestPath('/api/v1/namespaces/x/status')).toEqual({ type: 'resource', cluster: undefined, group: '', version: 'v1', resource: 'namespaces', name: 'x', subresource: 'status' });
  });

  it('strips a /clusters/<name> prefix', () => {
    expect(parseRequestPath('/clusters/east/api/v1/namespaces/a/pods')).toMatchObject({ cluster: 'east', namespace: 'a', resource: 'pods' });
    expect(parseRequestPath('/clusters/east/version')).toEqual({ type: 'root', cluster: 'east', path: '/version' });
  });

  it('decodes escaped segments and rejects broken escapes with 400', () => {
    expect(parseRequestPath('/api/v1/namespaces/a/configmaps/x%3Ay')).toMatchObject({ name: 'x:y' });
    expect(() => parseRequestPath('/api/v1/namespaces/%E0%A4%A/pods')).toThrow(expect.objectContaining({ code: 400 }));
  });
});

describe('the forwarding rule: paths are parsed once and re-built', () => {
  it('refuses dot segments, raw or encoded, and encoded slashes, with 400', () => {
    for (const p of [
      '/openapi/v3/%2e%2e/%2e%2e/api/v1/namespaces/a/secrets/s',
      '/openapi/v3/%2E%2e/api',
      '/api/v1/namespaces/a/configmaps/x/../../secrets/s',
      '/api/v1/namespaces/a/configmaps/./x',
      '/api/v1/namespaces/a/pods/x%2f..%2fy/log',
      '/clusters/east/%2e%2e/api/v1/pods',
      '/api/v1/namespaces/a/pods/x%5c..%5cy',
    ]) {
      expect(() => parseRequestPath(p), p).toThrow(expect.objectContaining({ code: 400 }));
    }
  });

  it('memberRequestPath drops the cluster prefix and empty segments, re-encodes once, keeps the query and a trailing slash', () => {
    expect(memberRequestPath('/clusters/east/api/v1/namespaces/a/pods/p/log?follow=true')).toBe('/api/v1/namespaces/a/pods/p/log?follow=true');
    expect(memberRequestPath('/api//v1/namespaces/a/configmaps/x')).toBe('/api/v1/namespaces/a/configmaps/x');
    expect(memberRequestPath('/api/v1/namespaces/a/configmaps/x%3Ay%20z')).toBe('/api/v1/namespaces/a/configmaps/x:y%20z');
    expect(memberRequestPath('/api/v1/namespaces/a/services/https:web:443/proxy/static/')).toBe('/api/v1/namespaces/a/services/https:web:443/proxy/static/');
    expect(memberRequestPath('/api/v1/namespaces/x/status')).toBe('/api/v1/namespaces/x/status');
    expect(memberRequestPath('/apis/apps/v1/namespaces/a/deployments/d/scale')).toBe('/apis/apps/v1/namespaces/a/deployments/d/scale');
    // Percent signs survive as data, never as a second decoding.
    expect(memberRequestPath('/api/v1/namespaces/a/configmaps/%252e%252e')).toBe('/api/v1/namespaces/a/configmaps/%252e%252e');
  });

  it('canonicalPath names every kind of target', () => {
    expect(canonicalPath(parseRequestPath('/apis'))).toBe('/apis');
    expect(canonicalPath(parseRequestPath('/apis/apps/v1'))).toBe('/apis/apps/v1');
    expect(canonicalPath(parseRequestPath('/clusters/east/openapi/v3/apis/apps/v1'))).toBe('/openapi/v3/apis/apps/v1');
  });
});
