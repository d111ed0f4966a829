/**
 * Runs the store's write tasks one transaction at a time, small ones first, each to its commit.
 *
 * Handed to lmdb-js all at once, the writes of ten cachers committing list pages side by side
 * ran in one turn of the event loop (200 ms and more at a few hundred thousand objects; bench
 * `ingest`). One transaction per turn bounds a turn by its size, and makes each transaction see
 * every earlier one committed; it costs no throughput, as LMDB commits one writer at a time anyway.
 * Urgent tasks (live watch events) go ahead of bulk ones (list pages), so a watch event is not
 * held behind a fleet's initial sync. Urgent tasks waiting together share one transaction, up to
 * `batchWeight` of their weight: a hundred clusters' events then cost one commit, not a hundred
 * in a row. Tasks in one transaction do not see each other's writes (the store keeps what they
 * must share in memory until the commit).
 */
interface Task {
  fn: () => void;
  weight: number;
  resolve: () => void;
  reject: (e: unknown) => void;
}

export class TransactionQueue {
  private readonly urgent: Task[] = [];
  private readonly bulk: Task[] = [];
  private running = false;

  constructor(
    private readonly transact: (fn: () => void) => Promise<unknown>,
    private readonly batchWeight = 1,
  ) {}

  /** `weight`: the task's size (objects written) against the batch bound. */
  run(fn: () => void, urgent: boolean, weight = 1): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      (urgent ? this.urgent : this.bulk).push({ fn, weight, resolve, reject });
      if (!this.running) void this.pump();
    });
  }

  private async pump(): Promise<void> {
    this.running = true;
    try {
      for (let batch = this.next(); batch.length > 0; batch = this.next()) {
        const failures = new Map<Task, unknown>();
        try {
          await this.transact(() => {
            for (const task of batch) {
              try {
                task.fn();
              } catch (e) {
                failures.set(task, e);
              }
            }
          });
        } catch (e) {
          for (const task of batch) failures.set(task, e);
        }
        for (const task of batch) {
          if (failures.has(task)) task.reject(failures.get(task));
          else task.resolve();
        }
      }
    } finally {
      this.running = false;
    }
  }

  /** The next transaction's tasks: urgent ones up to the batch weight, else one bulk task. */
  private next(): Task[] {
    const first = this.urgent.shift();
    if (!first) {
      const bulk = this.bulk.shift();
      return bulk ? [bulk] : [];
    }
    const batch = [first];
    let weight = first.weight;
    while (this.urgent.length > 0 && weight + this.urgent[0]!.weight <= this.batchWeight) {
      const task = this.urgent.shift()!;
      weight += task.weight;
      batch.push(task);
    }
    return batch;
  }
}
