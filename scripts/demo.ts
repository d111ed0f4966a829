#!/usr/bin/env node
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { stringify as toYaml } from 'yaml';
import { findProjectRoot, startFleet, type MemberInfo } from '../test/fleet/fleet.js';
import { memberRequest } from '../test/fleet/http.js';
import { reapStalePids } from '../test/fleet/processes.js';
import { freePort, startFlotillaProcess, writeProxyKubeconfig, type ResourceRuleSpec } from '../test/support/flotilla-process.js';
import { apiServiceAvailable, installChart, startHub, type Hub } from '../test/fleet/hub.js';
import { helmBinary } from '../test/support/helm.js';
import { memberEnforces } from '../test/support/member-policy.js';
import { commandsOnPath } from '../test/support/commands-on-path.js';
import type { TenantSpec } from '../src/tenancy/tenant.js';
import { FLEET_GROUP, FLEET_PATH, FLEET_VERSION } from '../src/api/fleet-path.js';

/**
 * `npm run demo`: a local demo fleet (east, west, north) with a few namespaces, deployments and
 * running pods, flotilla in front of it, and kubeconfigs to reach it: the fleet admin's, and those
 * of two users whose rights differ by member (alice, bob; see RBAC below). A hub kube-apiserver
 * beside them has flotilla's Helm chart applied, so flotilla is also its APIService
 * (v1alpha1.search.flotilla.io) and the fleet is reached through the hub. Ctrl-C stops everything.
 */
const dir = resolve(process.env.FLOTILLA_DEMO_DIR ?? join('.cache', 'demo'));
const DEMO_RESOURCES: ResourceRuleSpec[] = [
  { version: 'v1', resource: 'pods' },
  { version: 'v1', resource: 'namespaces' },
  { version: 'v1', resource: 'nodes' },
  { version: 'v1', resource: 'services' },
  { version: 'v1', resource: 'configmaps' },
  // kubectl describe lists a pod's events by involvedObject fields: served from the cache too.
  { version: 'v1', resource: 'events' },
  { group: 'apps', version: 'v1', resource: 'deployments' },
  { group: 'apps', version: 'v1', resource: 'replicasets' },
  // Cached only because a rule asks: the demo shows that a user reads none the member would refuse.
  { version: 'v1', resource: 'secrets' },
];

// Each member's labels in the fleet file: shown by kubectl flotilla clusters, /status and the status page.
const DEMO_LABELS: Record<string, Record<string, string>> = {
  east: { region: 'eu', env: 'prod' },
  west: { region: 'us', env: 'prod' },
  north: { region: 'eu', env: 'staging' },
};

// What each member runs: namespace → deployments (name, replicas). `shop` spans every member.
const WORKLOADS: Record<string, Record<string, [string, number][]>> = {
  east: { 'team-data': [], shop: [['web', 3], ['cart', 1]], payments: [['ledger', 2]] },
  west: { 'team-data': [], shop: [['web', 2]], analytics: [['etl', 2]] },
  north: { shop: [['cart', 1]], monitoring: [['prometheus', 1], ['alertmanager', 1]] },
};

// The namespace tree, HNC style (the subnamespace annotation): payments on east and analytics on
// west are under team-data, so one hierarchy selector lists both.
const PARENTS: Record<string, Record<string, string>> = {
  east: { payments: 'team-data' },
  west: { analytics: 'team-data' },
};

/**
 * What the demo users may do, granted on the members themselves (flotilla decides each read as the
 * member holding the object would): alice may read pods in namespace `shop` of east only, bob has
 * the built-in `view` ClusterRole on west only. Neither may write anywhere.
 */
const RBAC: Record<string, { path: string; body: object }[]> = {
  east: [
    {
      path: '/apis/rbac.authorization.k8s.io/v1/namespaces/shop/roles',
      body: { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: { name: 'pod-reader', namespace: 'shop' }, rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['get', 'list', 'watch'] }] },
    },
    {
      path: '/apis/rbac.authorization.k8s.io/v1/namespaces/shop/rolebindings',
      body: {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'RoleBinding',
        metadata: { name: 'alice-pod-reader', namespace: 'shop' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'pod-reader' },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'alice' }],
      },
    },
  ],
  west: [
    {
      path: '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings',
      body: {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRoleBinding',
        metadata: { name: 'bob-view' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'view' },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'bob' }],
      },
    },
  ],
};

