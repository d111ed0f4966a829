import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import fc from 'fast-check';
import { memberJson, memberRequest } from '../fleet/http.js';
import { authorize, indexPolicy, policyOf, type Caller, type IndexedPolicy, type PolicyRule, type ResourceAttributes, type RoleRef, type Subject } from '../../src/api/rbac.js';
import { join } from 'node:path';
import { until } from '../support/poll.js';
import { startFlotillaProcess, type FlotillaProcess } from '../support/flotilla-process.js';

/**
 * flotilla's RBAC verdicts against a real member's own authorizer: random Roles, ClusterRoles
 * and bindings are applied to the member, then for random callers and requests the member's
 * SubjectAccessReview must equal
 * - flotilla's own answer, end to end, for every request it serves from its cache (get, list and
 *   watch of a cached resource, asked of flotilla as the caller, addressed to the member): allowed
 *   is any answer but 403, from the RBAC objects flotilla cached and evaluated;
 * - the evaluator's verdict (src/api/rbac.ts) on the member's RBAC objects as listed, for the
 *   rest (other verbs, subresources).
 * FLOTILLA_RBAC_POLICIES (default 4) policies, FLOTILLA_RBAC_QUERIES (default 150) requests
 * each; FLOTILLA_RBAC_SEED replays a run.
 */
const fleet = inject('fleet');
const member = fleet.members[0]!;
const POLICIES = Number(process.env['FLOTILLA_RBAC_POLICIES'] ?? 4);
const QUERIES = Number(process.env['FLOTILLA_RBAC_QUERIES'] ?? 150);
const SEED = Number(process.env['FLOTILLA_RBAC_SEED'] ?? Date.now() % 2 ** 31);
const NAMESPACES = ['rbac-a', 'rbac-b'];
const LABEL = 'flotilla-rbac-test';
const PREFIX = 'flotilla-rbac-test-';
const RBAC = '/apis/rbac.authorization.k8s.io/v1';

const USERS = ['u1', 'u2', 'system:serviceaccount:rbac-a:sa1', 'system:serviceaccount:rbac-b:sa1'];
const GROUPS = ['g1', 'g2'];

const ruleArb: fc.Arbitrary<PolicyRule> = fc.record({
  verbs: fc.subarray(['get', 'list', 'watch', 'create', 'delete', '*'], { minLength: 1, maxLength: 3 }),
  apiGroups: fc.subarray(['', 'apps', '*'], { minLength: 1, maxLength: 2 }),
  resources: fc.subarray(['pods', 'configmaps', 'deployments', 'pods/log', '*/log', 'secrets', '*'], { minLength: 1, maxLength: 3 }),
  resourceNames: fc.option(fc.subarray(['x', 'y'], { minLength: 1 }), { nil: undefined, freq: 4 }),
});
const subjectArb: fc.Arbitrary<Subject> = fc.oneof(
  fc.record({ kind: fc.constant('User'), name: fc.constantFrom('u1', 'u2') }),
  fc.record({ kind: fc.constant('Group'), name: fc.constantFrom(...GROUPS, 'system:serviceaccounts', 'system:serviceaccounts:rbac-b', 'system:authenticated') }),
  fc.record({ kind: fc.constant('ServiceAccount'), name: fc.constant('sa1'), namespace: fc.constantFrom(...NAMESPACES) }),
);
// A RoleBinding's ServiceAccount subject may leave its namespace out: it means the binding's own.
const roleBindingSubjectArb: fc.Arbitrary<Subject> = fc.oneof(subjectArb, fc.record({ kind: fc.constant('ServiceAccount'), name: fc.constant('sa1') }));
interface GeneratedPolicy {
  roles: { namespace: string; rules: PolicyRule[] }[];
  clusterRoles: PolicyRule[][];
  roleBindings: { namespace: string; subjects: Subject[]; role: number; cluster: boolean }[];
  clusterRoleBindings: { subjects: Subject[]; role: number }[];
}
const policyArb: fc.Arbitrary<GeneratedPolicy> = fc.record({
  roles: fc.array(fc.record({ namespace: fc.constantFrom(...NAMESPACES), rules: fc.array(ruleArb, { minLength: 1, maxLength: 3 }) }), { minLength: 1, maxLength: 3 }),
  clusterRoles: fc.array(fc.array(ruleArb, { minLength: 1, maxLength: 3 }), { minLength: 1, maxLength: 3 }),
  roleBindings: fc.array(fc.record({ namespace: fc.constantFrom(...NAMESPACES), subjects: fc.array(roleBindingSubjectArb, { minLength: 1, maxLength: 3 }), role: fc.nat(2), cluster: fc.boolean() }), { minLength: 2, maxLength: 6 }),
  clusterRoleBindings: fc.array(fc.record({ subjects: fc.array(subjectArb, { minLength: 1, maxLength: 2 }), role: fc.nat(2) }), { minLength: 1, maxLength: 2 }),
});
const anyQueryArb: fc.Arbitrary<{ caller: Caller; attrs: ResourceAttributes }> = fc.record({
  caller: fc.record({ user: fc.constantFrom(...USERS), groups: fc.subarray(GROUPS) }),
  attrs: fc.record({
    verb: fc.constantFrom('get', 'list', 'watch', 'create', 'delete', 'get', 'list'),
    group: fc.constantFrom('', 'apps'),
    resource: fc.constantFrom('pods', 'configmaps', 'deployments', 'secrets', 'pods'),
    subresource: fc.option(fc.constant('log'), { nil: undefined, freq: 4 }),
    namespace: fc.option(fc.constantFrom(...NAMESPACES), { nil: undefined, freq: 5 }),
    name: fc.option(fc.constantFrom('x', 'y'), { nil: undefined, freq: 3 }),
  }),
});

