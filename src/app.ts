import { mkdirSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { CacheManager } from './cacher/cache-manager.js';
import type { FleetConfig } from './registry/config.js';
import { buildServer } from './router/server.js';
import { Store } from './store/store.js';

/** Wires the parts together: store, cachers, HTTP server. */
export interface FlotillaOptions {
  config: FleetConfig;
  dataDir: string;
  port: number;
  host: string;
  https?: { key: Buffer; cert: Buffer };
  logLevel?: string;
}

export interface Flotilla {
  url: string;
  manager: CacheManager;
  stop(): Promise<void>;
}

export async function startFlotilla(opts: FlotillaOptions): Promise<Flotilla> {
  mkdirSync(opts.dataDir, { recursive: true });
  const store = Store.open(opts.dataDir);
  const manager = new CacheManager(opts.config, store);
  await manager.start();
  const server = buildServer({ manager, store, https: opts.https, logLevel: opts.logLevel });
  await server.listen({ port: opts.port, host: opts.host });
  const addr = server.server.address() as AddressInfo;
  const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  return {
    url: `${opts.https ? 'https' : 'http'}://${host}:${addr.port}`,
    manager,
    async stop() {
      await server.close();
      await manager.stop();
      await store.close();
    },
  };
}
