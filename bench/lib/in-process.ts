import type { ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import { Writable } from 'node:stream';
import { decodeObject, type RawObject } from '../../src/ingest/decode.js';
import { encodeObjects, viewObjects } from '../../src/ingest/batch.js';
import type { ListBody } from '../../src/mux/reads.js';
import type { WatchHub } from '../../src/mux/watch-hub.js';
import type { WatchOptions } from '../../src/mux/watch-options.js';
import type { Change } from '../../src/store/store.js';

/**
 * What the scenarios that run flotilla's parts in the bench process (views, hierarchy) share:
 * objects committed as the cachers commit them, lists read to the end, responses that discard.
 */

/** An object as a cacher commits it: ingested (decoded, encoded, its meta record) as an ADDED change. */
export function ingested(cluster: string, kind: string, object: RawObject, rv: string): Change {
  const o = viewObjects(encodeObjects([decodeObject(object, { cluster, apiVersion: 'v1', kind, dropManagedFields: true })]))[0]!;
  return { type: 'ADDED', rv, ...o };
}

/** A small pod in `namespace`, as ingested. */
export function storedPod(cluster: string, namespace: string, name: string, rv: string, labels: Record<string, string>): Change {
  return ingested(cluster, 'Pod', { metadata: { namespace, name, uid: `${namespace}-${name}`, resourceVersion: rv, labels }, spec: { nodeName: 'node-1', containers: [{ name: 'c', image: 'bench' }] } }, rv);
}

/**
 * How each pod of an in-process store's JSON list begins: such a store's resource has no learned
 * list item kinds (a member's discovery is not asked), so its items keep the kind they are stored
 * with. Counting it counts the items without parsing.
 */
export const STORED_POD_ITEM = '{"kind":"Pod","apiVersion":"v1"';

/** A list's body read to the end: its pods and bytes (every byte produced). */
export function drain(body: ListBody): { items: number; bytes: number } {
  const parts = Buffer.isBuffer(body) ? [body] : [...body.chunks];
  let bytes = 0;
  for (const p of parts) bytes += p.length;
  return { items: occurrences(Buffer.concat(parts).toString('latin1'), STORED_POD_ITEM), bytes };
}

/** How often `what` occurs in `text`, counted without overlaps. */
export function occurrences(text: string, what: string): number {
  let n = 0;
  for (let i = text.indexOf(what); i >= 0; i = text.indexOf(what, i + what.length)) n++;
  return n;
}

/** A response that takes every write at once and keeps nothing but counts: the fan-out's cost alone. */
export class DiscardingResponse extends Writable {
  bytes = 0;
  lines = 0;
  override _write(chunk: Buffer, _enc: BufferEncoding, done: () => void): void {
    this.bytes += chunk.length;
    for (let i = chunk.indexOf(10); i >= 0; i = chunk.indexOf(10, i + 1)) this.lines++;
    done();
  }
  writeHead(): this {
    return this;
  }
  flushHeaders(): void {}
}

/**
 * Two ways of doing one thing timed side by side: `rounds` rounds of `roundMs` each way,
 * alternating which goes first; every run's milliseconds, per way.
 */
export function alternatingRounds<A extends string, B extends string>(ways: Record<A | B, () => void>, order: [A, B], rounds: number, roundMs: number): Record<A | B, number[]> {
  const ms = { [order[0]]: [], [order[1]]: [] } as unknown as Record<A | B, number[]>;
  for (let round = 0; round < rounds; round++) {
    for (const way of round % 2 ? [order[1], order[0]] : order) {
      const started = performance.now();
      while (performance.now() - started < roundMs) {
        const t0 = performance.now();
        ways[way]();
        ms[way].push(performance.now() - t0);
      }
    }
  }
  return ms;
}

/**
 * `count` watchers on `hub` into discarding responses, each with `optionsFor(i)` and the bench's
 * long timeouts and large buffers (nothing ends or evicts them while measured).
 */
export function openDiscardingWatchers(hub: WatchHub, count: number, optionsFor: (i: number) => Pick<WatchOptions, 'resource' | 'view' | 'since' | 'revise'>): DiscardingResponse[] {
  return Array.from({ length: count }, (_, i) => {
    const res = new DiscardingResponse();
    hub.open(res as unknown as ServerResponse, {
      form: 'object', sendInitialEvents: false, bookmarks: false,
      timeoutMs: 600_000, bookmarkIntervalMs: 600_000, maxBufferedBytes: 1 << 30, catchUpStallMs: 600_000,
      ...optionsFor(i),
    });
    return res;
  });
}
