import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { cpus, totalmem } from 'node:os';

/** One measured figure, printed as a `BENCH` line and recorded in bench/RESULTS.md. */
export type TargetOp = '>=' | '<=' | '=';

export interface Figure {
  /** The scenario's figure prefix, e.g. `warm_restart`. */
  scenario: string;
  metric: string;
  value: number;
  unit: string;
  target?: { op: TargetOp; value: number };
}

/** What a scenario measured on: stated next to its figures. */
export interface ScenarioFacts {
  objects: number;
  objectBytes: number;
  /** Which size `objectBytes` is (as stored by the member, as served by flotilla, ...). */
  objectBytesAre: string;
  notes: string[];
  /** A figure set that reads better as rows (the scaling line). */
  table?: { header: string[]; rows: string[][] };
}

export interface ScenarioRecord {
  name: string;
  figures: Figure[];
  facts?: ScenarioFacts;
  error?: string;
  seconds: number;
}

export interface RunRecord {
  profile: string;
  scenarios: string[];
  date: string;
  commit: string;
  machine: { nproc: number; memoryGiB: number; cpu: string; node: string };
  setup: string[];
  results: ScenarioRecord[];
}

export function verdict(f: Figure): 'ok' | 'miss' | undefined {
  if (!f.target) return undefined;
  const { op, value } = f.target;
  if (!Number.isFinite(f.value)) return 'miss';
  if (op === '>=') return f.value >= value ? 'ok' : 'miss';
  if (op === '<=') return f.value <= value ? 'ok' : 'miss';
  return f.value === value ? 'ok' : 'miss';
}

export function formatNumber(v: number): string {
  if (!Number.isFinite(v)) return String(v);
  if (Number.isInteger(v)) return String(v);
  const abs = Math.abs(v);
  const digits = abs >= 100 ? 0 : abs >= 10 ? 1 : abs >= 1 ? 2 : 3;
  return v.toFixed(digits);
}

export function benchLine(f: Figure): string {
  const head = `BENCH ${f.scenario}.${f.metric} = ${formatNumber(f.value)} ${f.unit}`;
  return f.target ? `${head} (target ${f.target.op} ${formatNumber(f.target.value)}: ${verdict(f)})` : head;
}

function sh(cmd: string, args: string[]): string {
  try {
    return execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return '';
  }
}

export function gitCommit(cwd: string): string {
  const head = sh('git', ['-C', cwd, 'rev-parse', '--short', 'HEAD']) || 'unknown';
  // Read-only: no index refresh, no lock. The build under test includes uncommitted changes, if any.
  const dirty = sh('git', ['-C', cwd, '--no-optional-locks', 'status', '--porcelain', '--untracked-files=no', '--', 'src']);
  return dirty ? `${head} (+ uncommitted changes in src/)` : head;
}

export function machine(): RunRecord['machine'] {
  const nproc = Number(sh('nproc', [])) || cpus().length;
  let cpu = cpus()[0]?.model ?? 'unknown';
  try {
    const m = /^model name\s*:\s*(.+)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'));
    if (m?.[1]) cpu = m[1].trim();
  } catch {
    // not Linux
  }
  return { nproc, memoryGiB: Math.round((totalmem() / 1024 ** 3) * 10) / 10, cpu, node: process.version };
}

/**
 * bench/results.json keeps the last run of each (profile, scenario set); RESULTS.md is rendered
 * from all of them, so a quick run does not erase the last full one.
 */
export function recordRun(jsonPath: string, mdPath: string, run: RunRecord): void {
  mkdirSync(dirname(jsonPath), { recursive: true });
  let runs: Record<string, RunRecord> = {};
  if (existsSync(jsonPath)) {
    try {
      runs = JSON.parse(readFileSync(jsonPath, 'utf8'), readFigureValue) as Record<string, RunRecord>;
    } catch {
      runs = {};
    }
  }
  runs[`${run.profile}:${run.scenarios.join(',')}`] = run;
  writeFileSync(jsonPath, JSON.stringify(runs, writeFigureValue, 2) + '\n');
  writeFileSync(mdPath, renderResults(Object.values(runs)));
}

// JSON has no NaN or Infinity (a figure that could not be measured, a latency past the histogram):
// they are kept as strings, and null (how earlier runs were written) reads back as NaN.
function writeFigureValue(_key: string, v: unknown): unknown {
  return typeof v === 'number' && !Number.isFinite(v) ? String(v) : v;
}

function readFigureValue(key: string, v: unknown): unknown {
  return key === 'value' && (v === null || typeof v === 'string') ? Number(v ?? NaN) : v;
}

/** Text made safe for one Markdown table cell, cut at `max` characters. */
function tableCell(text: string, max: number): string {
  return text.replace(/\|/g, '\\|').replace(/\n/g, ' ').slice(0, max);
}

