import { badRequest } from './status.js';

/**
 * Label selectors as the apiserver parses them from `?labelSelector=`: `a=b`, `a==b`, `a!=b`,
 * `a in (x,y)`, `a notin (x,y)`, `a`, `!a`, `a>1`, `a<1`, comma-separated (AND).
 */
export type LabelOperator = 'Equals' | 'NotEquals' | 'In' | 'NotIn' | 'Exists' | 'DoesNotExist' | 'GreaterThan' | 'LessThan';

export interface LabelRequirement {
  key: string;
  operator: LabelOperator;
  values: string[];
}

export type LabelSelector = LabelRequirement[];

const NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

export function validateLabelKey(key: string): string | undefined {
  const slash = key.indexOf('/');
  const prefix = slash >= 0 ? key.slice(0, slash) : undefined;
  const name = slash >= 0 ? key.slice(slash + 1) : key;
  if (prefix !== undefined && (prefix.length === 0 || prefix.length > 253 || !DNS_SUBDOMAIN.test(prefix))) {
    return `prefix part of ${JSON.stringify(key)} must be a DNS-1123 subdomain`;
  }
  if (name.length === 0 || name.length > 63 || !NAME.test(name)) {
    return `name part of ${JSON.stringify(key)} must be 63 characters or less, begin and end with an alphanumeric character, with '-', '_' or '.' between`;
  }
  return undefined;
}

export function validateLabelValue(value: string): string | undefined {
  if (value === '') return undefined;
  if (value.length > 63 || !NAME.test(value)) {
    return `label value ${JSON.stringify(value)} must be 63 characters or less, empty, or begin and end with an alphanumeric character, with '-', '_' or '.' between`;
  }
  return undefined;
}

type Token = { kind: 'id'; text: string } | { kind: 'op'; text: string };

function tokenize(s: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < s.length) {
    const c = s[i]!;
    if (/\s/.test(c)) {
      i++;
      continue;
    }
    const two = s.slice(i, i + 2);
    if (two === '==' || two === '!=') {
      tokens.push({ kind: 'op', text: two });
      i += 2;
      continue;
    }
    if ('=!(),<>'.includes(c)) {
      tokens.push({ kind: 'op', text: c });
      i++;
      continue;
    }
    let j = i;
    while (j < s.length && !/\s/.test(s[j]!) && !'=!(),<>'.includes(s[j]!)) j++;
    tokens.push({ kind: 'id', text: s.slice(i, j) });
    i = j;
  }
  return tokens;
}

export function parseLabelSelector(s: string): LabelSelector {
  const tokens = tokenize(s);
  const reqs: LabelRequirement[] = [];
  let pos = 0;
  const fail = (why: string) => badRequest(`unable to parse requirement: ${why} in label selector ${JSON.stringify(s)}`);
  const peek = () => tokens[pos];
  const next = () => tokens[pos++];
  const expectId = (what: string): string => {
    const t = next();
    if (!t || t.kind !== 'id') throw fail(`found ${t ? `'${t.text}'` : 'end of input'}, expected: ${what}`);
    return t.text;
  };
  if (tokens.length === 0) return reqs;
  while (pos < tokens.length) {
    let negated = false;
    if (peek()?.kind === 'op' && peek()!.text === '!') {
      negated = true;
      pos++;
    }
    const key = expectId('identifier');
    const keyError = validateLabelKey(key);
    if (keyError) throw badRequest(`unable to parse requirement: ${keyError}`);
    const t = peek();
    let req: LabelRequirement;
    if (negated) {
      if (t && !(t.kind === 'op' && t.text === ',')) throw fail(`found '${t.text}', expected: ',' or end of input`);
      req = { key, operator: 'DoesNotExist', values: [] };
    } else if (!t || (t.kind === 'op' && t.text === ',')) {
      req = { key, operator: 'Exists', values: [] };
    } else if (t.kind === 'op' && ['=', '==', '!=', '<', '>'].includes(t.text)) {
      pos++;
      const nt = peek();
      // `a=` selects the empty value.
      const value = nt && nt.kind === 'id' ? (pos++, nt.text) : '';
      const op: LabelOperator = t.text === '!=' ? 'NotEquals' : t.text === '<' ? 'LessThan' : t.text === '>' ? 'GreaterThan' : 'Equals';
      if ((op === 'LessThan' || op === 'GreaterThan') && !/^-?[0-9]+$/.test(value)) throw fail(`for 'Gt', 'Lt' operators, the value must be an integer`);
      req = { key, operator: op, values: [value] };
    } else if (t.kind === 'id' && (t.text === 'in' || t.text === 'notin')) {
      pos++;
      const open = next();
      if (!open || open.text !== '(') throw fail(`found ${open ? `'${open.text}'` : 'end of input'}, expected: '('`);
      const values: string[] = [];
      for (;;) {
        const v = peek();
        if (v?.kind === 'id') {
          values.push(v.text);
          pos++;
        } else {
          values.push('');
        }
        const sep = next();
        if (!sep) throw fail(`found end of input, expected: ')'`);
        if (sep.text === ')') break;
        if (sep.text !== ',') throw fail(`found '${sep.text}', expected: ',' or ')'`);
      }
      const filtered = values.length === 1 && values[0] === '' ? [] : values;
      if (filtered.length === 0) throw fail(`for 'in', 'notin' operators, values set can't be empty`);
      req = { key, operator: t.text === 'in' ? 'In' : 'NotIn', values: filtered };
    } else {
      throw fail(`found '${t.text}', expected: '=', '!=', '==', 'in', notin'`);
    }
    for (const v of req.operator === 'LessThan' || req.operator === 'GreaterThan' ? [] : req.values) {
      const valueError = validateLabelValue(v);
      if (valueError) throw badRequest(`unable to parse requirement: ${valueError}`);
    }
    reqs.push(req);
    const sep = next();
    if (sep === undefined) break;
    if (!(sep.kind === 'op' && sep.text === ',')) throw fail(`found '${sep.text}', expected: ',' or end of input`);
    if (pos >= tokens.length) throw fail(`found end of input, expected: identifier`);
  }
  return reqs;
}