/** Reads of what flotilla caches (each resource in its own group): what flotilla itself answers. */
const readQueryArb: fc.Arbitrary<{ caller: Caller; attrs: ResourceAttributes }> = fc.record({
  caller: fc.record({ user: fc.constantFrom(...USERS), groups: fc.subarray(GROUPS) }),
  attrs: fc.record({
    verb: fc.constantFrom('get', 'list', 'watch'),
    resource: fc.constantFrom('pods', 'configmaps', 'secrets', 'deployments'),
    namespace: fc.option(fc.constantFrom(...NAMESPACES), { nil: undefined, freq: 5 }),
    name: fc.option(fc.constantFrom('x', 'y'), { nil: undefined, freq: 3 }),
  }).map((a) => ({ ...a, group: a.resource === 'deployments' ? 'apps' : '' })),
});
const queryArb = fc.oneof({ arbitrary: anyQueryArb, weight: 1 }, { arbitrary: readQueryArb, weight: 1 });

/** The resources flotilla caches here, with their API group (a query naming another group is not one of them). */
const CACHED: Record<string, string> = { pods: '', configmaps: '', secrets: '', deployments: 'apps' };
let flotilla: FlotillaProcess;

/** The path flotilla serves a query at, when it is a cached read; undefined for the rest. */
function cachedReadPath(a: ResourceAttributes): string | undefined {
  if (a.subresource || CACHED[a.resource] !== a.group || !['get', 'list', 'watch'].includes(a.verb)) return undefined;
  if (a.verb === 'get' && (a.name === undefined || a.namespace === undefined)) return undefined;
  const prefix = `/clusters/${member.name}${a.group ? `/apis/${a.group}/v1` : '/api/v1'}${a.namespace !== undefined ? `/namespaces/${a.namespace}` : ''}/${a.resource}`;
  if (a.verb === 'get') return `${prefix}/${a.name}`;
  const query = [a.verb === 'watch' ? 'watch=1&timeoutSeconds=1' : 'limit=1', ...(a.name !== undefined ? [`fieldSelector=metadata.name%3D${a.name}`] : [])];
  return `${prefix}?${query.join('&')}`;
}

/** Flotilla's verdict, asked as the caller (the admin impersonating it, which the member allows). */
async function flotillaAllows(caller: Caller, path: string): Promise<boolean> {
  const res = await memberRequest(flotilla.endpoint, 'GET', path, undefined, {
    headers: { 'impersonate-user': caller.user, ...(caller.groups.length ? { 'impersonate-group': [...caller.groups] } : {}) },
    timeoutMs: 15_000,
  });
  if (res.status >= 500 || res.status === 401) throw new Error(`flotilla ${path} as ${caller.user}: ${res.status} ${res.body.slice(0, 300)}`);
  return res.status !== 403;
}

async function ok(method: string, path: string, body?: unknown): Promise<void> {
  const res = await memberRequest(member, method, path, body);
  if (res.status >= 300 && !(method === 'POST' && res.status === 409)) throw new Error(`${method} ${path}: ${res.status} ${res.body.slice(0, 300)}`);
}

