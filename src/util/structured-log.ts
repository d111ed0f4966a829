/**
 * A structured logger as the layers below the router see it: pino's (fastify's) `info` and `warn`,
 * given fields and a message. The layers that run before the server exists (the cache manager
 * starts cachers and heartbeats first) are given a DeferredLog, which keeps their lines until the
 * server's logger is set.
 */
export type LogLine = (fields: Record<string, unknown>, message: string) => void;

export interface StructuredLog {
  info: LogLine;
  warn: LogLine;
}

export const SILENT_LOG: StructuredLog = { info: () => undefined, warn: () => undefined };

/** Forwards to the logger set by `use`; lines written before it are kept (up to `keep`) and written then. */
export class DeferredLog implements StructuredLog {
  private target?: StructuredLog;
  private kept: { level: 'info' | 'warn'; fields: Record<string, unknown>; message: string }[] = [];

  constructor(private readonly keep: number) {}

  readonly info: LogLine = (fields, message) => this.write('info', fields, message);
  readonly warn: LogLine = (fields, message) => this.write('warn', fields, message);

  use(target: StructuredLog): void {
    this.target = target;
    for (const l of this.kept.splice(0)) target[l.level](l.fields, l.message);
  }

  private write(level: 'info' | 'warn', fields: Record<string, unknown>, message: string): void {
    if (this.target) this.target[level](fields, message);
    else if (this.kept.length < this.keep) this.kept.push({ level, fields, message });
  }
}

/**
 * Lets a repeated line through once a window per key: a transition is logged when it happens,
 * not at every retry of it. `pass` says whether to write it now, and how many were held back
 * since the last one written (to say so in it).
 */
export class RepeatGate {
  private readonly last = new Map<string, { at: number; held: number }>();

  constructor(
    private readonly windowMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  pass(key: string): { pass: boolean; held: number } {
    const now = this.now();
    const seen = this.last.get(key);
    if (seen && now - seen.at < this.windowMs) {
      seen.held++;
      return { pass: false, held: seen.held };
    }
    this.last.set(key, { at: now, held: 0 });
    return { pass: true, held: seen?.held ?? 0 };
  }

  /** The transition is over (the cacher recovered): its next occurrence is logged at once. */
  forget(key: string): void {
    this.last.delete(key);
  }
}
