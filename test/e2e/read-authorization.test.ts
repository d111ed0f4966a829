import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { join } from 'node:path';
import { mkdirSync } from 'node:fs';
import { memberJson, memberRequest } from '../fleet/http.js';
import type { MemberInfo } from '../fleet/fleet.js';
import { startFlotillaProcess, writeProxyKubeconfig, type FlotillaProcess, type ResourceRuleSpec } from '../support/flotilla-process.js';
import { kubectl, kubectlSession, type KubectlResult } from '../support/kubectl.js';
import { openWatch, type WatchEvent } from '../support/watch-client.js';
import { until } from '../support/poll.js';

/**
 * Authorization of cached reads (issue 26), differentially: what kubectl shows a caller through
 * flotilla must be what kubectl shows the same caller against each member, merged. A fleet-wide
 * (-A) read is the union, over members, of the namespaces where the member lets the caller list
 * (`kubectl auth can-i list … -n <ns>`, asked as a SelfSubjectAccessReview), with a Warning naming
 * the members it could read nothing of, and 403 when it can read nothing anywhere; a
 * `/clusters/<name>/` read is that member's own answer; a get is the object where a member lets
 * the caller get it (when several do, the first in the fleet's order, with a Warning naming only
 * the members it may see), 404 where allowed but absent, 403 where allowed nowhere. Running watches follow RBAC changes; a client's own Impersonate-* headers are
 * honoured only where the members allow them; Table, metadata and watch-list forms hold the same
 * rows; remainingItemCount only where the view hides nothing in its ranges.
 *
 * The policy on the members, like the demo's (issue 26, point 6), plus the cases the evaluator must get right:
 * - east: alice may get/list/watch pods and configmaps in authz-shop (a Role), and get/list/watch
 *   the secret token-a there only (resourceNames); the group system:serviceaccounts:authz-bank may read
 *   configmaps in authz-shop; the group team-b (bob's) may read configmaps in authz-dev.
 * - west: bob has the ClusterRole view (a ClusterRoleBinding).
 * - north: the group team-a (alice's) may read configmaps in authz-dev; the ServiceAccount
 *   authz-bank/robot has view in authz-bank (impersonated by the admin: `kubectl --as`).
 * The fleet is shared with the other test files, which grant alice and bob rights of their own:
 * the differential comparisons hold whatever those are, the few plain assertions look at these
 * three namespaces only.
 */
const fleet = inject('fleet');
const MEMBERS = fleet.members.slice(0, 3);
const [east, west, north] = MEMBERS as [MemberInfo, MemberInfo, MemberInfo];
const SHOP = 'authz-shop';
const BANK = 'authz-bank';
const DEV = 'authz-dev';
const NAMESPACES = [SHOP, BANK, DEV];
const SHORT: Record<string, string> = { [SHOP]: 'shop', [BANK]: 'bank', [DEV]: 'dev' };
const LABEL = 'flotilla-authz-e2e';
const RBAC = '/apis/rbac.authorization.k8s.io/v1';
const CLUSTER = 'search.flotilla.io/cluster';
const ROBOT = `system:serviceaccount:${BANK}:robot`;
const TABLE = 'application/json;as=Table;v=v1;g=meta.k8s.io';
const METADATA_LIST = 'application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io';
const METADATA = 'application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io';

const RESOURCES: ResourceRuleSpec[] = [
  { version: 'v1', resource: 'configmaps' },
  { version: 'v1', resource: 'secrets' },
  { version: 'v1', resource: 'pods' },
  // kubectl asks for the namespace after a namespaced get's 404 (to say which is missing): cached, it
  // is authorized as the member does, and kubectl prints the object's 404 on both sides.
  { version: 'v1', resource: 'namespaces' },
];

const ADMIN_TOKEN = fleet.members[0]!.token;
const tokenOf = (name: string) => fleet.users.find((u) => u.name === name)!.token;

/** A caller: its bearer token, and the impersonation it asks for (kubectl flags and the same as headers). */
interface Who {
  label: string;
  /** The user name members (and flotilla) see. */
  user: string;
  token: string;
  as: string[];
  impersonate: Record<string, string | string[]>;
}
const ALICE: Who = { label: 'alice', user: 'alice', token: tokenOf('alice'), as: [], impersonate: {} };
const BOB: Who = { label: 'bob', user: 'bob', token: tokenOf('bob'), as: [], impersonate: {} };
const ROBOT_WHO: Who = { label: 'admin --as robot', user: ROBOT, token: ADMIN_TOKEN, as: ['--as', ROBOT], impersonate: { 'impersonate-user': ROBOT } };
const ADMIN_AS_ALICE: Who = { label: 'admin --as alice', user: 'alice', token: ADMIN_TOKEN, as: ['--as', 'alice'], impersonate: { 'impersonate-user': 'alice' } };
const ADMIN_AS_ALICE_TEAM_A: Who = {
  label: 'admin --as alice --as-group team-a', user: 'alice', token: ADMIN_TOKEN,
  as: ['--as', 'alice', '--as-group', 'team-a'], impersonate: { 'impersonate-user': 'alice', 'impersonate-group': 'team-a' },
};
/** With a group given, the member adds no service-account groups (nor may flotilla): not east's authz-shop. */
const ROBOT_TEAM_A: Who = {
  label: 'admin --as robot --as-group team-a', user: ROBOT, token: ADMIN_TOKEN,
  as: ['--as', ROBOT, '--as-group', 'team-a'], impersonate: { 'impersonate-user': ROBOT, 'impersonate-group': 'team-a' },
};
const CALLERS = [ALICE, BOB, ROBOT_WHO, ADMIN_AS_ALICE, ADMIN_AS_ALICE_TEAM_A, ROBOT_TEAM_A];

let flotilla: FlotillaProcess;
let dir: string;
/** How many answers of flotilla were compared with the members' (printed at the end). */
let cases = 0;
let memberCalls = 0;
/** Comparisons asked again because the two sides did not agree yet (a cache or authorizer catching up). */
let retried = 0;
const retriedCases = new Set<string>();

// ---------------------------------------------------------------------------------------------
// kubectl as a caller, against a member or through flotilla

const kubeconfigs = new Map<string, string>();
function kubeconfigOf(token: string, server: string): string {
  const key = `${token}@${server}`;
  let path = kubeconfigs.get(key);
  if (!path) {
    path = join(dir, `kubeconfig-${kubeconfigs.size}`);
    writeProxyKubeconfig(path, server, fleet.caFile, token, 'authz');
    kubeconfigs.set(key, path);
  }
  return path;
}

/**
 * kubectl's discovery cache, this file's own: what kubectl prints for a refused impersonation
 * depends on whether discovery is cached (if not, discovery is refused first, and kubectl says
 * only "Forbidden: unknown"), so it must not depend on what other runs left in ~/.kube/cache.
 */
