import { describe, expect, it } from 'vitest';
import { requestVerb } from '../../../src/router/request-verb.js';

describe('requestVerb', () => {
  it.each([
    ['GET', '/api/v1/namespaces/a/pods/p', 'get', false],
    ['GET', '/api/v1/pods?limit=5', 'list', false],
    ['GET', '/api/v1/pods?watch=true', 'watch', true],
    ['GET', '/api/v1/watch/pods', 'watch', true],
    ['GET', '/clusters/east/api/v1/namespaces/a/pods/p/log?follow=true', 'get', true],
    ['GET', '/api/v1/namespaces/a/pods/p/log', 'get', false],
    ['POST', '/api/v1/namespaces/a/pods/p/exec?command=ls', 'connect', true],
    ['POST', '/apis/apps/v1/namespaces/a/deployments', 'create', false],
    ['PUT', '/apis/apps/v1/namespaces/a/deployments/d', 'update', false],
    ['PATCH', '/apis/apps/v1/namespaces/a/deployments/d/scale', 'patch', false],
    ['DELETE', '/api/v1/namespaces/a/configmaps/c', 'delete', false],
    ['DELETE', '/api/v1/namespaces/a/configmaps', 'deletecollection', false],
    ['GET', '/readyz', 'other', false],
    ['GET', '/apis', 'other', false],
    ['GET', '/api/v1/namespaces/a/%2e%2e/x', 'other', false],
  ])('%s %s is %s', (method, url, verb, longRunning) => {
    expect(requestVerb(method, url)).toEqual({ verb, longRunning });
  });
});
