import { expired } from '../../api/status.js';
import { unseal } from '../../util/sealed-token.js';

/**
 * A live list's pages: its continue token (api/continue-token.ts) sealed for a tenant, whose pages
 * leave out what is not the tenant's, and a page's limit shared among the sources asked.
 */

/** A tenant's live continue token, opened: one it was not given by this flotilla has expired for it. */
export function unsealedForTenant(token: string): string {
  const open = unseal(token);
  if (open === undefined) throw expired('the continue token is not one this flotilla gave, or has expired: list again from the start');
  return open;
}

/** A page's limit shared among the members asked for it, in their order: some get one more, none more than the page holds. */
export function shareLimit(limit: number, clusters: readonly string[]): Map<string, number> {
  const out = new Map<string, number>();
  const base = Math.floor(limit / clusters.length);
  const extra = limit % clusters.length;
  clusters.forEach((c, i) => out.set(c, base + (i < extra ? 1 : 0)));
  return out;
}

