import { join } from 'node:path';
import { MemberClient } from '../members/member-client.js';
import { ConfigError } from '../registry/config.js';
import type { ClusterConfig } from '../registry/fleet-config.js';

/**
 * The hub (management) cluster flotilla reads its Fleet from, and whose apiserver may vouch for
 * callers: a MemberClient like a member's, from a kubeconfig or, in a pod, from the pod's service
 * account. The in-cluster token is a projected one, rotated in place: MemberClient re-reads a
 * `tokenFile` every TOKEN_FILE_REREAD_MS, as client-go does.
 */
export interface HubOptions {
  /** A kubeconfig file for the hub (its current context, or `context`). */
  kubeconfig?: string;
  context?: string;
  /** The pod's service account and the apiserver of the cluster it runs in. */
  inCluster?: boolean;
}

/** Where Kubernetes mounts a pod's service account credentials. */
export const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

/** The in-cluster apiserver, as client-go's rest.InClusterConfig finds it (the env the kubelet sets, else the service name). */
export function inClusterServer(env: NodeJS.ProcessEnv = process.env): string {
  const host = env.KUBERNETES_SERVICE_HOST;
  const port = env.KUBERNETES_SERVICE_PORT;
  if (!host || !port) return 'https://kubernetes.default.svc';
  return `https://${host.includes(':') ? `[${host}]` : host}:${port}`;
}

/** The hub as a ClusterConfig (named `hub` in messages). */
export function hubClusterConfig(opts: HubOptions, env: NodeJS.ProcessEnv = process.env, saDir = SERVICE_ACCOUNT_DIR): ClusterConfig {
  if (Boolean(opts.kubeconfig) === Boolean(opts.inCluster)) throw new Error('the hub needs exactly one of a kubeconfig or in-cluster credentials');
  const base = { name: 'hub', labels: {}, authorization: 'rbac' as const, priority: 0 };
  if (opts.kubeconfig) return { ...base, kubeconfig: opts.kubeconfig, ...(opts.context ? { context: opts.context } : {}) };
  return { ...base, server: inClusterServer(env), caFile: join(saDir, 'ca.crt'), tokenFile: join(saDir, 'token') };
}

/** A client of the hub; a ConfigError names what is wrong with its credentials. */
export async function hubClient(opts: HubOptions): Promise<MemberClient> {
  try {
    return await MemberClient.create(hubClusterConfig(opts));
  } catch (e) {
    throw new ConfigError(`hub: ${(e as Error).message}`);
  }
}
