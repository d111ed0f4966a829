import { matchesLabels, parseLabelSelector } from '../api/label-selector.js';
import { CLUSTER_TERM, combineSearchTerms, splitSearchTerms, type SearchTerms, type TimeBound } from '../api/search-terms.js';
import { CRDS, resourceName } from '../tenancy/tenant.js';
import { isGet } from './step-label-selector.js';
import type { ObjectPredicate, ViewedMeta, ViewedObject } from './read-view.js';
import type { ViewRequest, ViewStep } from './view-step.js';

/**
 * Fleet search (api/search-terms.ts): members by name and fleet-file labels, objects by name and
 * creation time, and by owner. It runs after the steps deciding what the caller may read, so a
 * search only ever narrows that: it never returns, counts or hints at anything else (an owner is
 * one the caller may read, in the members left: ViewRequest.ownersFound). Names are matched as the caller is shown them (a
 * tenant's without its prefix). A get applies the terms given as query parameters (404 for an
 * object they leave out); the label selector, terms and all, it ignores, as the apiserver does.
 */
export const searchSelection: ViewStep = {
  name: 'search',
  apply(view, req) {
    const terms = searchTermsOf(req);
    if (!terms) return;
    if (terms.clusterLabels.length > 0) view.keepLabelledClusters((c) => clusterSought(terms, req, c));
    else if (terms.clusterNames.length > 0) view.keepClusters((c) => clusterSought(terms, req, c));
    if (terms.nameContains.length > 0 || terms.namePrefixes.length > 0) view.require(namePredicate(terms, req));
    if (terms.createdAfter !== undefined || terms.createdBefore !== undefined) view.require(createdPredicate(terms.createdAfter, terms.createdBefore));
    if (terms.owner !== undefined) {
      // Only owners the caller may read, in the members left: another would be named by the answer.
      const found = (req.ownersFound ?? []).filter((f) => view.clustersLeft.includes(f.cluster));
      view.require(req.owners && found.length > 0 ? req.owners.ownedBy(found, terms.ownerDepth) : NOTHING_OWNED);
    }
  },
};

const NO_LABELS: Readonly<Record<string, string>> = Object.freeze({});

/** No owner found: nothing is owned. */
const NOTHING_OWNED: ObjectPredicate = { name: 'search:owner-not-found', needsMeta: false, test: () => false };

/** The request's search terms: its label selector's (not a get's) and its query parameters'. */
export function searchTermsOf(req: ViewRequest): SearchTerms | undefined {
  const inSelector = req.labelSelector && !isGet(req) ? splitSearchTerms(parseLabelSelector(req.labelSelector)).terms : undefined;
  return combineSearchTerms(inSelector, req.search);
}

function selectsClusters(terms: SearchTerms): boolean {
  return terms.clusterNames.length > 0 || terms.clusterLabels.length > 0;
}

/**
 * Whether the request's cluster terms keep a member (every member, without cluster terms), by its
 * labels as the fleet file has them now: what the search looks at, whatever the caller may read.
 */
export function clusterSought(terms: SearchTerms | undefined, req: Pick<ViewRequest, 'clusterLabels'>, cluster: string): boolean {
  return !terms || !selectsClusters(terms) || clusterSelected(terms, cluster, req.clusterLabels?.(cluster) ?? NO_LABELS);
}

/** Whether a member meets the cluster terms: by its name, and by its fleet-file labels. */
export function clusterSelected(terms: SearchTerms, cluster: string, labels: Readonly<Record<string, string>>): boolean {
  return matchesLabels(terms.clusterNames, { [CLUSTER_TERM]: cluster }) && matchesLabels(terms.clusterLabels, labels as Record<string, string>);
}

/**
 * Where the name the caller is shown starts in the stored one, or the shown name itself when it is
 * not a suffix of the stored one (a tenant's CRDs, `widgets.acme.example.com` shown as
 * `widgets.example.com`).
 */
interface ShownName {
  readonly id: string;
  from(name: string): number;
  renamed?(name: string): string;
}

const AS_STORED: ShownName = { id: '', from: () => 0 };

function shownNameOf(req: ViewRequest): ShownName {
  const naming = req.tenant;
  const info = req.resource.info;
  if (!naming || info.namespaced) return AS_STORED;
  const { tenant } = naming;
  if (tenant.policy(info.group, info.resource, false) !== 'owned') return AS_STORED;
  if (resourceName(info.group, info.resource) === CRDS) {
    return { id: `tenant-crds:${tenant.id}`, from: () => 0, renamed: (name) => tenant.tenantName(info.group, info.resource, name, 'owned') ?? name };
  }
  // Owned names are the tenant's prefix and the name it gives (tenant.tenantName, without a copy).
  const prefix = tenant.prefix;
  return { id: `tenant:${tenant.id}`, from: (name) => (name.length > prefix.length && name.startsWith(prefix) ? prefix.length : 0) };
}

/** name-contains and name-prefix, case-insensitive, on the name as shown; needles lower-cased once, names never copied. */
function namePredicate(terms: SearchTerms, req: ViewRequest): ObjectPredicate {
  const contains = terms.nameContains;
  const prefixes = terms.namePrefixes;
  const shown = shownNameOf(req);
  const renamed = shown.renamed;
  return {
    name: `search:name:${JSON.stringify([contains, prefixes, shown.id])}`,
    needsMeta: false,
    test(o: ViewedObject): boolean {
      const name = renamed ? renamed(o.name) : o.name;
      const from = shown.from(name);
      for (const p of prefixes) if (!foldedAt(name, from, p)) return false;
      for (const c of contains) if (!containsFolded(name, from, c)) return false;
      return true;
    },
  };
}

/**
 * Whether `needle` (lower-case) is in `text` from `from` on, ignoring case. V8 lower-cases a name
 * without upper-case characters (most Kubernetes names: DNS names) by returning it as it is, so
 * only a name that has some is copied. `from` is past an ASCII prefix (a tenant's), which
 * lower-casing leaves where it is.
 */
export function containsFolded(text: string, from: number, needle: string): boolean {
  return text.toLowerCase().indexOf(needle, from) !== -1;
}

/** Whether `text` continues at `from` with `needle` (lower-case), ignoring case. */
export function foldedAt(text: string, from: number, needle: string): boolean {
  return text.toLowerCase().startsWith(needle, from);
}

/** created-after (at or after) and created-before (before), on the meta record's creationTimestamp. */
function createdPredicate(after: TimeBound | undefined, before: TimeBound | undefined): ObjectPredicate {
  return {
    name: `search:created:${after?.ms ?? ''}..${before?.ms ?? ''}`,
    needsMeta: true,
    test(_o: ViewedObject, meta: () => ViewedMeta): boolean {
      const created = meta()?.created;
      if (created === undefined) return false;
      // A creationTimestamp as the apiserver writes it (`2026-11-28T10:00:00Z`) orders as text.
      if (created.length === 20 && created.charCodeAt(19) === 90 && created.charCodeAt(10) === 84) {
        return (after === undefined || created >= after.text) && (before === undefined || created < before.text);
      }
      const ms = Date.parse(created);
      return !Number.isNaN(ms) && (after === undefined || ms >= after.ms) && (before === undefined || ms < before.ms);
    },
  };
}
