/**
 * Large buffers kept for reuse by code that reads members' answers into them and copies out what
 * it sends: a live list's answers, ten of them a megabyte each, would otherwise be new external
 * memory every list, and V8 answers external memory with full garbage collections of flotilla's
 * whole heap. Only for buffers that never leave flotilla: a buffer given back is written over by
 * the next taker, so nothing that can still be read (a reply's body) may be given.
 */
export class BufferPool {
  private readonly free: Buffer[] = [];
  private freeBytes = 0;

  /** `maxBytes`: the most kept at once; `maxBuffer`: the largest buffer kept. */
  constructor(
    private readonly maxBytes: number,
    private readonly maxBuffer: number,
  ) {}

  /** A buffer of at least `min` bytes (its contents are whatever it held). */
  take(min: number): Buffer {
    let best = -1;
    for (let i = 0; i < this.free.length; i++) {
      const b = this.free[i]!;
      if (b.length >= min && (best < 0 || b.length < this.free[best]!.length)) best = i;
    }
    if (best < 0) return Buffer.allocUnsafeSlow(min);
    const [b] = this.free.splice(best, 1);
    this.freeBytes -= b!.length;
    return b!;
  }

  /** Gives back a buffer nothing reads any more. */
  give(b: Buffer): void {
    if (b.length > this.maxBuffer || b.length === 0 || this.free.includes(b)) return;
    // Full: the smallest kept make room for a larger one (the larger a buffer, the more it saves).
    while (this.freeBytes + b.length > this.maxBytes && this.free.length > 0) {
      let smallest = 0;
      for (let i = 1; i < this.free.length; i++) if (this.free[i]!.length < this.free[smallest]!.length) smallest = i;
      if (this.free[smallest]!.length >= b.length) return;
      this.freeBytes -= this.free.splice(smallest, 1)[0]!.length;
    }
    if (this.freeBytes + b.length > this.maxBytes) return;
    this.free.push(b);
    this.freeBytes += b.length;
  }

  /** Bytes kept for reuse. */
  get bytes(): number {
    return this.freeBytes;
  }
}
