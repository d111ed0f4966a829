import type { Writable } from 'node:stream';
import { tooManyRequests, StatusError } from '../api/status.js';

/**
 * The bytes live reads may hold at once (`options.liveReads.maxBufferMiB`). A live list holds
 * every member's answer until the merged answer is written, so without a bound a few callers
 * listing a large uncached resource fleet-wide at the same time made flotilla hold gigabytes (100
 * parallel fleet lists of 8 MB: 1.47 GB) and a memory limit would end the process for everyone.
 *
 * Each read takes bytes as its members' answers arrive (and for the answer it writes), and gives
 * them back when its response is done. A read the budget cannot hold is refused, its members'
 * answers dropped: 429 with Retry-After while other reads hold the rest (APF's overload answer,
 * which client-go retries), 429 without it when its own answers alone exceed the whole budget
 * (retrying cannot help: the caller must page).
 */
export class LiveBufferBudget {
  private heldBytes = 0;
  private refusedBusy = 0;
  private refusedTooLarge = 0;
  /** Live watches' responses, open: what each holds is what its client has not read yet. */
  private readonly watches = new Set<Writable>();

  constructor(readonly capacityBytes: number) {}

  /** A read's share, taken chunk by chunk. */
  hold(): LiveBufferHold {
    return new LiveBufferHold(this);
  }

  /** A live watch's response, counted while it is open (watches are paced, not held: liveWatch). */
  watching(out: Writable): void {
    this.watches.add(out);
    out.once('close', () => this.watches.delete(out));
  }

  /** For /status and /metrics. */
  stats(): { heldBytes: number; capacityBytes: number; refusedBusy: number; refusedTooLarge: number; watches: number; watchQueuedBytes: number } {
    let queued = 0;
    for (const w of this.watches) queued += w.writableLength;
    return { heldBytes: this.heldBytes, capacityBytes: this.capacityBytes, refusedBusy: this.refusedBusy, refusedTooLarge: this.refusedTooLarge, watches: this.watches.size, watchQueuedBytes: queued };
  }

  /** @internal LiveBufferHold's: false when `bytes` more would pass the capacity. */
  tryTake(bytes: number, alreadyHeld: number): 'taken' | 'busy' | 'too-large' {
    if (this.heldBytes + bytes <= this.capacityBytes) {
      this.heldBytes += bytes;
      return 'taken';
    }
    if (alreadyHeld + bytes > this.capacityBytes) {
      this.refusedTooLarge++;
      return 'too-large';
    }
    this.refusedBusy++;
    return 'busy';
  }

  /** @internal */
  give(bytes: number): void {
    this.heldBytes -= bytes;
  }
}

const MiB = 1024 * 1024;

export class LiveBufferHold {
  private bytes = 0;
  private refused?: 'busy' | 'too-large';
  private released = false;

  constructor(private readonly budget: LiveBufferBudget) {}

  /** Takes `n` bytes; false once the budget refused this read (every later take is refused too). */
  take(n: number): boolean {
    if (this.refused !== undefined || this.released) return false;
    const got = this.budget.tryTake(n, this.bytes);
    if (got !== 'taken') {
      this.refused = got;
      return false;
    }
    this.bytes += n;
    return true;
  }

  /** Whether the budget refused this read. */
  get isRefused(): boolean {
    return this.refused !== undefined;
  }

  /** The answer to a refused read. */
  refusal(): StatusError {
    const capacity = `${Math.round(this.budget.capacityBytes / MiB)} MiB`;
    if (this.refused === 'too-large') {
      return new StatusError(429, 'TooManyRequests', `the members' answers to this read are more than the ${capacity} flotilla holds for live reads at once (options.liveReads.maxBufferMiB): list it in pages (limit and continue; kubectl --chunk-size)`);
    }
    return tooManyRequests(`flotilla holds as many members' answers for live reads as it may at once (${capacity}, options.liveReads.maxBufferMiB); retry shortly, or list in smaller pages`, 1);
  }

  /** The read is a watch: its response is counted while open (live-reads.ts paces it, holding nothing). */
  watching(out: Writable): void {
    this.budget.watching(out);
  }

  /** Gives every byte back (once): the read's response is done. */
  release(): void {
    if (this.released) return;
    this.released = true;
    this.budget.give(this.bytes);
    this.bytes = 0;
  }
}
