import { SYNC_PROGRESS_LOG_INTERVAL_MS } from '../registry/defaults.js';
import type { StructuredLog } from '../util/structured-log.js';

/**
 * How far a cacher's first sync (its first list of the member) has got, for /status and the log:
 * objects and pages listed so far, the member's own count of what is left when it gives one
 * (`remainingItemCount`), and from the rate so far an estimate of the seconds left. The log says
 * when a first sync starts and ends, and how far it got at most once every
 * SYNC_PROGRESS_LOG_INTERVAL_MS while it lists.
 */
export interface SyncProgress {
  startedAt: string;
  objects: number;
  pages: number;
  /** What the member said is left after the last page, when it said. */
  remainingItemCount?: number;
  /** From the objects listed a second so far and remainingItemCount; absent without a count. */
  estimatedSecondsLeft?: number;
}

export class FirstSync {
  private started = 0;
  private lastLogged = 0;
  private progress?: SyncProgress;

  constructor(
    private readonly log: StructuredLog,
    private readonly fields: { cluster: string; resource: string; namespace?: string },
    private readonly now: () => number = Date.now,
  ) {}

  /** A first list begins; a retry of one that failed keeps its start and says nothing new. */
  start(): void {
    if (this.progress) return this.restart();
    this.started = this.lastLogged = this.now();
    this.progress = { startedAt: new Date(this.started).toISOString(), objects: 0, pages: 0 };
    this.log.info({ ...this.fields, event: 'first-sync-started' }, 'first sync started');
  }

  /** A page is in: `objects` listed so far in all. */
  page(objects: number, remainingItemCount: number | undefined): void {
    const p = this.progress;
    if (!p) return;
    p.objects = objects;
    p.pages++;
    const elapsed = (this.now() - this.started) / 1000;
    if (remainingItemCount === undefined) {
      delete p.remainingItemCount;
      delete p.estimatedSecondsLeft;
    } else {
      p.remainingItemCount = remainingItemCount;
      const rate = elapsed > 0 ? objects / elapsed : 0;
      if (rate > 0) p.estimatedSecondsLeft = Math.round((remainingItemCount / rate) * 10) / 10;
    }
    if (this.now() - this.lastLogged >= SYNC_PROGRESS_LOG_INTERVAL_MS) {
      this.lastLogged = this.now();
      this.log.info({ ...this.fields, event: 'first-sync-progress', ...p, seconds: round(elapsed) }, `first sync: ${objects} objects listed in ${Math.round(elapsed)} s` + (p.estimatedSecondsLeft !== undefined ? `, about ${Math.round(p.estimatedSecondsLeft)} s left` : ''));
    }
  }

  /** The list started over (its snapshot was compacted away): the count starts again, the clock does not. */
  restart(): void {
    if (this.progress) Object.assign(this.progress, { objects: 0, pages: 0 });
  }

  done(objects: number): void {
    if (!this.progress) return;
    const seconds = round((this.now() - this.started) / 1000);
    this.progress = undefined;
    this.log.info({ ...this.fields, event: 'first-sync-done', objects, seconds }, `first sync done: ${objects} objects in ${seconds} s`);
  }

  /** While the first sync lists: a copy of its progress. */
  view(): SyncProgress | undefined {
    return this.progress ? { ...this.progress } : undefined;
  }
}

function round(seconds: number): number {
  return Math.round(seconds * 10) / 10;
}
