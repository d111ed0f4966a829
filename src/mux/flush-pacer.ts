/**
 * Paces the flushes of watch fan-out. Writing to a watcher's socket costs about the same for one
 * event as for ten (the HTTP chunk, the TLS record, the system call, and the client's read on the
 * other end), so with many watchers on a busy resource the socket writes, not the events, are the
 * load. A flush that took t ms is followed by a pause of `spacing` × t (at most `maxDelayMs`)
 * before the next: events that arrive meanwhile wait and go out together, and the rest of the
 * process (the cachers that bring the events in) gets the loop in between. Fan-out keeps to
 * 1/(1 + spacing) of the event loop while the pause is under its cap; when flushes are cheap (few
 * watchers) or rare (a quiet resource) events go out at once.
 */
export interface PacerClock {
  now(): number;
  /** Runs `fn` after `ms` (0: after the current turn's I/O, as setImmediate does). */
  after(ms: number, fn: () => void): void;
}

export interface PacerOptions {
  spacing: number;
  maxDelayMs: number;
}

/**
 * Spacing 1: fan-out takes at most half the loop (below the cap). At 4, 1000 watchers of 20 events/s (a flush of
 * ~20 ms, so a 50 ms pause against events 50 ms apart) waited 59 ms at the median against 23 ms
 * direct; at 1, 24-32 ms, for ~35% more CPU per delivery.
 */
export const DEFAULT_PACING: PacerOptions = { spacing: 1, maxDelayMs: 50 };

const realClock: PacerClock = {
  now: () => performance.now(),
  after: (ms, fn) => (ms <= 0 ? setImmediate(fn) : setTimeout(fn, ms)),
};

export class FlushPacer {
  private scheduled = false;
  private lastEnd = -Infinity;
  private gapMs = 0;

  constructor(
    private readonly flush: () => void,
    private readonly opts: PacerOptions = DEFAULT_PACING,
    private readonly clock: PacerClock = realClock,
  ) {}

  /** The current pause after a flush (a metric). */
  get pauseMs(): number {
    return this.gapMs;
  }

  /** Something waits to be flushed: flush after this turn, or when the pace allows. */
  request(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    this.clock.after(this.lastEnd + this.gapMs - this.clock.now(), this.run);
  }

  private readonly run = (): void => {
    this.scheduled = false;
    const start = this.clock.now();
    try {
      this.flush();
    } finally {
      this.lastEnd = this.clock.now();
      this.gapMs = Math.min(this.opts.maxDelayMs, this.opts.spacing * (this.lastEnd - start));
    }
  };
}
