import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { appendFileSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tailLog } from '../fleet/processes.js';
import { memberRequest } from '../fleet/http.js';
import type { ResourceRuleSpec } from '../support/flotilla-process.js';
import { startRelayedFlotilla, type RelayedFlotilla } from '../support/abuse/fleet-setup.js';
import { SMUGGLE_MARKER } from '../support/abuse/generators.js';
import { isNote, snapshotDiff, type Answer, type CallerIdentity, type Violation } from '../support/abuse/invariants.js';
import { closeAgents, sendNode, sendRaw } from '../support/abuse/raw-client.js';
import { abuseRun } from '../support/abuse/settings.js';
import { explore, formatReport, shrinkAll, type AbuseEnv, type FoundKind } from '../support/abuse/runner.js';
import { ACME, TENANTS, createTenantCanaries, foreignSnapshot, foreignUids, newMarkers, removeTenantObjects, settleNamespaces, tenantAdminsAreClusterAdmins, tenantObjects } from '../support/abuse/tenant-fleet-setup.js';
import { TENANT_PREFIXED_NAMES, requestText, tenantCaseArb } from '../support/abuse/tenant-generators.js';
import { ReviewFanOut, checkRemainingCount, checkTenantAnswer, checkTenantMemberRequest, logViolations, outsideTenant, type ForeignObjects } from '../support/abuse/tenant-invariants.js';

/**
 * The tenant abuse suite: generated requests of tenant acme's admin (cluster-admin on every member,
 * so flotilla's checks are the only confinement) aimed at tenant globex's and the fleet's objects:
 * every path form (root, `/clusters/<c>`, the fleet path and its `/clusters/<c>`) disguised by
 * percent-encoded letters of any segment, doubled and trailing slashes, upper case; every verb
 * (get, list, watch, create, update, the four patch types, delete, deletecollection with
 * selectors, subresources); namespaces and names in member form, tenant form and double-prefixed;
 * bodies and patches naming foreign namespaces, owners, RBAC subjects and roles, aggregation,
 * generateName, foreign CRD groups; impersonation of foreign users and groups and of hundreds of
 * groups. Members sit behind recording relays. Held:
 * - no object outside acme's names on any member changed, vanished or appeared (snapshots of
 *   globex's and the fleet's namespaces, cluster RBAC, CRDs, custom objects);
 * - no answer carries a foreign object (the run's markers, foreign uids) in body or header; errors
 *   and headers name nothing foreign nor acme's names in member form unless the request did; no
 *   continue token carries member names; a page's remainingItemCount counts only what acme lists
 *   (probed after the run, every path form); flotilla's log carries no foreign marker;
 * - every request a member got as acme was for acme's names (or a collection read flotilla
 *   filters, a read of a shared kind, a self-review) with a body naming nothing outside acme, as
 *   one of acme's identities; impersonation reviews do not fan out per group;
 * - the common suite's invariants (no 5xx, errors are Status, answers in time, still healthy).
 *
 * Environment as the common suite (test/e2e/abuse.test.ts): FLOTILLA_ABUSE_RUNS (3000 here,
 * time-bounded; `npm run test:abuse` runs 100,000), _SEED, _CONCURRENCY, _TIMEOUT_MS,
 * _TIME_LIMIT_S, _TRACE, _MAIN (another build of flotilla), _LOG_LEVEL (flotilla's; `info` times every request).
 */
const fleet = inject('fleet');
const env = process.env;
const { runs: RUNS, profile: PROFILE, seed: SEED, timeLimitMs: TIME_LIMIT_MS, shrink: SHRINK, testTimeoutMs: TEST_TIMEOUT_MS } = abuseRun(env, {
  ciTimeLimitS: 45,
  shrink: { full: { perKindMs: 30_000, totalMs: 10 * 60_000 }, ci: { perKindMs: 3_000, totalMs: 12_000 } },
  slackMs: 180_000,
});
const FLEET_PATH = '/apis/search.flotilla.io/v1alpha1/fleet';

// Owned cluster-scoped kinds cached (the cached view) and not (the live one): both forms are aimed at.
const RESOURCES: ResourceRuleSpec[] = [
  { version: 'v1', resource: 'pods' },
  { version: 'v1', resource: 'namespaces' },
  { version: 'v1', resource: 'nodes' },
  { version: 'v1', resource: 'configmaps' },
  { group: 'apps', version: 'v1', resource: 'deployments' },
  { group: 'rbac.authorization.k8s.io', version: 'v1', resource: 'rolebindings' },
  { group: 'rbac.authorization.k8s.io', version: 'v1', resource: 'clusterroles' },
];

