import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { freePorts, kubeconfigYaml, waitFor, type FleetInfo } from './fleet.js';
import { memberRequest, type MemberEndpoint } from './http.js';
import { issueClientCert, makeCA, makeFleetPki, type FleetPki } from './pki.js';
import { freshProcessDir, startProcess, stopProcess, type Supervised } from './processes.js';

/**
 * A hub (management) cluster beside a test fleet: one kube-apiserver on the fleet's etcd (a prefix
 * of its own), with the aggregation layer's front proxy configured as a real control plane has it.
 * The front proxy has a CA of its own, apart from the fleet's, so a client certificate of the
 * fleet's CA can never pass for the front proxy. The hub knows the fleet's users by the same tokens.
 */
export interface Hub {
  /** The hub's kube-apiserver as its admin (system:masters). */
  apiserver: MemberEndpoint;
  /** A kubeconfig for `apiserver`. */
  kubeconfig: string;
  /** The front proxy's CA and the client certificate the hub presents to extension apiservers. */
  frontProxy: { caFile: string; caKey: string; clientCert: string; clientKey: string; allowedNames: string[] };
  /** A client certificate of the front proxy's CA whose CN the hub does not allow (as a forger would hold). */
  intruder: { cert: string; key: string };
  dir: string;
  process: Supervised;
  /** Applies YAML documents to the hub (server side), as its admin. */
  apply(yaml: string): string;
  stop(): Promise<void>;
}

export const FRONT_PROXY_CLIENT = 'front-proxy-client';

/**
 * A control plane's kube-apiserver on loopback (a hub, Karmada's plane): the fleet's serving pair
 * and CA, tokens from a file, RBAC, and the aggregation layer's front proxy, which names users to
 * extension apiservers over `frontProxy`'s client certificate and the X-Remote-* headers.
 */
export function controlPlaneArgs(o: {
  etcdServers: string;
  port: number;
  certDir: string;
  pki: FleetPki;
  tokenFile: string;
  frontProxy: { caFile: string; allowedNames: string[]; cert: string; key: string };
  maxRequestsInflight: number;
}): string[] {
  return [
    `--etcd-servers=${o.etcdServers}`,
    '--bind-address=127.0.0.1',
    '--advertise-address=127.0.0.1',
    `--secure-port=${o.port}`,
    `--cert-dir=${o.certDir}`,
    `--tls-cert-file=${o.pki.servingCert}`,
    `--tls-private-key-file=${o.pki.servingKey}`,
    `--client-ca-file=${o.pki.caCert}`,
    `--token-auth-file=${o.tokenFile}`,
    '--authorization-mode=RBAC',
    `--service-account-key-file=${o.pki.saPub}`,
    `--service-account-signing-key-file=${o.pki.saKey}`,
    '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
    '--service-cluster-ip-range=10.96.0.0/16',
    `--requestheader-client-ca-file=${o.frontProxy.caFile}`,
    `--requestheader-allowed-names=${o.frontProxy.allowedNames.join(',')}`,
    '--requestheader-username-headers=X-Remote-User',
    '--requestheader-group-headers=X-Remote-Group',
    '--requestheader-extra-headers-prefix=X-Remote-Extra-',
    `--proxy-client-cert-file=${o.frontProxy.cert}`,
    `--proxy-client-key-file=${o.frontProxy.key}`,
    '--profiling=false',
    '--enable-priority-and-fairness=false',
    `--max-requests-inflight=${o.maxRequestsInflight}`,
    // A fleet-wide list of many pods through the aggregation layer takes minutes.
    '--request-timeout=10m',
    '--v=1',
  ];
}

export async function startHub(opts: { fleet: FleetInfo; dir: string; log?: (line: string) => void; apiserverArgs?: string[] }): Promise<Hub> {
  const log = opts.log ?? ((l: string) => process.stderr.write(`${l}\n`));
  const dir = resolve(opts.dir);
  freshProcessDir(dir);
  const started = Date.now();
  const pki = makeFleetPki(opts.fleet.dir);
  const frontProxy = frontProxyPki(dir);
  const pidFile = join(dir, 'pids');
  const token = opts.fleet.members[0]?.token;
  if (!token) throw new Error('hub: the fleet has no member');
  const [port] = (await freePorts(1)) as [number];
  const server = `https://127.0.0.1:${port}`;
  const apiserver: MemberEndpoint = { server, token, caFile: pki.caCert };
  const proc = startProcess({
    name: 'hub/kube-apiserver',
    command: join(opts.fleet.binDir, 'kube-apiserver'),
    args: [
      ...controlPlaneArgs({
        etcdServers: opts.fleet.etcdEndpoint,
        port,
        certDir: dir,
        pki,
        // The fleet's users, by the same tokens: a hub user is a member user.
        tokenFile: join(opts.fleet.dir, 'tokens.csv'),
        frontProxy: { caFile: frontProxy.caFile, allowedNames: frontProxy.allowedNames, cert: frontProxy.clientCert, key: frontProxy.clientKey },
        maxRequestsInflight: 2000,
      }),
      // One etcd for the fleet and its hubs; a hub per directory keeps out of the others' way.
      `--etcd-prefix=/registry-hub-${basename(dir)}-${Date.now()}`,
      ...(opts.apiserverArgs ?? []),
    ],
    logPath: join(dir, 'kube-apiserver.log'),
    pidFile,
  });
  const stop = () => stopProcess(proc);
  try {
    await waitFor('hub kube-apiserver /readyz', async () => (await memberRequest(apiserver, 'GET', '/readyz')).status === 200, 120_000, proc);
  } catch (e) {
    await stop();
    throw e;
  }
  const kubeconfig = join(dir, 'kubeconfig');
  writeFileSync(kubeconfig, kubeconfigYaml('hub', server, pki.caCert, token));
  const apply = (yaml: string) =>
    execFileSync('kubectl', ['--kubeconfig', kubeconfig, 'apply', '--server-side', '--force-conflicts', '-f', '-'], { input: yaml, encoding: 'utf8' });

  log(`hub: kube-apiserver ready in ${((Date.now() - started) / 1000).toFixed(1)} s (${server})`);
  return {
    apiserver,
    kubeconfig,
    frontProxy,
    intruder: issueClientCert({ cert: frontProxy.caFile, key: frontProxy.caKey }, dir, 'intruder', '/CN=intruder'),
    dir,
    process: proc,
    apply,
    stop,
  };
}

