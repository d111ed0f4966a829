import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { appendFileSync, cpSync, mkdirSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { stringify as toYaml } from 'yaml';
import { makeFleetPki, type FleetPki } from './pki.js';
import { killProcess, reapStalePids, startProcess, stopProcess, tailLog, type Supervised } from './processes.js';
import { memberJson, memberRequest, type MemberEndpoint } from './http.js';

/**
 * A fleet of real member clusters on loopback: one etcd (each member under its own prefix), and per
 * member a kube-apiserver (token auth, RBAC), kube-controller-manager, kube-scheduler and kwok with
 * fake nodes that run pods and serve logs and exec through a kubelet API of its own.
 */
export interface MemberInfo extends MemberEndpoint {
  name: string;
  port: number;
  kubeconfig: string;
  kwokPort: number;
  nodes: string[];
  /** Appended to by tests: kwok serves it (following) as every container's log and attach output. */
  podLogFile: string;
  /**
   * kwok forwards port 8080 of every pod to 127.0.0.1:<this port> (`kubectl port-forward`); nothing
   * listens there until a test does.
   */
  portForwardTargetPort: number;
}

/** The pod port kwok's port-forward serves (see `MemberInfo.portForwardTargetPort`). */
export const KWOK_FORWARDED_POD_PORT = 8080;

export interface TestUser {
  name: string;
  token: string;
  groups: string[];
}

export interface FleetInfo {
  dir: string;
  etcdEndpoint: string;
  caFile: string;
  binDir: string;
  members: MemberInfo[];
  users: TestUser[];
}

export interface Fleet {
  info: FleetInfo;
  stop(): Promise<void>;
  /** Stops one member's kube-apiserver (by PID), as if the member went down. */
  stopApiserver(member: string): Promise<void>;
  /**
   * SIGKILLs one member's kube-apiserver (its connections end mid-stream, as in a crash) and
   * starts it again on the same port and etcd; resolves once it is ready.
   */
  crashApiserver(member: string): Promise<void>;
  /**
   * Copies etcd's data as it is now (etcd stopped for the copy and started again, as an offline
   * backup is taken); returns where the copy is.
   */
  backupEtcd(): Promise<string>;
  /**
   * Puts a backup's data back in place of etcd's (every member's resourceVersions go back to the
   * backup's), then restarts every member's kube-apiserver, as an operator restoring etcd does.
   */
  restoreEtcd(backup: string): Promise<void>;
  /**
   * Makes one member a new cluster under its name: its kube-apiserver stopped, everything it kept
   * in etcd deleted, and started again (new namespaces, new uids; etcd's revision goes on).
   */
  replaceMember(member: string): Promise<void>;
}

export interface FleetOptions {
  names: string[];
  dir: string;
  nodesPerMember?: number;
  log?: (line: string) => void;
  /** Extra kube-apiserver flags for every member (e.g. `--watch-cache=false`). */
  apiserverArgs?: string[];
  /**
   * false: apiservers only, no controller manager, scheduler or kwok (for seeding many objects
   * that nothing should touch). Namespaces then get no default ServiceAccount by themselves.
   */
  workloads?: boolean;
}

const projectRoot = findProjectRoot();

/** The flotilla checkout this code runs from (source or dist/), for the harness, bench and demo. */
export function findProjectRoot(): string {
  // Works from test/fleet (vitest, TypeScript) and from dist/test/fleet (compiled).
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json'))) {
    const up = dirname(dir);
    if (up === dir) throw new Error('flotilla project root not found');
    dir = up;
  }
  return dir;
}

/**
 * What scripts/build-fleet-binaries.mjs prints for `mode` (none: the fleet's binaries; `--karmada`,
 * `--conformance`: their directories; `--helm`, `--k9s`: the one binary), built on first need and cached.
 */
export function builtTool(mode?: '--karmada' | '--conformance' | '--helm' | '--k9s'): string {
  return execFileSync('node', [join(projectRoot, 'scripts', 'build-fleet-binaries.mjs'), ...(mode ? [mode] : [])], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  }).trim();
}

export function fleetBinDir(): string {
  return builtTool();
}

