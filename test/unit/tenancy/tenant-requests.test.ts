import { describe, expect, it } from 'vitest';
import { requestToMember, type FleetNames } from '../../../src/tenancy/request-names.js';
import { Tenants } from '../../../src/tenancy/tenant.js';
import { decodeContinue, encodeContinue } from '../../../src/api/continue-token.js';
import type { StatusError } from '../../../src/api/status.js';
import { bodyToMember } from '../../../src/tenancy/answers.js';
import { objectToMember } from '../../../src/tenancy/document-names.js';

/** A tenant's request URL in the member's names (the edge rewrite), and what it may not name. */
const [acme] = new Tenants([
  { id: 'acme', users: ['a'], groups: [], clusterScoped: {} },
  { id: 'globex', users: ['g'], groups: [], clusterScoped: {} },
]).all;
const SCOPES: Record<string, boolean> = {
  '/pods': true, '/configmaps': true, '/namespaces': false, '/nodes': false, '/persistentvolumes': false,
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

describe('a tenant’s request, deny by default', () => {
  it('decides on decoded segments: an encoded letter names the same path, rewritten the same', () => {
    for (const [encoded, plain] of [
      ['/clusters/east/%61pi/v1/namespaces/globex-web/configmaps', '/clusters/east/api/v1/namespaces/globex-web/configmaps'],
      ['/%61pis/rbac.authorization.k8s.io/v1/clusterroles/reader', '/apis/rbac.authorization.k8s.io/v1/clusterroles/reader'],
      ['/cl%75sters/east/api/v1/namespaces/w%65b/pods', '/clusters/east/api/v1/namespaces/web/pods'],
      ['//api//v1/namespaces/web/pods/', '/api/v1/namespaces/web/pods/'],
    ]) {
      expect(member(encoded!, 'POST')).toBe(member(plain!, 'POST'));
    }
    expect(member('/clusters/east/%61pi/v1/namespaces/globex-web/configmaps', 'POST')).toBe('/clusters/east/api/v1/namespaces/acme-globex-web/configmaps');
    expect(code('/api/v1/namespaces/web/pods/%2e%2e', 'DELETE')).toBe(400);
    expect(code('/api/v1/namespaces/web%2Fx/pods')).toBe(400);
  });

  it('refuses collection deletes of owned cluster-scoped kinds, and writes across namespaces', () => {
    expect(code('/apis/rbac.authorization.k8s.io/v1/clusterroles?labelSelector=a%3Db', 'DELETE')).toBe(403);
    expect(code('/api/v1/namespaces', 'DELETE')).toBe(403);
    expect(code('/apis/apiextensions.k8s.io/v1/customresourcedefinitions', 'DELETE')).toBe(403);
    expect(code('/api/v1/pods', 'DELETE')).toBe(403);
    expect(code('/api/v1/pods', 'POST')).toBe(403);
    expect(code('/api/v1/namespaces/web/pods', 'DELETE')).toBe(200);
    expect(code('/apis/rbac.authorization.k8s.io/v1/clusterroles/reader', 'DELETE')).toBe(200);
  });

  it('refuses what reaches past a shared object (a node’s proxy is its kubelet), and unknown subresources of owned ones', () => {
    expect(code('/api/v1/nodes/n1/proxy/pods')).toBe(403);
    expect(code('/api/v1/nodes/n1/proxy')).toBe(403);
    expect(code('/api/v1/nodes/n1/status')).toBe(200);
    expect(code('/api/v1/nodes/n1/status', 'PATCH')).toBe(403);
    expect(code('/api/v1/namespaces/web/status', 'PUT')).toBe(200);
    expect(code('/api/v1/namespaces/web/finalize', 'PUT')).toBe(200);
    expect(code('/apis/rbac.authorization.k8s.io/v1/clusterroles/reader/proxy')).toBe(404);
    // Only the subresources an owned kind has: a role has neither status nor finalize.
    expect(code('/apis/rbac.authorization.k8s.io/v1/clusterroles/system:aggregate-to-view/finalize')).toBe(404);
    expect(code('/apis/rbac.authorization.k8s.io/v1/clusterroles/reader/status', 'PUT')).toBe(404);
    expect(code('/apis/apiextensions.k8s.io/v1/customresourcedefinitions/a.example.com/status')).toBe(200);
    expect(code('/apis/apiextensions.k8s.io/v1/customresourcedefinitions/a.example.com/finalize', 'PUT')).toBe(404);
    expect(code('/api/v1/namespaces/web/finalize')).toBe(403);
    expect(code('/api/v1/namespaces/web/pods/p/log')).toBe(200);
  });

  it('does not reach resources no member serves, nor write discovery or flotilla’s paths', () => {
    expect(code('/api/v1/watch/namespaces/globex-web/configmaps')).toBe(404);
    expect(code('/api/v1/namespaces/web/proxy/metrics', 'PUT')).toBe(404);
    expect(code('/api/v1/namespaces/web/nodes/n1')).toBe(404);
    expect(code('/api/v1/nosuch', 'POST')).toBe(404);
    expect(code('/api', 'POST')).toBe(405);
    expect(code('/apis/apps/v1', 'DELETE')).toBe(405);
    expect(code('/version')).toBe(200);
    expect(code('/healthz', 'POST')).toBe(405);
    expect(code('/apis/authorization.k8s.io/v1/selfsubjectaccessreviews', 'DELETE')).toBe(403);
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

  const rbacNaming = {
    tenant: acme!,
    kinds: (g: string, k: string) => (g === 'rbac.authorization.k8s.io' ? { resource: `${k.toLowerCase()}s`, namespaced: k === 'Role' || k === 'RoleBinding' } : undefined),
    memberGroups: () => false,
  };
  const rbac = (resource: string, kind: string, namespaced: boolean) => ({ group: 'rbac.authorization.k8s.io', resource, kind, namespaced });
  const crb = rbac('clusterrolebindings', 'ClusterRoleBinding', false);
  const clusterRoles = rbac('clusterroles', 'ClusterRole', false);
  const status = (body: unknown, resource = crb, method = 'POST', type = 'application/json') => {
    try {
      bodyToMember(Buffer.from(JSON.stringify(body)), type, method, resource, rbacNaming);
      return 200;
    } catch (e) {
      return (e as StatusError).code;
    }
  };
  const binding = (subjects: unknown[], role = 'reader') => ({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name: 'x' }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role }, subjects });

  it('RBAC subjects are the tenant’s own only, in every form a write can take', () => {
    const rb = rbac('rolebindings', 'RoleBinding', true);
    const roleBinding = (subjects: unknown[]) => ({ ...binding(subjects, 'edit'), kind: 'RoleBinding', metadata: { name: 'x', namespace: 'web' } });
    expect(status(roleBinding([{ kind: 'User', name: 'a' }, { kind: 'ServiceAccount', name: 'b', namespace: 'web' }, { kind: 'User', name: 'system:serviceaccount:web:b' }, { kind: 'Group', name: 'system:serviceaccounts:web' }]), rb)).toBe(200);
    for (const subject of [{ kind: 'User', name: 'bob' }, { kind: 'User', name: 'g' }, { kind: 'Group', name: 'system:masters' }, { kind: 'Group', name: 'system:authenticated' }, { kind: 'Group', name: 'system:serviceaccounts' }, { kind: 'Whatever', name: 'a' }]) {
      expect(status(roleBinding([subject]), rb), JSON.stringify(subject)).toBe(403);
    }
    for (const type of ['application/merge-patch+json', 'application/strategic-merge-patch+json', 'application/apply-patch+yaml']) {
      expect(status({ subjects: [{ kind: 'User', name: 'bob' }] }, crb, 'PATCH', type), type).toBe(403);
      expect(status({ subjects: [{ kind: 'User', name: 'bob' }] }, rb, 'PATCH', type), type).toBe(403);
    }
    expect(status([{ op: 'add', path: '/subjects/-', value: { kind: 'Group', name: 'system:masters' } }], rb, 'PATCH', 'application/json-patch+json')).toBe(403);
    expect(status([{ op: 'replace', path: '/subjects/0/name', value: 'bob' }], rb, 'PATCH', 'application/json-patch+json')).toBe(403);
    expect(status([{ op: 'replace', path: '', value: roleBinding([{ kind: 'User', name: 'bob' }]) }], rb, 'PATCH', 'application/json-patch+json')).toBe(403);
    expect(status([{ op: 'add', path: '/subjects/-', value: { kind: 'User', name: 'a' } }], rb, 'PATCH', 'application/json-patch+json')).toBe(200);
    expect(status([{ op: 'remove', path: '/subjects/0' }], rb, 'PATCH', 'application/json-patch+json')).toBe(200);
  });

  it('a role is bound in the tenant’s namespaces, never cluster-wide', () => {
    const own = [{ kind: 'Group', name: 'system:serviceaccounts:web' }];
    for (const role of ['view', 'system:controller:namespace-controller', 'reader']) expect(status(binding(own, role)), role).toBe(403);
    const roleBinding = { ...binding(own, 'view'), kind: 'RoleBinding', metadata: { name: 'x', namespace: 'web' } };
    expect(status(roleBinding, rbac('rolebindings', 'RoleBinding', true))).toBe(200);
    expect(status([{ op: 'replace', path: '/roleRef', value: { kind: 'ClusterRole', name: 'view' } }], crb, 'PATCH', 'application/json-patch+json')).toBe(403);
    expect(status({ metadata: { labels: { team: 'a' } } }, crb, 'PATCH', 'application/merge-patch+json')).toBe(200);
  });

  it('no role aggregation: neither the rule nor the labels that feed shared roles', () => {
    const role = (extra: object) => ({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: 'r', labels: { app: 'x' } }, rules: [], ...extra });
    expect(status(role({}), clusterRoles)).toBe(200);
    expect(status(role({ aggregationRule: { clusterRoleSelectors: [{ matchLabels: { a: 'b' } }] } }), clusterRoles)).toBe(403);
    expect(status(role({ metadata: { name: 'r', labels: { 'rbac.authorization.k8s.io/aggregate-to-view': 'true' } } }), clusterRoles)).toBe(403);
    expect(status({ metadata: { labels: { 'rbac.authorization.k8s.io/aggregate-to-admin': 'true' } } }, clusterRoles, 'PATCH', 'application/merge-patch+json')).toBe(403);
    expect(status({ metadata: { labels: { 'rbac.authorization.k8s.io/aggregate-to-admin': null } } }, clusterRoles, 'PATCH', 'application/merge-patch+json')).toBe(200);
    expect(status([{ op: 'add', path: '/metadata/labels/rbac.authorization.k8s.io~1aggregate-to-edit', value: 'true' }], clusterRoles, 'PATCH', 'application/json-patch+json')).toBe(403);
    expect(status([{ op: 'add', path: '/aggregationRule', value: {} }], clusterRoles, 'PATCH', 'application/json-patch+json')).toBe(403);
  });

  it('a generated name is always the tenant’s, and never one that would read as shared', () => {
    const generated = (generateName: string) => ({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { generateName }, rules: [] });
    const sent = bodyToMember(Buffer.from(JSON.stringify(generated('pt-'))), 'application/json', 'POST', clusterRoles, rbacNaming)!;
    expect(JSON.parse(sent.toString()).metadata.generateName).toBe('acme-pt-');
    expect(status(generated('system:pt-'), clusterRoles)).toBe(403);
    // Renamed with the prefix even where no refusal stands before it (a body a caller rewrites itself).
    expect((objectToMember(generated('system:pt-'), rbacNaming) as { metadata: { generateName: string } }).metadata.generateName).toBe('acme-system:pt-');
  });
});
