import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { startFleet } from '../fleet/fleet.js';
import { memberRequest } from '../fleet/http.js';
import { startFlotillaProcess } from '../support/flotilla-process.js';
import {
  ALERTS_FILE, RECORDED_FILE, parseExposition, promtool, readRecording, recordedNames, ruleExpressions, seriesNames, writeRecordingText,
  type Recording,
} from '../support/alert-series.js';

/**
 * The chart's alerts (deploy/helm/flotilla/files/alerts.yaml) pass `promtool check rules`, and
 * `promtool test rules` fires the right ones on series recorded from a real flotilla in front of
 * the test fleet: two members up, then one stopped (test/e2e/fixtures/recorded-series.yaml).
 *
 * To record again (after a series is added or renamed):
 *   npx tsc -p tsconfig.json && FLOTILLA_RECORD_ALERT_SERIES=1 npx vitest run test/e2e/alerts.test.ts
 */
const RECORD = process.env.FLOTILLA_RECORD_ALERT_SERIES === '1';
const TARGET = { job: 'flotilla', instance: 'flotilla-0:8443' };
const SCRAPES_UP = 4;
const SCRAPES_STOPPED = 12;
const SCRAPE_EVERY_MS = 2000;
/** Steps the last recorded value is held for: the stopped member stays stopped. */
const HELD_STEPS = 30;

let work: string;

beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), 'flotilla-alerts-'));
});

afterAll(() => {
  rmSync(work, { recursive: true, force: true });
});

describe.runIf(RECORD)('recording', () => {
  it('records /metrics from a flotilla with one member up and one stopped', { timeout: 240_000 }, async () => {
    const fleet = await startFleet({ names: ['steady', 'stopping'], dir: join(inject('fleet').dir, 'alerts-fleet'), workloads: false });
    try {
      const flotilla = await startFlotillaProcess({ fleet: fleet.info, dir: join(fleet.info.dir, 'flotilla'), resources: [{ version: 'v1', resource: 'configmaps' }, { version: 'v1', resource: 'namespaces' }] });
      try {
        const scrapes: Map<string, string>[] = [];
        const scrape = async () => {
          const res = await memberRequest(flotilla.endpoint, 'GET', '/metrics');
          expect(res.status).toBe(200);
          scrapes.push(parseExposition(res.body, TARGET));
          await new Promise((r) => setTimeout(r, SCRAPE_EVERY_MS));
        };
        // A change on each member, so each configmaps cacher has had a watch event (flotilla_cacher_seconds_since_last_event).
        for (const m of fleet.info.members) {
          expect((await memberRequest(m, 'POST', '/api/v1/namespaces/default/configmaps', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'recorded' } })).status).toBe(201);
        }
        for (let i = 0; i < SCRAPES_UP; i++) await scrape();
        await fleet.stopApiserver('stopping');
        for (let i = 0; i < SCRAPES_STOPPED; i++) await scrape();
        const keys = [...new Set(scrapes.flatMap((s) => [...s.keys()]))].sort();
        const rec: Recording = {
          interval: '15s',
          stopped: { cluster: 'stopping', atStep: SCRAPES_UP },
          steps: scrapes.length,
          series: keys.map((k) => ({ series: k, values: scrapes.map((s) => s.get(k) ?? '_').join(' ') })),
        };
        writeFileSync(RECORDED_FILE, writeRecordingText(rec, [
          `Recorded by test/e2e/alerts.test.ts from a real flotilla in front of two members (steady, stopping):`,
          `${SCRAPES_UP} scrapes of /metrics with both up, then ${SCRAPES_STOPPED} after stopping's kube-apiserver, ${SCRAPE_EVERY_MS / 1000} s apart;`,
          `each scrape is one step of \`interval\` in promtool's tests. Record again with:`,
          `  npx tsc -p tsconfig.json && FLOTILLA_RECORD_ALERT_SERIES=1 npx vitest run test/e2e/alerts.test.ts`,
        ].join('\n')));
      } finally {
        await flotilla.stop();
      }
    } finally {
      await fleet.stop();
    }
  });
});

/**
 * promtool's input: the recording, each series' last value held for HELD_STEPS more steps.
 */
function inputSeries(rec: Recording): { series: string; values: string }[] {
  const held = rec.series.map(({ series, values }) => {
    const last = values.split(' ').at(-1)!;
    return { series, values: last === '_' ? values : `${values} ${last}x${HELD_STEPS}` };
  });
  return held;
}

