import type { FastifyReply } from 'fastify';
import { protobufEventEdit, splicedWatchEvent, stampObject } from '../../api/fleet-object/index.js';
import { decodeGlobalRV, encodeGlobalRV } from '../../api/global-rv.js';
import type { ReadRequest } from '../../api/list-options.js';
import { WatchLines, splitWatchLines } from '../../api/json-watch.js';
import { editProtobufObject } from '../../api/protobuf-object.js';
import { PROTOBUF_WATCH_CONTENT_TYPE, WatchFrames, lengthPrefixed, readWatchEvent, watchEventFrame } from '../../api/protobuf-watch.js';
import { CLUSTER_COLUMN, clusterColumnAt, withCluster } from '../../api/table.js';
import { MEMBER_READ_TIMEOUT_MS } from '../../registry/defaults.js';
import { isJsonObject } from '../../util/json-object.js';
import { openMembers } from '../member-fan-out.js';
import { editedEventObject } from './answer-edits.js';
import { leftOutWarning, noAnswer } from './member-failures.js';
import type { Doc } from './member-answers.js';
import type { LiveReadDeps } from './config.js';

const INITIAL_EVENTS_END = 'k8s.io/initial-events-end';

/** Whether a bookmark's object (or, in a Table, its row's object) ends the initial events. */
function endsInitialEvents(obj: Doc): boolean {
  const md = obj['metadata'];
  if (isJsonObject(md) && isJsonObject(md['annotations']) && md['annotations'][INITIAL_EVENTS_END] === 'true') return true;
  const rows = obj['rows'];
  return Array.isArray(rows) && rows.some((r) => isJsonObject(r) && isJsonObject(r['object']) && endsInitialEvents(r['object']));
}

/**
 * A live watch: every member's watch, as the caller, interleaved. Each event's object is
 * annotated with its cluster, and its resourceVersion is the global one of that moment (each
 * member's latest, the event's own member at the event), so a client resumes from any event or
 * bookmark: a global `resourceVersion` gives each member its own. A member that refuses or does
 * not answer within the member timeout is named in a Warning and left out; when none answers,
 * a member's own answer (as for lists). The watch ends when any member's watch ends (its
 * timeout, an error, an ERROR event, which is passed on), so that the client watches again from
 * the last resourceVersion it saw rather than miss a member's events. Tables: the Cluster column
 * after the name, column definitions in the first event only.
 */
