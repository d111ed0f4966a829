import { gvrKey } from '../api/resource-info.js';
import { compareMemberRV, encodeGlobalRV } from '../api/global-rv.js';
import { decodeMeta, type MetaRecord } from '../store/meta-record.js';
import type { Snapshot } from '../store/store.js';
import { viewRanges } from './list-plan.js';
import { frameEvent, sendsPrevious } from './watch-encoding.js';
import type { Watcher } from './watcher.js';

/**
 * A watch's catch-up: what it missed before it goes live, replayed from one read snapshot of the
 * store (current objects as ADDED, the event log after the client's RV), written as fast as the
 * client reads it.
 */

/** Catch-up lines go out joined in writes of about this size. */
const CATCH_UP_CHUNK_BYTES = 64 * 1024;

/**
 * The catch-up's lines, all read from one LMDB snapshot (streamCatchUp takes them across turns):
 * the current objects of clusters the client has no RV for (or of every cluster, for a watch from
 * the current state), then the logged events after the client's RV for the others. Live batches
 * up to that snapshot's sequence are then skipped. An RV older than the log is answered here, at
 * once, with a 410 ERROR line.
 */
export function* readCatchUp(w: Watcher, snapshot: Snapshot): Generator<Buffer> {
  const { opts, store } = w;
  const key = gvrKey(opts.resource.info);
  w.caughtUpTo = store.lastSeq(snapshot);
  const latest = w.clusterRVs(snapshot);
  const since = opts.sendInitialEvents ? undefined : opts.since;

  if (since) {
    const start = store.logStart(key);
    for (const [cluster, rv] of Object.entries(since)) {
      const first = start[cluster];
      if (first !== undefined && compareMemberRV(rv, first) < 0) {
        w.write(frameEvent(opts, 'ERROR', JSON.stringify({
          kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure',
          message: `too old resource version: the event log of ${cluster} starts after ${rv}`, reason: 'Expired', code: 410,
        })));
        w.close();
        w.res.end();
        return;
      }
    }
  }

  const progress: Record<string, string> = { ...(since ?? {}) };
  const { view } = opts;
  const snapshotClusters = view.clusters.filter((c) => !since || since[c] === undefined);
  for (const c of snapshotClusters) if (latest[c] !== undefined) progress[c] = latest[c];
  let mark = encodeGlobalRV(progress);
  const ranges = viewRanges(view);
  for (const cluster of snapshotClusters) {
    for (const range of ranges) for (const e of store.entries(key, { ...range, cluster, snapshot })) {
      let meta: MetaRecord | undefined;
      const metaOf = () => (meta ??= store.metaOf(key, e, snapshot));
      if (!view.admits(e, () => (view.needsMeta ? metaOf() : undefined))) continue;
      // An initial event's object keeps its own RV for its own cluster (clients build updates
      // from cached objects); the other clusters' entries are the snapshot's.
      const own = metaOf()?.rv;
      const objectMark = own ? encodeGlobalRV({ ...progress, [cluster]: own }) : mark;
      yield w.encodeEvent('ADDED', e.cluster, e.name, e.bytes, metaOf, objectMark);
    }
  }
  const resumeAfter = since ? store.resumeSeq(key, since, snapshot) : undefined;
  if (since && resumeAfter !== undefined) {
    for (const ev of store.logged(key, resumeAfter, snapshot)) {
      const from = since[ev.cluster];
      if (from === undefined || compareMemberRV(ev.rv, from) <= 0) continue;
      let meta: MetaRecord | undefined;
      const metaOf = () => (meta ??= decodeMeta(ev.meta));
      const prev = ev.prevMeta;
      const prevOf = prev ? () => decodeMeta(prev) : undefined;
      const type = view.eventType(ev, metaOf, prevOf);
      if (!type) continue;
      progress[ev.cluster] = ev.rv;
      mark = encodeGlobalRV(progress);
      const previous = sendsPrevious(ev, type, prevOf);
      yield w.encodeEvent(type, ev.cluster, ev.name, previous ? ev.prevBytes! : ev.bytes, previous ? prevOf : metaOf, mark);
    }
  }
  // Watch-list ends its initial events with this bookmark; so does a watch from the current
  // state ("" or "0") that allows bookmarks, as the apiserver's watch cache does.
  if (opts.sendInitialEvents || (!opts.since && opts.bookmarks)) yield w.encodeBookmark(encodeGlobalRV(latest), true);
}

/**
 * Writes the catch-up in chunks as fast as the client reads it (a watch-list snapshot of a large
 * cache is gigabytes: it must not sit in memory), then calls `goLive` (the batches that came
 * meanwhile go next). A client that takes nothing for `catchUpStallMs` is ended.
 */
export function streamCatchUp(w: Watcher, lines: Iterator<Buffer>, goLive: () => void): void {
  const step = (): void => {
    try {
      while (!w.closed) {
        const parts: Buffer[] = [];
        let size = 0;
        let r = lines.next();
        for (; !r.done; r = lines.next()) {
          parts.push(r.value);
          size += r.value.length;
          if (size >= CATCH_UP_CHUNK_BYTES) break;
        }
        const more = !r.done;
        const flowing = parts.length === 0 || w.res.write(parts.length === 1 ? parts[0]! : Buffer.concat(parts));
        if (!more) {
          w.releaseSnapshot();
          goLive();
          return;
        }
        if (!flowing) {
          // An LMDB reader pins the pages of its snapshot: one the client never drains must not
          // hold them (and the file's growth) for the whole watch timeout.
          const stalled = setTimeout(() => {
            if (!w.closed) w.evict();
          }, w.opts.catchUpStallMs);
          stalled.unref();
          w.res.once('drain', () => {
            clearTimeout(stalled);
            step();
          });
          return;
        }
      }
    } catch {
      w.close();
      w.res.destroy();
    }
  };
  step();
}