async function clear(): Promise<void> {
  const selector = `labelSelector=${LABEL}`;
  for (const ns of NAMESPACES) {
    await ok('DELETE', `${RBAC}/namespaces/${ns}/rolebindings?${selector}`);
    await ok('DELETE', `${RBAC}/namespaces/${ns}/roles?${selector}`);
  }
  await ok('DELETE', `${RBAC}/clusterrolebindings?${selector}`);
  await ok('DELETE', `${RBAC}/clusterroles?${selector}`);
}

/**
 * The member's verdict for the caller, asked as the caller (impersonated, so that the member adds
 * system:authenticated and a service account's groups itself, as for a real request).
 */
async function review(caller: Caller, attrs: ResourceAttributes): Promise<boolean> {
  const res = await memberRequest(member, 'POST', '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews', {
    apiVersion: 'authorization.k8s.io/v1', kind: 'SelfSubjectAccessReview', spec: { resourceAttributes: attrs },
  }, { headers: { 'impersonate-user': caller.user, ...(caller.groups.length ? { 'impersonate-group': [...caller.groups] } : {}) } });
  if (res.status !== 201 && res.status !== 200) throw new Error(`review as ${caller.user}: ${res.status} ${res.body.slice(0, 300)}`);
  return (JSON.parse(res.body) as { status: { allowed: boolean } }).status.allowed;
}

/** Applies a generated policy, then waits until the member's authorizer has seen all four kinds. */
async function apply(p: GeneratedPolicy, round: number): Promise<void> {
  await clear();
  const metadata = (name: string, namespace?: string) => ({ name: `${PREFIX}${name}`, ...(namespace ? { namespace } : {}), labels: { [LABEL]: 'true' } });
  const sentinel = `sentinel-${round}`;
  for (const [i, r] of p.roles.entries()) await ok('POST', `${RBAC}/namespaces/${r.namespace}/roles`, { metadata: metadata(`role-${i}`, r.namespace), rules: r.rules });
  for (const [i, rules] of p.clusterRoles.entries()) await ok('POST', `${RBAC}/clusterroles`, { metadata: metadata(`clusterrole-${i}`), rules });
  for (const [i, b] of p.roleBindings.entries()) {
    // A RoleBinding refers to a ClusterRole, or to a Role of its namespace (maybe one that does not exist).
    const roleRef: RoleRef = b.cluster ? { kind: 'ClusterRole', name: `${PREFIX}clusterrole-${b.role}` } : { kind: 'Role', name: `${PREFIX}role-${b.role}` };
    await ok('POST', `${RBAC}/namespaces/${b.namespace}/rolebindings`, { metadata: metadata(`rolebinding-${i}`, b.namespace), subjects: b.subjects.map(withApiGroup), roleRef: { apiGroup: 'rbac.authorization.k8s.io', ...roleRef } });
  }
  for (const [i, b] of p.clusterRoleBindings.entries()) {
    await ok('POST', `${RBAC}/clusterrolebindings`, { metadata: metadata(`clusterrolebinding-${i}`), subjects: b.subjects.map(withApiGroup), roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: `${PREFIX}clusterrole-${b.role}` } });
  }
  // Written last: once the member allows the sentinel through each kind, it has seen the rest.
  const rule = [{ verbs: ['list'], apiGroups: [''], resources: ['secrets'] }];
  await ok('POST', `${RBAC}/namespaces/rbac-a/roles`, { metadata: metadata(`${sentinel}-role`, 'rbac-a'), rules: [{ verbs: ['get'], apiGroups: [''], resources: ['configmaps'] }] });
  await ok('POST', `${RBAC}/namespaces/rbac-a/rolebindings`, { metadata: metadata(`${sentinel}-rb`, 'rbac-a'), subjects: [{ kind: 'User', name: sentinel, apiGroup: 'rbac.authorization.k8s.io' }], roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: `${PREFIX}${sentinel}-role` } });
  await ok('POST', `${RBAC}/clusterroles`, { metadata: metadata(`${sentinel}-cr`), rules: rule });
  await ok('POST', `${RBAC}/clusterrolebindings`, { metadata: metadata(`${sentinel}-crb`), subjects: [{ kind: 'User', name: sentinel, apiGroup: 'rbac.authorization.k8s.io' }], roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: `${PREFIX}${sentinel}-cr` } });
  const asSentinel = { user: sentinel, groups: [] };
  await until(`the member's authorizer has policy ${round}`, async () =>
    (await review(asSentinel, { verb: 'get', group: '', resource: 'configmaps', namespace: 'rbac-a', name: 'any' })) &&
    (await review(asSentinel, { verb: 'list', group: '', resource: 'secrets' })));
  // Flotilla follows the member's RBAC objects by watch: once it lets the sentinel through both, it has the rest.
  await until(`flotilla has policy ${round}`, async () =>
    (await flotillaAllows(asSentinel, cachedReadPath({ verb: 'get', group: '', resource: 'configmaps', namespace: 'rbac-a', name: 'any' })!)) &&
    (await flotillaAllows(asSentinel, cachedReadPath({ verb: 'list', group: '', resource: 'secrets' })!)));
}