export async function liveWatch(reply: FastifyReply, deps: LiveReadDeps, clusters: readonly string[], params: URLSearchParams, read: ReadRequest, path: string, headers: Record<string, string | string[]>, notes: readonly string[], protobuf: boolean): Promise<FastifyReply> {
  const rvText = read.resourceVersion;
  const since = rvText && rvText !== '0' ? decodeGlobalRV(rvText) : undefined;
  const query = new URLSearchParams(params);
  query.delete('resourceVersion');
  const rvs: Record<string, string> = { ...(since ?? {}) };
  /** The global RV at a member's event: that member's RV is now `rv`, each other's its latest. */
  const globalAt = (cluster: string, rv: string): string => {
    rvs[cluster] = rv;
    return encodeGlobalRV(rvs);
  };
  // Counted from here, so that watches starting together cannot all pass the bound.
  if (deps.hold && !deps.hold.startWatch(reply.raw)) throw deps.hold.watchRefusal();
  const aborter = new AbortController();
  // Every member at once: each watch stays open as long as this one, so a bound would only keep
  // members past it from starting (live watches are bounded in number: live-read-limits.ts).
  const opened = await openMembers(deps.fleet, clusters, { concurrency: clusters.length, timeoutMs: MEMBER_READ_TIMEOUT_MS }, (cluster) => {
    const q = new URLSearchParams(query);
    if (rvText === '0') q.set('resourceVersion', '0');
    else if (since?.[cluster] !== undefined) q.set('resourceVersion', since[cluster]!);
    return { cluster, path: `${path}?${q}`, headers };
  }, aborter.signal);
  const streams = opened.filter((o) => o.stream !== undefined);
  if (streams.length === 0) return noAnswer(reply, opened);
  const warnings = [...notes, ...opened.filter((o) => o.stream === undefined).map((o) => leftOutWarning(o)).filter((w): w is string => w !== undefined)];
  reply.hijack();
  const out = reply.raw;
  out.statusCode = 200;
  out.setHeader('content-type', protobuf ? PROTOBUF_WATCH_CONTENT_TYPE : 'application/json');
  // Past fastify's onSend, which rewords a tenant's other answers: reworded here.
  const tenant = deps.tenant?.naming.tenant;
  if (warnings.length) out.setHeader('warning', tenant ? warnings.map((w) => tenant.tenantText(w)) : warnings);
  out.flushHeaders();
  let ended = false;
  // Column definitions come from one member's stream, on the lines it sends them (a member sends
  // them on its first line, and again on its first event when that line was a bookmark).
  let headerCluster: string | undefined;
  let heldColumns: unknown[] | undefined;
  // Where each member's rows take the Cluster cell, from the columns its stream sent.
  const clusterAt = new Map<string, number>();
  // A watch-list's initial-events-end bookmark means "you have everything": sent once, after
  // every member's own, with the global RV of that moment.
  const initialEventsEnded = new Set<string>();
  const finish = () => {
    if (ended) return;
    ended = true;
    aborter.abort();
    for (const o of streams) o.stream!.destroy();
    out.end();
  };
  out.on('close', finish);
  const event = (cluster: string, line: Buffer) => {
    let e: Doc;
    try {
      e = JSON.parse(line.toString('utf8')) as Doc;
    } catch {
      return;
    }
    const obj = e['object'];
    if (e['type'] === 'ERROR' || !isJsonObject(obj)) {
      out.write(line);
      out.write('\n');
      finish();
      return;
    }
    if (e['type'] === 'BOOKMARK' && endsInitialEvents(obj)) {
      initialEventsEnded.add(cluster);
      if (initialEventsEnded.size < streams.length) {
        const cols = obj['columnDefinitions'];
        if (headerCluster === undefined && Array.isArray(cols) && cols.length > 0) heldColumns = cols;
        const md = obj['metadata'];
        if (isJsonObject(md) && typeof md['resourceVersion'] === 'string' && md['resourceVersion'] !== '') rvs[cluster] = md['resourceVersion'];
        return;
      }
    }
    const edits = reply.liveRead?.edits;
    if (obj['kind'] !== 'Table' && !edits) {
      const edited = splicedWatchEvent(line, cluster, e['type'] !== 'BOOKMARK', (rv) => globalAt(cluster, rv));
      if (edited) {
        out.write(edited);
        out.write('\n');
        return;
      }
    }
    const stamp = (o: Doc, annotate: boolean) => stampObject(o, cluster, { annotate, globalRV: (rv) => globalAt(cluster, rv) });
    if (obj['kind'] === 'Table') {
      const own = obj['columnDefinitions'];
      const cols = Array.isArray(own) && own.length > 0 ? own : headerCluster === undefined ? heldColumns : undefined;
      if (Array.isArray(own) && own.length > 0) clusterAt.set(cluster, clusterColumnAt(own));
      const at = clusterAt.get(cluster) ?? clusterColumnAt(heldColumns ?? []);
      if (cols && (headerCluster === undefined || headerCluster === cluster)) {
        obj['columnDefinitions'] = withCluster<unknown>(cols, CLUSTER_COLUMN, clusterColumnAt(cols));
        headerCluster = cluster;
      } else obj['columnDefinitions'] = null;
      for (const row of Array.isArray(obj['rows']) ? obj['rows'] : []) {
        if (!isJsonObject(row)) continue;
        row['cells'] = withCluster<unknown>(Array.isArray(row['cells']) ? row['cells'] : [], cluster, at);
        if (isJsonObject(row['object'])) stamp(row['object'], e['type'] !== 'BOOKMARK');
      }
      stamp(obj, false);
    } else stamp(obj, e['type'] !== 'BOOKMARK');
    if (edits && e['type'] !== 'BOOKMARK') {
      const shown = editedEventObject(obj, edits, cluster);
      // Not selected, or not the tenant's: the watch never hears of it.
      if (shown === undefined || (isJsonObject(shown) && shown['kind'] === 'Table' && Array.isArray(shown['rows']) && shown['rows'].length === 0)) return;
      e['object'] = shown;
    }
    out.write(JSON.stringify(e) + '\n');
  };
  /**
   * A member's event in protobuf, edited as the JSON one is spliced (the global RV, the cluster
   * annotation), its other bytes the member's. An ERROR event passes and ends the watch, as does
   * a frame flotilla cannot follow: the client watches again from the last RV it saw.
   */
  const protobufEvent = (cluster: string, frame: Buffer) => {
    const e = readWatchEvent(frame);
    if (!e || e.type === 'ERROR') {
      if (e) out.write(lengthPrefixed(frame));
      finish();
      return;
    }
    const edited = editProtobufObject(e.object, protobufEventEdit(cluster, { annotate: e.type !== 'BOOKMARK', globalRV: (rv) => globalAt(cluster, rv) }, INITIAL_EVENTS_END));
    if (!edited) {
      finish();
      return;
    }
    if (e.type === 'BOOKMARK' && edited.facts.annotation === 'true') {
      initialEventsEnded.add(cluster);
      // Its RV is kept (above); the bookmark itself waits for every member's.
      if (initialEventsEnded.size < streams.length) return;
    }
    out.write(watchEventFrame({ type: e.type, object: edited.body }));
  };
  /** What reads one member's stream: length-delimited protobuf frames, or JSON lines. */
  const reader = (cluster: string): ((chunk: Buffer) => void) => {
    if (protobuf) {
      const frames = new WatchFrames();
      return (chunk) => {
        let complete: Buffer[];
        try {
          complete = frames.push(chunk);
        } catch {
          finish();
          return;
        }
        for (const frame of complete) if (!ended) protobufEvent(cluster, frame);
      };
    }
    const lines = new WatchLines();
    return (chunk) => {
      for (const line of splitWatchLines(lines.push(chunk))) {
        if (ended) break;
        event(cluster, line);
      }
    };
  };
  // A client that reads slower than the members write makes the members wait: their streams are
  // paused until this response drains, so flotilla holds a chunk or so a member, never the
  // backlog. A member whose watcher stays blocked ends its watch, and so this one (the client
  // watches again from its last resourceVersion), as a slow watcher of that member would.
  let paused = false;
  const pace = () => {
    if (paused || ended || !out.writableNeedDrain) return;
    paused = true;
    for (const o of streams) o.stream!.pause();
    out.once('drain', () => {
      paused = false;
      if (!ended) for (const o of streams) o.stream!.resume();
    });
  };
  for (const o of streams) {
    const read = reader(o.cluster);
    o.stream!.on('data', (chunk: Buffer) => {
      if (ended) return;
      read(chunk);
      pace();
    });
    o.stream!.on('end', finish);
    o.stream!.on('error', finish);
    o.stream!.on('close', finish);
  }
  return reply;
}
