import { humanDuration } from './human-duration.js';
import { parsedView, type JsonView } from '../util/json-view.js';

/**
 * Table cells besides Age that the apiserver prints relative to the time of the request: an
 * event's "Last Seen" and "First Seen", a pod's "Restarts" (`2 (5m ago)`), a running job's
 * "Duration", a cron job's "Last Schedule". Cached cells would freeze at the time of ingest, so
 * ingest records the instant each one counts from and serving reprints it (as Age is).
 */
export interface RelativeCell {
  /** The column's name, as in the member's columnDefinitions. */
  column: string;
  /** The instant the cell counts from (RFC 3339, with or without fractional seconds). */
  since: string;
  /** Text around the duration, `{}` standing for it; absent when the cell is the duration alone. */
  template?: string;
}

function timestamp(v: unknown): string | undefined {
  return typeof v === 'string' && v !== '' && !Number.isNaN(Date.parse(v)) ? v : undefined;
}

/** printEvent: First Seen falls back to eventTime, Last Seen to First Seen, a series wins for Last Seen. */
function eventCells(o: JsonView, deprecatedPrefix: boolean): RelativeCell[] {
  const first = timestamp(o(deprecatedPrefix ? 'deprecatedFirstTimestamp' : 'firstTimestamp')) ?? timestamp(o('eventTime'));
  const last = timestamp(o('series', 'lastObservedTime')) ?? timestamp(o(deprecatedPrefix ? 'deprecatedLastTimestamp' : 'lastTimestamp')) ?? first;
  const out: RelativeCell[] = [];
  if (last) out.push({ column: 'Last Seen', since: last });
  if (first) out.push({ column: 'First Seen', since: first });
  return out;
}

/** The latest finishedAt of a container's previous run: what `N (5m ago)` counts from. */
function podCells(o: JsonView, cells: unknown[]): RelativeCell[] {
  // Only the Restarts cell reads `N (… ago)`; finding it by shape works for watch rows too, which
  // arrive without column definitions.
  let shown: RegExpExecArray | null = null;
  for (const c of cells) if (typeof c === 'string' && (shown = /^(\d+) \(.+ ago\)$/.exec(c))) break;
  if (!shown) return [];
  let latest: string | undefined;
  for (const list of ['initContainerStatuses', 'containerStatuses']) {
    const statuses = o('status', list);
    if (!Array.isArray(statuses)) continue;
    for (const s of statuses) {
      const finished = timestamp(parsedView(s)('lastState', 'terminated', 'finishedAt'));
      if (finished && (latest === undefined || Date.parse(finished) > Date.parse(latest))) latest = finished;
    }
  }
  return latest ? [{ column: 'Restarts', since: latest, template: `${shown[1]} ({} ago)` }] : [];
}

/**
 * The relative cells of one object, given the member's cells for it. Undefined when the kind has
 * none or none applies, so most meta records carry nothing extra.
 */
export function relativeCellsOf(group: string, kind: string, o: JsonView, cells: unknown[]): RelativeCell[] | undefined {
  let out: RelativeCell[] = [];
  if (kind === 'Event' && (group === '' || group === 'events.k8s.io')) {
    out = eventCells(o, group === 'events.k8s.io');
  } else if (kind === 'Pod' && group === '') {
    out = podCells(o, cells);
  } else if (kind === 'Job' && group === 'batch') {
    const start = timestamp(o('status', 'startTime'));
    if (start && o('status', 'completionTime') === undefined) out = [{ column: 'Duration', since: start }];
  } else if (kind === 'CronJob' && group === 'batch') {
    const last = timestamp(o('status', 'lastScheduleTime'));
    if (last) out = [{ column: 'Last Schedule', since: last }];
  }
  return out.length > 0 ? out : undefined;
}

/** Reprints the relative cells of a row (in place) as of `now`. */
export function reprintRelativeCells(cells: unknown[], columns: readonly { name: string }[], relative: readonly RelativeCell[], now: number): void {
  for (const r of relative) {
    const i = columns.findIndex((c) => c.name === r.column);
    if (i < 0) continue;
    const d = humanDuration(now - Date.parse(r.since));
    cells[i] = r.template === undefined ? d : r.template.replace('{}', d);
  }
}
