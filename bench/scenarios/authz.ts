import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { CachedResource } from '../../src/cacher/cache-roles.js';
import { RBAC_GROUP, type RbacResource } from '../../src/api/rbac.js';
import { ReadAuthorizer, type ReadQuestion } from '../../src/authz/authorizer.js';
import { MemberPolicies, rbacKey } from '../../src/authz/member-policies.js';
import { decodeObject } from '../../src/ingest/decode.js';
import { encodeObjects, viewObjects } from '../../src/ingest/batch.js';
import { AccessReviews, type ReviewedCaller } from '../../src/members/access-reviews.js';
import { listResponse, type ListBody } from '../../src/mux/reads.js';
import { SnapshotRegistry } from '../../src/mux/snapshots.js';
import { Store, type Change } from '../../src/store/store.js';
import { buildReadView, VIEW_STEPS } from '../../src/view/steps.js';
import type { ViewRequest } from '../../src/view/view-step.js';
import { percentile } from '../lib/http.js';
import { drain } from '../lib/in-process.js';
import { makePod } from '../lib/pods.js';
import { groupSubject, memberRbac, userSubject, type FleetBindings, type RbacObject, type RbacObjects } from '../lib/rbac-policy.js';
import { MB, figureSink, type Scenario } from '../lib/scenario.js';
import type { Profile } from '../lib/context.js';

const RESOURCE = 'v1/pods';
const BATCH = 5000;
/** Members holding pods (the fleet list's); the first of `members`. */
const POD_CLUSTERS = 10;
/** Namespaces the namespaced user may read, per member. */
const USER_NAMESPACES = 10;
const TEAMS = 200;
const TEAM_NAMESPACES = 3;
const DEPARTMENTS = 20;
const SPREAD_LABEL = 'bench.flotilla.io/spread';

const info = { group: '', version: 'v1', resource: 'pods', kind: 'Pod', namespaced: true, singularName: 'pod', shortNames: [], categories: [], memberVerbs: [] };
const nsName = (i: number) => `ns-${String(i).padStart(4, '0')}`;
const memberName = (i: number) => `m-${String(i).padStart(3, '0')}`;
const LIST_PODS: ReadQuestion = { verb: 'list', group: '', resource: 'pods', namespaced: true };
const WITHOUT_AUTHORIZATION = VIEW_STEPS.filter((s) => s.name !== 'authorization');

interface Shape {
  namespaces: number;
  podsPerNamespace: number;
  /** Members whose RBAC is cached (the access-set memory's fleet). */
  members: number;
  callers: number;
  /** How long the fleet lists and the namespaced user's lists are interleaved. */
  fleetMs: number;
  namespacesMs: number;
}

/** 100k pods in the full profile, 20k in the quick one, 1k in the bench's own test. */
function shapeOf(profile: Profile): Shape {
  if (profile.name === 'full') {
    return { namespaces: 1000, podsPerNamespace: 10, members: 100, callers: 10_000, fleetMs: 60_000, namespacesMs: 20_000 };
  }
  if (profile.pods >= 10_000) {
    return { namespaces: 1000, podsPerNamespace: 2, members: 100, callers: 10_000, fleetMs: 20_000, namespacesMs: 10_000 };
  }
  return { namespaces: 100, podsPerNamespace: 1, members: 20, callers: 1000, fleetMs: 2000, namespacesMs: 2000 };
}

/**
 * The fleet's bindings on a member, on top of the bootstrap policy (bench/lib/rbac-policy.ts):
 * - `platform-admins` bound to cluster-admin by a ClusterRoleBinding;
 * - 200 teams (`team-<t>`) with `edit` in 3 namespaces each and 20 departments (`dept-<d>`) with
 *   `view` in one, by RoleBindings naming the group, the same on every member;
 * - `alice` with `view` in 10 namespaces spread over the range, the same on every member;
 * - `bob` with `view` in 10 namespaces that differ from member to member.
 */
