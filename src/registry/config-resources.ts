import type { Checker } from './config-checker.js';
import { DNS_LABEL, DNS_LABEL_DESC, DNS_SUBDOMAIN } from './config-checker.js';
import type { LabelSelectorSpec, ResourceRule } from './fleet-config.js';

const VERSION = /^v[0-9]+((alpha|beta)[0-9]+)?$/;

/**
 * The fleet file's `resources`: at least one rule, one per group, version and resource, each
 * naming its clusters (among `clusterNames`) or selecting them by label, not both.
 */
export function parseResources(c: Checker, raw: unknown, clusterNames: ReadonlySet<string>): ResourceRule[] {
  const resources: ResourceRule[] = [];
  if (!Array.isArray(raw) || raw.length === 0) {
    c.fail('resources', 'must list at least one resource');
    return resources;
  }
  const seen = new Set<string>();
  raw.forEach((item, i) => {
    const p = `resources[${i}]`;
    const o = c.object(item, p);
    if (!o) return;
    const group = o.group === undefined || o.group === '' ? '' : c.string(o.group, `${p}.group`, { pattern: DNS_SUBDOMAIN, patternDesc: 'an API group (a DNS subdomain, or "" for core)' });
    const version = c.string(o.version, `${p}.version`, { required: true, pattern: VERSION, patternDesc: 'an API version such as v1 or v1beta1' });
    const resource = c.string(o.resource, `${p}.resource`, { required: true, pattern: DNS_LABEL, patternDesc: 'a lowercase plural resource name such as pods' });
    const namespaces = c.stringList(o.namespaces, `${p}.namespaces`, (s, sp) => {
      if (!DNS_LABEL.test(s)) c.fail(sp, `must be ${DNS_LABEL_DESC}, got ${JSON.stringify(s)}`);
    });
    const ruleClusters = c.stringList(o.clusters, `${p}.clusters`, (s, sp) => {
      if (!clusterNames.has(s)) c.fail(sp, `no cluster named ${JSON.stringify(s)} in clusters`);
    });
    const clusterSelector = o.clusterSelector === undefined ? undefined : parseClusterSelector(c, o.clusterSelector, `${p}.clusterSelector`);
    if (ruleClusters && clusterSelector) c.fail(p, 'give clusters or clusterSelector, not both');
    if (version === undefined || resource === undefined || group === undefined) return;
    const id = `${group}/${version}/${resource}`;
    if (seen.has(id)) c.fail(p, `duplicate rule for ${group ? `${resource}.${group}` : resource}/${version}; merge its clusters and namespaces into one rule`);
    seen.add(id);
    resources.push({
      group,
      version,
      resource,
      ...(namespaces ? { namespaces } : {}),
      ...(ruleClusters ? { clusters: ruleClusters } : {}),
      ...(clusterSelector ? { clusterSelector } : {}),
    });
  });
  return resources;
}

/** A rule's label selector of clusters, as a Kubernetes LabelSelector is written. */
function parseClusterSelector(c: Checker, raw: unknown, p: string): LabelSelectorSpec | undefined {
  const sel = c.object(raw, p);
  if (!sel) return undefined;
  const selector: LabelSelectorSpec = {};
  if (sel.matchLabels !== undefined) selector.matchLabels = c.labels(sel.matchLabels, `${p}.matchLabels`);
  if (sel.matchExpressions === undefined) return selector;
  if (!Array.isArray(sel.matchExpressions)) {
    c.fail(`${p}.matchExpressions`, 'must be a list');
    return selector;
  }
  const expressions: NonNullable<LabelSelectorSpec['matchExpressions']> = [];
  selector.matchExpressions = expressions;
  sel.matchExpressions.forEach((e, j) => {
    const ep = `${p}.matchExpressions[${j}]`;
    const eo = c.object(e, ep);
    if (!eo) return;
    const key = c.string(eo.key, `${ep}.key`, { required: true });
    const operator = c.string(eo.operator, `${ep}.operator`, { required: true, pattern: /^(In|NotIn|Exists|DoesNotExist)$/, patternDesc: 'one of In, NotIn, Exists, DoesNotExist' });
    const values = c.stringList(eo.values, `${ep}.values`) ?? [];
    if ((operator === 'In' || operator === 'NotIn') && values.length === 0) c.fail(`${ep}.values`, `must not be empty for ${operator}`);
    if ((operator === 'Exists' || operator === 'DoesNotExist') && values.length > 0) c.fail(`${ep}.values`, `must be empty for ${operator}`);
    if (key !== undefined && operator !== undefined) expressions.push({ key, operator: operator as 'In', values });
  });
  return selector;
}
