import { stringify as toYaml } from 'yaml';
import { FLEET_SCHEMA, fleetObjectSchema, type SchemaNode } from '../src/registry/fleet-schema.js';

/**
 * What the fleet file's schema (src/registry/fleet-schema.ts) generates: the configuration
 * reference (docs/configuration.md) and the Fleet CRD (deploy/crds/fleets.flotilla.io.yaml, copied
 * into the Helm chart). scripts/generate-config-docs.ts writes them; a unit test compares the
 * committed files with these, so neither can drift from the schema.
 */

/** A fleet file using every section, valid as it stands (the reference shows it; a unit test checks it). */
export const EXAMPLE_FLEET_FILE = `clusters:
  - name: east
    kubeconfig: east.kubeconfig       # relative to this file
    context: admin@east
    labels: { region: eu }
    priority: 10
  - name: west
    server: https://10.0.0.2:6443
    caFile: west-ca.crt
    tokenFile: west.token
    authorization: subjectAccessReview
resources:
  - version: v1
    resource: pods
  - group: apps
    version: v1
    resource: deployments
    clusterSelector:
      matchLabels: { region: eu }
  - version: v1
    resource: configmaps
    namespaces: [kube-system]
    clusters: [east]
options:
  listPageSize: 500
  memberHeartbeatMilliseconds: 2000
  liveReads:
    exclude: [secrets]
  operators:
    groups: [platform-oncall]
authentication:
  tokenReviewCluster: east
  cacheTTLSeconds: 10
tenants:
  - id: acme
    users: [admin@acme]
    groups: [acme-devs]
    admins: { groups: [acme-devs] }
    clusterScoped:
      persistentvolumes: owned
`;

/** The smallest useful fleet file. */
export const MINIMAL_FLEET_FILE = `clusters:
  - name: east
    kubeconfig: east.kubeconfig
  - name: west
    kubeconfig: west.kubeconfig
resources:
  - version: v1
    resource: pods
authentication:
  tokenReviewCluster: east
`;

interface Row {
  path: string;
  node: SchemaNode;
  required: boolean;
}

/** Every field of `node` under `path`, depth first in the schema's order. */
function rows(node: SchemaNode, path: string): Row[] {
  const out: Row[] = [];
  const item = node.type === 'array' && node.items?.type === 'object' ? node.items : undefined;
  const fields = item ?? node;
  const prefix = item ? `${path}[]` : path;
  for (const [name, child] of Object.entries(fields.properties ?? {})) {
    const childPath = prefix === '' ? name : `${prefix}.${name}`;
    out.push({ path: childPath, node: child, required: fields.required?.includes(name) ?? false });
    out.push(...rows(child, childPath));
  }
  return out;
}

function typeOf(node: SchemaNode): string {
  if (node.type === 'array') {
    const item = node.items?.type === 'object' ? 'mapping' : typeOf(node.items!);
    return item === node.items!.type ? `list of ${item}s` : `list, each ${item}`;
  }
  if (node.type === 'object') return node.additionalProperties ? `map of string to ${typeOf(node.additionalProperties)}` : 'mapping';
  if (node.enum) return `one of ${node.enum.map((v) => `\`${v}\``).join(', ')}`;
  if (node.type === 'integer' && node.minimum !== undefined) return `integer, ${node.minimum} to ${node.maximum}`;
  if (node.pattern && node.patternDescription) return `string: ${node.patternDescription}`;
  return node.type;
}

function defaultOf(row: Row): string {
  if (row.required) return 'required';
  if (row.node.default === undefined) return '';
  if (Array.isArray(row.node.default) && row.node.default.length === 0) return 'none';
  return `\`${JSON.stringify(row.node.default)}\``;
}

/** A table cell: one line, pipes escaped. */
function cell(text: string): string {
  return text.replace(/\|/g, '\\|').replace(/\n/g, ' ');
}

const TABLE_HEAD = '| field | type | default | description |\n|---|---|---|---|';

function line(row: Row): string {
  return `| \`${row.path}\` | ${cell(typeOf(row.node))} | ${defaultOf(row)} | ${cell(row.node.description)} |`;
}

/** A field and every field inside it, one row each. */
function table(node: SchemaNode, path: string, required = false): string {
  return [TABLE_HEAD, ...[{ path, node, required }, ...rows(node, path)].map(line)].join('\n');
}