export async function freePorts(n: number): Promise<number[]> {
  // Hold every listener open until all ports are known, so no two requests get the same port.
  const servers = await Promise.all(
    Array.from({ length: n }, () => new Promise<Server>((res, rej) => {
      const s = createServer();
      s.once('error', rej);
      s.listen(0, '127.0.0.1', () => res(s));
    })),
  );
  const ports = servers.map((s) => (s.address() as AddressInfo).port);
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  return ports;
}

export async function waitFor(what: string, check: () => Promise<boolean>, timeoutMs: number, proc?: Supervised): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastError = '';
  while (Date.now() < deadline) {
    if (proc?.exited) {
      throw new Error(`${what}: ${proc.name} exited with ${proc.exitCode}\n${tailLog(proc.logPath)}`);
    }
    try {
      if (await check()) return;
    } catch (e) {
      lastError = (e as Error).message;
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${lastError ? `: ${lastError}` : ''}${proc ? `\n${tailLog(proc.logPath)}` : ''}`);
}

export function kubeconfigYaml(name: string, server: string, caFile: string, token: string): string {
  return toYaml({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name, cluster: { server, 'certificate-authority': caFile } }],
    users: [{ name: `${name}-admin`, user: { token } }],
    contexts: [{ name, context: { cluster: name, user: `${name}-admin` } }],
    'current-context': name,
  });
}

function kwokConfigYaml(podLogFile: string, portForwardTargetPort: number): string {
  const docs = [
    {
      apiVersion: 'kwok.x-k8s.io/v1alpha1',
      kind: 'ClusterLogs',
      metadata: { name: 'all-pods' },
      spec: { selector: {}, logs: [{ logsFile: podLogFile, follow: true }] },
    },
    {
      apiVersion: 'kwok.x-k8s.io/v1alpha1',
      kind: 'ClusterExec',
      metadata: { name: 'all-pods' },
      spec: { selector: {}, execs: [{ local: { workDir: '/tmp' } }] },
    },
    {
      apiVersion: 'kwok.x-k8s.io/v1alpha1',
      kind: 'ClusterAttach',
      metadata: { name: 'all-pods' },
      spec: { selector: {}, attaches: [{ logsFile: podLogFile }] },
    },
    {
      apiVersion: 'kwok.x-k8s.io/v1alpha1',
      kind: 'ClusterPortForward',
      metadata: { name: 'all-pods' },
      spec: { selector: {}, forwards: [{ ports: [KWOK_FORWARDED_POD_PORT], target: { address: '127.0.0.1', port: portForwardTargetPort } }] },
    },
  ];
  return docs.map((d) => toYaml(d)).join('---\n');
}

function fakeNode(name: string): object {
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name,
      annotations: { 'kwok.x-k8s.io/node': 'fake', 'node.alpha.kubernetes.io/ttl': '0' },
      labels: {
        'kubernetes.io/hostname': name,
        'kubernetes.io/os': 'linux',
        'kubernetes.io/arch': 'amd64',
        type: 'kwok',
      },
    },
    status: {
      allocatable: { cpu: '32', memory: '256Gi', pods: '250' },
      capacity: { cpu: '32', memory: '256Gi', pods: '250' },
    },
  };
}

/** kwok reads container logs in the CRI format the kubelet reads from a container runtime. */
export function criLogLine(message: string, at = new Date()): string {
  return `${at.toISOString().replace('Z', '000000Z')} stdout F ${message}\n`;
}

/** Appends a line to what every pod of the member logs (kwok follows the file). */
export function appendPodLog(member: MemberInfo, message: string): void {
  appendFileSync(member.podLogFile, criLogLine(message));
}

export async function startFleet(opts: FleetOptions): Promise<Fleet> {
  const log = opts.log ?? ((l: string) => process.stderr.write(`${l}\n`));
  const dir = resolve(opts.dir);
  mkdirSync(dir, { recursive: true });
  const pidFile = join(dir, 'pids');
  const reaped = reapStalePids(pidFile);
  if (reaped) log(`fleet: stopped ${reaped} process(es) left over from an earlier run in ${dir}`);

  const started = Date.now();
  const binDir = fleetBinDir();
  const bin = (b: string) => join(binDir, b);
  const pki: FleetPki = makeFleetPki(dir);
  const procs: Supervised[] = [];
  const apiserverRestarts = new Map<string, () => Promise<void>>();

  const adminToken = randomBytes(16).toString('hex');
  const users: TestUser[] = [
    { name: 'alice', token: randomBytes(16).toString('hex'), groups: ['team-a'] },
    { name: 'bob', token: randomBytes(16).toString('hex'), groups: ['team-b'] },
    // Tenant admins (flotilla's tenant views): their tenant is named by their group in the fleet file.
    { name: 'admin@acme', token: randomBytes(16).toString('hex'), groups: ['acme-admins'] },
    { name: 'admin@globex', token: randomBytes(16).toString('hex'), groups: ['globex-admins'] },
    { name: 'dev@acme', token: randomBytes(16).toString('hex'), groups: ['acme-devs'] },
  ];
  const tokenFile = join(dir, 'tokens.csv');
  writeFileSync(
    tokenFile,
    [`${adminToken},flotilla-admin,uid-admin,"system:masters"`, ...users.map((u) => `${u.token},${u.name},uid-${u.name},"${u.groups.join(',')}"`)].join('\n') + '\n',
  );

  const stopAll = async () => {
    await Promise.all(procs.slice().reverse().map((p) => stopProcess(p)));
  };

  try {
    const ports = await freePorts(2 + opts.names.length * 3);
    const [etcdClientPort, etcdPeerPort] = ports as [number, number];
    const etcdEndpoint = `http://127.0.0.1:${etcdClientPort}`;
    const etcdDir = join(dir, 'etcd');
    mkdirSync(etcdDir, { recursive: true });
    const startEtcd = () => startProcess({
      name: 'etcd',
      command: bin('etcd'),
      args: [
        '--name=fleet',
        `--data-dir=${join(etcdDir, 'data')}`,
        `--listen-client-urls=${etcdEndpoint}`,
        `--advertise-client-urls=${etcdEndpoint}`,
        `--listen-peer-urls=http://127.0.0.1:${etcdPeerPort}`,
        `--initial-advertise-peer-urls=http://127.0.0.1:${etcdPeerPort}`,
        `--initial-cluster=fleet=http://127.0.0.1:${etcdPeerPort}`,
        '--quota-backend-bytes=8589934592',
        '--unsafe-no-fsync=true',
        '--log-level=warn',
      ],
      logPath: join(etcdDir, 'etcd.log'),
      pidFile,
    });
    const etcdUp = async (p: Supervised) => {
      procs.push(p);
      await waitFor('etcd health', async () => {
        const res = await fetch(`${etcdEndpoint}/health`);
        return res.ok;
      }, 30_000, p);
    };
    await etcdUp(startEtcd());
    const etcdData = join(etcdDir, 'data');
    const runningEtcd = () => {
      const p = procs.find((x) => x.name === 'etcd' && !x.exited);
      if (!p) throw new Error('etcd is not running');
      return p;
    };

    const members = await Promise.all(
      opts.names.map((name, i) =>
        startMember({
          name,
          dir: join(dir, name),
          port: ports[2 + i * 3]!,
          kwokPort: ports[3 + i * 3]!,
          portForwardTargetPort: ports[4 + i * 3]!,
          etcdEndpoint,
          pki,
          tokenFile,
          adminToken,
          bin,
          pidFile,
          procs,
          apiserverRestarts,
          nodes: opts.nodesPerMember ?? 2,
          apiserverArgs: opts.apiserverArgs ?? [],
          workloads: opts.workloads ?? true,
        }),
      ),
    );
    const apiserverOf = (member: string) => {
      const p = procs.find((x) => x.name === `${member}/kube-apiserver` && !x.exited);
      if (!p) throw new Error(`no running kube-apiserver of member ${member}`);
      return p;
    };
    const stopApiserver = async (member: string) => {
      await stopProcess(apiserverOf(member));
    };
    const crashApiserver = async (member: string) => {
      await killProcess(apiserverOf(member));
      const restart = apiserverRestarts.get(member);
      if (!restart) throw new Error(`no kube-apiserver of member ${member}`);
      await restart();
    };
    const backupEtcd = async () => {
      const backup = join(etcdDir, `backup-${Date.now()}`);
      await stopProcess(runningEtcd());
      cpSync(etcdData, backup, { recursive: true });
      await etcdUp(startEtcd());
      return backup;
    };
    const restoreEtcd = async (backup: string) => {
      await stopProcess(runningEtcd());
      rmSync(etcdData, { recursive: true, force: true });
      cpSync(backup, etcdData, { recursive: true });
      await etcdUp(startEtcd());
      for (const m of members) await crashApiserver(m.name);
    };
    const replaceMember = async (member: string) => {
      await killProcess(apiserverOf(member));
      // etcd's JSON gateway: every key under the member's prefix, deleted in one request.
      const b64 = (t: string) => Buffer.from(t).toString('base64');
      const res = await fetch(`${etcdEndpoint}/v3/kv/deleterange`, { method: 'POST', body: JSON.stringify({ key: b64(`/registry-${member}/`), range_end: b64(`/registry-${member}0`) }) });
      if (!res.ok) throw new Error(`deleting ${member}'s keys from etcd: HTTP ${res.status} ${await res.text()}`);
      const restart = apiserverRestarts.get(member);
      if (!restart) throw new Error(`no kube-apiserver of member ${member}`);
      await restart();
    };
    log(`fleet: ${members.length} member(s) ready in ${((Date.now() - started) / 1000).toFixed(1)} s (${dir})`);
    return {
      info: { dir, etcdEndpoint, caFile: pki.caCert, binDir, members, users },
      stop: stopAll,
      stopApiserver,
      crashApiserver,
      backupEtcd,
      restoreEtcd,
      replaceMember,
    };
  } catch (e) {
    await stopAll();
    throw e;
  }
}

