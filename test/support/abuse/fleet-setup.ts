import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { request as httpsRequest } from 'node:https';
import { stringify as toYaml } from 'yaml';
import { findProjectRoot, type FleetInfo, type MemberInfo } from '../../fleet/fleet.js';
import { memberJson, memberRequest } from '../../fleet/http.js';
import { startProcess, stopProcess, type Supervised } from '../../fleet/processes.js';
import { freePort, waitReady, type ResourceRuleSpec } from '../flotilla-process.js';
import { startRecordingRelay, type RecordingRelay } from '../recording-relay.js';
import type { ObjectSnapshot } from './invariants.js';
import { CANARY_NS, TARGET_NAMESPACES } from './generators.js';

/**
 * The abuse suite's fleet side: canary objects on every member, a check that the suite's callers
 * really may change nothing there, flotilla started with every member behind a recording relay,
 * and snapshots of what the callers must not be able to change.
 */

/** A fleet file whose members are reached through relays (plain HTTP, flotilla's admin token from a file). */
export function writeRelayedFleetConfig(path: string, relays: { name: string; url: string }[], tokenFile: string, resources: ResourceRuleSpec[], tokenReviewCluster: string, tenants?: Record<string, unknown>[]): void {
  writeFileSync(
    path,
    toYaml({
      // @kubernetes/client-node refuses an http: server unless TLS verification is off (there is no TLS to verify).
      clusters: relays.map((r) => ({ name: r.name, server: r.url, tokenFile, insecureSkipTLSVerify: true })),
      resources,
      authentication: { tokenReviewCluster, cacheTTLSeconds: 60 },
      ...(tenants ? { tenants } : {}),
    }),
  );
}

export interface RelayedFlotilla {
  url: string;
  port: number;
  proc: Supervised;
  relays: RecordingRelay[];
  logPath: string;
  stop(): Promise<void>;
}

/** `mainJs`: another build of flotilla to run (default: this checkout's dist/src/main.js); `tenants`: the fleet file's tenants section. */
export async function startRelayedFlotilla(fleet: FleetInfo, dir: string, resources: ResourceRuleSpec[], mainJs?: string, tenants?: Record<string, unknown>[]): Promise<RelayedFlotilla> {
  mkdirSync(dir, { recursive: true });
  const ca = readFileSync(fleet.caFile);
  const relays = await Promise.all(fleet.members.map((m) => startRecordingRelay({ name: m.name, server: m.server, ca })));
  const tokenFile = join(dir, 'admin-token');
  writeFileSync(tokenFile, `${fleet.members[0]!.token}\n`, { mode: 0o600 });
  const configPath = join(dir, 'fleet.yaml');
  writeRelayedFleetConfig(configPath, relays, tokenFile, resources, fleet.members[0]!.name, tenants);
  const port = await freePort();
  const logPath = join(dir, 'flotilla.log');
  const proc = startProcess({
    name: 'flotilla-abuse',
    command: process.execPath,
    args: [
      mainJs ?? join(findProjectRoot(), 'dist', 'src', 'main.js'),
      `--config=${configPath}`,
      `--data-dir=${join(dir, 'data')}`,
      `--port=${port}`,
      `--tls-cert-file=${join(fleet.dir, 'serving.crt')}`,
      `--tls-private-key-file=${join(fleet.dir, 'serving.key')}`,
      // A front proxy trusted (aggregated mode's request headers): the suite's X-Remote-* forms then
      // meet the code that reads them, from callers who are not that proxy.
      `--requestheader-client-ca-file=${fleet.caFile}`,
      '--requestheader-allowed-names=front-proxy-client',
      // `info` logs every request with its time: how a hang that does not recur is looked into.
      ...(process.env.FLOTILLA_ABUSE_LOG_LEVEL ? [`--log-level=${process.env.FLOTILLA_ABUSE_LOG_LEVEL}`] : []),
    ],
    logPath,
    pidFile: join(fleet.dir, 'pids'),
  });
  const url = `https://127.0.0.1:${port}`;
  try {
    await waitReady({ server: url, token: fleet.members[0]!.token, caFile: fleet.caFile }, proc, 90_000, '/readyz');
  } catch (e) {
    await stopProcess(proc);
    await Promise.all(relays.map((r) => r.close()));
    throw e;
  }
  return {
    url,
    port,
    proc,
    relays,
    logPath,
    stop: async () => {
      await stopProcess(proc);
      await Promise.all(relays.map((r) => r.close()));
    },
  };
}

async function ensure(m: MemberInfo, path: string, body: object): Promise<void> {
  const res = await memberRequest(m, 'POST', path, body);
  if (res.status !== 201 && res.status !== 409) throw new Error(`${m.name} POST ${path}: ${res.status} ${res.body.slice(0, 300)}`);
}