const cacheDir = () => ['--cache-dir', join(dir, 'kube-cache')];

function onMember(who: Who, m: MemberInfo, args: string[]): Promise<KubectlResult> {
  memberCalls++;
  return kubectl(kubeconfigOf(who.token, m.server), [...cacheDir(), ...who.as, ...args]);
}

function viaFlotilla(who: Who, args: string[], opts: { cluster?: string; version?: string } = {}): Promise<KubectlResult> {
  const server = opts.cluster ? ['--server', `${flotilla.url}/clusters/${opts.cluster}`] : [];
  return kubectl(kubeconfigOf(who.token, flotilla.url), [...cacheDir(), ...server, ...who.as, ...args], opts.version ? { version: opts.version } : {});
}

/** The member's verdict for the caller, as `kubectl auth can-i` asks it (a SelfSubjectAccessReview). */
async function canI(who: Who, m: MemberInfo, attrs: { verb: string; resource: string; namespace?: string; name?: string }): Promise<boolean> {
  memberCalls++;
  const res = await memberRequest(m, 'POST', '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews', {
    apiVersion: 'authorization.k8s.io/v1', kind: 'SelfSubjectAccessReview', spec: { resourceAttributes: { group: '', ...attrs } },
  }, { token: who.token, headers: who.impersonate });
  if (res.status !== 201) throw new Error(`can-i as ${who.label} on ${m.name}: ${res.status} ${res.body.slice(0, 300)}`);
  return (JSON.parse(res.body) as { status: { allowed: boolean } }).status.allowed;
}

async function namespacesOf(m: MemberInfo): Promise<string[]> {
  return (await memberJson<{ items: { metadata: { name: string } }[] }>(m, 'GET', '/api/v1/namespaces')).items.map((n) => n.metadata.name);
}

// ---------------------------------------------------------------------------------------------
// What kubectl printed, normalised so that a member's answer and flotilla's compare

type Form = 'json' | 'name' | 'table' | 'wide';
const FORM_ARGS: Record<Form, string[]> = { json: ['-o', 'json'], name: ['-o', 'name'], table: [], wide: ['-o', 'wide'] };

interface ObjectJson { metadata: { name: string; namespace?: string; uid: string; annotations?: Record<string, string> } }

/**
 * The rows of an answer: JSON objects as cluster/namespace/name@uid (a member's cluster is the one
 * asked, flotilla's its annotation); table rows as every column but AGE, with the CLUSTER and
 * NAMESPACE a member's rows imply; `-o name` lines as printed.
 */
function rowsOf(form: Form, stdout: string, fixed: { CLUSTER?: string; NAMESPACE?: string }): string[] {
  if (form === 'json') {
    const doc = JSON.parse(stdout) as { items?: ObjectJson[] } & ObjectJson;
    return (doc.items ?? [doc]).map((i) => `${fixed.CLUSTER ?? i.metadata.annotations?.[CLUSTER] ?? '?'}/${i.metadata.namespace ?? ''}/${i.metadata.name}@${i.metadata.uid}`).sort();
  }
  if (form === 'name') return stdout.split('\n').filter((l) => l.trim()).sort();
  const lines = stdout.split('\n').filter((l) => l.trim());
  if (lines.length === 0) return [];
  // kubectl pads columns with at least three spaces; no cell here holds two in a row.
  const header = lines[0]!.trim().split(/\s{2,}/);
  return lines.slice(1).map((l) => {
    const cells = l.trim().split(/\s{2,}/);
    const row: Record<string, string> = { ...fixed };
    header.forEach((h, i) => {
      if (h !== 'AGE') row[h] = cells[i] ?? '';
    });
    return JSON.stringify(Object.fromEntries(Object.entries(row).sort(([a], [b]) => a.localeCompare(b))));
  }).sort();
}

const withoutUid = (row: string) => row.replace(/@[^@]*$/, '');
const warningsOf = (stderr: string) => stderr.split('\n').filter((l) => l.startsWith('Warning: ')).sort();
/** kubectl's stderr without warnings and the "No resources found" note. */
const errorOf = (stderr: string) => stderr.split('\n').filter((l) => l.trim() && !l.startsWith('Warning: ') && !l.startsWith('No resources found')).join('\n');

/** One answer, as compared: exit code, rows, warnings, error text. */
interface Answer { code: number; rows: string[]; warnings: string[]; error: string }

function answerOf(form: Form, r: KubectlResult, fixed: { CLUSTER?: string; NAMESPACE?: string }): Answer {
  return { code: r.code, rows: r.code === 0 ? rowsOf(form, r.stdout, fixed) : [], warnings: warningsOf(r.stderr), error: errorOf(r.stderr) };
}

const FORBIDDEN = /^Error from server \(Forbidden\): /;

/** The Warning flotilla gives when members refuse a list or watch but not all of them. */
function refusalWarning(who: Who, verb: string, resource: string, refused: string[]): string[] {
  if (refused.length === 0) return [];
  const one = refused.length === 1;
  return [`Warning: flotilla: User "${who.user}" cannot ${verb} ${resource} in ${one ? 'cluster' : 'clusters'} ${refused.join(', ')}: nothing of ${one ? 'it' : 'them'} is shown`];
}

/**
 * Runs `fn` over `items`, a few at a time; after a failure no new item starts, so a failing case
 * ends the test at once instead of the rest running on behind it.
 */
async function eachOf<T>(items: readonly T[], fn: (item: T) => Promise<void>, limit = 6): Promise<void> {
  let next = 0;
  let failure: { error: unknown } | undefined;
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (!failure && next < items.length) {
      try {
        await fn(items[next++]!);
      } catch (error) {
        failure ??= { error };
      }
    }
  }));
  if (failure) throw failure.error;
}

/** Compares until both sides agree (caches and authorizers catch up in milliseconds), then asserts. */
async function agree(what: string, compare: () => Promise<{ got: unknown; want: unknown }>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let c = await compare();
  while (JSON.stringify(c.got) !== JSON.stringify(c.want) && Date.now() < deadline) {
    retried++;
    retriedCases.add(what);
    await new Promise((r) => setTimeout(r, 250));
    c = await compare();
  }
  cases++;
  expect(c.got, what).toEqual(c.want);
}

// ---------------------------------------------------------------------------------------------
// Lists: flotilla against the members' answers, merged

interface ListCase {
  who: Who;
  resource: string;
  /** A namespace, every namespace (-A), or none (a cluster-scoped resource). */
  scope: string | 'all' | 'cluster';
  form: Form;
  /** Given to both sides (a field selector). */
  extra?: string[];
  /** Given to flotilla only (--chunk-size). */
  flotillaExtra?: string[];
  version?: string;
}

