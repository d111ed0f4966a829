import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml, parseAllDocuments } from 'yaml';
import { EXAMPLE_FLEET_FILE, generatedConfigFiles, MINIMAL_FLEET_FILE } from '../../../scripts/config-reference.js';
import { checkFleetConfig, ConfigError, parseFleetConfig } from '../../../src/registry/config.js';
import { defaultAuthentication, defaultFleetOptions } from '../../../src/registry/defaults.js';
import { FLEET_SCHEMA, fleetObjectSchema } from '../../../src/registry/fleet-schema.js';
import { schemaProblems } from '../../../src/registry/schema-problems.js';
import { docFiles, fencedBlocks } from '../../support/doc-blocks.js';
import { DEFAULT_RESOURCES } from '../../support/flotilla-process.js';

const root = resolve(import.meta.dirname, '..', '..', '..');
const read = (path: string) => readFileSync(join(root, path), 'utf8');
const BASE = 'clusters: [{ name: east, kubeconfig: /k }]\nresources: [{ version: v1, resource: pods }]\n';

/** A literal (array or object) of scripts/demo.ts, which starts the demo when imported: read from its source. */
function demoConstant(name: string): unknown {
  const literal = new RegExp(`const ${name}[^=]*= (\\[[\\s\\S]*?\\n\\]|\\{[\\s\\S]*?\\n\\});`).exec(read('scripts/demo.ts'))?.[1];
  if (literal === undefined) throw new Error(`scripts/demo.ts has no ${name}`);
  return new Function(`return ${literal}`)() as unknown;
}

/** The demo's members as its fleet file has them (demoFleetFile): each with its labels. */
function demoClusters(): { name: string; kubeconfig: string; labels: Record<string, string> }[] {
  const labels = demoConstant('DEMO_LABELS') as Record<string, Record<string, string>>;
  expect(Object.keys(labels)).toEqual(['east', 'west', 'north']);
  return Object.entries(labels).map(([name, l]) => ({ name, kubeconfig: `/k/${name}`, labels: l }));
}

/** Every fleet file and Fleet spec the repository ships or starts flotilla with. */
function repositoryConfigs(): { name: string; text?: string; doc?: unknown; fleetObject?: boolean }[] {
  const configs: { name: string; text?: string; doc?: unknown; fleetObject?: boolean }[] = [
    { name: 'the reference\'s example', text: EXAMPLE_FLEET_FILE },
    { name: 'the reference\'s minimal file', text: MINIMAL_FLEET_FILE },
    { name: 'the chart\'s values fleet.config', text: (parseYaml(read('deploy/helm/flotilla/values.yaml')) as { fleet: { config: string } }).fleet.config },
    { name: 'the test fleet\'s default (writeFleetConfig)', doc: { clusters: [{ name: 'east', kubeconfig: '/k/east' }], resources: DEFAULT_RESOURCES, authentication: { tokenReviewCluster: 'east' } } },
    { name: 'the demo\'s', doc: { clusters: demoClusters(), resources: demoConstant('DEMO_RESOURCES'), authentication: { tokenReviewCluster: 'east' }, tenants: demoConstant('TENANTS') } },
  ];
  for (const doc of parseAllDocuments(read('deploy/flotilla.yaml')).map((d) => d.toJS() as { kind?: string; data?: Record<string, string> })) {
    if (doc?.kind === 'ConfigMap' && doc.data?.['fleet.yaml']) configs.push({ name: 'deploy/flotilla.yaml\'s ConfigMap', text: doc.data['fleet.yaml'] });
  }
  // Fleet files (the blocks marked fleet-file, as test/unit/docs checks them) and Fleet objects in the Markdown docs.
  for (const block of docFiles(root).flatMap((file) => fencedBlocks(file, read(file))).filter((b) => b.lang === 'yaml')) {
    const where = `${block.file}:${block.line}`;
    if (block.tags.includes('fleet-file')) configs.push({ name: `${where} (fleet file)`, text: block.text });
    const fleet = parseAllDocuments(block.text).map((d) => d.toJS() as { kind?: string; spec?: unknown } | null).find((d) => d?.kind === 'Fleet');
    if (fleet) configs.push({ name: `${where} (Fleet)`, doc: fleet.spec, fleetObject: true });
  }
  return configs;
}

describe('the fleet file schema', () => {
  it('names a misspelt option by its path and the option it resembles, with every other problem at once', () => {
    const text = `${BASE}options:\n  watchBufferSize: 4\n  listPageSize: lots\nauthentication: { anonymous: true, tokenReviewCluster: west }\ntenants: [{ id: acme, users: [a], colour: red }]\n`;
    expect(() => parseFleetConfig(text, '/etc/flotilla/fleet.yaml')).toThrow(ConfigError);
    expect(checkFleetConfig(text).problems).toEqual([
      { path: 'options.watchBufferSize', message: 'unknown field (did you mean options.maxWatchBufferMiB?)' },
      { path: 'options.listPageSize', message: 'must be an integer from 1 to 10000, got string "lots"' },
      { path: 'tenants[0].colour', message: 'unknown field; allowed: id, users, groups, clusterScoped, admins' },
      { path: 'authentication.tokenReviewCluster', message: 'names no cluster of this file: "west"' },
    ]);
    expect(() => parseFleetConfig(text, '/etc/flotilla/fleet.yaml')).toThrow('fleet.yaml: options.watchBufferSize: unknown field (did you mean options.maxWatchBufferMiB?)');
  });

  it('takes options.operators (who may always read /status)', () => {
    expect(checkFleetConfig(`${BASE}options: { operators: { users: [oncall], groups: [sre] } }\nauthentication: { anonymous: true }\n`).problems).toEqual([]);
    expect(checkFleetConfig(`${BASE}options: { operators: { user: [oncall] } }\nauthentication: { anonymous: true }\n`).problems).toEqual([
      { path: 'options.operators.user', message: 'unknown field (did you mean options.operators.users?)' },
    ]);
  });

  it('declares every option with the default defaults.ts gives it', () => {
    const declared = (section: string) => Object.fromEntries(Object.entries(FLEET_SCHEMA.properties![section]!.properties!).map(([k, v]) => [k, v.properties ? Object.fromEntries(Object.entries(v.properties).map(([kk, vv]) => [kk, vv.default])) : v.default]));
    const { operators, ...options } = declared('options');
    const { operators: noOperators, ...defaults } = defaultFleetOptions();
    expect(options).toEqual(defaults);
    expect(operators).toEqual({ users: undefined, groups: undefined });
    expect(noOperators).toEqual({ users: [], groups: [] });
    const { tokenReviewCluster, tokenFile, ...authentication } = declared('authentication');
    expect([tokenReviewCluster, tokenFile]).toEqual([undefined, undefined]);
    expect(authentication).toEqual(defaultAuthentication());
  });

  it('accepts every fleet file and Fleet the repository ships or runs with', () => {
    const configs = repositoryConfigs();
    expect(configs.map((c) => c.name)).toEqual(expect.arrayContaining(['the chart\'s values fleet.config', 'the demo\'s', 'deploy/flotilla.yaml\'s ConfigMap']));
    for (const c of configs) {
      const problems = c.fleetObject ? schemaProblems(c.doc, fleetObjectSchema()) : checkFleetConfig(c.text ?? c.doc!).problems;
      expect({ config: c.name, problems }).toEqual({ config: c.name, problems: [] });
    }
  });

  it('is what the committed reference and Fleet CRDs were generated from (npm run gen:config)', () => {
    for (const [path, text] of Object.entries(generatedConfigFiles())) expect({ path, text: read(path) }).toEqual({ path, text });
  });
});