/**
 * Two tenants (flotilla's tenant views): each sees namespaces `<tenant>-x` of every member as `x`,
 * and nothing of the other's. The members confine them too: flotilla keeps the tenants'
 * member-side policy on each member (`--apply-tenant-policy`), so an admin who reaches a member directly is an
 * admin of its own namespaces only. dev@acme is bound to `edit` in acme's `web` on east only, so
 * the member's RBAC still decides within the tenant.
 */
const TENANTS: TenantSpec[] = [
  { id: 'acme', users: [], groups: ['acme-admins', 'acme-devs'], clusterScoped: {}, admins: { users: [], groups: ['acme-admins'] } },
  { id: 'globex', users: [], groups: ['globex-admins'], clusterScoped: {}, admins: { users: [], groups: ['globex-admins'] } },
];
// Each tenant's namespaces, made on the members in the member's names: `default` (kubectl's
// namespace when none is given) everywhere, `web` with a deployment of the same name for both.
const TENANT_NAMESPACES: Record<string, string[]> = { east: ['default', 'web'], west: ['default', 'web'], north: ['default'] };

function tenantRbac(member: MemberInfo): { path: string; body: object }[] {
  if (member.name !== 'east') return [];
  return [{
    path: '/apis/rbac.authorization.k8s.io/v1/namespaces/acme-web/rolebindings',
    body: {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: 'dev-edit', namespace: 'acme-web' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'edit' },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'dev@acme' }],
    },
  }];
}

/** The demo's fleet file: every member with its labels, the resources and tenants above; callers' tokens reviewed by the first member. */
function demoFleetFile(members: MemberInfo[]): string {
  return toYaml({
    clusters: members.map((m) => ({ name: m.name, kubeconfig: m.kubeconfig, labels: DEMO_LABELS[m.name] ?? {} })),
    resources: DEMO_RESOURCES,
    authentication: { tokenReviewCluster: members[0]!.name },
    tenants: TENANTS,
  });
}

async function seedTenants(member: MemberInfo): Promise<number> {
  let pods = 0;
  for (const t of TENANTS) {
    for (const ns of TENANT_NAMESPACES[member.name] ?? []) {
      const name = `${t.id}-${ns}`;
      await create(member, '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
      await waitFor(async () => (await memberRequest(member, 'GET', `/api/v1/namespaces/${name}/serviceaccounts/default`)).status === 200);
      if (ns === 'web') {
        await create(member, `/apis/apps/v1/namespaces/${name}/deployments`, deployment('web', 1));
        pods += 1;
      }
    }
  }
  for (const { path, body } of tenantRbac(member)) await create(member, path, body);
  return pods;
}

async function create(member: MemberInfo, path: string, body: object): Promise<void> {
  const res = await memberRequest(member, 'POST', path, body);
  if (res.status !== 201 && res.status !== 409) throw new Error(`${member.name}: POST ${path}: ${res.status} ${res.body}`);
}

function deployment(name: string, replicas: number): object {
  const labels = { app: name };
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, labels },
    spec: {
      replicas,
      selector: { matchLabels: labels },
      template: { metadata: { labels }, spec: { containers: [{ name, image: `example.com/${name}:1.0` }] } },
    },
  };
}

async function seed(member: MemberInfo): Promise<number> {
  let pods = 0;
  for (const [ns, deployments] of Object.entries(WORKLOADS[member.name] ?? {})) {
    const parent = PARENTS[member.name]?.[ns];
    await create(member, '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns, labels: { demo: 'flotilla' }, ...(parent ? { annotations: { 'hnc.x-k8s.io/subnamespace-of': parent } } : {}) } });
    await waitFor(async () => (await memberRequest(member, 'GET', `/api/v1/namespaces/${ns}/serviceaccounts/default`)).status === 200);
    for (const [name, replicas] of deployments) {
      await create(member, `/apis/apps/v1/namespaces/${ns}/deployments`, deployment(name, replicas));
      await create(member, `/api/v1/namespaces/${ns}/services`, {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name },
        spec: { selector: { app: name }, ports: [{ port: 80 }] },
      });
      pods += replicas;
    }
    await create(member, `/api/v1/namespaces/${ns}/secrets`, { apiVersion: 'v1', kind: 'Secret', metadata: { name: `${ns}-credentials` }, stringData: { password: 'demo' } });
  }
  for (const { path, body } of RBAC[member.name] ?? []) await create(member, path, body);
  return pods + (await seedTenants(member));
}

