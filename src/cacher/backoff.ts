/** Exponential backoff with full jitter, capped: many cachers failing at once must not retry in step. */
export class Backoff {
  private attempt = 0;

  constructor(
    private readonly baseMs = 250,
    private readonly capMs = 30_000,
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