function withApiGroup(s: Subject): Subject & { apiGroup?: string } {
  return s.kind === 'ServiceAccount' ? s : { ...s, apiGroup: 'rbac.authorization.k8s.io' };
}

async function memberPolicy(): Promise<IndexedPolicy> {
  type List<T> = { items: T[] };
  return indexPolicy(policyOf({
    roles: (await memberJson<List<{ metadata: { namespace: string; name: string }; rules: PolicyRule[] }>>(member, 'GET', `${RBAC}/roles`)).items,
    clusterRoles: (await memberJson<List<{ metadata: { name: string }; rules: PolicyRule[] }>>(member, 'GET', `${RBAC}/clusterroles`)).items,
    roleBindings: (await memberJson<List<{ metadata: { namespace: string }; subjects: Subject[]; roleRef: RoleRef }>>(member, 'GET', `${RBAC}/rolebindings`)).items,
    clusterRoleBindings: (await memberJson<List<{ subjects: Subject[]; roleRef: RoleRef }>>(member, 'GET', `${RBAC}/clusterrolebindings`)).items,
  }));
}

beforeAll(async () => {
  for (const ns of NAMESPACES) await ok('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
  flotilla = await startFlotillaProcess({
    fleet,
    dir: join(fleet.dir, 'flotilla-rbac-differential'),
    members: [member],
    // Only the test's namespaces: what is decided is who may read, not what there is.
    resources: Object.entries(CACHED).map(([resource, group]) => ({ ...(group ? { group } : {}), version: 'v1', resource, namespaces: NAMESPACES })),
  });
}, 120_000);

afterAll(async () => {
  await flotilla?.stop();
  await clear();
});

describe('RBAC evaluated by flotilla equals the member’s own authorizer', () => {
  it('for random policies, callers and requests', async () => {
    const policies = fc.sample(policyArb, { numRuns: POLICIES, seed: SEED });
    let cases = 0;
    let allowed = 0;
    let throughFlotilla = 0;
    const mismatches: unknown[] = [];
    for (const [round, p] of policies.entries()) {
      await apply(p, round);
      const policy = await memberPolicy();
      const queries = fc.sample(queryArb, { numRuns: QUERIES, seed: SEED + round + 1 });
      const verdicts = await Promise.all(queries.map((q) => review(q.caller, q.attrs)));
      const served = await Promise.all(queries.map((q) => {
        const path = cachedReadPath(q.attrs);
        return path === undefined ? undefined : flotillaAllows(q.caller, path);
      }));
      queries.forEach((q, i) => {
        cases++;
        if (verdicts[i]) allowed++;
        if (served[i] !== undefined) throughFlotilla++;
        const ours = served[i] ?? authorize(policy, q.caller, q.attrs);
        if (ours !== verdicts[i]) mismatches.push({ round, ...q, member: verdicts[i], flotilla: ours, asked: served[i] !== undefined ? cachedReadPath(q.attrs) : 'evaluator' });
      });
    }
    console.log(`rbac differential: seed ${SEED}, ${POLICIES} policies, ${cases} cases (${throughFlotilla} asked of flotilla as the caller, the rest of its evaluator), ${allowed} allowed by the member, ${mismatches.length} mismatches`);
    expect(mismatches.slice(0, 5), `seed ${SEED}`).toEqual([]);
    // Not a vacuous comparison: the member allowed some and refused some. Random policies allow
    // a few percent of random requests (seed 366606591: 23 of 600; another 12 of 600), so the floor is 1%.
    expect(allowed).toBeGreaterThan(cases / 100);
    expect(allowed).toBeLessThan(cases);
    expect(throughFlotilla).toBeGreaterThan(cases / 5);
  }, 300_000);
});
