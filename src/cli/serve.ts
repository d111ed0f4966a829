import { readFileSync } from 'node:fs';
import { ConfigError, loadFleetConfig } from '../registry/config.js';
import { startFlotilla } from '../app.js';
import { DataDirError } from '../store/store.js';
import { DEFAULT_REQUEST_HEADERS, type RequestHeaderConfig } from '../auth/request-header.js';
import { hubClient } from '../hub/hub-client.js';
import { FleetSource } from '../hub/fleet-source.js';
import { EXIT_FAILED, EXIT_USAGE } from './io.js';
import type { ServeFlags } from './serve-flags.js';

/** The front proxy's settings, when its CA is given. */
export function requestHeaderConfig(f: ServeFlags, readCa: (file: string) => Buffer = readFileSync): RequestHeaderConfig | undefined {
  if (!f.requestheaderClientCaFile) return undefined;
  return {
    clientCA: readCa(f.requestheaderClientCaFile),
    allowedNames: f.requestheaderAllowedNames ?? [],
    usernameHeaders: f.requestheaderUsernameHeaders ?? DEFAULT_REQUEST_HEADERS.usernameHeaders,
    groupHeaders: f.requestheaderGroupHeaders ?? DEFAULT_REQUEST_HEADERS.groupHeaders,
    extraHeaderPrefixes: f.requestheaderExtraHeadersPrefix ?? DEFAULT_REQUEST_HEADERS.extraHeaderPrefixes,
  };
}

/**
 * Starts flotilla and serves until SIGINT or SIGTERM. Resolves with an exit code when it cannot
 * start (2: the configuration, 1: the data dir), else with undefined once serving.
 */
export async function serve(flags: ServeFlags): Promise<number | undefined> {
  const requestHeader = requestHeaderConfig(flags);
  let config;
  let source: FleetSource | undefined;
  let hub;
  try {
    // One client of the hub for the Fleet it holds and for authentication (token reviews, front proxy).
    if (flags.hubKubeconfig || flags.hubInCluster) hub = await hubClient({ kubeconfig: flags.hubKubeconfig, inCluster: flags.hubInCluster });
    if (flags.fleet) {
      ({ source, config } = await FleetSource.open({ hub: hub!, name: flags.fleet, dataDir: flags.dataDir }));
    } else {
      config = await loadFleetConfig(flags.config!);
    }
  } catch (e) {
    if (e instanceof ConfigError) {
      console.error(e.message);
      return EXIT_USAGE;
    }
    throw e;
  }
  // Without a pair of its own, flotilla serves a self-signed one kept in the data dir (startFlotilla).
  const https = {
    ...(flags.tlsCertFile ? { cert: readFileSync(flags.tlsCertFile), key: readFileSync(flags.tlsPrivateKeyFile!) } : {}),
    ...(flags.clientCaFile ? { ca: readFileSync(flags.clientCaFile) } : {}),
  };
  let flotilla: Awaited<ReturnType<typeof startFlotilla>> | undefined;
  let stopping = false;
  const stop = async (why: string, code = 0) => {
    if (stopping) return;
    stopping = true;
    console.log(`flotilla: ${why}, stopping`);
    await flotilla?.stop();
    process.exit(code);
  };
  try {
    flotilla = await startFlotilla({
      config, ...(source ? { configSource: source } : { configPath: flags.config }), dataDir: flags.dataDir, port: flags.port, host: flags.bind, https, logLevel: flags.logLevel,
      ...(hub ? { hub } : {}),
      ...(requestHeader ? { requestHeader } : {}),
      applyTenantPolicy: flags.applyTenantPolicy,
      // Started again (by its supervisor), flotilla sets the damaged store aside and lists afresh.
      onStoreDamaged: () => void stop('the store is damaged (see the log above); the next start rebuilds it', 1),
    });
  } catch (e) {
    if (e instanceof ConfigError) {
      console.error(e.message);
      return EXIT_USAGE;
    }
    if (e instanceof DataDirError) {
      console.error(`flotilla: ${e.message}`);
      return EXIT_FAILED;
    }
    throw e;
  }
  source?.reportStatus(flotilla.manager);
  console.log(`flotilla: serving ${flotilla.url} (${config.clusters.length} clusters, ${config.resources.length} resources)`);
  if (flotilla.selfSigned) {
    const { certFile, made } = flotilla.selfSigned;
    console.log(`flotilla: TLS with a self-signed certificate ${made ? `made now (${made})` : 'kept from an earlier start'}: ${certFile}` +
      ` (clients trust it as their CA: a kubeconfig's certificate-authority; give --tls-cert-file and --tls-private-key-file to serve your own)`);
  }

  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
  return undefined;
}