function frontProxyPki(dir: string): Hub['frontProxy'] {
  const ca = makeCA(dir, 'front-proxy-ca', '/CN=flotilla-test-front-proxy-ca');
  const client = issueClientCert(ca, dir, FRONT_PROXY_CLIENT, `/CN=${FRONT_PROXY_CLIENT}`);
  return { caFile: ca.cert, caKey: ca.key, clientCert: client.cert, clientKey: client.key, allowedNames: [FRONT_PROXY_CLIENT] };
}

/** What installChart leaves for the flotilla process it expects on this machine. */
export interface InstalledChart {
  /** The serving pair the chart made (Secret flotilla-tls), as files, and the CA the APIService trusts. */
  cert: string;
  key: string;
  ca: Buffer;
  caFile: string;
  /** A kubeconfig for the hub as the chart's ServiceAccount (a token requested for it): the chart's RBAC, nothing more. */
  kubeconfig: string;
}

/**
 * Flotilla's Helm chart (deploy/helm/flotilla) rendered with `helm template` and applied to the hub
 * (server side: the hub validates every object), its Service an ExternalName to `localhost` at
 * `port`, where the caller then runs flotilla with the pair and kubeconfig returned.
 */
export async function installChart(hub: Hub, opts: { helm: string; chart: string; port: number; dir: string; set?: string[] }): Promise<InstalledChart> {
  const namespace = 'flotilla-system';
  mkdirSync(opts.dir, { recursive: true });
  const env = { ...process.env, HELM_CACHE_HOME: join(opts.dir, 'helm', 'cache'), HELM_CONFIG_HOME: join(opts.dir, 'helm', 'config'), HELM_DATA_HOME: join(opts.dir, 'helm', 'data') };
  const set = ['service.externalName=localhost', `service.targetPort=${opts.port}`, ...(opts.set ?? [])];
  const yaml = execFileSync(opts.helm, ['template', 'flotilla', opts.chart, '--namespace', namespace, '--include-crds', ...set.flatMap((x) => ['--set', x])], { env, encoding: 'utf8' });
  const ns = await memberRequest(hub.apiserver, 'POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } });
  if (ns.status !== 201 && ns.status !== 409) throw new Error(`hub: creating namespace ${namespace}: ${ns.status} ${ns.body.slice(0, 300)}`);
  hub.apply(yaml);
  const secret = await memberRequest(hub.apiserver, 'GET', `/api/v1/namespaces/${namespace}/secrets/flotilla-tls`);
  if (secret.status !== 200) throw new Error(`hub: the chart's serving pair: ${secret.status} ${secret.body.slice(0, 300)}`);
  const data = (JSON.parse(secret.body) as { data: Record<string, string> }).data;
  const file = (name: string, key: string) => {
    const path = join(opts.dir, name);
    writeFileSync(path, Buffer.from(data[key]!, 'base64'), { mode: 0o600 });
    return path;
  };
  const token = await memberRequest(hub.apiserver, 'POST', `/api/v1/namespaces/${namespace}/serviceaccounts/flotilla/token`, {
    apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds: 86_400 },
  });
  if (token.status !== 201) throw new Error(`hub: a token for the chart's ServiceAccount: ${token.status} ${token.body.slice(0, 300)}`);
  const kubeconfig = join(opts.dir, 'flotilla-on-hub.kubeconfig');
  writeFileSync(kubeconfig, kubeconfigYaml('hub', hub.apiserver.server, hub.apiserver.caFile, (JSON.parse(token.body) as { status: { token: string } }).status.token));
  return { cert: file('tls.crt', 'tls.crt'), key: file('tls.key', 'tls.key'), ca: Buffer.from(data['ca.crt']!, 'base64'), caFile: file('ca.crt', 'ca.crt'), kubeconfig };
}

/** Waits for the hub's aggregator to find an APIService available. */
export async function apiServiceAvailable(hub: Hub, group: string, version: string): Promise<void> {
  await waitFor(`APIService ${version}.${group} available`, async () => (await memberRequest(hub.apiserver, 'GET', `/apis/${group}/${version}`)).status === 200, 60_000, hub.process);
}
