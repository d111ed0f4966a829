/**
 * Runs the store's write tasks one at a time, small ones first, each to its commit.
 *
 * Handed to lmdb-js all at once, the writes of ten cachers committing list pages side by side
 * ran in one turn of the event loop (200 ms and more at a few hundred thousand objects; bench
 * `ingest`). One task per turn bounds a turn by the largest task, and makes each task see every
 * earlier one committed; it costs no throughput, as LMDB commits one writer at a time anyway.
 * Urgent tasks (live watch events) go ahead of bulk ones (list pages), so a watch event is not
 * held behind a fleet's initial sync.
 */
interface Task {
  fn: () => void;
  resolve: () => void;
  reject: (e: unknown) => void;
}

export class TransactionQueue {
  private readonly urgent: Task[] = [];
  private readonly bulk: Task[] = [];
  private running = false;

  constructor(private readonly transact: (fn: () => void) => Promise<unknown>) {}

  run(fn: () => void, urgent: boolean): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      (urgent ? this.urgent : this.bulk).push({ fn, resolve, reject });
      if (!this.running) void this.pump();
    });
  }

  private async pump(): Promise<void> {
    this.running = true;
    try {
      for (let task = this.next(); task; task = this.next()) {
        try {
          await this.transact(task.fn);
          task.resolve();
        } catch (e) {
          task.reject(e);
        }
      }
    } finally {
      this.running = false;
    }
  }

  private next(): Task | undefined {
    return this.urgent.shift() ?? this.bulk.shift();
  }
}
