import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { stringify as toYaml } from 'yaml';
import { CliError } from './io.js';
import { DEFAULT_CLUSTER_NAME, DEFAULT_SERVER } from './options.js';

/**
 * `flotilla kubeconfig`: a user's kubeconfig for flotilla, printed for the user to keep. One
 * context for the whole fleet and, with `members`, one a member through flotilla's
 * `/clusters/<name>` prefix (what `kubectl --context flotilla-east` then reads and writes is that
 * member's alone). Files are referred to by absolute path, or embedded with `embed`.
 */
export interface KubeconfigRequest {
  user: string;
  server?: string;
  caFile?: string;
  token?: string;
  clientCertificate?: string;
  clientKey?: string;
  clusterName?: string;
  members?: string[];
  embed?: boolean;
}

/** A member's name as flotilla's fleet file allows it (a DNS-1123 label): it becomes a URL path segment. */
const MEMBER_NAME = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

export function userKubeconfig(req: KubeconfigRequest): string {
  if (req.token && (req.clientCertificate || req.clientKey)) throw new CliError('give --token or --client-certificate with --client-key, not both');
  if (Boolean(req.clientCertificate) !== Boolean(req.clientKey)) throw new CliError('--client-certificate and --client-key go together');
  const server = (req.server ?? DEFAULT_SERVER).replace(/\/+$/, '');
  let url: URL;
  try {
    url = new URL(server);
  } catch {
    throw new CliError(`--server: not a URL: ${server}`);
  }
  if (url.protocol !== 'https:') throw new CliError(`--server: flotilla serves HTTPS only, got ${url.protocol}`);
  for (const m of req.members ?? []) if (!MEMBER_NAME.test(m)) throw new CliError(`--members: not a member name: ${JSON.stringify(m)}`);
  const name = req.clusterName ?? DEFAULT_CLUSTER_NAME;
  const file = (key: string, path: string | undefined) =>
    path === undefined ? {} : req.embed ? { [`${key}-data`]: readFileSync(path).toString('base64') } : { [key]: resolve(path) };
  const tls = file('certificate-authority', req.caFile);
  const targets = [{ context: name, server }, ...(req.members ?? []).map((m) => ({ context: `${name}-${m}`, server: `${server}/clusters/${m}` }))];
  return toYaml({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: targets.map((t) => ({ name: t.context, cluster: { server: t.server, ...tls } })),
    users: [
      {
        name: req.user,
        user: {
          ...(req.token ? { token: req.token } : {}),
          ...file('client-certificate', req.clientCertificate),
          ...file('client-key', req.clientKey),
        },
      },
    ],
    contexts: targets.map((t) => ({ name: t.context, context: { cluster: t.context, user: req.user } })),
    'current-context': name,
  });
}
