import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import type { RecordedRequest } from '../../support/recording-relay.js';
import type { Answer } from '../../support/abuse/invariants.js';
import { ReviewFanOut, checkRemainingCount, checkTenantAnswer, checkTenantMemberRequest, outsideTenant, type TenantView } from '../../support/abuse/tenant-invariants.js';
import { disguise, requestText, tenantCaseArb } from '../../support/abuse/tenant-generators.js';

/** The tenant abuse suite's checker must be able to fail: each hole of the hostile-tenant review as a record. */
const acme: TenantView = { id: 'acme', users: ['admin@acme', 'dev@acme'], groups: ['acme-admins', 'acme-devs'] };
const AS_ACME = ['Impersonate-User', 'admin@acme', 'Impersonate-Group', 'acme-admins'];

let seq = 0;
function rec(method: string, url: string, body: unknown = undefined, headers: string[] = AS_ACME): RecordedRequest {
  const text = body === undefined ? '' : JSON.stringify(body);
  return { relay: 'east', seq: ++seq, connection: 1, indexOnConnection: 0, at: 0, method, url, rawHeaders: ['Host', 'east', 'Content-Type', 'application/json', ...headers], body: Buffer.from(text), upgrade: false };
}
const kinds = (r: RecordedRequest) => checkTenantMemberRequest(acme, r).map((v) => v.kind);
const ok = (status: number, body: string, headers: Record<string, string[]> = {}): Answer => ({ type: 'response', status, headers, body: Buffer.from(body), ms: 1, streaming: false });

describe('tenant abuse invariants: member traffic', () => {
  it('lets acme act in its namespaces and on its names, list collections, read shared kinds', () => {
    expect(kinds(rec('POST', '/api/v1/namespaces/acme-web/configmaps', { metadata: { name: 'x' } }))).toEqual([]);
    expect(kinds(rec('DELETE', '/api/v1/namespaces/acme-web/configmaps?labelSelector=a'))).toEqual([]);
    expect(kinds(rec('GET', '/apis/rbac.authorization.k8s.io/v1/clusterroles?limit=1'))).toEqual([]);
    expect(kinds(rec('GET', '/apis/rbac.authorization.k8s.io/v1/clusterroles/view'))).toEqual([]);
    expect(kinds(rec('POST', '/apis/rbac.authorization.k8s.io/v1/clusterroles', { metadata: { name: 'acme-reader' }, rules: [] }))).toEqual([]);
    expect(kinds(rec('GET', '/api/v1/nodes/n1'))).toEqual([]);
    expect(kinds(rec('POST', '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews', {}))).toEqual([]);
    expect(kinds(rec('POST', '/apis/rbac.authorization.k8s.io/v1/namespaces/acme-web/rolebindings', {
      roleRef: { kind: 'ClusterRole', name: 'edit' }, subjects: [{ kind: 'User', name: 'dev@acme' }, { kind: 'ServiceAccount', name: 'b', namespace: 'acme-web' }],
    }))).toEqual([]);
  });

  it('flags each hole of the review', () => {
    // 1: a write into another tenant's namespace.
    expect(kinds(rec('POST', '/api/v1/namespaces/globex-web/configmaps', { metadata: { name: 'x' } }))).toContain('member:foreign-namespace:POST');
    // 2: a collection delete of an owned cluster-scoped kind.
    expect(kinds(rec('DELETE', '/apis/rbac.authorization.k8s.io/v1/clusterroles?labelSelector=a'))).toContain('member:cluster-collection-delete');
    // 4, 5, 6.
    expect(kinds(rec('POST', '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings', { metadata: { name: 'acme-b' }, roleRef: { kind: 'ClusterRole', name: 'cluster-admin' }, subjects: [{ kind: 'User', name: 'bob' }] })))
      .toEqual(expect.arrayContaining(['member:rbac-foreign-subject', 'member:rbac-cluster-wide-grant']));
    expect(kinds(rec('POST', '/apis/rbac.authorization.k8s.io/v1/clusterroles', { metadata: { name: 'acme-r', labels: { 'rbac.authorization.k8s.io/aggregate-to-view': 'true' } } }))).toContain('member:rbac-aggregation-label');
    expect(kinds(rec('POST', '/apis/rbac.authorization.k8s.io/v1/clusterroles', { metadata: { generateName: 'system:pt-' } }))).toContain('member:generate-name-outside-tenant');
    // 8: a shared kind's proxy.
    expect(kinds(rec('GET', '/api/v1/nodes/n1/proxy/configz'))).toContain('member:shared-kind-subresource:proxy');
    expect(kinds(rec('PATCH', '/api/v1/namespaces/acme-web/configmaps/x', [{ op: 'replace', path: '/metadata/namespace', value: 'globex-web' }]))).toContain('member:body-foreign-namespace');
    expect(kinds(rec('GET', '/apis/globex.example.com/v1/namespaces/acme-web/widgets'))).toContain('member:foreign-group');
    expect(kinds(rec('POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', { metadata: { name: 'w.globex.example.com' }, spec: { group: 'globex.example.com' } })))
      .toEqual(expect.arrayContaining(['member:body-foreign-name', 'member:crd-foreign-group']));
  });

  it('judges impersonated identities by the tenant (3) and counts reviews per case (7)', () => {
    expect(outsideTenant(acme, { user: 'dev@acme', groups: ['acme-devs', 'system:authenticated'] })).toBeUndefined();
    expect(outsideTenant(acme, { user: 'system:serviceaccount:acme-web:default', groups: ['system:serviceaccounts:acme-web'] })).toBeUndefined();
    expect(outsideTenant(acme, { user: 'nobody', groups: [] })).toMatch(/nobody/);
    expect(outsideTenant(acme, { user: 'admin@acme', groups: ['system:masters'] })).toMatch(/system:masters/);
    const fan = new ReviewFanOut(2);
    const review = (i: number) => rec('POST', '/apis/authorization.k8s.io/v1/subjectaccessreviews', { spec: { resourceAttributes: { verb: 'impersonate', name: `fan-17-${i}` } } }, []);
    expect([0, 1].flatMap((i) => fan.check(review(i)))).toEqual([]);
    expect(fan.check(review(2)).map((v) => v.kind)).toEqual(['member:review-fan-out']);
  });
});

