import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { stringify as toYaml } from 'yaml';
import { findProjectRoot, type FleetInfo, type MemberInfo } from '../fleet/fleet.js';
import { startProcess, stopProcess, tailLog, type Supervised } from '../fleet/processes.js';
import { memberRequest } from '../fleet/http.js';
import type { TenantSpec } from '../../src/tenancy/tenant.js';

/**
 * Runs flotilla the way users do: the compiled binary as its own process, in front of (part of)
 * a test fleet, served over TLS with the fleet's loopback certificate (or, with `tls: 'self-signed'`,
 * the pair flotilla makes itself in its data dir), plus a kubeconfig for it.
 */
export interface FlotillaProcess {
  url: string;
  kubeconfig: string;
  configPath: string;
  dataDir: string;
  proc: Supervised;
  /** The proxy as a member endpoint: same CA and request helper as the members. */
  endpoint: { server: string; token: string; caFile: string };
  stop(): Promise<void>;
}

export interface ResourceRuleSpec {
  group?: string;
  version: string;
  resource: string;
  namespaces?: string[];
  clusters?: string[];
}

export interface FlotillaStart {
  fleet: FleetInfo;
  dir: string;
  members?: MemberInfo[];
  resources?: ResourceRuleSpec[];
  /** Extra YAML fields under `options`. */
  options?: Record<string, unknown>;
  /** The `authentication` section (default: token review by the first member; null: none at all). */
  authentication?: Record<string, unknown> | null;
  /** The `tenants` section (src/tenancy), written as given: `admins` and every other field included. */
  tenants?: readonly TenantEntry[];
  /**
   * 'fleet' (default): --tls-cert-file with the fleet's certificate; 'self-signed': no TLS flags;
   * a pair and the CA that signed it (a Helm release's, which a hub's APIService trusts).
   */
  tls?: 'fleet' | 'self-signed' | { cert: string; key: string; caFile: string };
  /** More command-line flags (`--client-ca-file=…`). */
  args?: string[];
  port?: number;
  /** false: return as soon as flotilla answers at all, before its cachers have synced. */
  waitReady?: boolean;
  /** The bearer token of the kubeconfig and endpoint (default: the fleet admin's). */
  token?: string;
  /** Called with the PID as soon as the process exists, before it has done any work. */
  onSpawn?: (pid: number) => void;
  /**
   * The configuration from a Fleet object on a hub (`--fleet`, `--hub-kubeconfig`) instead of a
   * fleet file: no file is written and members, resources, options, authentication and tenants are ignored.
   */
  hubFleet?: { name: string; hubKubeconfig: string };
  /**
   * The fleet file's text, written as given to `dir`/fleet.yaml (its relative paths resolved
   * against `dir`): members, resources, options, authentication and tenants are then ignored.
   */
  fleetFile?: string;
}

export const DEFAULT_RESOURCES: ResourceRuleSpec[] = [
  { version: 'v1', resource: 'pods' },
  { version: 'v1', resource: 'namespaces' },
  { version: 'v1', resource: 'nodes' },
];


export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

/** A tenant of the fleet file: a parsed TenantSpec, or any mapping (a test of the parser's refusals). */
export type TenantEntry = TenantSpec | Record<string, unknown>;

/** A fleet file; callers' bearer tokens are reviewed by the first member (the test fleet's members share their tokens). */
export function writeFleetConfig(path: string, members: MemberInfo[], resources: ResourceRuleSpec[], options?: Record<string, unknown>, authentication?: Record<string, unknown> | null, tenants?: readonly TenantEntry[]): void {
  writeFileSync(
    path,
    toYaml({
      clusters: members.map((m) => ({ name: m.name, kubeconfig: m.kubeconfig })),
      resources,
      ...(options ? { options } : {}),
      ...(authentication === null ? {} : { authentication: authentication ?? { tokenReviewCluster: members[0]!.name } }),
      ...(tenants ? { tenants } : {}),
    }),
  );
}

