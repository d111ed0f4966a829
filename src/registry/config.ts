import { readFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { Checker } from './config-checker.js';
import { parseAuthentication } from './config-authentication.js';
import { parseClusters } from './config-clusters.js';
import { parseOptions } from './config-options.js';
import { parseResources } from './config-resources.js';
import { parseTenants } from './config-tenants.js';
import type { FleetConfig } from './fleet-config.js';

/** A fleet configuration that cannot be run with: every problem, one a line. */
export class ConfigError extends Error {}

/** Reads and validates the fleet file; a file that cannot be read is a ConfigError too. */
export async function loadFleetConfig(path: string): Promise<FleetConfig> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (e) {
    throw new ConfigError(`${path}: cannot read the fleet configuration: ${(e as Error).message}`);
  }
  return parseFleetConfig(text, path);
}

/** Validates the fleet file's text, its relative paths resolved against the file's directory. */
export function parseFleetConfig(text: string, sourcePath: string): FleetConfig {
  const file = sourcePath.split('/').pop() ?? sourcePath;
  let doc: unknown;
  try {
    doc = parseYaml(text);
  } catch (e) {
    throw new ConfigError(`${file}: not valid YAML: ${(e as Error).message}`);
  }
  return parseFleetDocument(doc, { source: file, baseDir: dirname(resolve(sourcePath)) });
}

/**
 * Validates a fleet document already parsed (the YAML file's, or a Fleet object's `spec`): every
 * problem is collected and named `<source>: <field path>: <what is wrong>`. Relative paths are
 * resolved against `baseDir`; without one (a Fleet object has no directory) they are refused.
 */
export function parseFleetDocument(doc: unknown, where: { source: string; baseDir?: string }): FleetConfig {
  const c = new Checker(where.source, where.baseDir);
  const root = c.object(doc ?? {}, '', ['clusters', 'resources', 'options', 'authentication', 'tenants']) ?? {};
  const clusters = parseClusters(c, root.clusters);
  const resources = parseResources(c, root.resources, new Set(clusters.map((cl) => cl.name)));
  const options = parseOptions(c, root.options);
  const authentication = parseAuthentication(c, root.authentication, clusters);
  const tenants = parseTenants(c, root.tenants);
  if (c.errors.length > 0) throw new ConfigError(c.errors.join('\n'));
  return { clusters, resources, options, authentication, tenants };
}
