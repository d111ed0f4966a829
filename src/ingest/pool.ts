import { availableParallelism } from 'node:os';
import { Piscina } from 'piscina';
import type { IngestContext } from './decode.js';
import type { EventsResult, PageResult } from './batch.js';
import type { IngestTask } from './worker.js';
import { INGEST_WORKER_IDLE_MS } from '../registry/defaults.js';

/**
 * The pool of ingest workers. Page and event bodies are transferred to the worker when the
 * main thread owns their memory outright (a Buffer sliced from Node's shared pool must be copied).
 */
export class IngestPool {
  private readonly pool: Piscina<IngestTask, unknown>;

  constructor(threads = Math.max(1, availableParallelism() - 1)) {
    this.pool = new Piscina({
      filename: new URL('./worker.js', import.meta.url).href,
      minThreads: 1,
      maxThreads: threads,
      idleTimeout: INGEST_WORKER_IDLE_MS,
    });
  }

  private run(task: IngestTask): Promise<unknown> {
    const b = task.body;
    const owned = b.byteOffset === 0 && b.byteLength === b.buffer.byteLength && b.buffer instanceof ArrayBuffer;
    return this.pool.run(task, owned ? { transferList: [b.buffer as ArrayBuffer] } : {});
  }

  decodePage(body: Buffer, ctx: IngestContext): Promise<PageResult> {
    return this.run({ op: 'page', body, ctx }) as Promise<PageResult>;
  }

  decodeEvents(body: Buffer, ctx: IngestContext): Promise<EventsResult> {
    return this.run({ op: 'events', body, ctx }) as Promise<EventsResult>;
  }

  async close(): Promise<void> {
    await this.pool.destroy();
  }
}