const RBAC_KINDS: ResourceRuleSpec[] = ['roles', 'rolebindings', 'clusterroles', 'clusterrolebindings'].map((resource) => ({ group: 'rbac.authorization.k8s.io', version: 'v1', resource }));

/** Lists probed after the run for their counts, as acme names them. */
const COUNTED = [
  '/api/v1/configmaps', '/api/v1/namespaces/web/configmaps', '/api/v1/namespaces', '/api/v1/secrets', '/api/v1/serviceaccounts', '/api/v1/pods', '/api/v1/nodes',
  '/apis/rbac.authorization.k8s.io/v1/clusterroles', '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings', '/apis/rbac.authorization.k8s.io/v1/rolebindings',
  '/apis/apiextensions.k8s.io/v1/customresourcedefinitions',
];

let flotilla: RelayedFlotilla | undefined;
let foreign: ForeignObjects;
const dir = join(fleet.dir, 'flotilla-tenant-abuse');

let tenantsBefore = new Set<string>();

beforeAll(async () => {
  tenantsBefore = await tenantObjects(fleet.members);
  await tenantAdminsAreClusterAdmins(fleet.members);
  const markers = newMarkers();
  await createTenantCanaries(fleet.members, markers);
  foreign = { markers: [markers.globex, markers.fleet], uids: await foreignUids(fleet.members) };
  flotilla = await startRelayedFlotilla(fleet, dir, RESOURCES, env.FLOTILLA_ABUSE_MAIN, TENANTS);
});

afterAll(async () => {
  closeAgents();
  await flotilla?.stop();
  await tenantAdminsAreClusterAdmins(fleet.members, true);
  await removeTenantObjects(fleet.members, tenantsBefore);
});

function record(found: Map<string, FoundKind>, v: Violation): void {
  const known = found.get(v.kind);
  if (!known) found.set(v.kind, { kind: v.kind, count: 1, detail: v.detail, origins: [], exampleId: -1 });
  else {
    if (known.count < 10 && known.exampleId < 0) known.detail += `; ${v.detail}`;
    known.count++;
  }
}