function fleetBindings(member: number, namespaces: number): FleetBindings {
  const roleBindings: FleetBindings['roleBindings'] = [];
  for (let t = 0; t < TEAMS; t++) {
    for (let k = 0; k < TEAM_NAMESPACES; k++) roleBindings.push({ namespace: nsName((t * TEAM_NAMESPACES + k) % namespaces), role: 'edit', subject: groupSubject(`team-${t}`) });
  }
  for (let d = 0; d < DEPARTMENTS; d++) roleBindings.push({ namespace: nsName(namespaces - 1 - d), role: 'view', subject: groupSubject(`dept-${d}`) });
  const decile = namespaces / USER_NAMESPACES;
  for (const n of aliceNamespaces(namespaces)) roleBindings.push({ namespace: nsName(n), role: 'view', subject: userSubject('alice') });
  // 7 is coprime with a decile's size (10 or 100): the ten pod members' offsets all differ.
  for (let k = 0; k < USER_NAMESPACES; k++) roleBindings.push({ namespace: nsName(k * decile + ((5 + member * 7) % decile)), role: 'view', subject: userSubject('bob') });
  return { clusterAdminGroups: ['platform-admins'], roleBindings };
}

const aliceNamespaces = (namespaces: number) => Array.from({ length: USER_NAMESPACES }, (_, k) => k * (namespaces / USER_NAMESPACES) + 3);

/** The access-set callers: a couple of groups each (a team, a department), so rights in about four namespaces of every member. */
const memoryCaller = (i: number): ReviewedCaller => ({ user: `user-${i}`, groups: [`team-${i % TEAMS}`, `dept-${Math.floor(i / TEAMS) % DEPARTMENTS}`] });

/**
 * authz: what authorizing cached reads by each member's RBAC (issue 26) costs, in this process on
 * a store of its own (no member, no HTTP), the RBAC objects committed as the cachers commit them
 * and the policies read from there by MemberPolicies:
 * - a cluster-admin's (by ClusterRoleBinding) fleet list of 10 members' pods, 100k in the full
 *   profile: the whole path of a request (the authorizer's answer, the view built with it, the
 *   list) against the view built without the authorization step, as before it; and a
 *   system:masters caller, which the authorizer lets through without a policy;
 * - a user allowed 10 of 1000 namespaces in each of the 10 members: the same namespaces on every
 *   member (key ranges) and different ones per member (a per-object test, each namespace read
 *   from the members that grant it), each against a label-selected list (the label index) of as
 *   many objects;
 * - the memory of the authorizer's kept answers once 10k callers (two groups each) asked one list
 *   question over 100 members, and once 10k more did (the answers are an LRU of 10k questions).
 * Lists are unpaged and every byte produced is taken; the ways are interleaved list by list, and
 * each ratio is the median of the ratios within a round.
 */
