import { parse as parseYaml } from 'yaml';
import { badRequest } from './status.js';

/**
 * Write bodies in JSON or YAML (apply patches), read and written again wherever flotilla must
 * change something in one: the depth guards live here, so no reader of a hostile body can skip
 * them.
 */
export type BodyFormat = 'json' | 'yaml';

/** The body's format by its content type, or undefined for one flotilla does not read (protobuf, anything else). */
export function bodyFormat(contentType: string | undefined): BodyFormat | undefined {
  const type = (contentType ?? '').split(';')[0]!.trim().toLowerCase();
  if (type === 'application/json' || type.endsWith('+json')) return 'json';
  if (type === 'application/apply-patch+yaml' || type === 'application/yaml') return 'yaml';
  return undefined;
}

/** The body parsed; 400 when it does not parse or nests deeper than flotilla parses. */
export function parseBody(text: string, format: BodyFormat): unknown {
  // The YAML parser recurses per level and runs out of stack near 800; on a nearly exhausted
  // stack V8 can even abort the process (a regex compiled there fails as out of memory).
  if (format === 'yaml' && yamlTooDeep(text)) throw badRequest('the request body is nested too deeply');
  try {
    return format === 'json' ? JSON.parse(text) : parseYaml(text);
  } catch (e) {
    throw badRequest(`the request body is not valid ${format === 'json' ? 'JSON' : 'YAML'}: ${(e as Error).message}`);
  }
}

/** A body written as JSON (which every one of these content types accepts); 400 when it nests too deeply to write. */
export function bodyBytes(doc: unknown): Buffer {
  try {
    return Buffer.from(JSON.stringify(doc));
  } catch (e) {
    // JSON.parse takes any depth; writing it back recurses, and a hostile body runs out of stack.
    if (e instanceof RangeError) throw badRequest('the request body is nested too deeply');
    throw e;
  }
}

// Far beyond any manifest (CRD schemas nest a few dozen levels), far below the parser's limit.
const MAX_YAML_FLOW_DEPTH = 200;
const MAX_YAML_INDENT = 400;

/** Flow nesting (brackets outside quotes) or block indentation past what flotilla parses. */
export function yamlTooDeep(text: string): boolean {
  let depth = 0;
  let quote = '';
  let indent = 0;
  let lineStart = true;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]!;
    if (quote) {
      if (ch === '\\' && quote === '"') i++;
      else if (ch === quote) quote = '';
      continue;
    }
    if (ch === '\n') {
      lineStart = true;
      indent = 0;
      continue;
    }
    if (lineStart && ch === ' ') {
      if (++indent > MAX_YAML_INDENT) return true;
      continue;
    }
    lineStart = false;
    if (ch === '"' || ch === "'") quote = ch;
    else if (ch === '[' || ch === '{') {
      if (++depth > MAX_YAML_FLOW_DEPTH) return true;
    } else if ((ch === ']' || ch === '}') && depth > 0) depth--;
  }
  return false;
}
