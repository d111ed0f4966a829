#!/usr/bin/env node
import { parseArgs } from 'node:util';
import { readFileSync } from 'node:fs';
import { loadFleetConfig, ConfigError } from './registry/config.js';
import { startFlotilla } from './app.js';
import { hubClient } from './hub/hub-client.js';
import { FleetSource } from './hub/fleet-source.js';

const usage = `usage: flotilla (--config FLEET.yaml | --fleet NAME (--hub-kubeconfig FILE | --hub-in-cluster)) [--data-dir DIR] [--port 8443] [--bind 127.0.0.1]
                [--tls-cert-file CERT --tls-private-key-file KEY] [--client-ca-file CA] [--log-level warn]

--fleet reads the configuration from the Fleet object NAME on the hub cluster (and watches it).
Always HTTPS: without --tls-cert-file, a self-signed pair kept in DATA-DIR/tls/ (made at first start).`;

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
      'log-level': { type: 'string', default: 'warn' },
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
  if (values.fleet && Boolean(values['hub-kubeconfig']) === Boolean(values['hub-in-cluster'])) {
    console.error('--fleet needs the hub: exactly one of --hub-kubeconfig or --hub-in-cluster');
    process.exit(2);
  }
  let config;
  let source: FleetSource | undefined;
  try {
    if (values.fleet) {
      const hub = await hubClient({ kubeconfig: values['hub-kubeconfig'], inCluster: values['hub-in-cluster'] });
      ({ source, config } = await FleetSource.open({ hub, name: values.fleet, dataDir: values['data-dir'] }));
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
  let flotilla;
  try {
    flotilla = await startFlotilla({ config, ...(source ? { configSource: source } : { configPath: values.config }), dataDir: values['data-dir'], port, host: values.bind, https, logLevel: values['log-level'] });
  } catch (e) {
    if (e instanceof ConfigError) {
      console.error(e.message);
      process.exit(2);
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

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    console.log(`flotilla: ${signal}, stopping`);
    await flotilla.stop();
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
}

main().catch((e: unknown) => {
  console.error(`flotilla: ${(e as Error).stack ?? e}`);
  process.exit(1);
});