describe('tenant abuse invariants: answers', () => {
  const foreign = { markers: ['gxmark1'], uids: new Set(['11111111-2222-3333-4444-555555555555']) };
  it('flags foreign objects, unwritten names, member names in continue tokens and counts (9)', () => {
    expect(checkTenantAnswer(ok(200, '{"items":[{"data":{"m":"gxmark1"}}]}'), 'get', foreign).map((v) => v.kind)).toEqual(['answer:foreign-object:200']);
    expect(checkTenantAnswer(ok(200, '{"metadata":{"uid":"11111111-2222-3333-4444-555555555555"}}'), 'get', foreign).map((v) => v.kind)).toEqual(['answer:foreign-object:200']);
    expect(checkTenantAnswer(ok(404, '{"kind":"Status","message":"namespaces \\"globex-web\\" not found"}'), '/api/v1/namespaces/globex-web', foreign)).toEqual([]);
    expect(checkTenantAnswer(ok(404, '{"kind":"Status","message":"namespaces \\"acme-web\\" not found"}'), '/api/v1/namespaces/web', foreign).map((v) => v.kind)).toEqual(['answer:member-form-name:404']);
    expect(checkTenantAnswer(ok(403, '{"kind":"Status","message":"x in globex-db"}'), '/api/v1/namespaces/web', foreign).map((v) => v.kind)).toEqual(['answer:foreign-name:403']);
    // A name generated from the request's own generateName is the request's, its body raw or quoted.
    const invalidCrd = ok(422, '{"kind":"Status","message":"CustomResourceDefinition \\"globex-l7jsx\\" is invalid"}');
    for (const body of ['{"metadata":{"generateName":"globex-"}}', JSON.stringify('{"metadata":{"generateName":"globex-"}}'), '{"metadata":{"generatename":"globex-"}}']) expect(checkTenantAnswer(invalidCrd, `POST /crds\nbody: ${body}`, foreign), body).toEqual([]);
    expect(checkTenantAnswer(invalidCrd, 'POST /crds\nbody: {"metadata":{"generateName":"acme-"}}', foreign).map((v) => v.kind)).toEqual(['answer:foreign-name:422']);
    const token = Buffer.from('{"v":"meta.k8s.io/v1","rv":5,"start":"acme-web/canary\\u0000"}').toString('base64');
    expect(checkTenantAnswer(ok(200, `{"metadata":{"continue":"${token}"},"items":[]}`), '/api/v1/configmaps', foreign).map((v) => v.kind)).toEqual(['answer:continue-names-member']);
    expect(checkRemainingCount('/api/v1/configmaps', { items: 1, remaining: 40 }, 3).map((v) => v.kind)).toEqual(['answer:remaining-count']);
    expect(checkRemainingCount('/api/v1/configmaps', { items: 1, remaining: 2 }, 3)).toEqual([]);
  });
});

describe('tenant abuse generators', () => {
  it('disguise keeps a path meaning the same to a decoder', () => {
    fc.assert(
      fc.property(fc.record({ encode: fc.array(fc.nat()), upper: fc.constant<number[]>([]), encodeWhole: fc.option(fc.nat(), { nil: undefined }), doubleSlash: fc.constant(undefined), trailingSlash: fc.constant(false) }), (d) => {
        const p = '/clusters/east/api/v1/namespaces/globex-web/configmaps';
        expect(decodeURIComponent(disguise(p, d))).toBe(p);
      }),
    );
  });
  it('a case is written by acme and echoes its own words only', () => {
    for (const c of fc.sample(tenantCaseArb, { seed: 1, numRuns: 200 })) {
      expect(['admin@acme', 'dev@acme']).toContain(c.caller);
      expect(requestText(c)).toBe(requestText(c).toLowerCase());
    }
  });
});