export function writeProxyKubeconfig(path: string, url: string, caFile: string, token: string, name = 'flotilla'): void {
  writeFileSync(
    path,
    toYaml({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name, cluster: { server: url, 'certificate-authority': caFile } }],
      users: [{ name: `${name}-user`, user: { token } }],
      contexts: [{ name, context: { cluster: name, user: `${name}-user` } }],
      'current-context': name,
    }),
  );
}

/**
 * The libuv pool size flotilla is started with, as the README advises: one thread per CPU, up to
 * libuv's default of 4. lmdb-js compresses every stored object on that pool, and with more pool
 * threads than CPUs the main thread waited for the pool's lock (bench ingest, 100k objects on
 * 2 CPUs: 2.9 s of the main thread in lmdb-js's put with 4 threads, 0.9 s with 1).
 */
function threadpoolSize(): string {
  return String(Math.min(4, availableParallelism()));
}

export async function startFlotillaProcess(opts: FlotillaStart): Promise<FlotillaProcess> {
  const root = findProjectRoot();
  mkdirSync(opts.dir, { recursive: true });
  const configPath = join(opts.dir, 'fleet.yaml');
  if (opts.fleetFile !== undefined) writeFileSync(configPath, opts.fleetFile);
  else if (!opts.hubFleet) writeFleetConfig(configPath, opts.members ?? opts.fleet.members, opts.resources ?? DEFAULT_RESOURCES, opts.options, opts.authentication, opts.tenants);
  const dataDir = join(opts.dir, 'data');
  const port = opts.port ?? (await freePort());
  const proc = startProcess({
    name: 'flotilla',
    command: process.execPath,
    env: { ...process.env, UV_THREADPOOL_SIZE: process.env.UV_THREADPOOL_SIZE ?? threadpoolSize() },
    args: [
      join(root, 'dist', 'src', 'main.js'),
      ...(opts.hubFleet ? [`--fleet=${opts.hubFleet.name}`, `--hub-kubeconfig=${opts.hubFleet.hubKubeconfig}`] : [`--config=${configPath}`]),
      `--data-dir=${dataDir}`,
      `--port=${port}`,
      ...(opts.tls === 'self-signed' ? [] : typeof opts.tls === 'object' ? [`--tls-cert-file=${opts.tls.cert}`, `--tls-private-key-file=${opts.tls.key}`]
        : [`--tls-cert-file=${join(opts.fleet.dir, 'serving.crt')}`, `--tls-private-key-file=${join(opts.fleet.dir, 'serving.key')}`]),
      ...(opts.args ?? []),
    ],
    logPath: join(opts.dir, 'flotilla.log'),
    pidFile: join(opts.fleet.dir, 'pids'),
  });
  opts.onSpawn?.(proc.pid);
  // A Helm release's pair names localhost (and the Service), not the loopback address.
  const url = `https://${typeof opts.tls === 'object' ? 'localhost' : '127.0.0.1'}:${port}`;
  const token = opts.token ?? opts.fleet.members[0]!.token;
  // The self-signed certificate is trusted as clients are told to: the file flotilla keeps it in.
  const caFile = opts.tls === 'self-signed' ? join(dataDir, 'tls', 'serving.crt') : typeof opts.tls === 'object' ? opts.tls.caFile : opts.fleet.caFile;
  const endpoint = { server: url, token, caFile };
  await waitReady(endpoint, proc, 60_000, opts.waitReady === false ? '/healthz' : '/readyz');
  const kubeconfig = join(opts.dir, 'kubeconfig');
  writeProxyKubeconfig(kubeconfig, url, caFile, token);
  return {
    url,
    kubeconfig,
    configPath,
    dataDir,
    proc,
    endpoint,
    stop: () => stopProcess(proc),
  };
}

export async function waitReady(endpoint: { server: string; token: string; caFile: string }, proc: Supervised, timeoutMs = 60_000, path = '/readyz'): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (proc.exited) throw new Error(`flotilla exited with ${proc.exitCode}:\n${tailLog(proc.logPath)}`);
    try {
      if ((await memberRequest(endpoint, 'GET', path, undefined, { timeoutMs: 2000 })).status === 200) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`flotilla not ready after ${timeoutMs} ms:\n${tailLog(proc.logPath)}`);
}
