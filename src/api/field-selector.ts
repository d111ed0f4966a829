import { badRequest } from './status.js';

/** Field selectors as the apiserver parses them: `f=v`, `f==v`, `f!=v`, comma AND, `\` escapes. */
export interface FieldRequirement {
  field: string;
  operator: 'Equals' | 'NotEquals';
  value: string;
}

export type FieldSelector = FieldRequirement[];

function splitTerms(s: string): string[] {
  const terms: string[] = [];
  let cur = '';
  for (let i = 0; i < s.length; i++) {
    const c = s[i]!;
    if (c === '\\' && i + 1 < s.length) {
      cur += c + s[i + 1];
      i++;
    } else if (c === ',') {
      terms.push(cur);
      cur = '';
    } else {
      cur += c;
    }
  }
  terms.push(cur);
  return terms;
}

function unescape(v: string, selector: string): string {
  let out = '';
  for (let i = 0; i < v.length; i++) {
    const c = v[i]!;
    if (c === '\\') {
      const n = v[i + 1];
      if (n === undefined || !'\\,=!'.includes(n)) throw badRequest(`invalid field selector ${JSON.stringify(selector)}: invalid escape sequence`);
      out += n;
      i++;
    } else if (c === ',' || c === '=') {
      throw badRequest(`invalid field selector ${JSON.stringify(selector)}: unescaped ${c}`);
    } else {
      out += c;
    }
  }
  return out;
}

export function parseFieldSelector(s: string): FieldSelector {
  const reqs: FieldRequirement[] = [];
  if (s.trim() === '') return reqs;
  for (const term of splitTerms(s)) {
    if (term === '') continue;
    let op: FieldRequirement['operator'] | undefined;
    let at = -1;
    let len = 0;
    for (const [text, o] of [['!=', 'NotEquals'], ['==', 'Equals'], ['=', 'Equals']] as const) {
      const i = term.indexOf(text);
      if (i >= 0) {
        op = o;
        at = i;
        len = text.length;
        break;
      }
    }
    if (!op) throw badRequest(`invalid field selector ${JSON.stringify(s)}: ${JSON.stringify(term)} is not a selector term (expected field=value or field!=value)`);
    reqs.push({ field: term.slice(0, at).trim(), operator: op, value: unescape(term.slice(at + len), s) });
  }
  return reqs;
}

// The JSON paths flotilla follows: members one after another, no brackets, no escapes.
const SIMPLE_JSON_PATH = /^(\.[A-Za-z0-9_$-]+)+$/;

/**
 * The field a CustomResourceDefinition's `selectableFields[].jsonPath` (`.spec.color`) makes
 * selectable, named as the apiserver names it (`spec.color`); undefined for a path written
 * otherwise (brackets, quoted keys), which flotilla does not follow: such a field is not offered.
 */
export function crdFieldName(jsonPath: string): string | undefined {
  return SIMPLE_JSON_PATH.test(jsonPath) ? jsonPath.slice(1) : undefined;
}

export function validateFieldSelector(sel: FieldSelector, allowedFields: ReadonlySet<string>): void {
  // The apiserver's own wording, which clients and users recognise.
  for (const r of sel) {
    if (!allowedFields.has(r.field)) throw badRequest(`field label not supported: ${r.field}`);
  }
}

export function matchesFields(sel: FieldSelector, values: Record<string, string>): boolean {
  return sel.every((r) => (values[r.field] === r.value) === (r.operator === 'Equals'));
}

/**
 * The name a list or watch is about when its field selector requires `metadata.name=<name>`: the
 * apiserver authorizes such a request as one naming that object (so RBAC resourceNames apply). A
 * selector that does not parse names nothing (the read then fails on it anyway).
 */
export function fieldSelectorName(selector: string | undefined): string | undefined {
  if (!selector) return undefined;
  try {
    return parseFieldSelector(selector).find((r) => r.field === 'metadata.name' && r.operator === 'Equals')?.value;
  } catch {
    return undefined;
  }
}

/** A selector written back as text the parser reads as the same requirements (values escaped). */
export function formatFieldSelector(sel: FieldSelector): string {
  return sel.map((r) => `${r.field}${r.operator === 'Equals' ? '=' : '!='}${r.value.replace(/[\\,=!]/g, (c) => `\\${c}`)}`).join(',');
}
