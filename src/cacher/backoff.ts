import { BACKOFF_BASE_MS, BACKOFF_CAP_MS } from '../registry/defaults.js';

/** Exponential backoff with full jitter, capped: many cachers failing at once must not retry in step. */
export class Backoff {
  private attempt = 0;

  constructor(
    private readonly baseMs = BACKOFF_BASE_MS,
    private readonly capMs = BACKOFF_CAP_MS,
  ) {}

  next(): number {
    const ceiling = Math.min(this.capMs, this.baseMs * 2 ** this.attempt);
    this.attempt++;
    return Math.round(ceiling / 2 + Math.random() * (ceiling / 2));
  }

  reset(): void {
    this.attempt = 0;
  }
}
