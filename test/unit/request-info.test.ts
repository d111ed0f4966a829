import { describe, expect, it } from 'vitest';
import { parseRequestPath } from '../../src/router/request-info.js';

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
