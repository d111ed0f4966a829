import { InvalidArgumentError, Option, type Command } from 'commander';
import { DEFAULT_DATA_DIR, DEFAULT_LOG_LEVEL, DEFAULT_SERVE_BIND, DEFAULT_SERVE_PORT } from '../registry/defaults.js';

/** `flotilla serve`'s flags as commander gives them. */
export interface ServeFlags {
  config?: string;
  fleet?: string;
  hubKubeconfig?: string;
  hubInCluster?: boolean;
  dataDir: string;
  port: number;
  bind: string;
  tlsCertFile?: string;
  tlsPrivateKeyFile?: string;
  clientCaFile?: string;
  requestheaderClientCaFile?: string;
  requestheaderAllowedNames?: string[];
  requestheaderUsernameHeaders?: string[];
  requestheaderGroupHeaders?: string[];
  requestheaderExtraHeadersPrefix?: string[];
  logLevel: string;
  applyTenantPolicy: boolean;
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

export const SERVE_HELP = `
--fleet reads the configuration from the Fleet object NAME on the hub cluster (and watches it).
Always HTTPS: without --tls-cert-file, a self-signed pair kept in DATA-DIR/tls/ (made at first start).
With a hub (aggregated mode: flotilla registered as APIService v1alpha1.search.flotilla.io), the
hub reviews bearer tokens and its kube-system/extension-apiserver-authentication ConfigMap says
which front proxy may name callers in request headers; the --requestheader-* flags say it instead.
The fleet API is served at the root and under /apis/search.flotilla.io/v1alpha1/fleet alike.
--apply-tenant-policy keeps each tenant's member-side policy (what tenant-policy prints) applied on
every member, as flotilla: at start, when the tenants change, and every 5 minutes.`;

function portNumber(value: string): number {
  const port = Number(value);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new InvalidArgumentError('not a port number');
  return port;
}

/** Comma-separated values; the flag given several times adds up. */
function listValue(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), ...value.split(',').map((v) => v.trim()).filter(Boolean)];
}

export function addServeOptions(cmd: Command): Command {
  return cmd
    .option('--config <file>', 'the fleet file (reloaded when it changes)')
    .option('--fleet <name>', 'the Fleet object NAME on the hub cluster instead of a file')
    .option('--hub-kubeconfig <file>', 'the hub cluster, by kubeconfig')
    .option('--hub-in-cluster', 'the hub cluster is the one flotilla runs in (its service account)')
    .option('--data-dir <dir>', 'the store, the self-signed pair and the hub\'s last Fleet', DEFAULT_DATA_DIR)
    .option('--port <port>', 'the HTTPS port', portNumber, DEFAULT_SERVE_PORT)
    .option('--bind <address>', 'the address to listen on', DEFAULT_SERVE_BIND)
    .option('--tls-cert-file <file>', 'the serving certificate (PEM; with --tls-private-key-file)')
    .option('--tls-private-key-file <file>', 'its private key')
    .option('--client-ca-file <file>', 'CA of client certificates accepted as callers')
    .option('--requestheader-client-ca-file <file>', 'CA of the front proxy allowed to name callers in request headers')
    .option('--requestheader-allowed-names <names>', 'common names that front proxy may have (comma-separated, repeatable)', listValue)
    .option('--requestheader-username-headers <headers>', 'headers naming the caller', listValue)
    .option('--requestheader-group-headers <headers>', 'headers naming its groups', listValue)
    .option('--requestheader-extra-headers-prefix <prefixes>', 'prefixes of headers carrying its extra fields', listValue)
    .addOption(new Option('--log-level <level>', 'the lowest level logged').choices(LOG_LEVELS).default(DEFAULT_LOG_LEVEL))
    .option('--apply-tenant-policy', 'keep each tenant\'s member-side policy applied on every member', false)
    .addHelpText('after', SERVE_HELP);
}

/** What the flags cannot say together; undefined when they are fine. */
export function serveFlagsProblem(f: ServeFlags): string | undefined {
  if (Boolean(f.config) === Boolean(f.fleet)) return 'give exactly one of --config FILE or --fleet NAME';
  if (Boolean(f.tlsCertFile) !== Boolean(f.tlsPrivateKeyFile)) return '--tls-cert-file and --tls-private-key-file go together';
  if (f.hubKubeconfig && f.hubInCluster) return '--hub-kubeconfig and --hub-in-cluster name the hub two ways: give one';
  if (f.fleet && !f.hubKubeconfig && !f.hubInCluster) return '--fleet needs the hub: exactly one of --hub-kubeconfig or --hub-in-cluster';
  return undefined;
}
