import type { MemberClient } from '../members/member-client.js';
import type { CacheScope, Store } from '../store/store.js';
import { isRevision } from '../api/global-rv.js';
import { HISTORY_CHECK_SAMPLE } from '../registry/defaults.js';
import { readMetadataPage } from './metadata-page.js';

/**
 * Whether a member's history is still the one a scope's cache followed, asked before the cacher
 * watches from `rv` while the store holds exactly the state at `rv`: one page of the member's
 * metadata at its latest. A list RV older than `rv` means the member went back (etcd restored
 * from a backup; a watch from the future RV would stay silent while objects change). So does an
 * object it holds at an RV not after `rv` that the store does not hold at that RV: in one history
 * every change up to `rv` was seen, so a restored etcd written past `rv` again is found by the
 * objects the restore took back.
 */

/** The member's history is not the one the cache followed: its state must be listed afresh. */
export class HistoryRewrittenError extends Error {}

/** Throws HistoryRewrittenError when the member's history went back; any other failure as an Error. */
export async function checkHistory(member: MemberClient, path: string, store: Store, scope: CacheScope, rv: string, signal: AbortSignal): Promise<void> {
  const page = await readMetadataPage(member, path, HISTORY_CHECK_SAMPLE, signal);
  // RVs that are not etcd revisions (an aggregated API's) cannot be ordered.
  if (!isRevision(rv)) return;
  const latest = page.rv;
  if (latest !== undefined && isRevision(latest) && BigInt(latest) < BigInt(rv)) {
    throw new HistoryRewrittenError(`the member's resourceVersion went back from ${rv} to ${latest}`);
  }
  for (const { namespace, name, rv: resourceVersion } of page.objects) {
    if (!isRevision(resourceVersion) || BigInt(resourceVersion) > BigInt(rv)) continue;
    const stored = store.storedRV(scope, { namespace, name });
    if (stored !== resourceVersion) {
      throw new HistoryRewrittenError(`the member holds ${namespace ? `${namespace}/` : ''}${name} at resourceVersion ${resourceVersion}, which flotilla, at ${rv}, holds ${stored === undefined ? 'not at all' : `at ${stored}`}: its history went back`);
    }
  }
}
