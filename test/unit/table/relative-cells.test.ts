import { describe, expect, it } from 'vitest';
import { relativeCellsOf, reprintRelativeCells } from '../../../src/table/relative-cells.js';
import { bytesView, parsedView } from '../../../src/util/json-view.js';

const NOW = Date.parse('2026-11-23T12:00:00Z');
const ago = (s: number) => new Date(NOW - s * 1000).toISOString();

/** Relative cells of an object parsed, checked to be the same when read in place from its bytes. */
function cellsOf(group: string, kind: string, obj: object, cells: unknown[]) {
  const parsed = relativeCellsOf(group, kind, parsedView(obj), cells);
  expect(relativeCellsOf(group, kind, bytesView(Buffer.from(JSON.stringify(obj)), 0), cells)).toEqual(parsed);
  return parsed;
}

describe('relative Table cells', () => {
  it('event: Last Seen from the series, else lastTimestamp, else First Seen; First Seen falls back to eventTime', () => {
    expect(cellsOf('', 'Event', { firstTimestamp: ago(300), lastTimestamp: ago(30) }, [])).toEqual([
      { column: 'Last Seen', since: ago(30) }, { column: 'First Seen', since: ago(300) },
    ]);
    expect(cellsOf('', 'Event', { firstTimestamp: null, eventTime: '2026-11-23T11:59:00.123456Z', series: { lastObservedTime: ago(5) } }, [])).toEqual([
      { column: 'Last Seen', since: ago(5) }, { column: 'First Seen', since: '2026-11-23T11:59:00.123456Z' },
    ]);
    expect(cellsOf('events.k8s.io', 'Event', { deprecatedFirstTimestamp: ago(90) }, [])).toEqual([
      { column: 'Last Seen', since: ago(90) }, { column: 'First Seen', since: ago(90) },
    ]);
    expect(cellsOf('', 'Event', {}, [])).toBeUndefined();
  });

  it('pod: Restarts keeps its count and reprints the time since the latest previous run ended', () => {
    const pod = { status: { containerStatuses: [
      { lastState: { terminated: { finishedAt: ago(400) } } },
      { lastState: { terminated: { finishedAt: ago(125) } } },
    ] } };
    const rel = cellsOf('', 'Pod', pod, ['p', '2/2', 'Running', '3 (2m ago)', '10m']);
    expect(rel).toEqual([{ column: 'Restarts', since: ago(125), template: '3 ({} ago)' }]);
    const cells = ['p', '2/2', 'Running', '3 (2m ago)', '10m'];
    reprintRelativeCells(cells, ['Name', 'Ready', 'Status', 'Restarts', 'Age'].map((name) => ({ name })), rel!, NOW + 600_000);
    expect(cells[3]).toBe('3 (12m ago)');
    expect(cellsOf('', 'Pod', pod, ['p', '2/2', 'Running', 0, '10m'])).toBeUndefined();
  });

  it('job Duration only while running; cron job Last Schedule', () => {
    expect(cellsOf('batch', 'Job', { status: { startTime: ago(70) } }, [])).toEqual([{ column: 'Duration', since: ago(70) }]);
    expect(cellsOf('batch', 'Job', { status: { startTime: ago(70), completionTime: ago(10) } }, [])).toBeUndefined();
    expect(cellsOf('batch', 'CronJob', { status: { lastScheduleTime: ago(3600) } }, [])).toEqual([{ column: 'Last Schedule', since: ago(3600) }]);
  });

  it('reprints by column name and leaves cells of absent columns alone', () => {
    const cells = ['1m', 'Normal', 'x', '5m'];
    reprintRelativeCells(cells, [{ name: 'Last Seen' }, { name: 'Type' }, { name: 'Reason' }, { name: 'First Seen' }],
      [{ column: 'Last Seen', since: ago(61) }, { column: 'First Seen', since: ago(3 * 3600) }, { column: 'Gone', since: ago(1) }], NOW);
    expect(cells).toEqual(['61s', 'Normal', 'x', '3h']);
  });
});