describe('tenant abuse', () => {
  it(`tenant acme stays inside its view under ${RUNS} generated hostile requests`, async () => {
    const f = flotilla!;
    const user = (name: string) => fleet.users.find((u) => u.name === name)!;
    const identity = (name: string): CallerIdentity => ({ user: name, uid: `uid-${name}`, groups: [...user(name).groups, 'system:authenticated'] });
    // The tenant's own identities are no foreign names when a message quotes them, nor the names it
    // writes with its prefix already (stored by one case, quoted in another's answer).
    const own = [...ACME.users, ...ACME.groups, ...TENANT_PREFIXED_NAMES].join('\n');
    // acme's namespaces as it names them, read from the members twice a second: one a case made
    // (`kube-system`, `abuse-canary`: acme-kube-system on the members) is acme's to be told of, in
    // a refusal of its list across its namespaces, whatever another namespace of that name holds.
    const ownNamespaces = new Set<string>();
    let watchingNamespaces = true;
    const namespacesWatched = (async () => {
      while (watchingNamespaces) {
        for (const m of fleet.members) {
          const res = await memberRequest(m, 'GET', '/api/v1/namespaces').catch(() => undefined);
          if (res?.status !== 200) continue;
          for (const n of (JSON.parse(res.body) as { items: { metadata: { name: string } }[] }).items) if (n.metadata.name.startsWith(`${ACME.id}-`)) ownNamespaces.add(n.metadata.name.slice(ACME.id.length + 1));
        }
        await new Promise((r) => setTimeout(r, 500));
      }
    })();
    const written = (c: string) => `${c}\n${own}\n${[...ownNamespaces].join('\n')}`;
    const fanOut = new ReviewFanOut(8);
    const abuse: AbuseEnv = {
      flotilla: { host: '127.0.0.1', port: f.port, ca: readFileSync(fleet.caFile) },
      relays: f.relays,
      policy: {
        flotillaAuthorization: `Bearer ${fleet.members[0]!.token}`,
        // Flotilla caches the four RBAC kinds of every `rbac`-mode member whatever the rules say (read authorization).
        cachedResources: [...RESOURCES, ...RBAC_KINDS].map((r) => ({ group: r.group ?? '', version: r.version, resource: r.resource })),
        callers: [identity('admin@acme'), identity('dev@acme')],
        smuggleMarker: SMUGGLE_MARKER,
        impersonable: (sent) => outsideTenant(ACME, sent),
      },
      identities: { 'admin@acme': identity('admin@acme'), 'dev@acme': identity('dev@acme') },
      tokens: { 'admin@acme': user('admin@acme').token, 'dev@acme': user('dev@acme').token },
      arb: tenantCaseArb,
      checkAnswer: (c, a) => checkTenantAnswer(a, written(requestText(c)), foreign),
      checkMemberRequest: (rec) => [...checkTenantMemberRequest(ACME, rec), ...fanOut.check(rec)],
      timeoutMs: Number(env.FLOTILLA_ABUSE_TIMEOUT_MS ?? 10_000),
      concurrency: Number(env.FLOTILLA_ABUSE_CONCURRENCY ?? 8),
      dead: () => (f.proc.exited ? `flotilla exited with ${f.proc.exitCode}:\n${tailLog(f.logPath)}` : undefined),
      // acme may read what it sees: the member's RBAC allows everything, flotilla's view decides.
      readAuthorization: false,
      log: (line) => console.log(line),
      ...(env.FLOTILLA_ABUSE_TRACE ? { trace: (line: string) => appendFileSync(join(dir, 'abuse-cases.log'), `${line}\n`) } : {}),
    };

    const stillGoing = await settleNamespaces(fleet.members);
    const before = Object.fromEntries(Object.entries(await foreignSnapshot(fleet.members)).filter(([k]) => !stillGoing.has(k)));
    const result = await explore(abuse, { runs: RUNS, seed: SEED, timeLimitMs: TIME_LIMIT_MS });
    await shrinkAll(abuse, result.found, SHRINK);

    const extra: Violation[] = [];
    const health = await sendRaw(abuse.flotilla, Buffer.from(`GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:${f.port}\r\nConnection: close\r\n\r\n`), { timeoutMs: 10_000, streaming: false, head: false });
    if (health.type !== 'response' || health.status !== 200) extra.push({ kind: 'flotilla:unhealthy', detail: `/healthz at the end: ${JSON.stringify(health.type === 'response' ? health.status : health)}` });

    // Counts and continue tokens, with nothing else in flight: a page's counts against the whole list.
    const token = user('admin@acme').token;
    const get = async (path: string): Promise<Answer | undefined> =>
      sendNode(abuse.flotilla, { method: 'GET', path, headers: ['Host', `127.0.0.1:${f.port}`, 'Authorization', `Bearer ${token}`, 'Accept', 'application/json'] }, { timeoutMs: 20_000, streaming: false, head: false });
    for (const prefix of ['', '/clusters/east', FLEET_PATH, `${FLEET_PATH}/clusters/west`]) {
      for (const p of COUNTED) {
        const path = `${prefix}${p}`;
        // The members may still be finishing what the run started (a namespace's configmaps go with it),
        // so a page is judged against a whole list of the same state: read before and after, and again
        // while the two differ.
        const count = (a: Answer | undefined): number | undefined =>
          a?.type === 'response' && a.status === 200 ? ((JSON.parse(a.body.toString('utf8')) as { items?: unknown[] }).items?.length ?? 0) : undefined;
        for (let attempt = 0; attempt < 10; attempt++) {
          const wholeBefore = await get(path);
          const page = await get(`${path}?limit=1`);
          const whole = await get(path);
          for (const a of [wholeBefore, page, whole]) if (a) extra.push(...checkTenantAnswer(a, written(path), foreign));
          const visible = count(whole);
          if (page?.type !== 'response' || page.status !== 200 || visible === undefined) break;
          if (count(wholeBefore) !== visible && attempt < 9) {
            await new Promise((r) => setTimeout(r, 1000));
            continue;
          }
          const p1 = JSON.parse(page.body.toString('utf8')) as { items?: unknown[]; metadata?: { remainingItemCount?: number } };
          extra.push(...checkRemainingCount(path, { items: p1.items?.length ?? 0, ...(p1.metadata?.remainingItemCount !== undefined ? { remaining: p1.metadata.remainingItemCount } : {}) }, visible));
          break;
        }
      }
    }

    watchingNamespaces = false;
    await namespacesWatched;
    await new Promise((r) => setTimeout(r, 500));
    const after = await foreignSnapshot(fleet.members);
    extra.push(...snapshotDiff(before, after));
    extra.push(...logViolations(readFileSync(f.logPath, 'utf8'), foreign));
    for (const v of extra) record(result.found, v);

    const report = formatReport(abuse, result, PROFILE, SEED).replace(/^abuse/gm, 'tenant-abuse');
    console.log(report);
    writeFileSync(join(dir, 'tenant-abuse-report.txt'), `${report}\n`);
    expect(result.tried).toBeGreaterThan(0);
    expect([...result.found.keys()].filter((k) => !isNote(k)), report).toEqual([]);
  }, TEST_TIMEOUT_MS);
});
