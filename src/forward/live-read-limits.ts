import type { Writable } from 'node:stream';
import type { StatusError } from '../api/status.js';
import { tooManyRequests } from '../api/status.js';
import type { LiveReadStats } from '../metrics/metrics.js';

/**
 * What live reads may hold at once, so that no caller can take flotilla's memory or connections
 * from the others:
 * - Bytes (`options.liveReads.maxBufferMiB`). A live list holds every member's answer until the
 *   merged answer is written, so without a bound a few callers listing a large uncached resource
 *   fleet-wide at the same time made flotilla hold gigabytes (100 parallel fleet lists of 8 MB:
 *   1.47 GB), and a memory limit would end the process for everyone. Each read takes bytes as its
 *   members' answers arrive (and for the answer it writes), and gives them back when its response
 *   is done. A read that would pass the bound is refused, its members' answers dropped: 429 with
 *   Retry-After while other reads hold the rest (the apiserver's answer to overload, which
 *   client-go retries), 429 without it when its own answers alone are more than the bound
 *   (retrying cannot help: the caller must page).
 * - Watches (`options.liveReads.maxWatches`). Each live watch holds a connection to every member
 *   it asks for as long as it lasts; past the bound a new one is refused with 429 and
 *   Retry-After. Open watches are counted with what their clients have not read yet (they are
 *   paced, not held: live/watch.ts).
 */
export class LiveReadLimits {
  private heldBytes = 0;
  private refusedBusy = 0;
  private refusedTooLarge = 0;
  private refusedWatches = 0;
  /** Live watches' responses, open. */
  private readonly watches = new Set<Writable>();

  constructor(
    readonly capacityBytes: number,
    readonly maxWatches: number,
  ) {}

  /** A read's share of the bytes, taken chunk by chunk. */
  hold(): LiveBufferHold {
    return new LiveBufferHold(this);
  }

  /**
   * Counts a live watch's response while it is open; false (nothing counted) when `maxWatches`
   * are open already.
   */
  startWatch(out: Writable): boolean {
    if (this.watches.size >= this.maxWatches) {
      this.refusedWatches++;
      return false;
    }
    this.watches.add(out);
    out.once('close', () => this.watches.delete(out));
    return true;
  }

  /** The answer to a watch startWatch refused. */
  watchRefusal(): StatusError {
    return tooManyRequests(`flotilla has as many live watches open as it may (${this.maxWatches}, options.liveReads.maxWatches); retry shortly`, 1, 'live_watches');
  }

  /** For /status and /metrics. */
  stats(): LiveReadStats {
    let queued = 0;
    for (const w of this.watches) queued += w.writableLength;
    return {
      buffer: { heldBytes: this.heldBytes, capacityBytes: this.capacityBytes, refusedBusy: this.refusedBusy, refusedTooLarge: this.refusedTooLarge },
      watches: { open: this.watches.size, max: this.maxWatches, queuedBytes: queued, refused: this.refusedWatches },
    };
  }

  /** @internal LiveBufferHold's: whether `bytes` more fit, and if not, why. */
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

  constructor(private readonly limits: LiveReadLimits) {}

  /** Takes `n` bytes; false once this read was refused (every later take is refused too). */
  take(n: number): boolean {
    if (this.refused !== undefined || this.released) return false;
    const got = this.limits.tryTake(n, this.bytes);
    if (got !== 'taken') {
      this.refused = got;
      return false;
    }
    this.bytes += n;
    return true;
  }

  /** Whether this read was refused. */
  get isRefused(): boolean {
    return this.refused !== undefined;
  }

  /** The answer to a refused read. */
  refusal(): StatusError {
    const capacity = `${Math.round(this.limits.capacityBytes / MiB)} MiB`;
    if (this.refused === 'too-large') {
      return tooManyRequests(`the members' answers to this read are more than the ${capacity} flotilla holds for live reads at once (options.liveReads.maxBufferMiB): list it in pages (limit and continue; kubectl --chunk-size)`, undefined, 'live_too_large');
    }
    return tooManyRequests(`flotilla holds as many members' answers for live reads as it may at once (${capacity}, options.liveReads.maxBufferMiB); retry shortly, or list in smaller pages`, 1, 'live_busy');
  }

  /** The read is a watch: counted while its response is open (LiveReadLimits.startWatch). */
  startWatch(out: Writable): boolean {
    return this.limits.startWatch(out);
  }

  /** The answer to a watch startWatch refused. */
  watchRefusal(): StatusError {
    return this.limits.watchRefusal();
  }

  /** Gives every byte back (once): the read's response is done. */
  release(): void {
    if (this.released) return;
    this.released = true;
    this.limits.give(this.bytes);
    this.bytes = 0;
  }
}