function rank(r: RunRecord): number {
  return (r.profile === 'full' ? 0 : r.profile === 'quick' ? 2 : 4) + (r.scenarios.length > 1 ? 0 : 1);
}

/**
 * Where each target stands: for every scenario, the newest run of the full profile (as shipped,
 * no size overrides) that ran it, and that run's targeted figures. Sections below keep every run,
 * so the newest word on a target is otherwise spread over several of them.
 */
function standing(runs: RunRecord[]): string[] {
  const full = runs.filter((r) => r.profile === 'full').sort((a, b) => b.date.localeCompare(a.date));
  // Scenario order: as the run with the most scenarios lists them (the runner's own order).
  const order: string[] = [];
  for (const r of full.slice().sort((a, b) => b.scenarios.length - a.scenarios.length)) for (const s of r.scenarios) if (!order.includes(s)) order.push(s);
  if (order.length === 0) return [];
  const out = [
    '## Standing: the newest full-profile run of each scenario',
    '',
    '| figure | value | target | result | run |',
    '|---|---|---|---|---|',
  ];
  for (const name of order) {
    const run = full.find((r) => r.scenarios.includes(name))!;
    const result = run.results.find((r) => r.name === name);
    const when = `${run.date.slice(0, 10)}, ${run.commit}`;
    if (!result) {
      out.push(`| \`${name}\` | not reached (the run stopped before it) | | miss | ${when} |`);
      continue;
    }
    for (const f of result.figures) {
      if (!f.target) continue;
      out.push(`| \`${f.scenario}.${f.metric}\` | ${formatNumber(f.value)} ${f.unit} | ${f.target.op} ${formatNumber(f.target.value)} | ${verdict(f)} | ${when} |`);
    }
    if (result.error) out.push(`| \`${name}\` | failed: ${tableCell(result.error, 200)} | | miss | ${when} |`);
  }
  out.push('');
  return out;
}

export function renderResults(runs: RunRecord[]): string {
  const out: string[] = [
    '# Benchmark results',
    '',
    'Written by `npm run bench` (`bench/run.ts`); do not edit by hand. Each section is the last run of',
    'one profile and scenario set. Flotilla runs as its own process in front of one real',
    'kube-apiserver registered under several cluster names; load generators run in the bench process,',
    'except the watchers, which run in forked load-generator processes of their own.',
    'Machines here are shared and noisy: read the ratios, not the absolute times. Hand-kept A/B',
    'comparisons of two builds are in `bench/AB.md`.',
    '',
    ...standing(runs),
  ];
  for (const run of runs.slice().sort((a, b) => rank(a) - rank(b) || a.scenarios.join().localeCompare(b.scenarios.join()))) {
    out.push(`## ${run.profile} profile: ${run.scenarios.join(', ')}`, '');
    out.push(`- date: ${run.date}`);
    out.push(`- commit: ${run.commit}`);
    out.push(`- machine: ${run.machine.nproc} CPUs (nproc), ${run.machine.memoryGiB} GiB memory, ${run.machine.cpu}, Node.js ${run.machine.node}`);
    for (const s of run.setup) out.push(`- ${s}`);
    out.push('', '| figure | value | target | result |', '|---|---|---|---|');
    for (const r of run.results) {
      for (const f of r.figures) {
        const v = verdict(f);
        out.push(`| \`${f.scenario}.${f.metric}\` | ${formatNumber(f.value)} ${f.unit} | ${f.target ? `${f.target.op} ${formatNumber(f.target.value)}` : ''} | ${v ?? ''} |`);
      }
      if (r.error) out.push(`| \`${r.name}\` | failed: ${tableCell(r.error, 300)} | | miss |`);
    }
    out.push('', '| scenario | objects | object size (bytes, avg) | took |', '|---|---|---|---|');
    for (const r of run.results) {
      const size = r.facts ? `${r.facts.objectBytes} (${r.facts.objectBytesAre})` : '';
      out.push(`| ${r.name} | ${r.facts ? r.facts.objects : ''} | ${size} | ${r.seconds.toFixed(0)} s |`);
    }
    for (const r of run.results) {
      if (!r.facts?.notes.length && !r.error && !r.facts?.table) continue;
      out.push('', `${r.name}:`);
      const table = r.facts?.table;
      if (table) {
        out.push('', `| ${table.header.join(' | ')} |`, `|${table.header.map(() => '---').join('|')}|`);
        for (const row of table.rows) out.push(`| ${row.join(' | ')} |`);
        out.push('');
      }
      for (const n of r.facts?.notes ?? []) out.push(`- ${n}`);
      if (r.error) out.push(`- failed: ${r.error.replace(/\n/g, ' ').slice(0, 500)}`);
    }
    out.push('');
  }
  return out.join('\n');
}