export function isEmptySelector(sel: LabelSelector | undefined): boolean {
  return !sel || sel.length === 0;
}

export function matchesLabels(sel: LabelSelector, labels: Record<string, string> | undefined): boolean {
  for (const r of sel) {
    const has = labels !== undefined && Object.prototype.hasOwnProperty.call(labels, r.key);
    const v = has ? labels![r.key]! : undefined;
    switch (r.operator) {
      case 'Equals':
      case 'In':
        if (!has || !r.values.includes(v!)) return false;
        break;
      // As in Kubernetes: an object without the key matches `!=` and `notin`.
      case 'NotEquals':
      case 'NotIn':
        if (has && r.values.includes(v!)) return false;
        break;
      case 'Exists':
        if (!has) return false;
        break;
      case 'DoesNotExist':
        if (has) return false;
        break;
      case 'GreaterThan':
      case 'LessThan': {
        if (!has || !/^-?[0-9]+$/.test(v!)) return false;
        const n = BigInt(v!);
        const bound = BigInt(r.values[0]!);
        if (r.operator === 'GreaterThan' ? !(n > bound) : !(n < bound)) return false;
        break;
      }
    }
  }
  return true;
}

/** A metav1.LabelSelector object (matchLabels, matchExpressions) as requirements. */
export function labelSelectorFromObject(obj: {
  matchLabels?: Record<string, string>;
  matchExpressions?: { key: string; operator: string; values?: string[] }[];
}): LabelSelector {
  const reqs: LabelRequirement[] = [];
  for (const [key, value] of Object.entries(obj.matchLabels ?? {})) reqs.push({ key, operator: 'Equals', values: [value] });
  for (const e of obj.matchExpressions ?? []) {
    const operator = ({ In: 'In', NotIn: 'NotIn', Exists: 'Exists', DoesNotExist: 'DoesNotExist' } as const)[e.operator as 'In'];
    if (!operator) throw new Error(`unknown selector operator ${JSON.stringify(e.operator)}`);
    reqs.push({ key: e.key, operator, values: e.values ?? [] });
  }
  return reqs;
}

/** A selector written back as text the parser reads as the same requirements. */
export function formatLabelSelector(sel: LabelSelector): string {
  return sel
    .map((r) => {
      switch (r.operator) {
        case 'Exists': return r.key;
        case 'DoesNotExist': return `!${r.key}`;
        case 'Equals': return `${r.key}=${r.values[0] ?? ''}`;
        case 'NotEquals': return `${r.key}!=${r.values[0] ?? ''}`;
        case 'GreaterThan': return `${r.key}>${r.values[0] ?? ''}`;
        case 'LessThan': return `${r.key}<${r.values[0] ?? ''}`;
        case 'In': return `${r.key} in (${r.values.join(',')})`;
        case 'NotIn': return `${r.key} notin (${r.values.join(',')})`;
      }
    })
    .join(',');
}
