#!/usr/bin/env node
import { parseArgs } from 'node:util';
import { readFileSync } from 'node:fs';
import { loadFleetConfig, ConfigError } from './registry/config.js';
import { startFlotilla } from './app.js';
import { DataDirError } from './store/store.js';
import { DEFAULT_REQUEST_HEADERS } from './auth/request-header.js';
import { hubClient } from './hub/hub-client.js';
import { FleetSource } from './hub/fleet-source.js';
import { runTenantPolicy } from './tenant-policy.js';

const usage = `usage: flotilla tenant-policy --config FLEET.yaml [--tenant ID]... [--cluster NAME]
       flotilla (--config FLEET.yaml | --fleet NAME) [--hub-kubeconfig FILE | --hub-in-cluster]
                [--data-dir DIR] [--port 8443] [--bind 127.0.0.1]
                [--tls-cert-file CERT --tls-private-key-file KEY] [--client-ca-file CA] [--log-level warn]
                [--requestheader-client-ca-file CA] [--requestheader-allowed-names N1,N2]
                [--requestheader-username-headers H] [--requestheader-group-headers H]
                [--requestheader-extra-headers-prefix P] [--apply-tenant-policy]

--fleet reads the configuration from the Fleet object NAME on the hub cluster (and watches it).
Always HTTPS: without --tls-cert-file, a self-signed pair kept in DATA-DIR/tls/ (made at first start).
With a hub (aggregated mode: flotilla registered as APIService v1alpha1.search.flotilla.io), the
hub reviews bearer tokens and its kube-system/extension-apiserver-authentication ConfigMap says
which front proxy may name callers in request headers; the --requestheader-* flags say it instead.
The fleet API is served at the root and under /apis/search.flotilla.io/v1alpha1/fleet alike.
--apply-tenant-policy keeps each tenant's member-side policy (what tenant-policy prints) applied on
every member, as flotilla: at start, when the tenants change, and every 5 minutes.`;

/** Comma-separated flag values; several of one flag add up. */
function listFlag(values: string[] | undefined): string[] | undefined {
  return values?.flatMap((v) => v.split(',')).map((v) => v.trim()).filter(Boolean);
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      config: { type: 'string' },
      fleet: { type: 'string' },
      'hub-kubeconfig': { type: 'string' },
      'hub-in-cluster': { type: 'boolean' },
      'data-dir': { type: 'string', default: './flotilla-data' },
      port: { type: 'string', default: '8443' },
      bind: { type: 'string', default: '127.0.0.1' },
      'tls-cert-file': { type: 'string' },
      'tls-private-key-file': { type: 'string' },
      'client-ca-file': { type: 'string' },
      'requestheader-client-ca-file': { type: 'string' },
      'requestheader-allowed-names': { type: 'string', multiple: true },
      'requestheader-username-headers': { type: 'string', multiple: true },
      'requestheader-group-headers': { type: 'string', multiple: true },
      'requestheader-extra-headers-prefix': { type: 'string', multiple: true },
      'log-level': { type: 'string', default: 'warn' },
      'apply-tenant-policy': { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help || Boolean(values.config) === Boolean(values.fleet)) {
    console.error(usage);
    process.exit(values.help ? 0 : 2);
  }
  const port = Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    console.error(`--port: not a port number: ${values.port}`);
    process.exit(2);
  }
  if (Boolean(values['tls-cert-file']) !== Boolean(values['tls-private-key-file'])) {
    console.error('--tls-cert-file and --tls-private-key-file go together');
    process.exit(2);
  }
  if (values['hub-kubeconfig'] && values['hub-in-cluster']) {
    console.error('--hub-kubeconfig and --hub-in-cluster name the hub two ways: give one');
    process.exit(2);
  }
  if (values.fleet && !values['hub-kubeconfig'] && !values['hub-in-cluster']) {
    console.error('--fleet needs the hub: exactly one of --hub-kubeconfig or --hub-in-cluster');
    process.exit(2);
  }
  const requestHeaderCA = values['requestheader-client-ca-file'];
  const requestHeader = requestHeaderCA
    ? {
        clientCA: readFileSync(requestHeaderCA),
        allowedNames: listFlag(values['requestheader-allowed-names']) ?? [],
        usernameHeaders: listFlag(values['requestheader-username-headers']) ?? DEFAULT_REQUEST_HEADERS.usernameHeaders,
        groupHeaders: listFlag(values['requestheader-group-headers']) ?? DEFAULT_REQUEST_HEADERS.groupHeaders,
        extraHeaderPrefixes: listFlag(values['requestheader-extra-headers-prefix']) ?? DEFAULT_REQUEST_HEADERS.extraHeaderPrefixes,
      }
    : undefined;
  let config;
  let source: FleetSource | undefined;
  let hub;
  try {
    // One client of the hub for the Fleet it holds and for authentication (token reviews, front proxy).
    if (values['hub-kubeconfig'] || values['hub-in-cluster']) hub = await hubClient({ kubeconfig: values['hub-kubeconfig'], inCluster: values['hub-in-cluster'] });
    if (values.fleet) {
      ({ source, config } = await FleetSource.open({ hub: hub!, name: values.fleet, dataDir: values['data-dir'] }));
    } else {
      config = await loadFleetConfig(values.config!);
    }
  } catch (e) {
    if (e instanceof ConfigError) {
      console.error(e.message);
      process.exit(2);
    }
    throw e;
  }
  // Without a pair of its own, flotilla serves a self-signed one kept in the data dir (startFlotilla).
  const https = {
    ...(values['tls-cert-file'] ? { cert: readFileSync(values['tls-cert-file']), key: readFileSync(values['tls-private-key-file']!) } : {}),
    ...(values['client-ca-file'] ? { ca: readFileSync(values['client-ca-file']) } : {}),
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
      config, ...(source ? { configSource: source } : { configPath: values.config }), dataDir: values['data-dir'], port, host: values.bind, https, logLevel: values['log-level'],
      ...(hub ? { hub } : {}),
      ...(requestHeader ? { requestHeader } : {}),
      applyTenantPolicy: values['apply-tenant-policy'],
      // Started again (by its supervisor), flotilla sets the damaged store aside and lists afresh.
      onStoreDamaged: () => void stop('the store is damaged (see the log above); the next start rebuilds it', 1),
    });
  } catch (e) {
    if (e instanceof ConfigError) {
      console.error(e.message);
      process.exit(2);
    }
    if (e instanceof DataDirError) {
      console.error(`flotilla: ${e.message}`);
      process.exit(1);
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
}

// A subcommand first: the server's flags do not apply to it.
const run = process.argv[2] === 'tenant-policy' ? runTenantPolicy(process.argv.slice(3)).then((code) => process.exit(code)) : main();
run.catch((e: unknown) => {
  console.error(`flotilla: ${(e as Error).stack ?? e}`);
  process.exit(1);
});