/** docs/configuration.md. */
export function renderConfigReference(): string {
  const sections = Object.entries(FLEET_SCHEMA.properties!).map(([name, node]) => `## \`${name}\`\n\n${node.description}\n\n${table(node, name, FLEET_SCHEMA.required?.includes(name) ?? false)}\n`);
  const fleet = fleetObjectSchema().properties!.clusters!.items!;
  const refs = Object.entries(fleet.properties!).filter(([name]) => name.endsWith('SecretRef'));
  return `<!-- Generated from src/registry/fleet-schema.ts by \`npm run gen:config\`: edit the schema, not this file. -->
# Configuration reference

Flotilla reads its fleet from a YAML file (\`flotilla --config fleet.yaml\`), or from a \`Fleet\`
object on a hub cluster whose \`spec\` has the same fields. This page lists every field: its type,
its default, what it does. It is generated from the one schema that also validates the file and
makes the Fleet CRD's schema, so the three always agree.

A file is checked whole: every problem is named at once, with its field path, and a misspelt field
names the one it resembles:

\`\`\`
fleet.yaml: options.watchBufferSize: unknown field (did you mean options.maxWatchBufferMiB?)
fleet.yaml: clusters[1].name: duplicate cluster name "east"
\`\`\`

Check a file before you use it (the same checks as a start or a reload):

\`\`\`sh
flotilla check-config fleet.yaml
\`\`\`

A running flotilla reads the file again when it changes; an invalid file is refused and the running
configuration kept. \`authentication\` is read at start only. A field set to nothing (\`field:\`)
counts as left out where the type column allows it (strings, lists, maps). Paths in the file are
absolute or relative to the file's directory.

## A minimal file

\`\`\`yaml fleet-file
${MINIMAL_FLEET_FILE}\`\`\`

## A file using every section

\`\`\`yaml fleet-file
${EXAMPLE_FLEET_FILE}\`\`\`

${sections.join('\n')}
## A \`Fleet\` object

A \`Fleet\` (\`flotilla.io/v1alpha1\`, cluster-scoped, CRD in \`deploy/crds/fleets.flotilla.io.yaml\`)
has the fields above in its \`spec\`. Paths in it must be absolute, and a cluster's credentials may be
Secrets of the hub instead of files:

${refs.map(([name, node]) => table(node, `clusters[].${name}`).replace(`${TABLE_HEAD}\n`, '')).join('\n').replace(/^/, `${TABLE_HEAD}\n`)}

The apiserver checks a Fleet against the same schema: a misspelt field is refused by
\`kubectl apply\` (\`unknown field "spec.options.watchBufferSize"\`), or dropped when the client
does not ask for strict checking; flotilla checks the rest (unique names, references) and says
what is wrong in the Fleet's \`Accepted\` condition.

\`\`\`yaml
apiVersion: flotilla.io/v1alpha1
kind: Fleet
metadata: { name: prod }
spec:
  clusters:
    - name: east
      kubeconfigSecretRef: { namespace: flotilla-system, name: east-kubeconfig }
    - name: west
      server: https://10.0.0.2:6443
      caSecretRef: { namespace: flotilla-system, name: west-creds }
      tokenSecretRef: { namespace: flotilla-system, name: west-creds }
  resources:
    - { version: v1, resource: pods }
  authentication: { tokenReviewCluster: east }
\`\`\`
`;
}

/** A schema node as a CRD's structural OpenAPI v3 schema. */
export function toOpenApi(node: SchemaNode): Record<string, unknown> {
  const out: Record<string, unknown> = { type: node.type };
  // The default is told, not declared: an apiserver would write declared defaults into the stored
  // Fleet, and flotilla applies them itself (from defaults.ts) when it reads the spec.
  const told = node.default !== undefined && !(Array.isArray(node.default) && node.default.length === 0) ? ` Default: ${JSON.stringify(node.default)}.` : '';
  if (node.description !== '' || told !== '') out.description = `${node.description}${told}`.trim();
  if (node.nullable) out.nullable = true;
  if (node.enum) out.enum = node.enum;
  if (node.pattern !== undefined) out.pattern = node.pattern;
  if (node.minimum !== undefined) out.minimum = node.minimum;
  if (node.maximum !== undefined) out.maximum = node.maximum;
  if (node.minItems !== undefined) out.minItems = node.minItems;
  if (node.required) out.required = node.required;
  if (node.items) out.items = toOpenApi(node.items);
  if (node.properties) out.properties = Object.fromEntries(Object.entries(node.properties).map(([k, v]) => [k, toOpenApi(v)]));
  // `additionalProperties: false` is not allowed beside properties in a structural schema: the
  // apiserver prunes (or, with strict field validation, refuses) unknown fields instead.
  if (node.additionalProperties) out.additionalProperties = toOpenApi(node.additionalProperties);
  return out;
}

