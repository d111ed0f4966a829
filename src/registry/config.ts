import { readFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { Checker, type ConfigProblem } from './config-checker.js';
import { parseAuthentication } from './config-authentication.js';
import { parseClusters } from './config-clusters.js';
import { parseOptions } from './config-options.js';
import { parseResources } from './config-resources.js';
import { parseTenants } from './config-tenants.js';
import type { FleetConfig } from './fleet-config.js';
import { schemaProblems } from './schema-problems.js';

export type { ConfigProblem } from './config-checker.js';

/**
 * A fleet configuration that cannot be run with: every problem, one a line
 * (`<source>: <field path>: <what is wrong>`), and as a list. An error that names no field (a file
 * that cannot be read) is one problem with an empty path.
 */
export class ConfigError extends Error {
  readonly problems: ConfigProblem[];
  constructor(message: string, problems?: ConfigProblem[]) {
    super(message);
    this.problems = problems ?? [{ path: '', message }];
  }
}

/**
 * The problems of a fleet file's text or an already parsed document (a Fleet object's spec), none
 * when it is valid: what `flotilla check-config` and a reload report. `source` names the document
 * in the problems' messages; relative paths are checked against the file's directory when given.
 */
export function checkFleetConfig(input: string | object, source = 'fleet.yaml'): { problems: ConfigProblem[] } {
  try {
    if (typeof input === 'string') parseFleetConfig(input, source);
    else parseFleetDocument(input, { source, baseDir: '/' });
    return { problems: [] };
  } catch (e) {
    if (e instanceof ConfigError) return { problems: e.problems };
    throw e;
  }
}

/** checkFleetConfig of a file on disk; a file that cannot be read is one problem. */
export async function checkFleetFile(path: string): Promise<{ problems: ConfigProblem[] }> {
  try {
    await loadFleetConfig(path);
    return { problems: [] };
  } catch (e) {
    if (e instanceof ConfigError) return { problems: e.problems };
    throw e;
  }
}

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
 * Validates a fleet document already parsed (the YAML file's, or a Fleet object's `spec`): first
 * against the schema (fleet-schema.ts: field names, types, bounds), then by the section parsers
 * (what a schema cannot say: unique names, references between sections, paths). Every problem is
 * collected and named `<source>: <field path>: <what is wrong>`, a field the schema found wrong
 * once. Relative paths are resolved against `baseDir`; without one (a Fleet object has no
 * directory) they are refused.
 */
export function parseFleetDocument(doc: unknown, where: { source: string; baseDir?: string }): FleetConfig {
  const document = doc ?? {};
  const fromSchema = schemaProblems(document);
  const c = new Checker(where.source, where.baseDir);
  const root = c.object(document, '') ?? {};
  const clusters = parseClusters(c, root.clusters);
  const resources = parseResources(c, root.resources, new Set(clusters.map((cl) => cl.name)));
  const options = parseOptions(c, root.options);
  const authentication = parseAuthentication(c, root.authentication, clusters);
  const tenants = parseTenants(c, root.tenants);
  const problems = [...fromSchema, ...c.problems.filter((p) => !fromSchema.some((s) => within(p.path, s.path)))];
  if (problems.length > 0) throw new ConfigError(problems.map((p) => `${where.source}: ${p.path}: ${p.message}`).join('\n'), problems);
  return { clusters, resources, options, authentication, tenants };
}

/** Whether `path` is the field `outer` or one inside it: the schema's problem there already says what is wrong. */
function within(path: string, outer: string): boolean {
  return path === outer || path.startsWith(`${outer}.`) || path.startsWith(`${outer}[`);
}
