import { isAbsolute, resolve } from 'node:path';
import { validateLabelKey, validateLabelValue } from '../api/label-selector.js';

/**
 * The fleet document's field checks, shared by its section parsers: each check names a problem
 * `<source>: <field path>: <what is wrong>` and goes on, so one validation reports every problem.
 * Field names, types and bounds are the schema's (fleet-schema.ts, checked first); these checks
 * narrow the values for the parsers, whose own checks are what a schema cannot say.
 */

export type Obj = Record<string, unknown>;

/** A problem of a fleet document: the field's path as the file writes it (`clusters[0].name`), and what is wrong. */
export interface ConfigProblem {
  path: string;
  message: string;
}

export const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
export const DNS_LABEL_DESC = "a DNS-1123 label (lowercase letters, digits, '-')";
export const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
// A plural resource name, then its API group if not core: `secrets`, `leases.coordination.k8s.io`.
export const RESOURCE_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

export class Checker {
  readonly problems: ConfigProblem[] = [];
  /** `baseDir`: what relative paths are resolved against; without one (a Fleet object has no directory) they are refused. */
  constructor(private readonly file: string, private readonly baseDir?: string) {}

  /** Each problem as `<source>: <field path>: <what is wrong>`. */
  get errors(): string[] {
    return this.problems.map((p) => `${this.file}: ${p.path}: ${p.message}`);
  }

  fail(path: string, message: string): void {
    this.problems.push({ path, message });
  }

  object(v: unknown, path: string): Obj | undefined {
    if (typeof v !== 'object' || v === null || Array.isArray(v)) {
      this.fail(path, `must be a mapping, got ${describe(v)}`);
      return undefined;
    }
    return v as Obj;
  }

  string(v: unknown, path: string, opts: { required?: boolean; pattern?: RegExp; patternDesc?: string } = {}): string | undefined {
    if (v === undefined || v === null) {
      if (opts.required) this.fail(path, 'is required');
      return undefined;
    }
    if (typeof v !== 'string') {
      this.fail(path, `must be a string, got ${describe(v)}`);
      return undefined;
    }
    if (opts.pattern && !opts.pattern.test(v)) {
      this.fail(path, `must be ${opts.patternDesc}, got ${JSON.stringify(v)}`);
      return undefined;
    }
    return v;
  }

  /** `v` when it is true or false; undefined when absent or not (a failure named at `path`). */
  boolean(v: unknown, path: string): boolean | undefined {
    if (v === undefined) return undefined;
    if (typeof v === 'boolean') return v;
    this.fail(path, 'must be true or false');
    return undefined;
  }

  /** `v` when it is an integer (its bounds are the schema's); undefined (a failure named at `path` when given). */
  integer(v: unknown, path: string): number | undefined {
    if (v === undefined) return undefined;
    if (typeof v === 'number' && Number.isInteger(v)) return v;
    this.fail(path, `must be an integer, got ${describe(v)}`);
    return undefined;
  }

  stringList(v: unknown, path: string, check?: (s: string, p: string) => void): string[] | undefined {
    if (v === undefined || v === null) return undefined;
    if (!Array.isArray(v)) {
      this.fail(path, `must be a list, got ${describe(v)}`);
      return undefined;
    }
    const out: string[] = [];
    v.forEach((item, i) => {
      const s = this.string(item, `${path}[${i}]`);
      if (s !== undefined) {
        check?.(s, `${path}[${i}]`);
        out.push(s);
      }
    });
    return out;
  }

  labels(v: unknown, path: string): Record<string, string> {
    if (v === undefined || v === null) return {};
    const o = this.object(v, path);
    const out: Record<string, string> = {};
    for (const [k, val] of Object.entries(o ?? {})) {
      const keyErr = validateLabelKey(k);
      if (keyErr) this.fail(`${path}.${k}`, keyErr);
      const s = this.string(val, `${path}.${k}`);
      if (s === undefined) continue;
      const valErr = validateLabelValue(s);
      if (valErr) this.fail(`${path}.${k}`, valErr);
      out[k] = s;
    }
    return out;
  }

  /** `p` made absolute against the document's directory (refused when it has none). */
  absolutePath(p: string, path: string): string {
    if (isAbsolute(p)) return p;
    if (this.baseDir === undefined) this.fail(path, `must be an absolute path (there is no file to be relative to), got ${JSON.stringify(p)}`);
    return resolve(this.baseDir ?? '/', p);
  }
}

export function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'a list';
  return typeof v === 'object' ? 'a mapping' : `${typeof v} ${JSON.stringify(v)}`;
}
