import { HEARTBEAT_MIN_PROBE_TIMEOUT_MS, HEARTBEAT_PROBE_TIMEOUT_INTERVALS } from '../registry/defaults.js';

/**
 * Whether each member is answering at all. A member whose apiserver hangs (stopped, swapping, its
 * network black-holed) keeps its TCP connections open: its watches look healthy and send nothing,
 * so the cache alone cannot tell a quiet member from a silent one. A cheap probe sent every
 * interval can: a member is **silent** while a probe has been outstanding longer than the interval,
 * or after a probe failed (network error, timeout, non-2xx), until the next good answer.
 *
 * One probe in flight per member at most: a member that does not answer is not sent a queue of
 * them. A probe outstanding for HEARTBEAT_PROBE_TIMEOUT_INTERVALS intervals (at least HEARTBEAT_MIN_PROBE_TIMEOUT_MS)
 * is abandoned, so a connection that will never answer is replaced by a new one.
 *
 * Any other answer from the member but a 5xx (`heard`: a list page, a get) is as good as a
 * probe's: no probe is sent while the member answered within the interval, and the next one goes
 * an interval after that answer, so a member that stops is still found silent within two
 * intervals. A member being listed costs no probes; in a fleet's first sync most members wait for
 * flotilla's own page slots and are still probed (at 100 members and 500 ms, 200 requests a
 * second, a sixth of the main thread's work in a 1M-object sync: hence the 2 s default).
 */

/** Sends one probe; resolves on a 2xx answer, rejects (with why) otherwise. */
export type Probe = (signal: AbortSignal) => Promise<void>;

export interface MemberHeartbeat {
  cluster: string;
  silent: boolean;
  /** When the first probe that has gone unanswered since the last good answer was sent (ISO). */
  silentSince?: string;
  /** The last good answer (ISO). */
  lastAnswerAt?: string;
  /** Why the last probe failed, while the member is silent. */
  lastError?: string;
}

/**
 * A change in whether a member answers, each reported once: its first answer (`connected`), a probe
 * outstanding past the interval (`silent`), a probe that failed (`lost`, with why), an answer
 * after either (`recovered`, with how long it was silent).
 */
export type HeartbeatChange =
  | { cluster: string; kind: 'connected' }
  | { cluster: string; kind: 'silent'; forMs: number }
  | { cluster: string; kind: 'lost'; error: string; forMs: number }
  | { cluster: string; kind: 'recovered'; silentForMs: number };

type Reported = 'unknown' | 'answering' | 'silent' | 'lost';

/** How a silent member has not answered, and why, as reads report it. */
export interface Silence {
  cluster: string;
  /** Since the first probe that has gone unanswered. */
  forMs: number;
  error?: string;
}

interface Tracked {
  probe: Probe;
  timer?: NodeJS.Timeout;
  /** The probe in flight and when it was sent. */
  inFlight?: { sentAt: number; abort: AbortController; timeout: NodeJS.Timeout; overdue: NodeJS.Timeout };
  /** The first probe sent and not answered well since the last good answer. */
  unansweredSince?: number;
  lastAnswerAt?: number;
  /** Set while the last probe that finished failed. */
  lastError?: string;
  /** The member's last answer to anything (heard). */
  heardAt?: number;
  /** The state last reported to onChange. */
  reported: Reported;
}

export class Heartbeat {
  private readonly members = new Map<string, Tracked>();
  private stopped = false;
  /** Told each change of a member's state once (the cache manager logs them). */
  onChange?: (change: HeartbeatChange) => void;