/** Objects for the suite to aim at: some on every member (a name several hold), some on one. */
export async function createCanaries(members: MemberInfo[]): Promise<void> {
  await Promise.all(
    members.map(async (m) => {
      const ns = `/api/v1/namespaces/${CANARY_NS}`;
      await ensure(m, '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: CANARY_NS } });
      for (const name of ['canary', `canary-${m.name}`]) {
        await ensure(m, `${ns}/configmaps`, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data: { canary: 'untouched' } });
      }
      await ensure(m, `${ns}/secrets`, { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'canary' }, stringData: { password: 'canary' } });
      await ensure(m, `${ns}/serviceaccounts`, { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'canary' } });
      await ensure(m, `/apis/rbac.authorization.k8s.io/v1/namespaces/${CANARY_NS}/roles`, {
        apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: { name: 'canary' }, rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get'] }],
      });
      await ensure(m, `/apis/rbac.authorization.k8s.io/v1/namespaces/${CANARY_NS}/rolebindings`, {
        apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name: 'canary' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'canary' }, subjects: [{ kind: 'Group', name: 'abuse-nobody', apiGroup: 'rbac.authorization.k8s.io' }],
      });
      await ensure(m, `${ns}/pods`, {
        apiVersion: 'v1', kind: 'Pod', metadata: { name: `canary-${m.name}` },
        spec: { nodeSelector: { type: 'kwok' }, containers: [{ name: 'c', image: 'example.com/canary:1' }] },
      });
    }),
  );
}

// What every authenticated user may do (system:basic-user and friends): create reviews about itself.
const SELF_REVIEWS = new Set(['selfsubjectaccessreviews', 'selfsubjectrulesreviews', 'selfsubjectreviews']);

interface RulesReview {
  status?: { resourceRules?: { verbs: string[]; apiGroups?: string[]; resources?: string[]; resourceNames?: string[] }[]; incomplete?: boolean; evaluationError?: string };
}

function impersonatedPost(m: MemberInfo, ca: Buffer, path: string, body: object, user: { name: string; groups: string[] }): Promise<{ status: number; body: string }> {
  const payload = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = httpsRequest(new URL(path, m.server), {
      method: 'POST',
      ca,
      headers: [
        'Host', new URL(m.server).host, 'Authorization', `Bearer ${m.token}`, 'Content-Type', 'application/json', 'Accept', 'application/json', 'Impersonate-User', user.name,
        ...user.groups.flatMap((g) => ['Impersonate-Group', g]), 'Content-Length', String(Buffer.byteLength(payload)),
      ],
      timeout: 10_000,
    });
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('error', reject);
    req.end(payload);
  });
}

/**
 * The invariants assume the suite's callers may neither change nor read anything where the suite
 * aims, nor impersonate anyone: each member's authorizer lists their rules (a
 * SelfSubjectRulesReview as each of them, cluster-wide bindings included) per aimed-at namespace.
 * Returns what they may do beyond reviewing themselves (empty when the assumption holds).
 */
/**
 * Takes back, on every member, the bindings earlier test files left the suite's callers (by user
 * name or by one of their groups): the suite holds every cached read of theirs to be refused, so
 * they must have no rights anywhere, not only where it aims.
 */
export async function revokeCallerBindings(members: MemberInfo[], users: { name: string; groups: string[] }[]): Promise<string[]> {
  const names = new Set(users.map((u) => `User:${u.name}`).concat(users.flatMap((u) => u.groups.map((g) => `Group:${g}`))));
  const revoked: string[] = [];
  type Bindings = { items: { metadata: { name: string; namespace?: string }; subjects?: { kind: string; name: string }[] }[] };
  for (const m of members) {
    for (const kind of ['rolebindings', 'clusterrolebindings']) {
      const list = await memberJson<Bindings>(m, 'GET', `/apis/rbac.authorization.k8s.io/v1/${kind}`);
      for (const b of list.items) {
        if (!b.subjects?.some((s) => names.has(`${s.kind}:${s.name}`))) continue;
        const path = `/apis/rbac.authorization.k8s.io/v1${b.metadata.namespace ? `/namespaces/${b.metadata.namespace}` : ''}/${kind}/${b.metadata.name}`;
        const res = await memberRequest(m, 'DELETE', path);
        if (res.status !== 200 && res.status !== 404) throw new Error(`${m.name}: DELETE ${path}: ${res.status} ${res.body.slice(0, 200)}`);
        revoked.push(`${m.name}: ${kind} ${b.metadata.namespace ? `${b.metadata.namespace}/` : ''}${b.metadata.name}`);
      }
    }
  }
  return revoked;
}

