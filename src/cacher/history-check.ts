import type { MemberClient } from '../members/member-client.js';
import type { CacheScope, Store } from '../store/store.js';
import { HISTORY_CHECK_SAMPLE, LIST_PAGE_IDLE_TIMEOUT_MS } from '../registry/defaults.js';

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

const METADATA_ACCEPT = 'application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io,application/json';

interface MetadataList {
  metadata?: { resourceVersion?: string };
  items?: { metadata?: { name?: string; namespace?: string; resourceVersion?: string } }[];
}

/** Throws HistoryRewrittenError when the member's history went back; any other failure as an Error. */
export async function checkHistory(member: MemberClient, path: string, store: Store, scope: CacheScope, rv: string, signal: AbortSignal): Promise<void> {
  const res = await member.fetch({ path: `${path}?limit=${HISTORY_CHECK_SAMPLE}`, headers: { accept: METADATA_ACCEPT }, signal, idleTimeoutMs: LIST_PAGE_IDLE_TIMEOUT_MS });
  if (res.status !== 200) throw new Error(`list ${scope.resource} from ${scope.cluster}: HTTP ${res.status}: ${res.body.toString('utf8', 0, 300)}`);
  // RVs that are not etcd revisions (an aggregated API's) cannot be ordered.
  if (!isDecimal(rv)) return;
  const list = JSON.parse(res.body.toString('utf8')) as MetadataList;
  const latest = list.metadata?.resourceVersion;
  if (latest !== undefined && isDecimal(latest) && BigInt(latest) < BigInt(rv)) {
    throw new HistoryRewrittenError(`the member's resourceVersion went back from ${rv} to ${latest}`);
  }
  for (const item of list.items ?? []) {
    const { name, namespace = '', resourceVersion } = item.metadata ?? {};
    if (name === undefined || resourceVersion === undefined || !isDecimal(resourceVersion) || BigInt(resourceVersion) > BigInt(rv)) continue;
    const stored = store.storedRV(scope, { namespace, name });
    if (stored !== resourceVersion) {
      throw new HistoryRewrittenError(`the member holds ${namespace ? `${namespace}/` : ''}${name} at resourceVersion ${resourceVersion}, which flotilla, at ${rv}, holds ${stored === undefined ? 'not at all' : `at ${stored}`}: its history went back`);
    }
  }
}

function isDecimal(rv: string): boolean {
  return /^[0-9]{1,30}$/.test(rv);
}
