import { KubeConfig } from '@kubernetes/client-node';
import { MemberClient } from '../members/member-client.js';
import { CLI_REQUEST_TIMEOUT_MS } from '../registry/defaults.js';
import { CliError } from './io.js';
import { answerMessage } from '../api/status.js';
import type { KubeconfigFlags } from './options.js';

/**
 * How the CLI reaches a running flotilla: through a kubeconfig, found as kubectl finds it
 * (`--kubeconfig`, else every file in $KUBECONFIG merged, else ~/.kube/config) and its current
 * context or `--context` (options.ts). Authentication and TLS are the kubeconfig's (client-node's KubeConfig,
 * exec plugins included), through the same client flotilla uses for its members.
 */
export function loadKubeConfig(flags: KubeconfigFlags): KubeConfig {
  const kc = new KubeConfig();
  try {
    if (flags.kubeconfig) kc.loadFromFile(flags.kubeconfig);
    else kc.loadFromDefault();
  } catch (e) {
    throw new CliError(`cannot read the kubeconfig ${flags.kubeconfig ?? '(default)'}: ${(e as Error).message}`);
  }
  if (flags.context) {
    if (!kc.getContextObject(flags.context)) throw new CliError(`context "${flags.context}" is not in the kubeconfig`);
    kc.setCurrentContext(flags.context);
  }
  if (!kc.getCurrentCluster()) throw new CliError('the kubeconfig has no current context naming a cluster: give --context or --kubeconfig');
  return kc;
}

/** The namespace of the context, as kubectl uses it when no -n is given. */
export function contextNamespace(kc: KubeConfig): string {
  return kc.getContextObject(kc.getCurrentContext())?.namespace || 'default';
}

export interface Flotilla {
  client: MemberClient;
  kubeConfig: KubeConfig;
  /** GET a JSON document; a refusal is a CliError with flotilla's own message. */
  getJson<T>(path: string): Promise<T>;
  /** GET a path's text as it came (-o json|yaml print /status as flotilla wrote it). */
  getText(path: string): Promise<string>;
  close(): void;
}

export async function connectToFlotilla(flags: KubeconfigFlags): Promise<Flotilla> {
  const kubeConfig = loadKubeConfig(flags);
  const client = await MemberClient.fromKubeConfig('flotilla', kubeConfig);
  const getText = async (path: string): Promise<string> => {
    let res;
    try {
      res = await client.fetch({ path, headers: { accept: 'application/json' }, signal: AbortSignal.timeout(CLI_REQUEST_TIMEOUT_MS) });
    } catch (e) {
      throw new CliError(`${client.server.origin}${path}: ${(e as Error).message}`);
    }
    const body = res.body.toString('utf8');
    if (res.status !== 200) throw new CliError(`${client.server.origin}${path}: HTTP ${res.status}: ${answerMessage(Buffer.from(body), 300)}`);
    return body;
  };
  return {
    client,
    kubeConfig,
    getText,
    getJson: async <T>(path: string) => JSON.parse(await getText(path)) as T,
    close: () => client.close(),
  };
}

