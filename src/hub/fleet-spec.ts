import { ConfigError, parseFleetDocument } from '../registry/config.js';
import type { FleetConfig } from '../registry/fleet-config.js';
import { isJsonObject } from '../util/json-object.js';

/**
 * A Fleet object's `spec` as a FleetConfig: the fields of fleet.yaml, validated by the same code
 * (parseFleetDocument) so that every message reads as the file's would, named `Fleet/<name>`.
 * What a Fleet has and the file has not: member credentials in Secrets of the hub, referenced by
 * name, in place of files on flotilla's disk:
 * - `kubeconfigSecretRef: {namespace, name, key?}` (key `kubeconfig`) in place of `kubeconfig`;
 * - with `server`: `caSecretRef` (key `ca.crt`) in place of `caFile`, `tokenSecretRef` (key
 *   `token`) in place of `tokenFile`.
 * Each Secret's value is written to a file of its own (`store`), named by its content, so that a
 * rotated credential is a changed connection and the member's client is made anew. A Secret that
 * is missing (or lacks its key) is no error of the Fleet: that member is left out of the running
 * configuration and its error reported per member, the others are served.
 */
export interface SecretRef {
  namespace: string;
  name: string;
  key: string;
}

/** A Secret's value, or why there is none (`Secret ns/x not found`). */
export type SecretValue = { value: Buffer } | { error: string };

export type CredentialKind = 'kubeconfig' | 'ca' | 'token';

export interface SpecContext {
  /** The Fleet's name: messages say `Fleet/<name>`. */
  name: string;
  secret(ref: SecretRef): SecretValue;
  /** Keeps a credential and returns the absolute path of the file holding it. */
  store(cluster: string, kind: CredentialKind, value: Buffer): string;
}

export interface FleetFromSpec {
  config: FleetConfig;
  /** Members left out of `config` for want of a credential, and why. */
  memberErrors: Map<string, string>;
}

/** The Secret-reference fields of a cluster, the file field each stands for, and its default key. */
const REFS = [
  { field: 'kubeconfigSecretRef', file: 'kubeconfig', kind: 'kubeconfig', key: 'kubeconfig' },
  { field: 'caSecretRef', file: 'caFile', kind: 'ca', key: 'ca.crt' },
  { field: 'tokenSecretRef', file: 'tokenFile', kind: 'token', key: 'token' },
] as const;

/** Where a credential stands while its Secret cannot be read (never opened: the member is left out). */
const UNRESOLVED = '/nonexistent/flotilla-hub-credential';

export function fleetSource(name: string): string {
  return `Fleet/${name}`;
}

/** Every Secret a spec references (well-formed references only), for the caller to watch. */
export function secretRefs(spec: unknown): SecretRef[] {
  const out: SecretRef[] = [];
  if (!isJsonObject(spec) || !Array.isArray(spec.clusters)) return out;
  for (const cluster of spec.clusters) {
    if (!isJsonObject(cluster)) continue;
    for (const r of REFS) {
      const ref = readRef(cluster[r.field], r.key);
      if (ref && !Array.isArray(ref)) out.push(ref);
    }
  }
  return out;
}

/** A reference, or the problems with it as [field, message] pairs. */
function readRef(raw: unknown, defaultKey: string): SecretRef | [string, string][] | undefined {
  if (raw === undefined || raw === null) return undefined;
  if (!isJsonObject(raw)) return [['', 'must be a mapping with namespace and name']];
  const problems: [string, string][] = [];
  for (const k of Object.keys(raw)) if (!['namespace', 'name', 'key'].includes(k)) problems.push([`.${k}`, 'unknown field; allowed: namespace, name, key']);
  const str = (k: string, required: boolean): string | undefined => {
    const v = raw[k];
    if (v === undefined || v === null || v === '') {
      if (required) problems.push([`.${k}`, 'is required']);
      return undefined;
    }
    if (typeof v !== 'string') problems.push([`.${k}`, `must be a string, got ${typeof v}`]);
    return typeof v === 'string' ? v : undefined;
  };
  const namespace = str('namespace', true);
  const name = str('name', true);
  const key = str('key', false) ?? defaultKey;
  if (problems.length > 0 || namespace === undefined || name === undefined) return problems;
  return { namespace, name, key };
}

export function fleetConfigFromSpec(spec: unknown, ctx: SpecContext): FleetFromSpec {
  const source = fleetSource(ctx.name);
  const errors: string[] = [];
  const memberErrors = new Map<string, string>();
  /** Field renames for messages: the file field a cluster's reference stood for, named as written. */
  const renames: [string, string][] = [];
  let doc: unknown = spec;
  if (isJsonObject(spec) && Array.isArray(spec.clusters)) {
    const clusters = spec.clusters.map((raw: unknown, i: number) => {
      if (!isJsonObject(raw)) return raw;
      const out: Record<string, unknown> = { ...raw };
      const p = `clusters[${i}]`;
      const cluster = typeof raw.name === 'string' ? raw.name : `#${i}`;
      for (const r of REFS) {
        delete out[r.field];
        const ref = readRef(raw[r.field], r.key);
        if (ref === undefined) continue;
        if (raw[r.file] !== undefined) {
          errors.push(`${source}: ${p}: give ${r.file} or ${r.field}, not both`);
          continue;
        }
        renames.push([`${p}.${r.file}`, `${p}.${r.field}`]);
        if (Array.isArray(ref)) {
          for (const [field, msg] of ref) errors.push(`${source}: ${p}.${r.field}${field}: ${msg}`);
          continue;
        }
        const got = ctx.secret(ref);
        if ('error' in got) {
          if (!memberErrors.has(cluster)) memberErrors.set(cluster, `${r.field}: ${got.error}`);
          out[r.file] = UNRESOLVED;
        } else {
          out[r.file] = ctx.store(cluster, r.kind, got.value);
        }
      }
      return out;
    });
    doc = { ...spec, clusters };
  }
  let config: FleetConfig | undefined;
  try {
    config = parseFleetDocument(doc, { source });
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    errors.push(...e.message.split('\n').map((line) => rename(line, source, renames)));
  }
  if (errors.length > 0 || !config) throw new ConfigError(errors.join('\n'));
  return { config: { ...config, clusters: config.clusters.filter((c) => !memberErrors.has(c.name)) }, memberErrors };
}

/** A message about a file field a reference stood for, named by the reference (`clusters[0].caSecretRef: only goes with server`). */
function rename(line: string, source: string, renames: [string, string][]): string {
  for (const [from, to] of renames) {
    const prefix = `${source}: ${from}:`;
    if (line.startsWith(prefix)) return `${source}: ${to}:${line.slice(prefix.length)}`;
  }
  return line;
}