  constructor(
    private intervalMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Starts probing a member (again, with a new probe, when it was tracked already: its connection changed). */
  track(cluster: string, probe: Probe): void {
    if (this.stopped) return;
    this.untrack(cluster);
    const m: Tracked = { probe, reported: 'unknown' };
    this.members.set(cluster, m);
    this.tick(cluster, m);
  }

  /** The member answered a request: as good as a probe's answer, unless a probe is outstanding. */
  heard(cluster: string): void {
    const m = this.members.get(cluster);
    if (!m) return;
    m.heardAt = this.now();
    if (!m.inFlight) this.answered(cluster, m, m.heardAt);
  }

  /** A good answer (a probe's, or heard with none outstanding) ends any silence. */
  private answered(cluster: string, m: Tracked, at: number): void {
    const silentFor = m.unansweredSince === undefined ? 0 : at - m.unansweredSince;
    m.unansweredSince = undefined;
    m.lastError = undefined;
    m.lastAnswerAt = at;
    if (m.reported === 'answering') return;
    const was = m.reported;
    m.reported = 'answering';
    this.onChange?.(was === 'unknown' ? { cluster, kind: 'connected' } : { cluster, kind: 'recovered', silentForMs: silentFor });
  }

  /** Reports a member that has become silent or lost since the last report. */
  private reportSilence(cluster: string, m: Tracked): void {
    const forMs = this.now() - (m.unansweredSince ?? this.now());
    if (m.lastError !== undefined) {
      if (m.reported === 'lost') return;
      m.reported = 'lost';
      this.onChange?.({ cluster, kind: 'lost', error: m.lastError, forMs });
    } else if (this.isSilent(m) && m.reported !== 'silent' && m.reported !== 'lost') {
      m.reported = 'silent';
      this.onChange?.({ cluster, kind: 'silent', forMs });
    }
  }

  /** Stops probing a member: removed from the configuration. */
  untrack(cluster: string): void {
    const m = this.members.get(cluster);
    if (!m) return;
    this.members.delete(cluster);
    clearTimeout(m.timer);
    if (m.inFlight) {
      clearTimeout(m.inFlight.timeout);
      clearTimeout(m.inFlight.overdue);
      m.inFlight.abort.abort();
    }
  }

  tracked(): string[] {
    return [...this.members.keys()];
  }

  /** A new interval (a configuration reload) applies from each member's next probe. */
  setInterval(ms: number): void {
    this.intervalMs = ms;
  }

  /** The member's silence, or undefined while it answers (or is not tracked). */
  silence(cluster: string): Silence | undefined {
    const m = this.members.get(cluster);
    if (!m || !this.isSilent(m)) return undefined;
    return { cluster, forMs: this.now() - (m.unansweredSince ?? this.now()), ...(m.lastError ? { error: m.lastError } : {}) };
  }

  private isSilent(m: Tracked): boolean {
    if (m.lastError !== undefined) return true;
    return m.inFlight !== undefined && this.now() - m.inFlight.sentAt > this.intervalMs;
  }

  status(): MemberHeartbeat[] {
    return [...this.members].map(([cluster, m]) => {
      const silent = this.isSilent(m);
      return {
        cluster,
        silent,
        ...(silent && m.unansweredSince !== undefined ? { silentSince: new Date(m.unansweredSince).toISOString() } : {}),
        ...(m.lastAnswerAt !== undefined ? { lastAnswerAt: new Date(m.lastAnswerAt).toISOString() } : {}),
        ...(m.lastError !== undefined ? { lastError: m.lastError } : {}),
      };
    });
  }

  /** Stops every probe and timer: nothing of the heartbeat keeps the process alive. */
  stop(): void {
    this.stopped = true;
    for (const cluster of [...this.members.keys()]) this.untrack(cluster);
  }

  /**
   * Sends a probe unless one is in flight or the member answered something within the interval,
   * and comes back after an interval (or an interval after that answer).
   */
  private tick(cluster: string, m: Tracked): void {
    if (this.members.get(cluster) !== m) return;
    this.reportSilence(cluster, m);
    let next = this.intervalMs;
    if (!m.inFlight) {
      const quietFor = m.heardAt === undefined ? Infinity : this.now() - m.heardAt;
      if (quietFor < this.intervalMs) next = this.intervalMs - quietFor;
      else this.send(cluster, m);
    }
    m.timer = setTimeout(() => this.tick(cluster, m), next);
    m.timer.unref();
  }

  private send(cluster: string, m: Tracked): void {
    const abort = new AbortController();
    const sentAt = this.now();
    const timeoutMs = Math.max(HEARTBEAT_MIN_PROBE_TIMEOUT_MS, HEARTBEAT_PROBE_TIMEOUT_INTERVALS * this.intervalMs);
    const timeout = setTimeout(() => abort.abort(new Error(`no answer within ${timeoutMs / 1000} s`)), timeoutMs);
    timeout.unref();
    // Silent once outstanding past the interval: said then, not at the next tick an interval later.
    const overdue = setTimeout(() => {
      if (m.inFlight === inFlight && this.members.get(cluster) === m) this.reportSilence(cluster, m);
    }, this.intervalMs + 1);
    overdue.unref();
    const inFlight = { sentAt, abort, timeout, overdue };
    m.inFlight = inFlight;
    m.unansweredSince ??= sentAt;
    let probing: Promise<void>;
    try {
      probing = m.probe(abort.signal);
    } catch (e) {
      probing = Promise.reject(e as Error);
    }
    probing.then(
      () => {
        if (m.inFlight !== inFlight) return;
        m.inFlight = undefined;
        this.answered(cluster, m, this.now());
      },
      (e: unknown) => {
        if (m.inFlight !== inFlight) return;
        m.inFlight = undefined;
        const reason = abort.signal.aborted && abort.signal.reason instanceof Error ? abort.signal.reason : e;
        m.lastError = reason instanceof Error ? reason.message : String(reason);
        if (this.members.get(cluster) === m) this.reportSilence(cluster, m);
      },
    ).finally(() => {
      clearTimeout(timeout);
      clearTimeout(overdue);
    });
  }
}
