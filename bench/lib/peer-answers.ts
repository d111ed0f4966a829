import { performance } from 'node:perf_hooks';

/**
 * What one measured side (flotilla, karmada-search, the member direct) did not answer: a request
 * with no answer within its bound, or one it failed. Either is a result, not the end of the
 * scenario: the figure it would have given is NaN, the request is counted here (the scenario
 * reports `<side>_timeouts` and `<side>_failed_reads`) and named in the notes, and the scenario
 * goes on with its other figures, the other side's included.
 */
export class PeerAnswers {
  /** Requests with no answer in their bound, each as `<what>: no answer in N s`. */
  readonly timeouts: string[] = [];
  /** Requests the side answered with an error (a non-200, a closed stream), each with it. */
  readonly failures: string[] = [];

  constructor(readonly side: string) {}

  /**
   * `call`'s result, or `otherwise` when it did not answer within `ms` or failed. `call` is given
   * `ms` as its requests' own timeout (so a silent peer's socket is closed, not left open); past
   * `ms` and a little more the call is given up on here as well, whatever its requests do.
   */
  async within<T>(what: string, ms: number, call: (timeoutMs: number) => Promise<T>, otherwise: T): Promise<T> {
    const started = performance.now();
    let timer: NodeJS.Timeout | undefined;
    const gaveUp = new Promise<typeof NO_ANSWER>((resolve) => {
      timer = setTimeout(() => resolve(NO_ANSWER), ms + GIVE_UP_GRACE_MS);
    });
    const running = call(ms);
    // Given up on, it may still fail later: that is no longer this run's business.
    running.catch(() => undefined);
    try {
      const r = await Promise.race([running, gaveUp]);
      if (r === NO_ANSWER) {
        this.timeouts.push(`${what}: no answer in ${seconds(ms)} s`);
        return otherwise;
      }
      return r;
    } catch (e) {
      const message = (e as Error).message ?? String(e);
      if (TIMED_OUT.test(message) || performance.now() - started >= ms) this.timeouts.push(`${what}: no answer in ${seconds(ms)} s`);
      else this.failures.push(`${what}: ${message.slice(0, 300)}`);
      return otherwise;
    } finally {
      clearTimeout(timer);
    }
  }

  /** Everything that went unanswered or failed, for the scenario's notes. */
  said(): string[] {
    return [...this.timeouts, ...this.failures];
  }
}

const NO_ANSWER = Symbol('no answer');
/** The bench's request helpers (BenchClient, memberRequest) say so when their timeout ends a request. */
const TIMED_OUT = /timed out/;
/** A call whose own requests ended at the bound has this long to report it before it is given up on. */
const GIVE_UP_GRACE_MS = 1000;

function seconds(ms: number): string {
  return (ms / 1000).toFixed(ms < 10_000 ? 1 : 0);
}
