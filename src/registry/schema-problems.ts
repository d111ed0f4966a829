import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { type ConfigProblem, describe } from './config-checker.js';
import { FLEET_SCHEMA, type SchemaNode } from './fleet-schema.js';

/**
 * Checks a fleet document against FLEET_SCHEMA (or a Fleet object's spec against fleetObjectSchema()) with Ajv, every problem at once, each worded as the
 * section parsers word theirs (`must be an integer from 1 to 10000, got string "x"`), an unknown
 * field with the known one it most resembles.
 */
export function schemaProblems(doc: unknown, schema: SchemaNode = FLEET_SCHEMA): ConfigProblem[] {
  let validate = validators.get(schema);
  if (!validate) validators.set(schema, (validate = compile(schema)));
  if (validate(doc)) return [];
  const seen = new Set<string>();
  const problems: ConfigProblem[] = [];
  for (const e of validate.errors ?? []) {
    const problem = word(e, doc);
    const key = `${problem.path}\n${problem.message}`;
    if (seen.has(key)) continue;
    seen.add(key);
    problems.push(problem);
  }
  return problems;
}

const validators = new WeakMap<SchemaNode, ValidateFunction>();

function compile(schema: SchemaNode): ValidateFunction {
  // allErrors: a file's every problem in one answer; verbose: each error carries its schema node and value, to be worded.
  const ajv = new Ajv({ allErrors: true, verbose: true, strict: true });
  // The schema's own annotations (for messages, docs and examples), which validate nothing.
  ajv.addKeyword({ keyword: 'patternDescription', schemaType: 'string' });
  ajv.addKeyword({ keyword: 'minItemsDescription', schemaType: 'string' });
  ajv.addKeyword({ keyword: 'example' });
  return ajv.compile(withNullInEnums(schema));
}

/** JSON Schema's enum is checked apart from `nullable`: a nullable enum lists null too. */
function withNullInEnums(node: SchemaNode): SchemaNode {
  const out: SchemaNode = { ...node };
  if (node.enum && node.nullable) out.enum = [...node.enum, null as unknown as string];
  if (node.properties) out.properties = Object.fromEntries(Object.entries(node.properties).map(([k, v]) => [k, withNullInEnums(v)]));
  if (node.items) out.items = withNullInEnums(node.items);
  if (node.additionalProperties) out.additionalProperties = withNullInEnums(node.additionalProperties);
  return out;
}

function word(e: ErrorObject, doc: unknown): ConfigProblem {
  const at = fieldPath(e.instancePath, doc);
  const node = e.parentSchema as SchemaNode | undefined;
  const got = describe(e.data);
  switch (e.keyword) {
    case 'additionalProperties': {
      const name = String((e.params as { additionalProperty: string }).additionalProperty);
      const known = Object.keys(node?.properties ?? {});
      const path = join(at, name);
      const guess = closest(name, known);
      return { path, message: guess !== undefined ? `unknown field (did you mean ${join(at, guess)}?)` : `unknown field; allowed: ${known.join(', ')}` };
    }
    case 'required': {
      const name = String((e.params as { missingProperty: string }).missingProperty);
      const list = node?.properties?.[name]?.minItemsDescription;
      return { path: join(at, name), message: list !== undefined ? `must list at least ${list}` : 'is required' };
    }
    case 'type':
    case 'minimum':
    case 'maximum':
      return { path: at, message: typeMessage(node, got) };
    case 'pattern':
    case 'enum':
      return { path: at, message: `must be ${node?.patternDescription ?? e.message ?? 'valid'}, got ${JSON.stringify(e.data)}` };
    case 'minItems':
      return { path: at, message: `must list at least ${node?.minItemsDescription ?? String(node?.minItems)}` };
    default:
      return { path: at, message: e.message ?? e.keyword };
  }
}

function typeMessage(node: SchemaNode | undefined, got: string): string {
  switch (node?.type) {
    case 'object':
      return `must be a mapping, got ${got}`;
    case 'array':
      return `must be a list, got ${got}`;
    case 'boolean':
      return 'must be true or false';
    case 'integer':
      return node.minimum !== undefined && node.maximum !== undefined ? `must be an integer from ${node.minimum} to ${node.maximum}, got ${got}` : `must be an integer, got ${got}`;
    default:
      return `must be a string, got ${got}`;
  }
}

/** A JSON pointer into `doc` as the file's field path: `/clusters/0/name` is `clusters[0].name`. */
function fieldPath(pointer: string, doc: unknown): string {
  let path = '';
  let value = doc;
  for (const raw of pointer.split('/').slice(1)) {
    const segment = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    path = Array.isArray(value) ? `${path}[${segment}]` : join(path, segment);
    value = typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[segment] : undefined;
  }
  return path;
}

function join(path: string, field: string): string {
  return path === '' ? field : `${path}.${field}`;
}

/** The known name a misspelt one most resembles, if any is near enough (edit distance, ignoring case). */
export function closest(name: string, known: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const k of known) {
    const distance = editDistance(name.toLowerCase(), k.toLowerCase());
    if (distance < bestDistance) [best, bestDistance] = [k, distance];
  }
  return best !== undefined && bestDistance <= Math.max(2, Math.floor(Math.max(name.length, best.length) / 2)) ? best : undefined;
}

function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) row[j] = Math.min(previous[j]! + 1, row[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    previous = row;
  }
  return previous[b.length]!;
}
