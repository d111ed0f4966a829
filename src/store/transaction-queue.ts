/**
 * Runs LMDB write transactions one at a time, small ones first.
 *
 * lmdb-js runs the callbacks of every async transaction queued while its writer is busy in one
 * turn of the event loop, so cachers committing list pages side by side add up to one long stall
 * (200 ms and more at a few hundred thousand objects; measured in bench `ingest`). Handing
 * lmdb-js one transaction at a time bounds a turn by the largest single transaction and costs
 * no throughput: LMDB commits one writer at a time anyway. Urgent work (live watch events) goes
 * ahead of bulk work (list pages), so a watch event is not held behind a fleet's initial sync.
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