export async function callerRights(members: MemberInfo[], ca: Buffer, users: { name: string; groups: string[] }[]): Promise<string[]> {
  const allowed: string[] = [];
  await Promise.all(
    members.flatMap((m) =>
      users.flatMap((u) =>
        [...TARGET_NAMESPACES, 'no-such-ns'].map(async (namespace) => {
          const res = await impersonatedPost(m, ca, '/apis/authorization.k8s.io/v1/selfsubjectrulesreviews', { apiVersion: 'authorization.k8s.io/v1', kind: 'SelfSubjectRulesReview', spec: { namespace } }, u);
          if (res.status !== 201 && res.status !== 200) throw new Error(`${m.name}: rules review of ${u.name} in ${namespace}: ${res.status} ${res.body.slice(0, 300)}`);
          const review = JSON.parse(res.body) as RulesReview;
          if (review.status?.incomplete) allowed.push(`${m.name}: the rules of ${u.name} in ${namespace} are incomplete (${review.status.evaluationError ?? ''})`);
          for (const rule of review.status?.resourceRules ?? []) {
            const onlySelfReviews = (rule.resources ?? []).every((r) => SELF_REVIEWS.has(r)) && rule.verbs.every((v) => v === 'create');
            if (!onlySelfReviews) allowed.push(`${m.name}: ${u.name} in ${namespace}: ${JSON.stringify(rule)}`);
          }
        }),
      ),
    ),
  );
  return allowed;
}

interface Listed {
  items: { metadata: { name: string; namespace?: string; resourceVersion: string; uid: string; generation?: number; labels?: object; annotations?: object; deletionTimestamp?: string } }[];
}

const NAMESPACED = [
  ['', 'v1', 'configmaps'], ['', 'v1', 'secrets'], ['', 'v1', 'serviceaccounts'], ['', 'v1', 'services'], ['', 'v1', 'pods'],
  ['rbac.authorization.k8s.io', 'v1', 'roles'], ['rbac.authorization.k8s.io', 'v1', 'rolebindings'], ['apps', 'v1', 'deployments'],
] as const;
const CLUSTER_SCOPED = [['rbac.authorization.k8s.io', 'v1', 'clusterrolebindings'], ['rbac.authorization.k8s.io', 'v1', 'clusterroles'], ['apiextensions.k8s.io', 'v1', 'customresourcedefinitions']] as const;

/** What a snapshot covers: namespaced kinds in `namespaces`, cluster-scoped kinds everywhere (both as [group, version, resource]). */
export interface SnapshotScope {
  namespaces: readonly string[];
  namespaced?: readonly (readonly [string, string, string])[];
  clusterScoped?: readonly (readonly [string, string, string])[];
}

/** A list as the admin reads it; a kind no longer served (its CRD deleted) lists nothing. */
async function listOrNothing(m: MemberInfo, path: string): Promise<Listed> {
  const res = await memberRequest(m, 'GET', path);
  if (res.status === 404) return { items: [] };
  if (res.status !== 200) throw new Error(`GET ${path} on ${m.name}: ${res.status} ${res.body.slice(0, 300)}`);
  return JSON.parse(res.body) as Listed;
}

function base(group: string, version: string): string {
  return group ? `/apis/${group}/${version}` : `/api/${version}`;
}

/**
 * What the suite's callers must not change, read straight from the members as the admin: objects
 * of the kinds above in the aimed-at namespaces, cluster-wide RBAC, the aimed-at namespaces
 * themselves and the set of namespace names. Pods are compared by what a caller could change
 * (uid, generation, labels, annotations, deletion), not by status, which kwok writes.
 */
export async function snapshot(members: MemberInfo[], scope: SnapshotScope = { namespaces: TARGET_NAMESPACES }): Promise<ObjectSnapshot> {
  const out: ObjectSnapshot = {};
  await Promise.all(
    members.map(async (m) => {
      for (const ns of scope.namespaces) {
        for (const [g, v, r] of [...NAMESPACED, ...(scope.namespaced ?? [])]) {
          const list = await listOrNothing(m, `${base(g, v)}/namespaces/${ns}/${r}`);
          for (const it of list.items) {
            const md = it.metadata;
            out[`${m.name}/${r}/${ns}/${md.name}`] = r === 'pods' ? JSON.stringify([md.uid, md.generation, md.labels, md.annotations, md.deletionTimestamp]) : md.resourceVersion;
          }
        }
      }
      for (const [g, v, r] of [...CLUSTER_SCOPED, ...(scope.clusterScoped ?? [])]) {
        const list = await listOrNothing(m, `${base(g, v)}/${r}`);
        for (const it of list.items) out[`${m.name}/${r}//${it.metadata.name}`] = it.metadata.resourceVersion;
      }
      const namespaces = await memberJson<Listed>(m, 'GET', '/api/v1/namespaces');
      for (const it of namespaces.items) {
        // Other test files' namespaces may still be going away: their names count only while they last.
        const aimed = scope.namespaces.includes(it.metadata.name);
        out[`${m.name}/namespaces//${it.metadata.name}`] = aimed ? it.metadata.resourceVersion : 'exists';
      }
    }),
  );
  return out;
}

/** Namespaces that vanished but were none of the suite's (another test file's, being deleted) are no finding. */
export function withoutForeignNamespaceDeletions(before: ObjectSnapshot, after: ObjectSnapshot): ObjectSnapshot {
  const kept: ObjectSnapshot = {};
  for (const [k, v] of Object.entries(before)) {
    if (v === 'exists' && !(k in after)) continue;
    kept[k] = v;
  }
  return kept;
}