const scopeArgs = (scope: string) => (scope === 'all' ? ['-A'] : scope === 'cluster' ? [] : ['-n', scope]);
const caseName = (c: ListCase) => `${c.who.label}: kubectl get ${c.resource} ${scopeArgs(c.scope).join(' ')} ${[...FORM_ARGS[c.form], ...(c.extra ?? []), ...(c.flotillaExtra ?? [])].join(' ')}${c.version ? ` (kubectl ${c.version})` : ''}`;

/** What flotilla should answer: each member's answer for the caller, merged. */
async function mergedMembers(c: ListCase): Promise<Answer> {
  const extra = c.extra ?? [];
  const name = extra.find((a) => a.startsWith('metadata.name='))?.slice('metadata.name='.length);
  const rows: string[] = [];
  const refused: string[] = [];
  let forbidden = '';
  await Promise.all(MEMBERS.map(async (m) => {
    let namespaces: string[];
    if (c.scope === 'all' && (await canI(c.who, m, { verb: 'list', resource: c.resource, ...(name ? { name } : {}) }))) {
      // Allowed everywhere: the member's own all-namespaces answer.
      const r = await onMember(c.who, m, ['get', c.resource, '-A', ...FORM_ARGS[c.form], ...extra]);
      if (r.code !== 0) throw new Error(`${m.name} lets ${c.who.label} list ${c.resource} everywhere, yet answers -A with ${r.code}: ${r.stderr}`);
      rows.push(...rowsOf(c.form, r.stdout, { CLUSTER: m.name }));
      return;
    }
    if (c.scope === 'all') {
      const all = await namespacesOf(m);
      const allowed = await Promise.all(all.map((ns) => canI(c.who, m, { verb: 'list', resource: c.resource, namespace: ns, ...(name ? { name } : {}) })));
      namespaces = all.filter((_, i) => allowed[i]);
      if (namespaces.length === 0) {
        refused.push(m.name);
        // The member's own words for the refusal of an all-namespaces list.
        const own = await onMember(c.who, m, ['get', c.resource, '-A', ...FORM_ARGS[c.form], ...extra]);
        if (own.code === 0 || !FORBIDDEN.test(own.stderr)) throw new Error(`${m.name} lets ${c.who.label} list ${c.resource} in no namespace, yet answers -A with ${own.code}: ${own.stderr}`);
        forbidden = errorOf(own.stderr);
      }
    } else {
      namespaces = [c.scope];
    }
    await Promise.all(namespaces.map(async (ns) => {
      const r = await onMember(c.who, m, ['get', c.resource, ...scopeArgs(ns), ...FORM_ARGS[c.form], ...extra]);
      if (r.code === 0) rows.push(...rowsOf(c.form, r.stdout, { CLUSTER: m.name, ...(ns !== 'cluster' ? { NAMESPACE: ns } : {}) }));
      else if (c.scope !== 'all' && FORBIDDEN.test(r.stderr)) {
        refused.push(m.name);
        forbidden = errorOf(r.stderr);
      } else if (c.scope === 'all' && FORBIDDEN.test(r.stderr) && !(await canI(c.who, m, { verb: 'list', resource: c.resource, namespace: ns, ...(name ? { name } : {}) }))) {
        // Another test file took the grant away (its namespace is being deleted) since it was read.
      } else throw new Error(`${m.name}: kubectl get ${c.resource} -n ${ns} as ${c.who.label}: ${r.code} ${r.stderr}`);
    }));
  }));
  // In the fleet's order, as flotilla names them.
  const order = (names: string[]) => MEMBERS.map((m) => m.name).filter((n) => names.includes(n));
  if (refused.length === MEMBERS.length) {
    return { code: 1, rows: [], warnings: [], error: `${forbidden} (in any of the clusters ${order(refused).join(', ')})` };
  }
  return { code: 0, rows: rows.sort(), warnings: refusalWarning(c.who, 'list', c.resource, order(refused)), error: '' };
}

async function throughFlotilla(c: ListCase): Promise<Answer> {
  const r = await viaFlotilla(c.who, ['get', c.resource, ...scopeArgs(c.scope), ...FORM_ARGS[c.form], ...(c.extra ?? []), ...(c.flotillaExtra ?? [])], c.version ? { version: c.version } : {});
  return answerOf(c.form, r, c.scope === 'all' || c.scope === 'cluster' ? {} : { NAMESPACE: c.scope });
}

async function compareList(c: ListCase): Promise<void> {
  await agree(caseName(c), async () => {
    const [want, got] = await Promise.all([mergedMembers(c), throughFlotilla(c)]);
    return { got, want };
  });
}

async function compareLists(list: ListCase[]): Promise<void> {
  await eachOf(list, compareList);
}

// ---------------------------------------------------------------------------------------------
// Gets

