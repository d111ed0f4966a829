import { parseLabelSelector } from '../api/label-selector.js';
import { isSearchKey } from '../api/search-terms.js';
import { badRequest } from '../api/status.js';
import { isTreeRequirement } from '../view/step-hierarchy.js';

/**
 * Refuses a deletecollection whose selection only flotilla can make: search terms (in the label
 * selector or as query parameters) and namespace-tree selectors. The members get the request as
 * it is and know neither, so they would match by the objects' own labels, which carry no such
 * keys: `search.flotilla.io/cluster!=west` would delete every object everywhere, west's too.
 * Nothing is deleted rather than the wrong thing; the message says how to delete what a search finds.
 */
export function refuseFlotillaSelection(url: string): void {
  const q = url.indexOf('?');
  if (q < 0) return;
  const params = new URLSearchParams(url.slice(q + 1));
  const named = [...params.keys()].filter(isSearchKey);
  const selector = params.get('labelSelector');
  if (selector) {
    for (const r of parseLabelSelector(selector)) if (isSearchKey(r.key) || isTreeRequirement(r.key)) named.push(r.key);
  }
  if (named.length === 0) return;
  throw badRequest(
    `a collection delete goes to the members, which do not know flotilla's search terms or namespace-tree selectors (${[...new Set(named)].join(', ')}): ` +
      'list the objects with them first, then delete those by name',
  );
}
