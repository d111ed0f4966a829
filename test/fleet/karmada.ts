import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { builtTool, freePorts, kubeconfigYaml, waitFor, type FleetInfo } from './fleet.js';
import { memberJson, memberRequest, type MemberEndpoint } from './http.js';
import { issueClientCert, makeFleetPki } from './pki.js';
import { controlPlaneArgs } from './hub.js';
import { freshProcessDir, startProcess, stopProcess, type Supervised } from './processes.js';

/**
 * karmada-search beside a test fleet, as the live peer the bench measures flotilla against: a
 * Karmada control plane of its own (one etcd and one kube-apiserver from the fleet's binaries),
 * karmada-aggregated-apiserver for its Cluster objects, and karmada-search with only its proxy
 * (`--disable-search`), both reached through the control plane as aggregated APIs. No Karmada
 * controller runs: the harness registers each member as a Cluster and marks it Ready itself.
 */
export interface KarmadaPlane {
  /** The control plane's kube-apiserver as its admin. */
  apiserver: MemberEndpoint;
  /** karmada-search's proxy as users reach it, through the control plane (a kubectl server URL). */
  proxy: MemberEndpoint;
  /** The same proxy on karmada-search's own port, without the aggregation hop. */
  proxyDirect: MemberEndpoint;
  /** A kubeconfig whose server is `proxy`. */
  proxyKubeconfig: string;
  /** karmada-search's process (a new one after `restartSearch`). */
  search: Supervised;
  /**
   * Stops karmada-search (by PID) and starts it again with the same flags, resolving once it
   * listens: its caches start empty, from what the plane stores (Clusters, ResourceRegistries).
   */
  restartSearch(): Promise<Supervised>;
  /** Every process of the plane, for CPU and memory accounts (karmada-search is one of them). */
  processes: Supervised[];
  /** Where karmada-search's log goes (its informers' progress). */
  searchLog: string;
  /** Registers members as Ready Push-mode Clusters (bearer token, the fleet's CA). */
  register(clusters: (MemberEndpoint & { name: string })[]): Promise<void>;
  /** A ResourceRegistry caching these kinds (core/v1 by default) from the named clusters. */
  select(name: string, clusters: string[], kinds: { apiVersion: string; kind: string }[]): Promise<void>;
  stop(): Promise<void>;
}

/** Karmada's API groups the plane serves, each by its own process on its own port. */
const CLUSTER_GROUP = 'cluster.karmada.io';
const SEARCH_GROUP = 'search.karmada.io';
export const KARMADA_PROXY_PATH = `/apis/${SEARCH_GROUP}/v1alpha1/proxying/karmada/proxy`;
const CLUSTER_NAMESPACE = 'karmada-cluster';

/** The cached build of karmada-search and karmada-aggregated-apiserver (built on first need). */
export function karmadaBinDir(): string {
  return builtTool('--karmada');
}

