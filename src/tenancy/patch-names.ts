import { isJsonObject } from '../util/json-object.js';
import { memberward, type Direction, type Json, type ObjectNaming } from './naming-direction.js';
import { type ObjectType } from './reference-names.js';
import { rewriteObject } from './object-names.js';

/** The resource a patch targets: the member's group (as the request resolved it), its kind and scope. */
export interface PatchTarget {
  group: string;
  kind: string;
  namespaced: boolean;
}

/**
 * Tenant → member for a patch body. Merge, strategic merge and apply patches are partial objects:
 * renamed as objectToMember would, typed by the target (a patch may omit apiVersion and kind).
 * A JSON patch's ops are renamed one by one: an op's value and path (and `from`) are placed in an
 * otherwise empty object of the target's kind, which is renamed, and read back; so `/subjects/-`
 * with a ServiceAccount, `/metadata/namespace` or a tree label's key in a path are renamed, and
 * any other op is kept. An op whose renaming needs a sibling the op does not carry is kept as
 * written: `/roleRef/name` without the roleRef's kind, `/rules/0/resourceNames/0` without the
 * rule's resources, `/subjects/0/name` without the subject's kind.
 */
export function patchToMember(body: unknown, contentType: string, target: PatchTarget, n: ObjectNaming): unknown {
  const d = memberward(n);
  const type: ObjectType = { group: target.group, kind: target.kind, namespaced: target.namespaced };
  const mediaType = contentType.split(';')[0]!.trim().toLowerCase();
  if (mediaType === 'application/json-patch+json') return Array.isArray(body) ? body.map((op) => jsonPatchOpToMember(op, d, type)) : body;
  if (isJsonObject(body)) rewriteObject(body, d, type);
  return body;
}

/** JSON pointer tokens (RFC 6901). */
function pointerTokens(pointer: string): string[] | undefined {
  if (pointer !== '' && !pointer.startsWith('/')) return undefined;
  return pointer === '' ? [] : pointer.slice(1).split('/').map((t) => t.replace(/~1/g, '/').replace(/~0/g, '~'));
}

function pointerOf(tokens: readonly string[]): string {
  return tokens.map((t) => `/${t.replace(/~/g, '~0').replace(/\//g, '~1')}`).join('');
}

const ARRAY_INDEX = /^(0|[1-9][0-9]*|-)$/;

/**
 * A pointer and the value there, renamed: the value is placed at the pointer in an otherwise
 * empty object of the target's type, which is renamed, then read back along the pointer. Array
 * indices become a one-element array (every element of a reference list renames alike); a map
 * key the rename changed (a tree label's) is read back under its new name.
 */
function throughSkeleton(pointer: string, value: unknown, d: Direction, type: ObjectType): { pointer: string; value: unknown } {
  const tokens = pointerTokens(pointer);
  // Not a pointer: the member refuses the patch as the tenant wrote it.
  if (tokens === undefined) return { pointer, value };
  if (tokens.length === 0) {
    if (isJsonObject(value)) rewriteObject(value, d, type);
    return { pointer, value };
  }
  const root: Json = {};
  let parent: Json | unknown[] = root;
  tokens.forEach((token, i) => {
    const child = i === tokens.length - 1 ? value : ARRAY_INDEX.test(tokens[i + 1]!) ? [] : {};
    if (Array.isArray(parent)) parent.push(child);
    else parent[token] = child;
    parent = child as Json | unknown[];
  });
  rewriteObject(root, d, type);
  const renamed: string[] = [];
  let here: unknown = root;
  for (const token of tokens) {
    if (Array.isArray(here)) {
      renamed.push(token);
      here = here[0];
    } else if (isJsonObject(here)) {
      // The skeleton holds one key per level: the token, or what the rename made of it.
      const key = Object.keys(here)[0] ?? token;
      renamed.push(key);
      here = here[key];
    } else renamed.push(token);
  }
  return { pointer: pointerOf(renamed), value: here };
}

function jsonPatchOpToMember(op: unknown, d: Direction, type: ObjectType): unknown {
  if (!isJsonObject(op) || typeof op.path !== 'string') return op;
  const out: Json = { ...op };
  const hasValue = 'value' in op;
  const renamed = throughSkeleton(op.path, hasValue ? structuredClone(op.value) : null, d, type);
  out.path = renamed.pointer;
  if (hasValue) out.value = renamed.value;
  if (typeof op.from === 'string') out.from = throughSkeleton(op.from, null, d, type).pointer;
  return out;
}
