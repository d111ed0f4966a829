import { describe, expect, it } from 'vitest';
import { requestToMember, type FleetNames } from '../../src/tenancy/request-names.js';
import { Tenants } from '../../src/tenancy/tenant.js';
import { decodeContinue, encodeContinue } from '../../src/api/global-rv.js';
import type { StatusError } from '../../src/api/status.js';
import { bodyToMember } from '../../src/tenancy/answers.js';

/** A tenant's request URL in the member's names (the edge rewrite), and what it may not name. */
const [acme] = new Tenants([
  { id: 'acme', users: ['a'], groups: [], clusterScoped: {} },
  { id: 'globex', users: ['g'], groups: [], clusterScoped: {} },
]).all;
const SCOPES: Record<string, boolean> = {
  '/pods': true, '/namespaces': false, '/nodes': false, '/persistentvolumes': false,
  'rbac.authorization.k8s.io/clusterroles': false, 'apiextensions.k8s.io/customresourcedefinitions': false,
  'acme.example.com/widgets': true, 'globex.example.com/widgets': true, 'authorization.k8s.io/selfsubjectaccessreviews': false,
};
const fleet: FleetNames = {
  hasGroup: (g) => ['', 'apps', 'acme.example.com', 'globex.example.com', 'rbac.authorization.k8s.io'].includes(g),
  namespaced: (g, r) => SCOPES[`${g}/${r}`],
};
const member = (url: string, method = 'GET') => requestToMember(url, method, acme!, fleet);
const code = (url: string, method = 'GET') => {
  try {
    member(url, method);
    return 200;
  } catch (e) {
    return (e as StatusError).code;
  }
};

describe('which tenant a caller belongs to', () => {
  it('by user, else group, else the namespace of its service account (id plus separator)', () => {
    const tenants = new Tenants([
      { id: 'ab', users: ['u'], groups: ['ab-devs'], clusterScoped: {} },
      { id: 'abc', users: [], groups: ['abc-devs'], clusterScoped: {} },
    ]);
    expect(tenants.of({ user: 'u', groups: ['abc-devs'] })?.id).toBe('ab');
    expect(tenants.of({ user: 'v', groups: ['abc-devs'] })?.id).toBe('abc');
    expect(tenants.of({ user: 'system:serviceaccount:abc-web:default', groups: [] })?.id).toBe('abc');
    expect(tenants.of({ user: 'system:serviceaccount:ab-web:builder', groups: [] })?.id).toBe('ab');
    expect(tenants.of({ user: 'system:serviceaccount:kube-system:default', groups: [] })).toBeUndefined();
    expect(tenants.of({ user: 'w', groups: [] })).toBeUndefined();
  });
});

describe('a tenant’s request in the member’s names', () => {
  it('renames namespaces, owned names and its CRD groups, under a member’s prefix too', () => {
    expect(member('/api/v1/namespaces/web/pods/p?watch=true')).toBe('/api/v1/namespaces/acme-web/pods/p?watch=true');
    expect(member('/clusters/east/api/v1/namespaces/web')).toBe('/clusters/east/api/v1/namespaces/acme-web');
    expect(member('/apis/rbac.authorization.k8s.io/v1/clusterroles/reader')).toBe('/apis/rbac.authorization.k8s.io/v1/clusterroles/acme-reader');
    expect(member('/apis/rbac.authorization.k8s.io/v1/clusterroles/edit')).toBe('/apis/rbac.authorization.k8s.io/v1/clusterroles/edit');
    expect(member('/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com')).toBe('/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.acme.example.com');
    expect(member('/apis/example.com/v1/namespaces/web/widgets')).toBe('/apis/acme.example.com/v1/namespaces/acme-web/widgets');
    expect(member('/api/v1/nodes/n1')).toBe('/api/v1/nodes/n1');
  });

  it('renames what selectors and continue tokens name', () => {
    const url = new URL(`https://x${member('/api/v1/pods?fieldSelector=metadata.namespace%3Dweb&labelSelector=web.tree.hnc.x-k8s.io%2Fdepth%2Capp%3Dx')}`);
    expect(url.searchParams.get('fieldSelector')).toBe('metadata.namespace=acme-web');
    expect(url.searchParams.get('labelSelector')).toBe('acme-web.tree.hnc.x-k8s.io/depth,app=x');
    const token = encodeContinue({ rv: 'eyJlYXN0IjoiMSJ9', start: 'v1/pods\u0005web\u0005p\u0005east' });
    const cont = new URL(`https://x${member(`/api/v1/pods?limit=1&continue=${token}`)}`).searchParams.get('continue')!;
    expect(decodeContinue(cont).start).toBe('v1/pods\u0005acme-web\u0005p\u0005east');
  });

  it('is 404 for what the tenant cannot name, 403 for a write to a shared kind, 400 for a bad path', () => {
    expect(code('/api/v1/persistentvolumes/pv1')).toBe(404);
    expect(code('/api/v1/persistentvolumes')).toBe(404);
    expect(code('/apis/globex.example.com/v1/namespaces/web/widgets')).toBe(404);
    expect(code('/apis/acme.example.com/v1/namespaces/web/widgets')).toBe(404);
    expect(code('/api/v1/nodes/n1', 'PATCH')).toBe(403);
    expect(code('/apis/rbac.authorization.k8s.io/v1/clusterroles/edit', 'PUT')).toBe(403);
    expect(code('/api/v1/namespaces/%zz/pods')).toBe(400);
    expect(code('/openapi/v2')).toBe(404);
    expect(code('/apis/authorization.k8s.io/v1/selfsubjectaccessreviews', 'POST')).toBe(200);
  });
});

describe('a tenant’s write body', () => {
  it('nested deeper than flotilla parses is a 400, as anyone’s (YAML and JSON alike)', () => {
    const naming = { tenant: acme!, kinds: () => undefined, memberGroups: () => false };
    const configmaps = { group: '', resource: 'configmaps', kind: 'ConfigMap', namespaced: true };
    const deepYaml = Buffer.from(`a: ${'['.repeat(5000)}${']'.repeat(5000)}`);
    const deepJson = Buffer.from(`{"metadata":{"name":"x"},"data":${'['.repeat(20000)}${']'.repeat(20000)}}`);
    const codeOf = (f: () => unknown) => {
      try {
        f();
        return 200;
      } catch (e) {
        return (e as StatusError).code;
      }
    };
    expect(codeOf(() => bodyToMember(deepYaml, 'application/apply-patch+yaml', 'PATCH', configmaps, naming))).toBe(400);
    expect(codeOf(() => bodyToMember(deepJson, 'application/json', 'POST', configmaps, naming))).toBe(400);
  });
});
