/** A counting semaphore: at most `limit` holders at once, the rest wait in FIFO order. */
export class Semaphore {
  private held = 0;
  private readonly waiters: (() => void)[] = [];

  constructor(private readonly limit: number) {}

  async acquire(signal?: AbortSignal): Promise<() => void> {
    if (this.held < this.limit) {
      this.held++;
      return this.releaser();
    }
    await new Promise<void>((resolve, reject) => {
      const wake = () => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      };
      const onAbort = () => {
        const i = this.waiters.indexOf(wake);
        if (i >= 0) this.waiters.splice(i, 1);
        reject(signal!.reason);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiters.push(wake);
    });
    return this.releaser();
  }

  /** A slot if one is free now, else undefined (never waits, never jumps the queue). */
  tryAcquire(): (() => void) | undefined {
    // A freed slot passes straight to a waiter, so a free slot means nobody is waiting.
    if (this.held >= this.limit) return undefined;
    this.held++;
    return this.releaser();
  }

  private releaser(): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.waiters.shift();
      // The slot passes straight to the next waiter; `held` stays the same.
      if (next) next();
      else this.held--;
    };
  }

  get inUse(): number {
    return this.held;
  }
}
