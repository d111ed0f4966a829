import { setTimeout as sleep } from 'node:timers/promises';
import type { MemberClient } from '../members/member-client.js';
import type { Store } from '../store/store.js';
import type { StructuredLog } from '../util/structured-log.js';
import { MEMBER_IDENTITY_CHECK_MS, MEMBER_READ_TIMEOUT_MS } from '../registry/defaults.js';

/**
 * Whether a member is still the cluster its cached state came from. A cluster wiped and started
 * again under the same name (a new etcd) has new uids and a history of its own: whatever its
 * resourceVersions, nothing cached from the old one may be served for it. Its identity is its
 * kube-system namespace's uid (what cluster-identity conventions use), kept in the store so a
 * restart compares with what was cached; read at start and every MEMBER_IDENTITY_CHECK_MS.
 */

const IDENTITY_PATH = '/api/v1/namespaces/kube-system';

/** What to do with a member found to be a new cluster: list its state again, then resolve. */
export type RelistMember = (cluster: string, reason: string) => Promise<void>;

/** Reads a member's identity; undefined when it cannot say (forbidden, not answering). */
export async function readIdentity(client: MemberClient, signal: AbortSignal): Promise<string | undefined> {
  const res = await client.fetch({ path: IDENTITY_PATH, headers: { accept: 'application/json' }, signal, idleTimeoutMs: MEMBER_READ_TIMEOUT_MS });
  if (res.status !== 200) return undefined;
  const uid = (JSON.parse(res.body.toString('utf8')) as { metadata?: { uid?: unknown } }).metadata?.uid;
  return typeof uid === 'string' && uid !== '' ? uid : undefined;
}

/**
 * Checks one member's identity until `signal` ends. A changed one relists the member's state
 * (every cacher of it) and is saved only once that is done: a restart before then compares with
 * the old one again and relists again.
 */
export async function watchIdentity(cluster: string, client: MemberClient, store: Store, relist: RelistMember, log: StructuredLog, signal: AbortSignal): Promise<void> {
  while (!signal.aborted) {
    try {
      const uid = await readIdentity(client, signal);
      const known = store.memberIdentity(cluster);
      if (uid !== undefined && uid !== known) {
        if (known !== undefined) {
          const reason = `the member is a new cluster (its kube-system namespace was ${known}, is ${uid})`;
          log.warn({ cluster, was: known, is: uid }, 'member replaced by a new cluster under the same name; listing its state again');
          await relist(cluster, reason);
        }
        if (!signal.aborted) await store.saveMemberIdentity(cluster, uid);
      }
    } catch {
      // Not answering now: the heartbeat and the cachers say so; asked again at the next check.
    }
    await sleep(MEMBER_IDENTITY_CHECK_MS, undefined, { signal }).catch(() => undefined);
  }
}