/** The promtool test: what fires on the recording, at the end of the held steps. */
function promtoolTest(rulesFile: string, rec: Recording): string {
  const stepSeconds = Number.parseInt(rec.interval, 10);
  const end = `${(rec.steps + HELD_STEPS - 1) * stepSeconds}s`;
  const beforeStop = `${(rec.stopped.atStep - 1) * stepSeconds}s`;
  const target = { job: TARGET.job, instance: TARGET.instance };
  const stopped = { ...target, cluster: rec.stopped.cluster };
  const noneOf = (alertname: string, eval_time: string) => ({ eval_time, alertname, exp_alerts: [] });
  return stringify({
    rule_files: [rulesFile],
    evaluation_interval: rec.interval,
    tests: [{
      interval: rec.interval,
      input_series: inputSeries(rec),
      alert_rule_test: [
        // While both members answer, nothing fires.
        ...['FlotillaMemberDown', 'FlotillaMemberSilent', 'FlotillaCacherNotSynced', 'FlotillaCacherErroring', 'FlotillaRelistLoop', 'FlotillaHistoryReset', 'FlotillaEventLoopDelay', 'FlotillaWatchEvictions', 'FlotillaLiveReadsRefused']
          .map((a) => noneOf(a, beforeStop)),
        // The stopped member is down, once for a minute: one alert, for it alone.
        {
          eval_time: end,
          alertname: 'FlotillaMemberDown',
          exp_alerts: [{
            exp_labels: { severity: 'critical', ...stopped },
            exp_annotations: {
              summary: `Member ${rec.stopped.cluster} does not answer flotilla's heartbeat`,
              description: `Flotilla (${TARGET.instance}) has had no answer from member ${rec.stopped.cluster}'s /readyz for a minute. Its objects are served from the cache and go stale; writes to it fail.`,
            },
          }],
        },
        // Its cachers fail too, but a down member is one alert, not one per resource.
        noneOf('FlotillaCacherErroring', end),
        noneOf('FlotillaCacherNotSynced', end),
        noneOf('FlotillaMemberSilent', end),
        noneOf('FlotillaRelistLoop', end),
        noneOf('FlotillaEventLoopDelay', end),
      ],
    }],
  }, { lineWidth: 0 });
}

async function testRules(rulesFile: string): Promise<{ code: number; stdout: string; stderr: string }> {
  const testFile = join(work, `test-${Date.now()}.yaml`);
  writeFileSync(testFile, promtoolTest(rulesFile, readRecording()));
  return promtool(['test', 'rules', testFile]);
}

describe('the chart\'s alerts', () => {
  it('pass promtool check rules', async () => {
    const r = await promtool(['check', 'rules', ALERTS_FILE]);
    expect(r.stderr + r.stdout).toContain('SUCCESS: 11 rules found');
    expect(r.code).toBe(0);
  });

  it('fire as promtool test rules expects on the recorded series (one member stopped)', async () => {
    const r = await testRules(ALERTS_FILE);
    expect(r.stdout + r.stderr).toContain('SUCCESS');
    expect(r.code).toBe(0);
  });

  it('name only series flotilla exports (checked against the recording)', () => {
    const known = recordedNames(readRecording());
    const unknown = ruleExpressions(readFileSync(ALERTS_FILE, 'utf8')).flatMap(({ name, expr }) => seriesNames(expr).filter((n) => !known.has(n)).map((n) => `${name}: ${n}`));
    expect(unknown).toEqual([]);
  });

  it('fail both checks with a misspelt series name (the checks are not a formality)', async () => {
    const mutant = join(work, 'alerts-misspelt.yaml');
    writeFileSync(mutant, readFileSync(ALERTS_FILE, 'utf8').replace('flotilla_member_up == 0\n', 'flotilla_members_up == 0\n'));
    const r = await testRules(mutant);
    expect(r.code).not.toBe(0);
    expect(r.stdout + r.stderr).toContain('FlotillaMemberDown');
    const recorded = recordedNames(readRecording());
    expect(ruleExpressions(readFileSync(mutant, 'utf8')).flatMap(({ expr }) => seriesNames(expr)).filter((n) => !recorded.has(n))).toEqual(['flotilla_members_up']);
  });
});