/** A get; `ns` undefined for a cluster-scoped resource. */
async function compareGet(who: Who, resource: string, ns: string | undefined, name: string): Promise<void> {
  const args = ['get', resource, name, ...(ns ? ['-n', ns] : []), '-o', 'json'];
  await agree(`${who.label}: kubectl ${args.join(' ')}`, async () => {
    const [direct, via] = await Promise.all([Promise.all(MEMBERS.map((m) => onMember(who, m, args))), viaFlotilla(who, args)]);
    const found: string[] = [];
    const rowsOf1 = new Map<string, string[]>();
    let notFound = '';
    let forbidden = '';
    direct.forEach((r, i) => {
      if (r.code === 0) {
        found.push(MEMBERS[i]!.name);
        rowsOf1.set(MEMBERS[i]!.name, rowsOf('json', r.stdout, { CLUSTER: MEMBERS[i]!.name }));
      } else if (/^Error from server \(NotFound\)/.test(r.stderr)) notFound = errorOf(r.stderr);
      else if (FORBIDDEN.test(r.stderr)) forbidden = errorOf(r.stderr);
      else throw new Error(`${MEMBERS[i]!.name}: kubectl ${args.join(' ')} as ${who.label}: ${r.code} ${r.stderr}`);
    });
    // A name several members the caller may see hold: the first in the fleet's order (here the
    // configuration's), with a Warning naming them all (compared by its members).
    const firstHit = (warning: string) => /is in clusters ([^;]+); this is ([^']+)'s/.exec(warning)?.slice(1, 3).join(' / ');
    const want = found.length >= 1 ? { code: 0, rows: rowsOf1.get(found[0]!)!, warnings: found.length > 1 ? [`${found.join(', ')} / ${found[0]}`] : [], error: '' }
      : notFound ? { code: 1, rows: [], warnings: [], error: notFound }
        : { code: 1, rows: [], warnings: [], error: `${forbidden} (in any of the clusters ${MEMBERS.map((m) => m.name).join(', ')})` };
    const got = answerOf('json', via, {});
    got.warnings = got.warnings.map((w) => firstHit(w) ?? w);
    return { got, want };
  });
}

// ---------------------------------------------------------------------------------------------
// The fleet's objects and policy

async function ok(m: MemberInfo, method: string, path: string, body?: unknown): Promise<void> {
  const res = await memberRequest(m, method, path, body);
  if (res.status >= 300 && !(method === 'POST' && res.status === 409) && !(method === 'DELETE' && res.status === 404)) {
    throw new Error(`${m.name}: ${method} ${path}: ${res.status} ${res.body.slice(0, 300)}`);
  }
}

const labelled = (name: string, namespace?: string) => ({ name, ...(namespace ? { namespace } : {}), labels: { [LABEL]: 'true' } });
const rbacSubject = (kind: 'User' | 'Group', name: string) => ({ kind, name, apiGroup: 'rbac.authorization.k8s.io' });
const roleRef = (kind: 'Role' | 'ClusterRole', name: string) => ({ apiGroup: 'rbac.authorization.k8s.io', kind, name });
const READ = ['get', 'list', 'watch'];

async function roleBinding(m: MemberInfo, ns: string, name: string, subjects: unknown[], ref: ReturnType<typeof roleRef>): Promise<void> {
  await ok(m, 'POST', `${RBAC}/namespaces/${ns}/rolebindings`, { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: labelled(name, ns), subjects, roleRef: ref });
}

async function seed(): Promise<void> {
  await Promise.all(MEMBERS.map(async (m) => {
    for (const ns of NAMESPACES) await ok(m, 'POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: labelled(ns) });
    const writes: Promise<void>[] = [];
    for (const ns of NAMESPACES) {
      for (const name of [`${SHORT[ns]}-${m.name}-0`, `${SHORT[ns]}-${m.name}-1`, 'shared']) {
        writes.push(ok(m, 'POST', `/api/v1/namespaces/${ns}/configmaps`, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data: { member: m.name, namespace: ns } }));
      }
    }
    for (const name of ['token-a', 'token-b']) writes.push(ok(m, 'POST', `/api/v1/namespaces/${SHOP}/secrets`, { apiVersion: 'v1', kind: 'Secret', metadata: { name }, stringData: { token: `${m.name}-${name}` } }));
    writes.push(ok(m, 'POST', `/api/v1/namespaces/${BANK}/secrets`, { apiVersion: 'v1', kind: 'Secret', metadata: { name: `vault-${m.name}` }, stringData: { a: 'b' } }));
    // Cluster-wide and per-namespace roles every member has.
    writes.push(ok(m, 'POST', `${RBAC}/clusterroles`, { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: labelled('authz-e2e-cm-reader'), rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: READ }] }));
    await Promise.all(writes);
    // Pods are admitted once their namespace has its default ServiceAccount.
    for (const ns of [SHOP, BANK]) {
      await until(`${m.name}: default ServiceAccount in ${ns}`, async () => (await memberRequest(m, 'GET', `/api/v1/namespaces/${ns}/serviceaccounts/default`)).status === 200, 30_000);
      await ok(m, 'POST', `/api/v1/namespaces/${ns}/pods`, { apiVersion: 'v1', kind: 'Pod', metadata: { name: `web-${m.name}`, labels: { app: 'web' } }, spec: { containers: [{ name: 'web', image: 'example.com/web:1' }] } });
    }
  }));

  // east: alice reads pods and configmaps in authz-shop (a Role), and the secret token-a only.
  await ok(east, 'POST', `${RBAC}/namespaces/${SHOP}/roles`, { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: labelled('reader', SHOP), rules: [{ apiGroups: [''], resources: ['pods', 'configmaps'], verbs: READ }] });
  await ok(east, 'POST', `${RBAC}/namespaces/${SHOP}/roles`, { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: labelled('token-a', SHOP), rules: [{ apiGroups: [''], resources: ['secrets'], resourceNames: ['token-a'], verbs: READ }] });
  await roleBinding(east, SHOP, 'alice-reader', [rbacSubject('User', 'alice')], roleRef('Role', 'reader'));
  await roleBinding(east, SHOP, 'alice-token-a', [rbacSubject('User', 'alice')], roleRef('Role', 'token-a'));
  // east: every service account of authz-bank reads configmaps in authz-shop; team-b in authz-dev.
  await roleBinding(east, SHOP, 'bank-robots', [rbacSubject('Group', `system:serviceaccounts:${BANK}`)], roleRef('ClusterRole', 'authz-e2e-cm-reader'));
  await roleBinding(east, DEV, 'team-b', [rbacSubject('Group', 'team-b')], roleRef('ClusterRole', 'authz-e2e-cm-reader'));
  // west: bob views everything.
  await ok(west, 'POST', `${RBAC}/clusterrolebindings`, { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: labelled('authz-e2e-bob-view'), subjects: [rbacSubject('User', 'bob')], roleRef: roleRef('ClusterRole', 'view') });
  // north: team-a reads configmaps in authz-dev; the ServiceAccount authz-bank/robot views authz-bank.
  await roleBinding(north, DEV, 'team-a', [rbacSubject('Group', 'team-a')], roleRef('ClusterRole', 'authz-e2e-cm-reader'));
  await roleBinding(north, BANK, 'robot-view', [{ kind: 'ServiceAccount', name: 'robot', namespace: BANK }], roleRef('ClusterRole', 'view'));

  // Until each member's authorizer has the policy, and kwok runs the pods.
  await until('the members’ authorizers have the policy', async () =>
    (await canI(ALICE, east, { verb: 'list', resource: 'configmaps', namespace: SHOP })) &&
    (await canI(ALICE, east, { verb: 'get', resource: 'secrets', namespace: SHOP, name: 'token-a' })) &&
    (await canI(ROBOT_WHO, east, { verb: 'list', resource: 'configmaps', namespace: SHOP })) &&
    (await canI(BOB, east, { verb: 'list', resource: 'configmaps', namespace: DEV })) &&
    (await canI(BOB, west, { verb: 'list', resource: 'pods' })) &&
    (await canI(ALICE, north, { verb: 'list', resource: 'configmaps', namespace: DEV })) &&
    (await canI(ROBOT_WHO, north, { verb: 'list', resource: 'pods', namespace: BANK })));
  await until('the pods running', async () => {
    for (const m of MEMBERS) {
      for (const ns of [SHOP, BANK]) {
        const pod = await memberJson<{ status?: { phase?: string; podIP?: string } }>(m, 'GET', `/api/v1/namespaces/${ns}/pods/web-${m.name}`);
        if (pod.status?.phase !== 'Running' || !pod.status.podIP) return false;
      }
    }
    return true;
  }, 60_000);
}

