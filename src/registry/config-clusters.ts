import type { Checker } from './config-checker.js';
import { DNS_LABEL, DNS_LABEL_DESC } from './config-checker.js';
import { DEFAULT_CLUSTER_AUTHORIZATION, DEFAULT_CLUSTER_PRIORITY } from './defaults.js';
import type { ClusterConfig } from './fleet-config.js';

/** The fleet file's `clusters`: at least one, names unique, each reached by a kubeconfig or a server (not both). */
export function parseClusters(c: Checker, raw: unknown): ClusterConfig[] {
  const clusters: ClusterConfig[] = [];
  if (!Array.isArray(raw) || raw.length === 0) {
    c.fail('clusters', 'must list at least one cluster');
    return clusters;
  }
  const seen = new Set<string>();
  raw.forEach((item, i) => {
    const cluster = parseCluster(c, item, `clusters[${i}]`, seen);
    if (cluster !== undefined) clusters.push(cluster);
  });
  return clusters;
}

/** One cluster, its name added to `seen`; undefined when it has no usable name (its other problems are still named). */
function parseCluster(c: Checker, raw: unknown, p: string, seen: Set<string>): ClusterConfig | undefined {
  const o = c.object(raw, p);
  if (!o) return undefined;
  const name = c.string(o.name, `${p}.name`, { required: true, pattern: DNS_LABEL, patternDesc: DNS_LABEL_DESC });
  if (name !== undefined) {
    if (seen.has(name)) c.fail(`${p}.name`, `duplicate cluster name ${JSON.stringify(name)}`);
    seen.add(name);
  }
  const kubeconfig = c.string(o.kubeconfig, `${p}.kubeconfig`);
  const server = c.string(o.server, `${p}.server`, { pattern: /^https?:\/\/\S+$/, patternDesc: 'an http(s) URL' });
  if ((o.kubeconfig === undefined) === (o.server === undefined)) c.fail(p, 'needs exactly one of kubeconfig or server');
  if (kubeconfig !== undefined) {
    for (const f of ['caFile', 'tokenFile', 'insecureSkipTLSVerify']) {
      if (o[f] !== undefined) c.fail(`${p}.${f}`, 'only goes with server (the kubeconfig has its own)');
    }
  } else if (o.context !== undefined) {
    c.fail(`${p}.context`, 'only goes with kubeconfig');
  }
  const insecureSkipTLSVerify = c.boolean(o.insecureSkipTLSVerify, `${p}.insecureSkipTLSVerify`);
  const caFile = c.string(o.caFile, `${p}.caFile`);
  const tokenFile = c.string(o.tokenFile, `${p}.tokenFile`);
  const context = c.string(o.context, `${p}.context`);
  const authorization = c.string(o.authorization, `${p}.authorization`, { pattern: /^(rbac|subjectAccessReview)$/, patternDesc: 'rbac or subjectAccessReview' }) as ClusterConfig['authorization'] | undefined;
  const priority = c.integer(o.priority ?? undefined, `${p}.priority`) ?? DEFAULT_CLUSTER_PRIORITY;
  if (name === undefined) return undefined;
  return {
    name,
    ...(kubeconfig !== undefined ? { kubeconfig: c.absolutePath(kubeconfig, `${p}.kubeconfig`) } : {}),
    ...(context !== undefined ? { context } : {}),
    ...(server !== undefined ? { server } : {}),
    ...(caFile !== undefined ? { caFile: c.absolutePath(caFile, `${p}.caFile`) } : {}),
    ...(tokenFile !== undefined ? { tokenFile: c.absolutePath(tokenFile, `${p}.tokenFile`) } : {}),
    ...(insecureSkipTLSVerify !== undefined ? { insecureSkipTLSVerify } : {}),
    labels: c.labels(o.labels, `${p}.labels`),
    authorization: authorization ?? DEFAULT_CLUSTER_AUTHORIZATION,
    priority,
  };
}
