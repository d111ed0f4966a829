import { describe, expect, it } from 'vitest';
import { clusterPrefix, forwardedRequestHeaders, forwardedResponseHeaders, streamingSubresource } from '../../../src/forward/streaming.js';

describe('which requests stream', () => {
  it('names the pod streaming subresources and the proxy of pods, services and nodes', () => {
    expect(streamingSubresource('/api/v1/namespaces/a/pods/p/log?follow=true')).toEqual({ resource: 'pods', subresource: 'log' });
    expect(streamingSubresource('/clusters/west/api/v1/namespaces/a/pods/p/exec?command=ls')).toEqual({ resource: 'pods', subresource: 'exec' });
    expect(streamingSubresource('/api/v1/namespaces/a/services/https:web:443/proxy/x/y')).toEqual({ resource: 'services', subresource: 'proxy' });
    expect(streamingSubresource('/api/v1/nodes/n1/proxy/metrics')).toEqual({ resource: 'nodes', subresource: 'proxy' });
  });

  it('leaves everything else to the cache and the write path', () => {
    expect(streamingSubresource('/api/v1/namespaces/a/pods/p/status')).toBeUndefined();
    expect(streamingSubresource('/api/v1/namespaces/a/pods/p')).toBeUndefined();
    expect(streamingSubresource('/api/v1/namespaces/a/configmaps/c/proxy')).toBeUndefined();
    expect(streamingSubresource('/apis/apps/v1/namespaces/a/deployments/d/log')).toBeUndefined();
    // Nodes are cluster-scoped: a namespaced node URL is nothing.
    expect(streamingSubresource('/api/v1/namespaces/a/nodes/n/proxy')).toBeUndefined();
  });
});

describe('headers across flotilla', () => {
  const raw = [
    'Host', 'flotilla:6443',
    'Authorization', 'Bearer caller-token',
    'Impersonate-User', 'someone-else',
    'X-Remote-User', 'forged',
    'Connection', 'Upgrade, X-Hop',
    'Upgrade', 'SPDY/3.1',
    'X-Hop', 'only-this-hop',
    'X-Stream-Protocol-Version', 'v4.channel.k8s.io',
    'X-Stream-Protocol-Version', 'v3.channel.k8s.io',
    'Accept', '*/*',
  ];

  it('drops the caller credentials and any identity it claims; keeps repeated protocol offers', () => {
    const out = forwardedRequestHeaders(raw, true);
    expect(out).toEqual({
      connection: ['Upgrade, X-Hop'],
      upgrade: ['SPDY/3.1'],
      'x-stream-protocol-version': ['v4.channel.k8s.io', 'v3.channel.k8s.io'],
      accept: ['*/*'],
    });
  });

  it('drops hop-by-hop fields on a plain request, including those Connection names', () => {
    expect(Object.keys(forwardedRequestHeaders(raw, false)).sort()).toEqual(['accept', 'x-stream-protocol-version']);
  });

  it('keeps the /clusters/<name> prefix on a member redirect', () => {
    const res = ['Location', '/api/v1/namespaces/a/pods/p/proxy/', 'Transfer-Encoding', 'chunked', 'Content-Type', 'text/html'];
    expect(forwardedResponseHeaders(res, { upgrade: false, clusterPrefix: clusterPrefix('/clusters/west/api/v1/namespaces/a/pods/p/proxy') })).toEqual([
      'Location', '/clusters/west/api/v1/namespaces/a/pods/p/proxy/', 'Content-Type', 'text/html',
    ]);
    expect(forwardedResponseHeaders(['Location', '//elsewhere/x'], { upgrade: false, clusterPrefix: '/clusters/west' })).toEqual(['Location', '//elsewhere/x']);
  });
});