/** The Fleet's status, written by flotilla (src/hub/fleet-status.ts). */
const FLEET_STATUS = {
  type: 'object',
  properties: {
    observedGeneration: { type: 'integer', format: 'int64' },
    conditions: {
      type: 'array',
      items: {
        type: 'object',
        required: ['type', 'status'],
        properties: {
          type: { type: 'string', description: 'Accepted (the spec is the running configuration) or Ready (every cached resource of every member has listed)' },
          status: { type: 'string', enum: ['True', 'False', 'Unknown'] },
          reason: { type: 'string' },
          message: { type: 'string' },
          lastTransitionTime: { type: 'string', format: 'date-time' },
          observedGeneration: { type: 'integer', format: 'int64' },
        },
      },
    },
    members: {
      type: 'array',
      items: {
        type: 'object',
        required: ['name'],
        properties: {
          name: { type: 'string' },
          connected: { type: 'boolean', description: "the member answers flotilla's heartbeat" },
          syncedResources: { type: 'integer', description: 'cached scopes of this member that have listed' },
          resources: { type: 'integer', description: 'cached scopes of this member' },
          lastError: { type: 'string' },
        },
      },
    },
  },
};

const CRD_HEADER = `# Generated from src/registry/fleet-schema.ts by \`npm run gen:config\`: edit the schema, not this file.
#
# The fleet configuration as a custom resource in a hub cluster: the fields of fleet.yaml
# (docs/configuration.md), one object per fleet, read and watched by \`flotilla --fleet NAME
# --hub-kubeconfig FILE\` (or \`--hub-in-cluster\`), src/hub/. The apiserver checks a Fleet against
# the schema the file is checked with (unknown fields are refused or pruned); flotilla checks the
# rest and reports it in the status condition Accepted=False. Members' credentials are Secrets of
# the hub, referenced by name: \`kubeconfigSecretRef\` (key \`kubeconfig\`), or \`server\` with
# \`caSecretRef\` (key \`ca.crt\`) and \`tokenSecretRef\` (key \`token\`); \`key\` names another key.
#
# flotilla needs, on the hub: get/list/watch fleets.flotilla.io, patch fleets/status, and
# list/watch secrets in the namespaces the Fleet's references name.
`;

/** deploy/crds/fleets.flotilla.io.yaml (and the chart's copy). */
export function renderFleetCrd(): string {
  const crd = {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: 'fleets.flotilla.io' },
    spec: {
      group: 'flotilla.io',
      scope: 'Cluster',
      names: { plural: 'fleets', singular: 'fleet', kind: 'Fleet' },
      versions: [{
        name: 'v1alpha1',
        served: true,
        storage: true,
        subresources: { status: {} },
        additionalPrinterColumns: [
          { name: 'Accepted', type: 'string', jsonPath: '.status.conditions[?(@.type=="Accepted")].status' },
          { name: 'Ready', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].status' },
          { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
        ],
        schema: { openAPIV3Schema: { type: 'object', properties: { spec: toOpenApi(fleetObjectSchema()), status: FLEET_STATUS } } },
      }],
    },
  };
  return CRD_HEADER + toYaml(crd, { lineWidth: 0 });
}

/** The generated files, by path from the project root. */
export function generatedConfigFiles(): Record<string, string> {
  const crd = renderFleetCrd();
  return {
    'docs/configuration.md': renderConfigReference(),
    'deploy/crds/fleets.flotilla.io.yaml': crd,
    'deploy/helm/flotilla/crds/fleets.flotilla.io.yaml': crd,
  };
}