async function runningPods(member: MemberInfo): Promise<number> {
  const res = await memberRequest(member, 'GET', '/api/v1/pods?fieldSelector=status.phase%3DRunning');
  return (JSON.parse(res.body) as { items: unknown[] }).items.length;
}

async function waitFor(check: () => Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 250));
  }
}

async function main(): Promise<void> {
  if (existsSync(join(dir, 'fleet', 'pids'))) reapStalePids(join(dir, 'fleet', 'pids'));
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  console.log('demo: starting the member clusters east, west and north (real kube-apiservers with kwok nodes)…');
  const fleet = await startFleet({ names: ['east', 'west', 'north'], dir: join(dir, 'fleet'), log: (l) => console.log(`demo: ${l}`) });
  let flotilla: Awaited<ReturnType<typeof startFlotillaProcess>> | undefined;
  let hub: Hub | undefined;
  let stopping = false;
  const stop = async (code: number) => {
    if (stopping) return;
    stopping = true;
    console.log('\ndemo: stopping flotilla and the fleet…');
    await flotilla?.stop();
    await hub?.stop();
    await fleet.stop();
    process.exit(code);
  };
  process.on('SIGINT', () => void stop(0));
  process.on('SIGTERM', () => void stop(0));
  // The hub starts while the members' pods come up: neither waits for the other.
  console.log('demo: starting the hub (a kube-apiserver with the aggregation layer) beside them…');
  const hubStarted = startHub({ fleet: fleet.info, dir: join(dir, 'hub'), log: (l) => console.log(`demo: ${l}`) }).then((h) => (hub = h));
  try {
    const expected = await Promise.all(fleet.info.members.map(seed));
    console.log('demo: waiting for the demo pods to run…');
    await Promise.all(fleet.info.members.map((m, i) => waitFor(async () => (await runningPods(m)) >= expected[i]!, 120_000)));
    // The hub, with flotilla's chart applied: its Service an ExternalName to this machine's flotilla.
    const startedHub = await hubStarted;
    console.log('demo: applying flotilla\'s Helm chart to the hub…');
    const port = Number(process.env.FLOTILLA_DEMO_PORT ?? 0) || (await freePort());
    const chart = await installChart(startedHub, { helm: helmBinary(), chart: join(findProjectRoot(), 'deploy', 'helm', 'flotilla'), port, dir: join(dir, 'chart') });
    flotilla = await startFlotillaProcess({
      fleet: fleet.info, dir: join(dir, 'flotilla'), fleetFile: demoFleetFile(fleet.info.members), port, tls: chart,
      args: [`--hub-kubeconfig=${chart.kubeconfig}`, '--apply-tenant-policy', '--log-level=info'],
    });
    await Promise.all(fleet.info.members.map((m) => memberEnforces(m, TENANTS, 60_000)));
    await apiServiceAvailable(startedHub, FLEET_GROUP, FLEET_VERSION);
    // Through the hub, alice and the tenants' admins need the hub's leave too: the chart's ClusterRole for fleet users.
    await memberRequest(startedHub.apiserver, 'POST', '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings', {
      apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name: 'demo-fleet-users' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'flotilla-fleet-user' },
      subjects: [
        { kind: 'User', name: 'alice', apiGroup: 'rbac.authorization.k8s.io' },
        ...TENANTS.map((t) => ({ kind: 'Group', name: `${t.id}-admins`, apiGroup: 'rbac.authorization.k8s.io' })),
      ],
    });
  } catch (e) {
    console.error(`demo: failed: ${(e as Error).message}`);
    // A hub still starting is stopped once it has started.
    await hubStarted.catch(() => undefined);
    await stop(1);
    return;
  }
  const kc = flotilla.kubeconfig;
  const binDir = commandsOnPath(join(dir, 'bin'));
  // The users' own kubeconfigs: same server and CA as the admin's, each with the user's token.
  const userKubeconfig = (name: string) => {
    const path = join(dirname(kc), `kubeconfig-${name}`);
    writeProxyKubeconfig(path, flotilla!.url, flotilla!.endpoint.caFile, fleet.info.users.find((u) => u.name === name)!.token, `flotilla-${name}`);
    return path;
  };
  const [kcAlice, kcBob] = [userKubeconfig('alice'), userKubeconfig('bob')];
  // A tenant's kubeconfig is its admin's: `kubeconfig-acme`, `kubeconfig-globex`.
  const tenantKubeconfig = (tenant: string) => {
    const path = join(dirname(kc), `kubeconfig-${tenant}`);
    writeProxyKubeconfig(path, flotilla!.url, flotilla!.endpoint.caFile, fleet.info.users.find((u) => u.name === `admin@${tenant}`)!.token, `flotilla-${tenant}`);
    return path;
  };
  const [kcAcme, kcGlobex] = [tenantKubeconfig('acme'), tenantKubeconfig('globex')];
  const kcDev = userKubeconfig('dev@acme');
  // The hub's admin (server: the hub itself), and alice through the hub (server: the fleet path on the hub).
  const kcHub = join(dirname(kc), 'kubeconfig-hub');
  writeProxyKubeconfig(kcHub, hub!.apiserver.server, hub!.apiserver.caFile, hub!.apiserver.token, 'hub');
  const hubFleet = `${hub!.apiserver.server}${FLEET_PATH}`;
  const kcHubAlice = join(dirname(kc), 'kubeconfig-hub-alice');
  writeProxyKubeconfig(kcHubAlice, hubFleet, hub!.apiserver.caFile, fleet.info.users.find((u) => u.name === 'alice')!.token, 'hub-alice');
  console.log(`
flotilla is serving the fleet at ${flotilla.url}  (data: ${flotilla.dataDir}, log: ${flotilla.proc.logPath})

Try:
  kubectl --kubeconfig ${kc} get pods -A                      # every member's pods, with a CLUSTER column
  kubectl --kubeconfig ${kc} get pods -n shop -o wide         # one namespace, all members
  kubectl --kubeconfig ${kc} describe pod -n payments -l app=ledger   # with the member's Events (cached too)
  kubectl --kubeconfig ${kc} get deployments -A -l app=web     # label selectors
  kubectl --kubeconfig ${kc} get pods -A -o yaml | grep search.flotilla.io/cluster
  kubectl --kubeconfig ${kc} get --raw /clusters/east/api/v1/namespaces/shop/pods   # one member only
  curl -s --cacert ${flotilla.endpoint.caFile} -H "Authorization: Bearer $(kubectl --kubeconfig ${kc} config view --raw -o jsonpath='{.users[0].user.token}')" -H 'Accept: application/vnd.kubernetes.protobuf, application/json' ${flotilla.url}/api/v1/namespaces/shop/pods | head -c 32 | od -c   # protobuf ("k8s\\0" then PodList), as client-go's controllers ask for it
  kubectl --kubeconfig ${kc} get pods -A -l cluster.search.flotilla.io/region=eu      # fleet search: members by their labels (east and north)
  kubectl --kubeconfig ${kc} get deploy,pods -A -l search.flotilla.io/name-contains=LED   # names by substring, case aside
  kubectl --kubeconfig ${kc} get pods -A -l search.flotilla.io/name-contains=$(kubectl --kubeconfig ${kc} get rs -n payments -o jsonpath='{.items[0].metadata.labels.pod-template-hash}')   # by a ReplicaSet's hash, from the index
  kubectl --kubeconfig ${kc} get pods -n payments -l search.flotilla.io/owner-kind=Deployment,search.flotilla.io/owner-name=ledger   # a Deployment's pods, through its ReplicaSets
  kubectl --kubeconfig ${kc} get pods -A -l search.flotilla.io/created-after=2026-01-01,search.flotilla.io/cluster!=west   # by creation time (a date or Unix seconds), not west's
  kubectl --kubeconfig ${kc} get --raw /status                 # cacher state per cluster and resource
  kubectl --kubeconfig ${kc} get --raw '/readyz?verbose'       # its checks, as an apiserver lists them (/metrics/slis counts them)
  kubectl --kubeconfig ${kc} get --raw /status | grep -o '"historyResets":[0-9]*' | sort | uniq -c   # times a member's history was rewritten (etcd restored, a new cluster) and listed again
  kubectl --kubeconfig ${fleet.info.members[0]!.kubeconfig} run hello --image=example.com/hello   # a member directly…
  kubectl --kubeconfig ${kc} get pods -A | grep hello          # …and it is in flotilla's cache
  kubectl --kubeconfig ${kc} scale deployment -n payments ledger --replicas=3   # writes go to the owning member (east)
  kubectl --kubeconfig ${kc} get ns default                    # every member has it: the first's, with a Warning naming the others
  kubectl --kubeconfig ${kc} get pods -A -l team-data.tree.hnc.x-k8s.io/depth   # a namespace subtree in every member: east's payments, west's analytics
  kubectl --kubeconfig ${kc} get ns -l 'team-data.tree.hnc.x-k8s.io/depth=1'     # the children of team-data, member by member
  kubectl --kubeconfig ${kc} annotate ns payments hnc.x-k8s.io/subnamespace-of-   # move payments out: a running get -w -l … shows its pods DELETED
  kubectl --kubeconfig ${kc} get serviceaccounts -A           # not cached: read live from every member, as you (events are cached here: describe shows them)
  kubectl --kubeconfig ${kc} get --raw /metrics | grep ^flotilla_live   # what live reads hold now (answers, watches) and refused (429), of options.liveReads' bounds
  kubectl --kubeconfig ${kc} api-resources --verbs=delete      # discovery is the members' own, merged
  kubectl --kubeconfig ${kc} annotate deployment -n shop cart note=hi           # refused at once (400): east and north both have it; the message says how to choose
  kubectl --kubeconfig ${kc} --server ${flotilla.url}/clusters/north annotate deployment -n shop cart note=hi   # one member
  kubectl --kubeconfig ${kc} delete deployment -n payments ledger --dry-run=server   # DeleteOptions reach the member: nothing deleted
  kubectl --kubeconfig ${kc} --as alice annotate deployment -n payments ledger note=hi   # --as: the admin may impersonate alice, who may not even read it: 403
  kubectl --kubeconfig ${kc} logs -f -n payments deploy/ledger                  # logs stream from the member running the pod
  kubectl --kubeconfig ${kc} exec -n payments deploy/ledger -- uname -a           # exec too (kwok runs it on this machine)

Operating it (the flotilla command and the kubectl flotilla plugin, as npm i -g installs them):
  export PATH=${binDir}:$PATH KUBECONFIG=${kc}
  kubectl flotilla clusters                                    # members: health, objects, last event, labels (region, env)
  kubectl flotilla which deployment cart -n shop               # which members hold it (east and north)
  kubectl flotilla find cart                                   # every kind you may read whose names hold "cart"
  flotilla status                                              # members × resources: phase, objects, last event, errors
  flotilla check-config ${flotilla.configPath}                 # the fleet file checked as a reload would be (misspell an option to see its path named)
  kubectl proxy --port=8001   # then open http://127.0.0.1:8001/ui/ : the status page (members, sync, errors, watches)
  grep '"event"' ${flotilla.proc.logPath}                      # the log's transitions: first syncs, members lost and recovered, relists

As alice (may read pods in namespace shop of east) and bob (ClusterRole view on west), each member's RBAC decides:
  kubectl --kubeconfig ${kcAlice} get pods -A                 # only east's shop pods; a Warning names the clusters alice may read nothing from
  kubectl --kubeconfig ${kcAlice} get pods -n payments        # 403: nowhere may alice read payments' pods
  kubectl --kubeconfig ${kcAlice} get secrets -A              # 403: alice may read secrets nowhere
  kubectl --kubeconfig ${kcAlice} delete pod -n shop -l app=web   # 403 from east: reading is all alice may do
  kubectl --kubeconfig ${kcBob} get deployments -A            # west only (view); a Warning names east and north
  kubectl --kubeconfig ${kcBob} get pods,services,configmaps -A   # west only: what view covers
  kubectl --kubeconfig ${kcBob} get secrets -A                # 403: view does not cover secrets
  kubectl --kubeconfig ${kc} get secrets -A                   # the admin reads every member's
  kubectl --kubeconfig ${kcAlice} auth whoami                 # alice, as flotilla authenticated her
  kubectl --kubeconfig ${kcAlice} auth can-i list pods -n shop     # yes (east allows it)
  kubectl --kubeconfig ${kcAlice} --server ${flotilla.url}/clusters/west auth can-i list pods -n shop   # no: west's own verdict
  kubectl --kubeconfig ${kcBob} auth can-i --list -n shop     # what the members let bob do, together

As the tenants acme and globex (each sees a fleet of its own: its namespaces without the prefix):
  kubectl --kubeconfig ${kcAcme} get ns                        # default and web, every member's (acme-default, acme-web on the members)
  kubectl --kubeconfig ${kcAcme} get pods -A                   # acme's pods only, in namespace web
  kubectl --kubeconfig ${kcGlobex} get deployments -n web -o yaml | grep namespace:   # globex's own web: namespace: web
  kubectl --kubeconfig ${kc} get ns | grep -e acme -e globex   # the admin sees the members' names
  kubectl --kubeconfig ${kcAcme} --server ${flotilla.url}/clusters/east create namespace shop   # lands on east as acme-shop
  kubectl --kubeconfig ${kcAcme} create configmap -n shop settings --from-literal=color=blue   # an ordinary manifest, prefixed on the member
  kubectl --kubeconfig ${kcGlobex} get configmap -n shop settings       # 403: globex's admins have no shop of theirs to read (acme's is acme-shop)
  kubectl --kubeconfig ${kcAcme} get serviceaccounts -A --chunk-size=1   # not cached: asked of each acme namespace on each member (its admins may not list cluster-wide)
  kubectl --kubeconfig ${kcAcme} get nodes                     # shared read-only with every tenant
  kubectl --kubeconfig ${kcAcme} label node east-node-0 x=y    # 403: tenants only read nodes
  kubectl --kubeconfig ${kcAcme} get --raw /api/v1/nodes/east-node-0/proxy/pods      # 403: a node's proxy is its kubelet, every tenant's pods
  kubectl --kubeconfig ${kcAcme} --as nobody --as-group system:masters get secrets -A   # 403: a tenant impersonates only its own users and groups
  kubectl --kubeconfig ${kcAcme} delete --raw /apis/rbac.authorization.k8s.io/v1/clusterroles   # 403: a tenant deletes its cluster-scoped objects by name
  kubectl --kubeconfig ${kcAcme} get --raw /%61pi/v1/namespaces/globex-web/configmaps   # 403 in acme's own (absent) globex-web: an escaped path is the same path, never globex's web
  kubectl --kubeconfig ${kcAcme} get clusterrolebindings       # acme's own only (none yet): the members' are hidden
  kubectl --kubeconfig ${kcAcme} logs -n web deploy/web        # logs and exec reach acme-web on its member
  kubectl --kubeconfig ${kcDev} get pods -A                    # dev@acme (edit in web on east): east's web only

Through the hub (${hub!.apiserver.server}), where flotilla's Helm chart registered it as APIService ${FLEET_VERSION}.${FLEET_GROUP}:
  kubectl --kubeconfig ${kcHub} get apiservice ${FLEET_VERSION}.${FLEET_GROUP}    # Available: the hub reaches flotilla
  kubectl --kubeconfig ${kcHub} --server ${hubFleet} get pods -A                # the fleet's pods, through the hub's aggregator
  kubectl --kubeconfig ${kcHub} --server ${hubFleet}/clusters/west logs -n shop deploy/web   # one member, streamed through the hub
  kubectl --kubeconfig ${kcHubAlice} get pods -A               # alice through the hub: the hub authenticates her, each member's RBAC decides
  kubectl --kubeconfig ${kcHub} --server ${hubFleet} --as admin@acme --as-group acme-admins get ns   # the hub impersonates acme's admin: acme's own fleet
  kubectl --kubeconfig ${kcHub} get fleets                     # the Fleet custom resource (run flotilla with --fleet NAME to read it)
  curl -sk -H 'X-Remote-User: system:admin' -H 'X-Remote-Group: system:masters' ${flotilla.url}/api/v1/pods   # 401: only the hub's front proxy may name users

Ctrl-C stops flotilla, the hub and the fleet.
KUBECONFIG=${kc}`);
}

void main();
