/**
 * One request shared by the callers that may share it: a caller may take the answer of a request
 * started after it arrived, never of one started before (that one may have been answered before a
 * change the caller must see). At most one request runs at a time; callers arriving while one runs
 * share the next, which starts when it ends. So a burst of callers costs two requests, not one each.
 */
export class GenerationFlight<T> {
  private running?: Promise<T>;
  /** The request the callers arriving now will share: not started yet. */
  private next?: Promise<T>;

  constructor(private readonly start: () => Promise<T>) {}

  /** An answer from a request that starts no earlier than this call. */
  get(): Promise<T> {
    if (this.next) return this.next;
    if (!this.running) return this.launch();
    const after = this.running.then(ignore, ignore);
    const next = after.then(() => {
      // From here on, callers arriving must not share this one: it has started.
      if (this.next === next) this.next = undefined;
      return this.launch();
    });
    this.next = next;
    return next;
  }

  /** Whether nothing runs nor waits to: the flight may be forgotten. */
  idle(): boolean {
    return this.running === undefined && this.next === undefined;
  }

  private launch(): Promise<T> {
    const running = this.start().finally(() => {
      if (this.running === running) this.running = undefined;
    });
    this.running = running;
    return running;
  }
}

function ignore(): void {}
