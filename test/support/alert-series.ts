import { execFile, execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parse, stringify } from 'yaml';

/**
 * What the chart's alerts and dashboard are checked against: series recorded from a real flotilla
 * in front of the test fleet (test/e2e/alerts.test.ts records them), and promtool built from
 * Prometheus' Go module.
 */
const root = resolve(import.meta.dirname, '..', '..');
export const CHART = resolve(root, 'deploy', 'helm', 'flotilla');
export const ALERTS_FILE = resolve(CHART, 'files', 'alerts.yaml');
export const DASHBOARD_FILE = resolve(CHART, 'dashboards', 'flotilla.json');
export const RECORDED_FILE = resolve(root, 'test', 'e2e', 'fixtures', 'recorded-series.yaml');

/**
 * Series the shared names fix (issue 51) that flotilla's /metrics did not serve yet when the
 * recording was made. Re-record once it serves them: the test then asks for this list to shrink.
 */
export const NOT_YET_RECORDED = [
  'flotilla_member_up',
  'flotilla_member_silent',
  'flotilla_http_requests_total',
  'flotilla_http_request_duration_seconds_bucket',
  'flotilla_http_requests_refused_total',
  'flotilla_store_bytes',
];

/** A recording: each scrape is one step of `interval`; the member named was stopped at `stoppedAtStep`. */
export interface Recording {
  interval: string;
  stopped: { cluster: string; atStep: number };
  steps: number;
  series: { series: string; values: string }[];
}

export function readRecording(): Recording {
  return parse(readFileSync(RECORDED_FILE, 'utf8')) as Recording;
}

export function writeRecordingText(rec: Recording, comment: string): string {
  return `${comment.split('\n').map((l) => `# ${l}`).join('\n')}\n${stringify(rec, { lineWidth: 0 })}`;
}

/** The metric names a recording holds. */
export function recordedNames(rec: Recording): Set<string> {
  return new Set(rec.series.map((s) => /^[a-zA-Z_:][a-zA-Z0-9_:]*/.exec(s.series)![0]));
}

/** One /metrics text as `name{labels}` → value, with the labels Prometheus adds to every sample. */
export function parseExposition(text: string, target: Record<string, string>): Map<string, string> {
  const out = new Map<string, string>();
  const extra = Object.entries(target).map(([k, v]) => `${k}="${v}"`).join(',');
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)/.exec(line);
    if (!m) continue;
    out.set(`${m[1]}{${m[2] ? `${m[2]},` : ''}${extra}}`, m[3]!);
  }
  return out;
}

const KEYWORDS = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'bool', 'and', 'or', 'unless', 'offset', 'atan2', 'inf', 'nan']);

/**
 * The metric names a PromQL expression reads: every identifier that is not a function (followed
 * by `(`), a keyword, a label inside braces or a grouping's parentheses, a string, a duration or a
 * Grafana variable.
 */
export function seriesNames(expr: string): string[] {
  const stripped = expr
    .replace(/"(?:[^"\\]|\\.)*"|`[^`]*`|'(?:[^'\\]|\\.)*'/g, '""')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ')
    .replace(/\$\{?\w+\}?/g, ' ');
  const names = new Set<string>();
  for (const m of stripped.matchAll(/[a-zA-Z_:][a-zA-Z0-9_:]*/g)) {
    const after = stripped.slice(m.index + m[0].length).trimStart();
    if (after.startsWith('(') || KEYWORDS.has(m[0].toLowerCase())) continue;
    // A number's exponent (1e3) is not a name.
    if (m.index > 0 && /[0-9.]/.test(stripped[m.index - 1]!)) continue;
    names.add(m[0]);
  }
  return [...names];
}

/** Every `expr` of a Prometheus rules file. */
export function ruleExpressions(rulesYaml: string): { name: string; expr: string }[] {
  const doc = parse(rulesYaml) as { groups: { rules: { alert?: string; record?: string; expr: string }[] }[] };
  return doc.groups.flatMap((g) => g.rules.map((r) => ({ name: r.alert ?? r.record ?? '', expr: r.expr })));
}

let promtoolPath: string | undefined;

export function promtool(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  // Built on first need and cached, as the fleet's binaries are.
  promtoolPath ??= execFileSync('node', [resolve(root, 'scripts', 'build-fleet-binaries.mjs'), '--promtool'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim();
  return new Promise((done) => {
    execFile(promtoolPath!, args, { timeout: 60_000, maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) => {
      const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : 1) : 0;
      done({ code, stdout, stderr });
    });
  });
}