export async function startKarmada(opts: { fleet: FleetInfo; dir: string; log?: (line: string) => void; searchArgs?: string[] }): Promise<KarmadaPlane> {
  const log = opts.log ?? ((l: string) => process.stderr.write(`${l}\n`));
  const dir = resolve(opts.dir);
  // A fresh plane every time: what an earlier run left (its processes by PID, its etcd) goes first.
  freshProcessDir(dir);
  const started = Date.now();
  const karmadaBin = karmadaBinDir();
  const fleetBin = (b: string) => join(opts.fleet.binDir, b);
  // The fleet's CA signs everything here too, so one CA file verifies members and plane alike.
  const pki = makeFleetPki(opts.fleet.dir);
  const frontProxy = issueClientCert({ cert: pki.caCert, key: pki.caKey }, dir, 'front-proxy-client', '/CN=front-proxy-client');
  const pidFile = join(dir, 'pids');
  const procs: Supervised[] = [];
  const start = (name: string, command: string, args: string[]) => {
    const p = startProcess({ name: `karmada/${name}`, command, args, logPath: join(dir, `${name}.log`), pidFile });
    procs.push(p);
    return p;
  };
  const stop = async () => {
    for (const p of procs.slice().reverse()) await stopProcess(p);
  };

  try {
    const [etcdPort, etcdPeerPort, apiPort, aggregatedPort, searchPort] = (await freePorts(5)) as [number, number, number, number, number];
    const token = opts.fleet.members[0]?.token;
    if (!token) throw new Error('karmada: the fleet has no member');
    const tokenFile = join(dir, 'tokens.csv');
    writeFileSync(tokenFile, `${token},karmada-admin,uid-karmada-admin,"system:masters"\n`);

    const etcdEndpoint = `http://127.0.0.1:${etcdPort}`;
    const etcd = start('etcd', fleetBin('etcd'), [
      '--name=karmada',
      `--data-dir=${join(dir, 'etcd-data')}`,
      `--listen-client-urls=${etcdEndpoint}`,
      `--advertise-client-urls=${etcdEndpoint}`,
      `--listen-peer-urls=http://127.0.0.1:${etcdPeerPort}`,
      `--initial-advertise-peer-urls=http://127.0.0.1:${etcdPeerPort}`,
      `--initial-cluster=karmada=http://127.0.0.1:${etcdPeerPort}`,
      '--unsafe-no-fsync=true',
      '--log-level=warn',
    ]);
    await waitFor('karmada etcd health', async () => (await fetch(`${etcdEndpoint}/health`)).ok, 30_000, etcd);

    const server = `https://127.0.0.1:${apiPort}`;
    const apiserver: MemberEndpoint = { server, token, caFile: pki.caCert };
    // The aggregation layer tells karmada's servers who is asking with this client certificate
    // and the X-Remote-* headers, which they trust through the fleet's CA.
    const kube = start('kube-apiserver', fleetBin('kube-apiserver'), controlPlaneArgs({
      etcdServers: etcdEndpoint,
      port: apiPort,
      certDir: dir,
      pki,
      tokenFile,
      frontProxy: { caFile: pki.caCert, allowedNames: ['front-proxy-client'], cert: frontProxy.cert, key: frontProxy.key },
      maxRequestsInflight: 3000,
    }));
    await waitFor('karmada kube-apiserver /readyz', async () => (await memberRequest(apiserver, 'GET', '/readyz')).status === 200, 120_000, kube);

    const kubeconfig = join(dir, 'kubeconfig');
    writeFileSync(kubeconfig, kubeconfigYaml('karmada-apiserver', server, pki.caCert, token));
    for (const ns of ['karmada-system', CLUSTER_NAMESPACE]) {
      await created(memberRequest(apiserver, 'POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } }), `namespace ${ns}`);
    }

    // Both of Karmada's servers read the control plane for authentication, authorization and their
    // informers, keep what they store in the plane's etcd, and serve with the fleet's certificate.
    const common = (port: number, name: string) => [
      `--kubeconfig=${kubeconfig}`,
      `--authentication-kubeconfig=${kubeconfig}`,
      `--authorization-kubeconfig=${kubeconfig}`,
      `--etcd-servers=${etcdEndpoint}`,
      '--bind-address=127.0.0.1',
      `--secure-port=${port}`,
      `--cert-dir=${join(dir, `${name}-certs`)}`,
      `--tls-cert-file=${pki.servingCert}`,
      `--tls-private-key-file=${pki.servingKey}`,
      '--audit-log-path=-',
      '--audit-log-maxage=0',
      '--audit-log-maxbackup=0',
      '--v=2',
    ];
    const aggregated = start('karmada-aggregated-apiserver', join(karmadaBin, 'karmada-aggregated-apiserver'), common(aggregatedPort, 'aggregated-apiserver'));
    const searchArgs = [...common(searchPort, 'search'), '--disable-search', ...(opts.searchArgs ?? [])];
    let search = start('karmada-search', join(karmadaBin, 'karmada-search'), searchArgs);
    const aggregatedEp: MemberEndpoint = { ...apiserver, server: `https://127.0.0.1:${aggregatedPort}` };
    const searchEp: MemberEndpoint = { ...apiserver, server: `https://127.0.0.1:${searchPort}` };
    await waitFor('karmada-aggregated-apiserver /readyz', async () => (await memberRequest(aggregatedEp, 'GET', '/readyz')).status === 200, 120_000, aggregated);
    // Not ready until its informers of Clusters (served through the APIService below) have synced.
    await waitFor('karmada-search /livez/ping', async () => (await memberRequest(searchEp, 'GET', '/livez/ping')).status === 200, 120_000, search);

    // Reached through the control plane: an ExternalName Service to loopback and an APIService each.
    const services: [string, string, number][] = [['karmada-aggregated-apiserver', CLUSTER_GROUP, aggregatedPort], ['karmada-search', SEARCH_GROUP, searchPort]];
    for (const [name, group, port] of services) {
      await created(memberRequest(apiserver, 'POST', '/api/v1/namespaces/karmada-system/services', {
        apiVersion: 'v1', kind: 'Service', metadata: { name, namespace: 'karmada-system' },
        spec: { type: 'ExternalName', externalName: 'localhost', ports: [{ port, protocol: 'TCP' }] },
      }), `service ${name}`);
      await created(memberRequest(apiserver, 'POST', '/apis/apiregistration.k8s.io/v1/apiservices', {
        apiVersion: 'apiregistration.k8s.io/v1', kind: 'APIService', metadata: { name: `v1alpha1.${group}` },
        spec: { group, version: 'v1alpha1', service: { namespace: 'karmada-system', name, port }, insecureSkipTLSVerify: true, groupPriorityMinimum: 2000, versionPriority: 10 },
      }), `apiservice v1alpha1.${group}`);
    }
    for (const group of [CLUSTER_GROUP, SEARCH_GROUP]) {
      await waitFor(`karmada API ${group} through the control plane`, async () => (await memberRequest(apiserver, 'GET', `/apis/${group}/v1alpha1`)).status === 200, 60_000, search);
    }

    await waitFor('karmada-search /readyz', async () => (await memberRequest(searchEp, 'GET', '/readyz')).status === 200, 120_000, search);

    const proxy: MemberEndpoint = { ...apiserver, server: `${server}${KARMADA_PROXY_PATH}` };
    const proxyKubeconfig = join(dir, 'proxy.kubeconfig');
    writeFileSync(proxyKubeconfig, kubeconfigYaml('karmada-proxy', proxy.server, pki.caCert, token));
    const caBundle = readFileSync(pki.caCert).toString('base64');

    const register: KarmadaPlane['register'] = async (clusters) => {
      for (const c of clusters) {
        await created(memberRequest(apiserver, 'POST', `/api/v1/namespaces/${CLUSTER_NAMESPACE}/secrets`, {
          apiVersion: 'v1', kind: 'Secret', metadata: { name: c.name, namespace: CLUSTER_NAMESPACE },
          data: { token: Buffer.from(c.token).toString('base64'), caBundle },
        }), `secret ${c.name}`);
        await created(memberRequest(apiserver, 'POST', `/apis/${CLUSTER_GROUP}/v1alpha1/clusters`, {
          apiVersion: `${CLUSTER_GROUP}/v1alpha1`, kind: 'Cluster', metadata: { name: c.name },
          spec: { syncMode: 'Push', apiEndpoint: c.server, secretRef: { namespace: CLUSTER_NAMESPACE, name: c.name } },
        }), `cluster ${c.name}`);
        // What Karmada's cluster-status controller would report: Ready, serving core/v1 pods.
        const cluster = await memberJson<Record<string, unknown>>(apiserver, 'GET', `/apis/${CLUSTER_GROUP}/v1alpha1/clusters/${c.name}`);
        cluster.status = {
          conditions: [{ type: 'Ready', status: 'True', reason: 'ClusterReady', message: 'cluster is healthy and ready to accept workloads', lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z') }],
          apiEnablements: [{ groupVersion: 'v1', resources: [{ name: 'pods', kind: 'Pod' }, { name: 'namespaces', kind: 'Namespace' }] }],
        };
        await memberJson(apiserver, 'PUT', `/apis/${CLUSTER_GROUP}/v1alpha1/clusters/${c.name}/status`, cluster);
      }
    };
    const select: KarmadaPlane['select'] = async (name, clusters, kinds) => {
      await created(memberRequest(apiserver, 'POST', `/apis/${SEARCH_GROUP}/v1alpha1/resourceregistries`, {
        apiVersion: `${SEARCH_GROUP}/v1alpha1`, kind: 'ResourceRegistry', metadata: { name },
        spec: { targetCluster: { clusterNames: clusters }, resourceSelectors: kinds },
      }), `resourceregistry ${name}`);
    };

    const restartSearch = async () => {
      await stopProcess(search);
      search = start('karmada-search', join(karmadaBin, 'karmada-search'), searchArgs);
      plane.search = search;
      await waitFor('karmada-search /livez/ping', async () => (await memberRequest(searchEp, 'GET', '/livez/ping')).status === 200, 120_000, search);
      return search;
    };

    log(`karmada: control plane, karmada-aggregated-apiserver and karmada-search ready in ${((Date.now() - started) / 1000).toFixed(1)} s (${dir})`);
    const plane: KarmadaPlane = {
      apiserver,
      proxy,
      proxyDirect: { ...searchEp, server: `${searchEp.server}${KARMADA_PROXY_PATH}` },
      proxyKubeconfig,
      search,
      restartSearch,
      processes: procs,
      searchLog: search.logPath,
      register,
      select,
      stop,
    };
    return plane;
  } catch (e) {
    await stop();
    throw e;
  }
}

async function created(p: Promise<{ status: number; body: string }>, what: string): Promise<void> {
  const res = await p;
  if (res.status !== 201 && res.status !== 200) throw new Error(`karmada: creating ${what}: ${res.status} ${res.body.slice(0, 300)}`);
}
