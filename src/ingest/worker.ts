import { setPriority } from 'node:os';
import { move, transferableSymbol, valueSymbol } from 'piscina';
import { decodeListPage, decodeWatchLine, type DecodedObject, type IngestContext } from './decode.js';
import { type TableColumn } from '../api/table.js';
import { splitWatchLines } from '../api/json-watch.js';
import { encodeObjects, EVENT_TYPES, type EventsResult, type PageResult } from './batch.js';
import { INGEST_WORKER_NICE } from '../registry/defaults.js';

// Linux keeps a nice value per thread, and setpriority on the caller's id 0 sets this thread's
// alone (elsewhere it would be the whole process's): when the CPUs are busy, the event loop is
// run before decoding, not behind it.
if (process.platform === 'linux') {
  try {
    setPriority(INGEST_WORKER_NICE);
  } catch {
    // Refused (a sandbox's seccomp): the worker runs at the process's priority.
  }
}

/**
 * The ingest worker: all JSON parsing of what members send happens here, off the event loop.
 * It answers with one transferred ArrayBuffer per batch (see batch.ts).
 */
export type IngestTask = { op: 'page'; body: Uint8Array; ctx: IngestContext } | { op: 'events'; body: Uint8Array; ctx: IngestContext };

function transfer<T extends { objects: { buffer: ArrayBuffer } }>(result: T): unknown {
  return move({
    get [transferableSymbol]() {
      return [result.objects.buffer];
    },
    get [valueSymbol]() {
      return result;
    },
  });
}

export function decodePageTask(body: Uint8Array, ctx: IngestContext): PageResult {
  const page = decodeListPage(Buffer.from(body.buffer, body.byteOffset, body.byteLength), ctx);
  return { rv: page.rv, continueToken: page.continueToken, columns: page.columns, objects: encodeObjects(page.objects), objectRVs: page.objects.map((o) => o.meta.rv) };
}

export function decodeEventsTask(body: Uint8Array, ctx: IngestContext): EventsResult {
  const buf = Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  const types: number[] = [];
  const bookmarkRVs: string[] = [];
  const objectRVs: string[] = [];
  const objects: DecodedObject[] = [];
  let columns: TableColumn[] | undefined;
  let error: EventsResult['error'];
  for (const line of splitWatchLines(buf)) {
    const ev = decodeWatchLine(line, ctx);
    types.push(EVENT_TYPES.indexOf(ev.type));
    if (ev.type === 'ERROR') {
      // Nothing after an ERROR event belongs to this watch.
      error = ev.status;
      break;
    }
    if (ev.type === 'BOOKMARK') {
      bookmarkRVs.push(ev.rv);
      continue;
    }
    if (ev.columns) columns = ev.columns;
    objects.push(ev.object);
    objectRVs.push(ev.object.meta.rv);
  }
  return { types: Uint8Array.from(types), bookmarkRVs, objectRVs, error, columns, objects: encodeObjects(objects) };
}

export default function ingest(task: IngestTask): unknown {
  return transfer(task.op === 'page' ? decodePageTask(task.body, task.ctx) : decodeEventsTask(task.body, task.ctx));
}
