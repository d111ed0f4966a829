import type { SyncProgress } from './sync-progress.js';

/**
 * What one cacher reports of itself, at /status, in the metrics and to the hub's Fleet status:
 * the shape alone, so what reads it needs nothing of the cacher.
 */

export type CacherPhase = 'pending' | 'listing' | 'watching' | 'backoff' | 'stopped';

export interface CacherStatus {
  cluster: string;
  resource: string;
  namespace?: string;
  phase: CacherPhase;
  synced: boolean;
  rv?: string;
  objects: number;
  relists: number;
  /** Watch requests made; unchanged across a config reload for cachers the reload did not touch. */
  watches: number;
  lastError?: string;
  /** While the member refuses flotilla's own credentials: the right they lack (`list clusterroles.rbac.authorization.k8s.io`); lastError has the member's words. */
  missingRight?: string;
  lastEventAt?: string;
  /** Times the member's history was found rewritten (resourceVersions back, a new cluster) and listed again. */
  historyResets: number;
  /** The last of them: when and why. */
  lastHistoryReset?: { at: string; reason: string };
  /** While the state of a rewritten history is being listed: why (reads name it in a Warning). */
  rewriting?: string;
  /** While the first list runs: how far it got (sync-progress.ts). */
  progress?: SyncProgress;
}