async function cleanUp(): Promise<void> {
  await Promise.all(MEMBERS.map(async (m) => {
    for (const ns of NAMESPACES) await ok(m, 'DELETE', `/api/v1/namespaces/${ns}`);
    await ok(m, 'DELETE', `${RBAC}/clusterrolebindings?labelSelector=${LABEL}`);
    await ok(m, 'DELETE', `${RBAC}/clusterroles?labelSelector=${LABEL}`);
  }));
}

beforeAll(async () => {
  dir = join(fleet.dir, 'flotilla-read-authz');
  mkdirSync(dir, { recursive: true });
  await seed();
  flotilla = await startFlotillaProcess({ fleet, dir, resources: RESOURCES, members: MEMBERS });
});

afterAll(async () => {
  console.log(`read authorization: ${cases} answers of flotilla compared with the members’ (${memberCalls} member calls; ${retried} comparisons asked again before they agreed${retriedCases.size ? `: ${[...retriedCases].slice(0, 10).join('; ')}` : ''})`);
  await flotilla?.stop();
  await cleanUp();
});

// ---------------------------------------------------------------------------------------------

const SCOPES = [SHOP, BANK, DEV, 'all'];

describe('kubectl through flotilla shows a caller what each member shows it, merged', () => {
  it('lists, per namespace and across all namespaces (-o json), for alice, bob, a service account (with and without a group) and the admin as alice', async () => {
    const list: ListCase[] = [];
    for (const who of CALLERS) {
      // The admin --as alice --as-group team-a is held to alice herself below.
      if (who === ADMIN_AS_ALICE_TEAM_A) continue;
      const resources = who === ADMIN_AS_ALICE || who === ROBOT_TEAM_A ? ['configmaps', 'pods'] : ['configmaps', 'pods', 'secrets'];
      for (const resource of resources) for (const scope of SCOPES) list.push({ who, resource, scope, form: 'json' });
      list.push({ who, resource: 'namespaces', scope: 'cluster', form: 'json' });
    }
    await compareLists(list);
  }, 120_000);

  it('tables: default columns, -o wide, -o name, --chunk-size=2, a metadata.name field selector, kubectl 1.27, 1.30, 1.33 and 1.35', async () => {
    const list: ListCase[] = [];
    for (const who of [ALICE, BOB, ROBOT_WHO]) {
      for (const scope of SCOPES) {
        list.push({ who, resource: 'configmaps', scope, form: 'table' });
        list.push({ who, resource: 'pods', scope, form: 'wide' });
        list.push({ who, resource: 'configmaps', scope, form: 'name' });
      }
      list.push({ who, resource: 'configmaps', scope: 'all', form: 'table', flotillaExtra: ['--chunk-size=2'] });
      list.push({ who, resource: 'configmaps', scope: 'all', form: 'json', flotillaExtra: ['--chunk-size=2'] });
      list.push({ who, resource: 'secrets', scope: SHOP, form: 'json', extra: ['--field-selector', 'metadata.name=token-a'] });
      list.push({ who, resource: 'secrets', scope: 'all', form: 'json', extra: ['--field-selector', 'metadata.name=token-a'] });
      list.push({ who, resource: 'configmaps', scope: 'all', form: 'table', extra: ['--field-selector', 'metadata.name=shared'] });
    }
    for (const version of ['1.27', '1.30', '1.33', '1.35']) {
      list.push({ who: ALICE, resource: 'configmaps', scope: 'all', form: 'table', version });
      list.push({ who: BOB, resource: 'pods', scope: SHOP, form: 'wide', version });
    }
    await compareLists(list);
  }, 120_000);

  it('gets: the object where a member lets the caller get it; 404 where allowed but absent; 403 where allowed nowhere; several: the first, named among members it may see', async () => {
    const gets: [Who, string, string | undefined, string][] = [];
    for (const who of [ALICE, BOB, ROBOT_WHO]) {
      for (const ns of NAMESPACES) {
        for (const name of [...MEMBERS.map((m) => `${SHORT[ns]}-${m.name}-0`), 'shared', 'absent']) gets.push([who, 'configmaps', ns, name]);
      }
      for (const name of ['token-a', 'token-b', 'absent']) gets.push([who, 'secrets', SHOP, name]);
      for (const name of [...MEMBERS.map((m) => `web-${m.name}`), 'absent']) gets.push([who, 'pods', SHOP, name]);
      // A namespace is its own namespace to the authorizer: a RoleBinding in it can let a caller get it.
      for (const name of [...NAMESPACES, 'absent']) gets.push([who, 'namespaces', undefined, name]);
    }
    // Impersonated: what the members show the admin --as alice (without her group: not authz-dev).
    for (const [ns, name] of [[SHOP, 'shared'], [SHOP, 'absent'], [DEV, 'shared'], [DEV, 'absent']] as const) gets.push([ADMIN_AS_ALICE, 'configmaps', ns, name]);
    gets.push([ADMIN_AS_ALICE, 'secrets', SHOP, 'token-a'], [ADMIN_AS_ALICE, 'namespaces', undefined, SHOP]);
    await eachOf(gets, ([who, resource, ns, name]) => compareGet(who, resource, ns, name));
  }, 120_000);

  it('the demo’s policy, read plainly: what alice and bob see, what they are told, and what they are refused', async () => {
    // Anchors for the differential cases above, which hold whatever the members say. The fleet is
    // shared: other tests' grants to alice and bob elsewhere are left out of these by namespace.
    const ours = (rows: string[]) => rows.map(withoutUid).filter((r) => NAMESPACES.some((ns) => r.includes(`/${ns}/`)));
    const alicePods = await viaFlotilla(ALICE, ['get', 'pods', '-A', '-o', 'json']);
    expect(alicePods.code, alicePods.stderr).toBe(0);
    expect(ours(rowsOf('json', alicePods.stdout, {}))).toEqual([`east/${SHOP}/web-east`]);
    const aliceShopPods = await viaFlotilla(ALICE, ['get', 'pods', '-n', SHOP, '-o', 'name']);
    expect(aliceShopPods.stdout.trim()).toBe('pod/web-east');
    expect(warningsOf(aliceShopPods.stderr)).toEqual(['Warning: flotilla: User "alice" cannot list pods in clusters west, north: nothing of them is shown']);
    const aliceConfigMaps = ours(rowsOf('json', (await viaFlotilla(ALICE, ['get', 'configmaps', '-A', '-o', 'json'])).stdout, {}));
    expect(aliceConfigMaps).toEqual(expect.arrayContaining([`east/${SHOP}/shop-east-0`, `east/${SHOP}/shared`, `north/${DEV}/dev-north-0`, `north/${DEV}/shared`]));
    expect(aliceConfigMaps.filter((r) => r.startsWith('west/') || r.includes(`/${BANK}/`))).toEqual([]);
    const bobPods = ours(rowsOf('json', (await viaFlotilla(BOB, ['get', 'pods', '-A', '-o', 'json'])).stdout, {}));
    expect(bobPods.sort()).toEqual([`west/${BANK}/web-west`, `west/${SHOP}/web-west`]);
    // Nothing anywhere: 403, as the apiserver words it, naming the members.
    const bobSecrets = await viaFlotilla(BOB, ['get', 'secrets', '-n', SHOP]);
    expect(bobSecrets.code).toBe(1);
    expect(errorOf(bobSecrets.stderr)).toBe(`Error from server (Forbidden): secrets is forbidden: User "bob" cannot list resource "secrets" in API group "" in the namespace "${SHOP}" (in any of the clusters east, west, north)`);
    // A /clusters/<name>/ all-namespaces list needs cluster-wide rights, as on the member.
    const aliceEast = await viaFlotilla(ALICE, ['get', 'configmaps', '-A'], { cluster: 'east' });
    expect(aliceEast.code).toBe(1);
    expect(errorOf(aliceEast.stderr)).toBe('Error from server (Forbidden): configmaps is forbidden: User "alice" cannot list resource "configmaps" in API group "" at the cluster scope');
    // A get by resourceNames.
    expect((await viaFlotilla(ALICE, ['get', 'secret', 'token-a', '-n', SHOP, '-o', 'name'])).stdout.trim()).toBe('secret/token-a');
    expect(errorOf((await viaFlotilla(ALICE, ['get', 'secret', 'token-b', '-n', SHOP])).stderr)).toMatch(/^Error from server \(Forbidden\): secrets "token-b" is forbidden: User "alice" cannot get resource "secrets"/);
    // bob sees authz-dev on east (team-b) and everything on west: a name both hold is east's (the
    // first in the fleet's order), with a Warning naming those two only.
    const shared = await viaFlotilla(BOB, ['get', 'configmap', 'shared', '-n', DEV, '-o', 'name']);
    expect(shared.stdout.trim()).toBe('configmap/shared');
    expect(shared.stderr).toContain(`Warning: flotilla: configmaps "shared" is in clusters east, west; this is east's (the first in the fleet's order)`);
  });

  it('a /clusters/<name>/ read is exactly the member’s own answer', async () => {
    const reads: [string[], Form][] = [
      [['get', 'configmaps', '-A', '-o', 'json'], 'json'],
      [['get', 'configmaps', '-n', SHOP, '-o', 'json'], 'json'],
      [['get', 'configmaps', '-n', DEV], 'table'],
      [['get', 'pods', '-A', '-o', 'wide'], 'wide'],
      [['get', 'secret', 'token-a', '-n', SHOP, '-o', 'json'], 'json'],
      [['get', 'secret', 'token-b', '-n', SHOP, '-o', 'json'], 'json'],
      [['get', 'secrets', '-n', SHOP, '--field-selector', 'metadata.name=token-a', '-o', 'name'], 'name'],
    ];
    const all: [Who, MemberInfo, string[], Form][] = [];
    for (const who of [ALICE, BOB, ROBOT_WHO]) for (const m of MEMBERS) for (const [args, form] of reads) all.push([who, m, args, form]);
    await eachOf(all, async ([who, m, args, form]) => {
      const ns = args.includes('-n') ? args[args.indexOf('-n') + 1]! : undefined;
      await agree(`${who.label}: kubectl --server …/clusters/${m.name} ${args.join(' ')}`, async () => {
        const [direct, via] = await Promise.all([onMember(who, m, args), viaFlotilla(who, args, { cluster: m.name })]);
        return { want: answerOf(form, direct, { CLUSTER: m.name, ...(ns ? { NAMESPACE: ns } : {}) }), got: answerOf(form, via, ns ? { NAMESPACE: ns } : {}) };
      });
    });
  }, 120_000);
});