interface MemberStart {
  name: string;
  dir: string;
  port: number;
  kwokPort: number;
  portForwardTargetPort: number;
  etcdEndpoint: string;
  pki: FleetPki;
  tokenFile: string;
  adminToken: string;
  bin: (b: string) => string;
  pidFile: string;
  procs: Supervised[];
  /** Where startMember leaves a way to start this member's kube-apiserver again (crashApiserver). */
  apiserverRestarts: Map<string, () => Promise<void>>;
  nodes: number;
  apiserverArgs: string[];
  workloads: boolean;
}

async function startMember(m: MemberStart): Promise<MemberInfo> {
  mkdirSync(m.dir, { recursive: true });
  const server = `https://127.0.0.1:${m.port}`;
  const ep: MemberEndpoint = { server, token: m.adminToken, caFile: m.pki.caCert };
  const kubeconfig = join(m.dir, 'kubeconfig');
  writeFileSync(kubeconfig, kubeconfigYaml(m.name, server, m.pki.caCert, m.adminToken));
  const start = (name: string, binary: string, args: string[]) => {
    const p = startProcess({ name: `${m.name}/${name}`, command: m.bin(binary), args, logPath: join(m.dir, `${name}.log`), pidFile: m.pidFile });
    m.procs.push(p);
    return p;
  };

  const apiserverArgs = [
    `--etcd-servers=${m.etcdEndpoint}`,
    `--etcd-prefix=/registry-${m.name}`,
    '--bind-address=127.0.0.1',
    '--advertise-address=127.0.0.1',
    `--secure-port=${m.port}`,
    `--cert-dir=${m.dir}`,
    `--tls-cert-file=${m.pki.servingCert}`,
    `--tls-private-key-file=${m.pki.servingKey}`,
    `--client-ca-file=${m.pki.caCert}`,
    `--token-auth-file=${m.tokenFile}`,
    '--authorization-mode=Node,RBAC',
    `--service-account-key-file=${m.pki.saPub}`,
    `--service-account-signing-key-file=${m.pki.saKey}`,
    '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
    '--service-cluster-ip-range=10.96.0.0/16',
    `--kubelet-client-certificate=${m.pki.kubeletClientCert}`,
    `--kubelet-client-key=${m.pki.kubeletClientKey}`,
    '--kubelet-preferred-address-types=InternalIP',
    '--allow-privileged=true',
    '--profiling=false',
    '--enable-priority-and-fairness=false',
    '--max-requests-inflight=2000',
    '--max-mutating-requests-inflight=1000',
    '--v=1',
    ...m.apiserverArgs,
  ];
  const startApiserver = async () => {
    const p = start('kube-apiserver', 'kube-apiserver', apiserverArgs);
    await waitFor(`${m.name} kube-apiserver /readyz`, async () => (await memberRequest(ep, 'GET', '/readyz')).status === 200, 120_000, p);
    return p;
  };
  const apiserver = await startApiserver();
  m.apiserverRestarts.set(m.name, async () => {
    await startApiserver();
  });

  const podLogFile = join(m.dir, 'pod.log');
  const info: MemberInfo = { name: m.name, server, token: m.adminToken, caFile: m.pki.caCert, port: m.port, kubeconfig, kwokPort: m.kwokPort, nodes: [], podLogFile, portForwardTargetPort: m.portForwardTargetPort };
  if (!m.workloads) return info;

  // The controller manager and scheduler serve nothing we need; port 0 keeps members from colliding.
  start('kube-controller-manager', 'kube-controller-manager', [
    `--kubeconfig=${kubeconfig}`,
    `--service-account-private-key-file=${m.pki.saKey}`,
    `--root-ca-file=${m.pki.caCert}`,
    '--leader-elect=false',
    '--secure-port=0',
    '--controllers=*,-nodeipam,-cloud-node-lifecycle,-service-lb-controller,-route,-persistentvolume-binder,-attachdetach,-ttl,-bootstrapsigner,-tokencleaner',
    '--concurrent-deployment-syncs=10',
    '--concurrent-replicaset-syncs=10',
    '--kube-api-qps=200',
    '--kube-api-burst=400',
    '--v=1',
  ]);
  start('kube-scheduler', 'kube-scheduler', [
    `--kubeconfig=${kubeconfig}`,
    '--leader-elect=false',
    '--secure-port=0',
    '--kube-api-qps=200',
    '--kube-api-burst=400',
    '--v=1',
  ]);
  writeFileSync(podLogFile, criLogLine(`hello from a kwok pod in ${m.name}`));
  const kwokConfig = join(m.dir, 'kwok.yaml');
  writeFileSync(kwokConfig, kwokConfigYaml(podLogFile, m.portForwardTargetPort));
  const kwok = start('kwok', 'kwok', [
    `--kubeconfig=${kubeconfig}`,
    `--config=${kwokConfig}`,
    '--manage-all-nodes=false',
    '--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake',
    '--node-ip=127.0.0.1',
    `--node-port=${m.kwokPort}`,
    `--server-address=127.0.0.1:${m.kwokPort}`,
    `--tls-cert-file=${m.pki.servingCert}`,
    `--tls-private-key-file=${m.pki.servingKey}`,
    '--node-lease-duration-seconds=40',
  ]);

  const nodes = Array.from({ length: m.nodes }, (_, i) => `${m.name}-node-${i}`);
  for (const node of nodes) {
    const res = await memberRequest(ep, 'POST', '/api/v1/nodes', fakeNode(node));
    if (res.status !== 201 && res.status !== 409) throw new Error(`${m.name}: creating node ${node}: ${res.status} ${res.body}`);
  }
  // Pods are admitted only once the namespace has its default ServiceAccount (controller manager).
  await waitFor(`${m.name} default ServiceAccount`, async () =>
    (await memberRequest(ep, 'GET', '/api/v1/namespaces/default/serviceaccounts/default')).status === 200, 60_000, apiserver);
  await waitFor(`${m.name} nodes Ready`, async () => {
    for (const node of nodes) {
      const n = await memberJson<{ status?: { conditions?: { type: string; status: string }[] } }>(ep, 'GET', `/api/v1/nodes/${node}`);
      if (!n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')) return false;
    }
    return true;
  }, 60_000, kwok);

  return { ...info, nodes };
}
