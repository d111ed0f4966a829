import type { HeartbeatChange } from '../members/heartbeat.js';
import { LOG_REPEAT_WINDOW_MS } from '../registry/defaults.js';
import { RepeatGate, type StructuredLog } from '../util/structured-log.js';

/**
 * What members and cachers go through, in the log: each transition once, when it happens (a member
 * found silent, a cacher failing), not at each retry of it. A repeat of the same failure or of a
 * relist loop is let through once a window (LOG_REPEAT_WINDOW_MS) with how many were held back.
 */

/** A member's heartbeat changed: connected and recovered at info, silent and lost at warn. */
export function logMemberChange(log: StructuredLog, change: HeartbeatChange): void {
  const { cluster } = change;
  switch (change.kind) {
    case 'connected':
      return log.info({ cluster, event: 'member-connected' }, 'member connected: it answers its heartbeat');
    case 'silent':
      return log.warn({ cluster, event: 'member-silent', silentForMs: change.forMs }, 'member silent: its heartbeat is unanswered past the interval; reads name it stale');
    case 'lost':
      return log.warn({ cluster, event: 'member-lost', silentForMs: change.forMs, error: change.error }, `member lost: its heartbeat failed: ${change.error}`);
    case 'recovered':
      return log.info({ cluster, event: 'member-recovered', silentForMs: change.silentForMs }, `member recovered after ${(change.silentForMs / 1000).toFixed(1)} s silent`);
  }
}

/** The HTTP status a member answered with, when a cacher's error message carries one (`HTTP 403: …`). */
export function memberStatusOf(message: string): number | undefined {
  const m = /\bHTTP (\d{3})\b/.exec(message);
  return m ? Number(m[1]) : undefined;
}

/** One cacher's transitions: the log fields naming it are made once. */
export class CacherTransitions {
  private readonly gate: RepeatGate;
  /** Failures by kind; a recovery starts it afresh, so the next failure is written at once. */
  private failures: RepeatGate;
  private failing = false;

  constructor(
    private readonly log: StructuredLog,
    private readonly fields: { cluster: string; resource: string; namespace?: string },
    private readonly now?: () => number,
  ) {
    this.gate = new RepeatGate(LOG_REPEAT_WINDOW_MS, now);
    this.failures = new RepeatGate(LOG_REPEAT_WINDOW_MS, now);
  }

  /** The member said the watch's resourceVersion is gone (410): the cacher lists again. */
  expired(message: string): void {
    const { pass, held } = this.gate.pass('expired');
    if (!pass) return;
    this.log.info({ ...this.fields, event: 'watch-expired', reason: message, ...(held ? { repeats: held } : {}) }, 'watch expired (410): listing the member again');
  }

  /** A relist (not the first sync: sync-progress.ts says those) started and ended. */
  relisting(): void {
    if (!this.gate.pass('relisting').pass) return;
    this.log.info({ ...this.fields, event: 'relisting' }, 'relisting');
  }

  relisted(objects: number, seconds: number): void {
    if (!this.gate.pass('relisted').pass) return;
    this.log.info({ ...this.fields, event: 'relisted', objects, seconds }, `relisted: ${objects} objects in ${seconds.toFixed(1)} s`);
  }

  /**
   * A list or watch failed; it is retried with backoff. Written once a window per member status
   * (network failures, whatever their words, are one: the member is unreachable); a 401 or 403 is the member refusing flotilla's own credentials, and says so.
   * `refused`: the member refused flotilla's credentials (OwnRightsError), whose message carries no
   * status: the status, and the right they lack, written once a window per right.
   */
  failed(message: string, refused?: { status: number; missingRight: string }): void {
    this.failing = true;
    const status = refused?.status ?? memberStatusOf(message);
    const { pass, held } = this.failures.pass(refused?.missingRight ?? (status === undefined ? 'unreachable' : String(status)));
    if (!pass) return;
    const credentials = status === 401 || status === 403;
    const why = credentials
      ? `the member refuses flotilla's own credentials (HTTP ${status}): ${status === 401 ? 'the member does not accept them' : 'they lack the rights to list and watch this resource there'}`
      : 'retrying with backoff';
    this.log.warn(
      { ...this.fields, event: 'cacher-failed', error: message, ...(status ? { memberStatus: status } : {}), ...(credentials ? { flotillaCredentials: true } : {}), ...(refused ? { missingRight: refused.missingRight } : {}), ...(held ? { repeats: held } : {}) },
      `cacher failed: ${why}`,
    );
  }

  /** A watch opened after failures: the cacher is in step again. */
  recovered(): void {
    if (!this.failing) return;
    this.failing = false;
    this.failures = new RepeatGate(LOG_REPEAT_WINDOW_MS, this.now);
    this.log.info({ ...this.fields, event: 'cacher-recovered' }, 'cacher recovered: watching the member again');
  }
}