export const authz: Scenario = {
  name: 'authz',
  async run(ctx, emit) {
    const shape = shapeOf(ctx.profile);
    const dir = join(ctx.dir, 'authz-store');
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    const store = Store.open(dir);
    const snapshots = new SnapshotRegistry(store);
    const policies = new MemberPolicies(store);
    const reviews = new AccessReviews(() => undefined);
    const { figures, add } = figureSink('authz', emit);
    const notes: string[] = [];
    try {
      const members = Array.from({ length: shape.members }, (_, m) => memberName(m));
      const podClusters = members.slice(0, POD_CLUSTERS);
      const resource: CachedResource = { info, clusters: podClusters };

      // The RBAC objects, as the cachers commit a first list of each.
      let started = performance.now();
      let rbacObjects = 0;
      let perMember: RbacObjects | undefined;
      for (let m = 0; m < shape.members; m++) {
        const objects = memberRbac(members[m]!, fleetBindings(m, shape.namespaces));
        perMember ??= objects;
        rbacObjects += await commitRbac(store, members[m]!, objects);
      }
      notes.push(`RBAC per member: ${perMember!.clusterRoles.length} ClusterRoles, ${perMember!.clusterRoleBindings.length} ClusterRoleBindings, ${perMember!.roles.length} Roles, ${perMember!.roleBindings.length} RoleBindings (the v1.34 bootstrap policy and the fleet's bindings); ${rbacObjects} objects for ${shape.members} members committed in ${((performance.now() - started) / 1000).toFixed(1)} s`);

      // The pods: namespace n of every pod member holds podsPerNamespace pods; the spread label's
      // values each select 10 namespaces' worth of pods per member, as many as the user sees.
      started = performance.now();
      const spread = shape.namespaces / USER_NAMESPACES;
      let objectBytes = 0;
      for (const cluster of podClusters) {
        let batch: Change[] = [];
        let rv = 1;
        for (let n = 0; n < shape.namespaces; n++) {
          for (let p = 0; p < shape.podsPerNamespace; p++) {
            const i = n * shape.podsPerNamespace + p;
            const c = pod(cluster, makePod(i, nsName(n)), String(++rv), `s${i % spread}`);
            objectBytes = c.bytes.length;
            batch.push(c);
            if (batch.length >= BATCH) {
              await store.commit({ cluster, resource: RESOURCE }, batch, { rv: String(rv) }, { log: false, fresh: true });
              batch = [];
            }
          }
        }
        if (batch.length) await store.commit({ cluster, resource: RESOURCE }, batch, { rv: String(rv) }, { log: false, fresh: true });
      }
      const total = POD_CLUSTERS * shape.namespaces * shape.podsPerNamespace;
      notes.push(`${total} pods (${objectBytes} B each as stored) in ${POD_CLUSTERS} members × ${shape.namespaces} namespaces committed in ${((performance.now() - started) / 1000).toFixed(1)} s`);
      // The commits' invalidations settle (100 ms) before anything is timed.
      await new Promise((r) => setTimeout(r, 200));

      // Building a member's policy from the store (after any change to its RBAC).
      started = performance.now();
      for (const c of members) policies.policy(c);
      const policyBuildMs = (performance.now() - started) / shape.members;

      const authorizer = new ReadAuthorizer(policies, reviews, () => 'rbac');
      const request: ViewRequest = { resource, watching: false };
      const listOf = (view: ReturnType<typeof buildReadView>) => listResponse(store, { resource, view, form: 'object', snapshots, caller: 'bench' });
      const authorized = async (caller: ReviewedCaller, req: ViewRequest = request) => {
        const access = await authorizer.access(caller, podClusters, LIST_PODS);
        return listOf(buildReadView({ ...req, access }));
      };

      // 1. The cluster-admin's fleet list.
      const admin: ReviewedCaller = { user: 'platform-1', groups: ['platform-admins'] };
      const masters: ReviewedCaller = { user: 'flotilla-admin', groups: ['system:masters'] };
      const fleetWays: Way[] = [
        { name: 'unauthorized', list: () => listOf(buildReadView(request, WITHOUT_AUTHORIZATION)) },
        { name: 'admin', list: () => authorized(admin) },
        { name: 'masters', list: () => authorized(masters) },
      ];
      const fleetSizes = await sizes(fleetWays);
      if (fleetSizes.unauthorized!.items !== total) throw new Error(`authz: the unauthorized fleet list has ${fleetSizes.unauthorized!.items} pods, not ${total}`);
      for (const w of ['admin', 'masters']) {
        if (fleetSizes[w]!.bytes !== fleetSizes.unauthorized!.bytes) throw new Error(`authz: the ${w}'s fleet list differs from the unauthorized one (${fleetSizes[w]!.bytes} B vs ${fleetSizes.unauthorized!.bytes} B)`);
      }
      const fleet = await interleave(fleetWays, shape.fleetMs);
      const fleetP50 = (w: string) => percentile(fleet.ms[w]!, 50);
      add('fleet_list_objects', total, 'objects');
      add('fleet_list_unauthorized_p50_ms', fleetP50('unauthorized'), 'ms');
      add('fleet_list_admin_p50_ms', fleetP50('admin'), 'ms');
      add('fleet_list_masters_p50_ms', fleetP50('masters'), 'ms');
      add('fleet_list_admin_vs_unauthorized', percentile(fleet.vsFirst.admin!, 50), 'x', { op: '<=', value: 1.05 });
      add('fleet_list_masters_vs_unauthorized', percentile(fleet.vsFirst.masters!, 50), 'x', { op: '<=', value: 1.05 });
      // The authorizer's share of a request: its kept answer and the view built with it.
      const decideUs: number[] = [];
      for (let i = 0; i < 2000; i++) {
        const t0 = performance.now();
        buildReadView({ ...request, access: await authorizer.access(admin, podClusters, LIST_PODS) });
        decideUs.push((performance.now() - t0) * 1000);
      }
      add('admin_access_and_view_p50_us', percentile(decideUs, 50), 'µs');
      notes.push(`fleet lists of ${total} pods (${(fleetSizes.unauthorized!.bytes / MB).toFixed(0)} MiB), ${fleet.ms.unauthorized!.length} rounds of three lists (unauthorized, cluster-admin by ClusterRoleBinding, system:masters) interleaved, in rotating order`);

      // 2. A user with 10 of the namespaces of each member, against a label-selected list.
      const alice: ReviewedCaller = { user: 'alice', groups: ['staff'] };
      const bob: ReviewedCaller = { user: 'bob', groups: ['staff'] };
      const byLabel = { ...request, labelSelector: `${SPREAD_LABEL}=s${3 % spread}` };
      const nsWays: Way[] = [
        { name: 'label', list: () => listOf(buildReadView(byLabel, WITHOUT_AUTHORIZATION)) },
        { name: 'same', list: () => authorized(alice) },
        { name: 'differing', list: () => authorized(bob) },
      ];
      const nsSizes = await sizes(nsWays);
      const expected = POD_CLUSTERS * USER_NAMESPACES * shape.podsPerNamespace;
      for (const w of nsWays) if (nsSizes[w.name]!.items !== expected) throw new Error(`authz: the ${w.name} list has ${nsSizes[w.name]!.items} pods, not ${expected}`);
      const aliceView = buildReadView({ ...request, access: await authorizer.access(alice, podClusters, LIST_PODS) });
      const bobView = buildReadView({ ...request, access: await authorizer.access(bob, podClusters, LIST_PODS) });
      const ns = await interleave(nsWays, shape.namespacesMs);
      const nsP50 = (w: string) => percentile(ns.ms[w]!, 50);
      add('namespaces_objects', expected, 'objects');
      add('namespaces_same_p50_ms', nsP50('same'), 'ms');
      add('namespaces_differing_p50_ms', nsP50('differing'), 'ms');
      add('label_selected_p50_ms', nsP50('label'), 'ms');
      add('namespaces_same_vs_label', percentile(ns.vsFirst.same!, 50), 'x', { op: '<=', value: 1 });
      add('namespaces_differing_vs_label', percentile(ns.vsFirst.differing!, 50), 'x', { op: '<=', value: 1 });
      notes.push(`lists of ${expected} of ${total} pods: ${USER_NAMESPACES} namespaces of ${shape.namespaces} in each member, the same on every member (the view: ${aliceView.namespaces?.length ?? 'all'} namespaces as key ranges, ${aliceView.predicates.length} per-object tests) and different ones (${bobView.namespaces?.length ?? 'all'} namespaces, ${bobView.predicates.length} per-object test), against ${SPREAD_LABEL}=s${3 % spread}; ${ns.ms.label!.length} rounds of the three interleaved, in rotating order`);

      // 3. The kept answers' memory: callers asking one list question over every member.
      const gc = gcFunction();
      const heap = () => {
        gc();
        gc();
        return process.memoryUsage().heapUsed;
      };
      const memory = new ReadAuthorizer(policies, reviews, () => 'rbac');
      const ask = async (from: number, to: number) => {
        for (let i = from; i < to; i++) await memory.access(memoryCaller(i), members, LIST_PODS);
      };
      const before = heap();
      started = performance.now();
      await ask(0, shape.callers);
      const decideUsPerMember = ((performance.now() - started) * 1000) / (shape.callers * shape.members);
      const kept = memory.keptSize();
      const held = heap() - before;
      await ask(shape.callers, 2 * shape.callers);
      const heldAfterMore = heap() - before;
      const keptAfterMore = memory.keptSize();
      add('access_sets_callers', shape.callers, 'callers');
      add('access_sets_answers', kept.answers, 'answers');
      add('access_sets_mib', held / MB, 'MiB', { op: '<=', value: 64 });
      add('access_sets_bytes_per_caller', held / shape.callers, 'B');
      add('access_sets_after_twice_the_callers_mib', heldAfterMore / MB, 'MiB', { op: '<=', value: 64 });
      add('access_decide_us_per_member', decideUsPerMember, 'µs');
      add('policy_build_ms_per_member', policyBuildMs, 'ms');
      notes.push(`access sets: ${shape.callers} callers (user-<i>, groups team-<i mod ${TEAMS}> and dept-<⌊i/${TEAMS}⌋ mod ${DEPARTMENTS}>: rights in ${TEAM_NAMESPACES + 1} namespaces of each member) each asked to list pods over ${shape.members} members: ${kept.questions} questions, ${kept.answers} answers kept, ${(held / MB).toFixed(1)} MiB of heap after a full GC (${(held / kept.answers).toFixed(0)} B per member answer); after ${shape.callers} more callers ${keptAfterMore.questions} questions, ${(heldAfterMore / MB).toFixed(1)} MiB`);
      return { figures, facts: { objects: total, objectBytes, objectBytesAre: 'per pod as stored (bench/lib/pods.ts)', notes } };
    } finally {
      policies.close();
      snapshots.close();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  },
};

const RBAC_KINDS: [keyof RbacObjects, RbacResource, string][] = [
  ['clusterRoles', 'clusterroles', 'ClusterRole'],
  ['clusterRoleBindings', 'clusterrolebindings', 'ClusterRoleBinding'],
  ['roles', 'roles', 'Role'],
  ['roleBindings', 'rolebindings', 'RoleBinding'],
];

/** A member's RBAC objects committed as its cachers' first lists are. */
async function commitRbac(store: Store, cluster: string, objects: RbacObjects): Promise<number> {
  let n = 0;
  for (const [field, resource, kind] of RBAC_KINDS) {
    const list = objects[field];
    const changes = viewObjects(encodeObjects(list.map((o: RbacObject) => decodeObject(structuredClone(o) as unknown as Record<string, unknown>, { cluster, apiVersion: `${RBAC_GROUP}/v1`, kind, dropManagedFields: true })))).map(
      (o, i): Change => ({ type: 'ADDED', rv: list[i]!.metadata.resourceVersion, ...o }),
    );
    await store.commit({ cluster, resource: rbacKey(resource) }, changes, { rv: '10000' }, { log: false, fresh: true });
    n += changes.length;
  }
  return n;
}

function pod(cluster: string, object: object, rv: string, spread: string): Change {
  const o = object as { metadata: { labels: Record<string, string>; uid?: string; resourceVersion?: string; namespace: string; name: string } };
  o.metadata.labels[SPREAD_LABEL] = spread;
  o.metadata.uid = `${cluster}-${o.metadata.namespace}-${o.metadata.name}`;
  o.metadata.resourceVersion = rv;
  const d = viewObjects(encodeObjects([decodeObject(o as unknown as Record<string, unknown>, { cluster, apiVersion: 'v1', kind: 'Pod', dropManagedFields: true })]))[0]!;
  return { type: 'ADDED', rv, ...d };
}

interface Way {
  name: string;
  list(): ListBody | Promise<ListBody>;
}

/** Takes every byte of a list, as a response would. */
function consume(body: ListBody): number {
  if (Buffer.isBuffer(body)) return body.length;
  let bytes = 0;
  for (const c of body.chunks) bytes += c.length;
  return bytes;
}

/** Each way's list once: its pods (counted) and bytes. */
async function sizes(ways: Way[]): Promise<Record<string, { items: number; bytes: number }>> {
  const out: Record<string, { items: number; bytes: number }> = {};
  for (const w of ways) out[w.name] = drain(await w.list());
  return out;
}

/**
 * One list of each way per round, their order rotating from round to round, for `ms` in all: the
 * ways share the machine's moments, a load that comes and goes falls on all of them. Each list's
 * ms per way, and per round the ratio of each way to the first (paired, so the drift of a busy
 * machine between rounds cancels out).
 */
async function interleave(ways: Way[], ms: number): Promise<{ ms: Record<string, number[]>; vsFirst: Record<string, number[]> }> {
  const out: Record<string, number[]> = Object.fromEntries(ways.map((w) => [w.name, []]));
  const vsFirst: Record<string, number[]> = Object.fromEntries(ways.map((w) => [w.name, []]));
  const started = performance.now();
  for (let round = 0; round < 3 || performance.now() - started < ms; round++) {
    const took: Record<string, number> = {};
    for (let k = 0; k < ways.length; k++) {
      const way = ways[(round + k) % ways.length]!;
      const t0 = performance.now();
      consume(await way.list());
      took[way.name] = performance.now() - t0;
      out[way.name]!.push(took[way.name]!);
    }
    for (const w of ways) vsFirst[w.name]!.push(took[w.name]! / took[ways[0]!.name]!);
  }
  return { ms: out, vsFirst };
}

/** A full garbage collection: the bench's own `--expose-gc`, else the flag set now. */
function gcFunction(): () => void {
  const own = (globalThis as { gc?: () => void }).gc;
  if (typeof own === 'function') return own;
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
}