// ---------------------------------------------------------------------------------------------

/**
 * The events kubectl -w --output-watch-events printed, as `EVENT cluster/namespace/name` (a
 * member's cluster, and the namespace of a one-namespace watch, given as `fixed`).
 */
function watchLines(out: string, fixed: { CLUSTER?: string; NAMESPACE?: string } = {}): string[] {
  const lines = out.split('\n').filter((l) => l.trim());
  const header = lines[0]?.trim().split(/\s{2,}/) ?? [];
  return lines.slice(1).map((l) => {
    const cells = l.trim().split(/\s{2,}/);
    const cell = (name: 'EVENT' | 'CLUSTER' | 'NAMESPACE' | 'NAME') => (header.includes(name) ? cells[header.indexOf(name)] : name === 'CLUSTER' || name === 'NAMESPACE' ? fixed[name] : undefined);
    return `${cell('EVENT')} ${cell('CLUSTER')}/${cell('NAMESPACE')}/${cell('NAME')}`;
  });
}

describe('a running watch follows the members’ RBAC', () => {
  it('kubectl get configmaps -A -w as alice: ADDED when a RoleBinding on west lets her read authz-bank, DELETED when it goes', async () => {
    const kc = kubeconfigOf(ALICE.token, flotilla.url);
    const w = kubectlSession(kc, [...cacheDir(), 'get', 'configmaps', '-A', '-w', '--output-watch-events']);
    try {
      await w.waitForOutput(new RegExp(`dev-north-0`), 15_000);
      // The initial list: what alice may list, member by member (the differential lists hold its rows).
      await until('the initial list printed', () => watchLines(w.stdout()).some((l) => l.endsWith(`/${DEV}/shared`) && l.includes('north/')), 5000);
      // Ours: the fleet is shared, and other tests' objects alice may read can change meanwhile.
      const ourLines = () => watchLines(w.stdout()).filter((l) => NAMESPACES.some((ns) => l.includes(`/${ns}/`)));
      const before = ourLines();
      expect(before.filter((l) => l.includes(`west/${BANK}/`))).toEqual([]);
      expect(before.every((l) => l.startsWith('ADDED '))).toBe(true);

      // On west, alice may now read configmaps in authz-bank: the watch shows them, as the member lists them to her.
      await roleBinding(west, BANK, 'alice-late', [rbacSubject('User', 'alice')], roleRef('ClusterRole', 'authz-e2e-cm-reader'));
      const granted = Date.now();
      let direct: string[] = [];
      await until('west letting alice list authz-bank', async () => {
        const r = await onMember(ALICE, west, ['get', 'configmaps', '-n', BANK, '-o', 'name']);
        direct = r.code === 0 ? r.stdout.split('\n').filter(Boolean).map((n) => n.replace(/^configmap\//, '')) : [];
        return direct.length > 0;
      }, 10_000);
      expect(direct.sort()).toEqual(['bank-west-0', 'bank-west-1', 'kube-root-ca.crt', 'shared']);
      const added = direct.map((n) => `ADDED west/${BANK}/${n}`).sort();
      await until('the watch showing west’s authz-bank', () => added.every((l) => ourLines().includes(l)), 5000);
      const addedAfterMs = Date.now() - granted;
      const afterGrant = ourLines().slice(before.length);
      // Exactly those objects came, and nothing else.
      expect(afterGrant.sort()).toEqual(added);

      // The RoleBinding deleted: the same objects go, as DELETED.
      await ok(west, 'DELETE', `${RBAC}/namespaces/${BANK}/rolebindings/alice-late`);
      const revoked = Date.now();
      const deleted = direct.map((n) => `DELETED west/${BANK}/${n}`).sort();
      await until('the watch dropping west’s authz-bank', () => deleted.every((l) => ourLines().includes(l)), 5000);
      const deletedAfterMs = Date.now() - revoked;
      expect(ourLines().slice(before.length + added.length).sort()).toEqual(deleted);
      expect((await onMember(ALICE, west, ['get', 'configmaps', '-n', BANK])).code).toBe(1);
      console.log(`read authorization: the watch showed west's authz-bank ${addedAfterMs} ms after the RoleBinding was created, and dropped it ${deletedAfterMs} ms after it was deleted`);
    } finally {
      await w.stop();
      await ok(west, 'DELETE', `${RBAC}/namespaces/${BANK}/rolebindings/alice-late`);
    }
  }, 60_000);
});

describe('a watch of one object', () => {
  it('kubectl get secret token-a -w as alice (resourceNames) prints what east prints; token-b is refused as east refuses it', async () => {
    const args = [...cacheDir(), 'get', 'secret', 'token-a', '-n', SHOP, '-w', '--output-watch-events'];
    const direct = kubectlSession(kubeconfigOf(ALICE.token, east.server), args);
    const via = kubectlSession(kubeconfigOf(ALICE.token, flotilla.url), args);
    try {
      await direct.waitForOutput(/token-a/);
      await via.waitForOutput(/token-a/);
      // Nothing more comes on either side: give flotilla a moment to show anything else it would.
      await new Promise((r) => setTimeout(r, 500));
      cases++;
      expect(watchLines(via.stdout(), { NAMESPACE: SHOP })).toEqual(watchLines(direct.stdout(), { CLUSTER: 'east', NAMESPACE: SHOP }));
      expect(watchLines(via.stdout(), { NAMESPACE: SHOP })).toEqual([`ADDED east/${SHOP}/token-a`]);
      expect(warningsOf(via.stderr())).toEqual(['Warning: flotilla: User "alice" cannot watch secrets in clusters west, north: nothing of them is shown']);
    } finally {
      await direct.stop();
      await via.stop();
    }
    const refused = ['get', 'secret', 'token-b', '-n', SHOP, '-w', '--request-timeout=10s'];
    const [onEast, throughFlotilla] = await Promise.all([onMember(ALICE, east, refused), viaFlotilla(ALICE, refused)]);
    cases++;
    expect(onEast.code).toBe(1);
    expect(throughFlotilla.code).toBe(1);
    expect(errorOf(throughFlotilla.stderr)).toBe(`${errorOf(onEast.stderr)} (in any of the clusters east, west, north)`);
  });
});

// ---------------------------------------------------------------------------------------------

describe('a caller’s own impersonation', () => {
  it('alice --as system:admin is refused, by flotilla as by the member', async () => {
    // kubectl as alice has discovered both servers (cached), as when she goes on to try --as.
    expect((await onMember(ALICE, east, ['get', 'configmaps', '-n', SHOP])).code).toBe(0);
    expect((await viaFlotilla(ALICE, ['get', 'configmaps', '-n', SHOP])).code).toBe(0);
    for (const args of [['get', 'configmaps', '-n', SHOP], ['get', 'secrets', '-A'], ['get', 'configmaps', '-A', '-w', '--request-timeout=5s']]) {
      const as = ['--as', 'system:admin', ...args];
      const direct = await onMember(ALICE, east, as);
      const via = await viaFlotilla(ALICE, as);
      cases++;
      expect(direct.code).toBe(1);
      expect(errorOf(direct.stderr)).toBe('Error from server (Forbidden): users "system:admin" is forbidden: User "alice" cannot impersonate resource "users" in API group "" at the cluster scope');
      expect(via.code, via.stdout).toBe(1);
      expect(via.stdout).toBe('');
      // Flotilla names the member that refused.
      expect(errorOf(via.stderr).slice(0, errorOf(direct.stderr).length)).toBe(errorOf(direct.stderr));
    }
    // The header itself, with a group that would be everything.
    for (const path of ['/api/v1/secrets', `/api/v1/namespaces/${SHOP}/configmaps`, `/api/v1/namespaces/${SHOP}/secrets/token-b`, '/api/v1/configmaps?watch=1']) {
      const res = await memberRequest(flotilla.endpoint, 'GET', path, undefined, { token: ALICE.token, headers: { 'impersonate-user': 'system:admin', 'impersonate-group': 'system:masters' } });
      cases++;
      expect(res.status, `${path}: ${res.body}`).toBe(403);
      expect(JSON.parse(res.body)).toMatchObject({ kind: 'Status', code: 403, reason: 'Forbidden' });
    }
  });

  it('the admin --as alice sees what the members show the admin --as alice, and with --as-group team-a what alice sees', async () => {
    // The differential lists and gets above compare both impersonations with the members; here, with alice herself.
    for (const [resource, form] of [['configmaps', 'json'], ['pods', 'wide'], ['secrets', 'name']] as const) {
      for (const scope of ['-A', `-n=${SHOP}`, `-n=${DEV}`]) {
        await agree(`kubectl get ${resource} ${scope} as alice and as the admin --as alice --as-group team-a`, async () => {
          const [own, impersonated] = await Promise.all([viaFlotilla(ALICE, ['get', resource, scope, ...FORM_ARGS[form]]), viaFlotilla(ADMIN_AS_ALICE_TEAM_A, ['get', resource, scope, ...FORM_ARGS[form]])]);
          return { got: answerOf(form, impersonated, {}), want: answerOf(form, own, {}) };
        });
      }
    }
    // Without her group, the admin --as alice sees authz-shop of east and not authz-dev of north.
    const rows = rowsOf('json', (await viaFlotilla(ADMIN_AS_ALICE, ['get', 'configmaps', '-A', '-o', 'json'])).stdout, {});
    expect(rows.some((r) => r.startsWith(`east/${SHOP}/`))).toBe(true);
    expect(rows.filter((r) => !r.startsWith(`east/${SHOP}/`) && NAMESPACES.some((ns) => r.includes(`/${ns}/`)))).toEqual([]);
  });
});

// ---------------------------------------------------------------------------------------------

/** What alice may list of configmaps, member by member: the merged members' answer, as ids. */
async function aliceConfigMaps(): Promise<string[]> {
  return (await mergedMembers({ who: ALICE, resource: 'configmaps', scope: 'all', form: 'json' })).rows;
}

/** The Warning header flotilla should send alice's configmaps -A, from the members' answers (as kubectl prints it). */
async function aliceWarningHeader(): Promise<string | undefined> {
  const [line] = (await mergedMembers({ who: ALICE, resource: 'configmaps', scope: 'all', form: 'json' })).warnings;
  return line === undefined ? undefined : `299 - ${JSON.stringify(line.slice('Warning: '.length))}`;
}

type Meta = { name: string; namespace?: string; uid: string; annotations?: Record<string, string> };
const idOf = (cluster: string | undefined, m: Meta) => `${cluster ?? '?'}/${m.namespace ?? ''}/${m.name}@${m.uid}`;

describe('every read form holds the same view', () => {
  const asAlice = (path: string, accept?: string) => memberRequest(flotilla.endpoint, 'GET', path, undefined, { token: ALICE.token, ...(accept ? { accept } : {}) });

  it('Table and PartialObjectMetadataList as alice hold only her rows', async () => {
    await agree('alice: GET /api/v1/configmaps as Table', async () => {
      const res = await asAlice('/api/v1/configmaps', TABLE);
      const table = JSON.parse(res.body) as { kind: string; columnDefinitions: { name: string }[]; rows: { cells: unknown[]; object: { metadata: Meta } }[] };
      return {
        got: { status: res.status, kind: table.kind, columns: table.columnDefinitions.slice(0, 2).map((c) => c.name), ids: table.rows.map((r) => idOf(String(r.cells[1]), r.object.metadata)).sort(), warning: res.headers['warning'] },
        want: { status: 200, kind: 'Table', columns: ['Name', 'Cluster'], ids: await aliceConfigMaps(), warning: await aliceWarningHeader() },
      };
    });
    await agree('alice: GET /api/v1/configmaps as PartialObjectMetadataList', async () => {
      const res = await asAlice('/api/v1/configmaps', METADATA_LIST);
      const list = JSON.parse(res.body) as { kind: string; items: { metadata: Meta }[] };
      return {
        got: { status: res.status, kind: list.kind, ids: list.items.map((i) => idOf(i.metadata.annotations?.[CLUSTER], i.metadata)).sort() },
        want: { status: 200, kind: 'PartialObjectMetadataList', ids: await aliceConfigMaps() },
      };
    });
    // A namespace she may not read anywhere: the Table form is refused as the JSON one is.
    const refused = await asAlice(`/api/v1/namespaces/${BANK}/configmaps`, TABLE);
    cases++;
    expect(refused.status).toBe(403);
    expect(JSON.parse(refused.body)).toMatchObject({ kind: 'Status', reason: 'Forbidden', message: `configmaps is forbidden: User "alice" cannot list resource "configmaps" in API group "" in the namespace "${BANK}" (in any of the clusters east, west, north)` });
  });

  it('watch-list as alice, in JSON and metadata form: the initial events are hers only', async () => {
    for (const accept of ['application/json', METADATA]) {
      await agree(`alice: watch-list of configmaps (${accept})`, async () => {
        const w = await openWatch({ ...flotilla.endpoint, token: ALICE.token }, '/api/v1/configmaps?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true', accept);
        try {
          const isEnd = (e: WatchEvent) => e.type === 'BOOKMARK' && e.object.metadata?.annotations?.['k8s.io/initial-events-end'] === 'true';
          const events = w.status === 200 ? await w.until((ev) => ev.some(isEnd), 10_000) : [];
          const initial = events.slice(0, events.findIndex(isEnd));
          return {
            got: { status: w.status, types: [...new Set(initial.map((e) => e.type))], ids: initial.map((e) => idOf(e.object.metadata?.annotations?.[CLUSTER], e.object.metadata as Meta)).sort() },
            want: { status: 200, types: ['ADDED'], ids: await aliceConfigMaps() },
          };
        } finally {
          w.close();
        }
      });
    }
  });

  it('remainingItemCount: absent when the view hides objects in its ranges, the member’s own when it hides none', async () => {
    type List = { items: { metadata: Meta }[]; metadata: { continue?: string; remainingItemCount?: number } };
    const page = async (who: Who, ep: { server: string; token: string; caFile: string }, path: string) => {
      const res = await memberRequest(ep, 'GET', path, undefined, { token: who.token });
      if (res.status !== 200) throw new Error(`${who.label}: GET ${path} on ${ep.server}: ${res.status} ${res.body.slice(0, 300)}`);
      return JSON.parse(res.body) as List;
    };
    // Fleet-wide views granting different namespaces per member (alice: east's authz-shop, north's
    // authz-dev and whatever else other tests let her; the service account: east's authz-shop,
    // north's authz-bank) test each object: no count.
    for (const who of [ALICE, ROBOT_WHO]) {
      const all = await memberRequest(flotilla.endpoint, 'GET', '/api/v1/configmaps?limit=1', undefined, { token: who.token, headers: who.impersonate });
      const list = JSON.parse(all.body) as List;
      cases++;
      expect(all.status).toBe(200);
      expect(list.items).toHaveLength(1);
      expect(list.metadata.continue).toBeTruthy();
      expect(list.metadata.remainingItemCount).toBeUndefined();
    }
    // Views that hide nothing in their ranges count as the member counts.
    const counted: [Who, string, MemberInfo, string][] = [
      [ALICE, `/api/v1/namespaces/${SHOP}/configmaps?limit=1`, east, `/api/v1/namespaces/${SHOP}/configmaps?limit=1`],
      [ALICE, `/clusters/east/api/v1/namespaces/${SHOP}/configmaps?limit=1`, east, `/api/v1/namespaces/${SHOP}/configmaps?limit=1`],
      [BOB, `/api/v1/namespaces/${BANK}/configmaps?limit=1`, west, `/api/v1/namespaces/${BANK}/configmaps?limit=1`],
      [BOB, '/clusters/west/api/v1/pods?limit=1', west, '/api/v1/pods?limit=1'],
      [BOB, '/clusters/west/api/v1/configmaps?limit=2', west, '/api/v1/configmaps?limit=2'],
    ];
    for (const [who, path, m, memberPath] of counted) {
      await agree(`${who.label}: remainingItemCount of ${path} against ${m.name}'s of ${memberPath}`, async () => {
        const [via, direct] = await Promise.all([page(who, flotilla.endpoint, path), page(who, m, memberPath)]);
        return { got: via.metadata.remainingItemCount, want: direct.metadata.remainingItemCount };
      });
    }
  });
});

