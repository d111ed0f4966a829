import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { builtTool } from '../fleet/fleet.js';
import { killProcessGroup, startProcess, stopProcess, tailLog } from '../fleet/processes.js';
import type { ResourceRuleSpec } from '../support/flotilla-process.js';

/**
 * Runs the upstream conformance tests (our test binary built from test/conformance/go) against one
 * kubeconfig and reads the outcome of each test from ginkgo's JSON report; compares two such runs.
 */

/**
 * What flotilla caches in a conformance run: the kinds the tests (and the controllers they drive)
 * read most, so that the cache, its watches and read-your-writes are what gets judged. Everything
 * else (CRDs and custom resources, events, leases, RBAC, quotas, webhooks configurations…) is read
 * live from the member, as a deployment that caches only its hot kinds would.
 */
export const CONFORMANCE_RESOURCES: ResourceRuleSpec[] = [
  { version: 'v1', resource: 'namespaces' },
  { version: 'v1', resource: 'nodes' },
  { version: 'v1', resource: 'pods' },
  { version: 'v1', resource: 'configmaps' },
  { version: 'v1', resource: 'secrets' },
  { version: 'v1', resource: 'services' },
  { version: 'v1', resource: 'serviceaccounts' },
  { group: 'apps', version: 'v1', resource: 'deployments' },
  { group: 'apps', version: 'v1', resource: 'replicasets' },
  { group: 'apps', version: 'v1', resource: 'statefulsets' },
  { group: 'apps', version: 'v1', resource: 'daemonsets' },
  { group: 'apps', version: 'v1', resource: 'controllerrevisions' },
  { group: 'batch', version: 'v1', resource: 'jobs' },
];

/** The cached test binary, kubectl and ginkgo CLI (built on first use; see scripts/build-fleet-binaries.mjs). */
export function conformanceBinDir(): string {
  return builtTool('--conformance');
}

export interface SpecResult {
  name: string;
  /** ginkgo's state: passed, failed, skipped, pending, panicked, interrupted, aborted, timedout. */
  state: string;
  seconds: number;
  /** The failure message's first lines, for failed tests. */
  failure?: string;
}

export interface SideResult {
  side: string;
  specs: SpecResult[];
  passed: string[];
  failed: string[];
  seconds: number;
  /** Set when the suite itself failed outside any test (its setup, a crash): no test result is then meaningful. */
  suiteFailure?: string;
  logPath: string;
  reportPath: string;
}

export interface RunOptions {
  side: string;
  binDir: string;
  kubeconfig: string;
  focus: string;
  skip: string;
  seed: number;
  /** ginkgo processes running tests at once ([Serial] tests still run alone, at the end). */
  procs: number;
  outDir: string;
  /** ginkgo's suite timeout, e.g. '3h'. */
  timeout: string;
  pidFile: string;
}

interface GinkgoSpecReport {
  ContainerHierarchyTexts?: string[] | null;
  LeafNodeType?: string;
  LeafNodeText?: string;
  State?: string;
  RunTime?: number;
  Failure?: { Message?: string };
}

interface GinkgoReport {
  SuiteSucceeded?: boolean;
  SpecReports?: GinkgoSpecReport[] | null;
}

/** The full test name as ginkgo matches focus and skip against it: container texts and the leaf text, space-joined. */
export function specName(r: GinkgoSpecReport): string {
  return [...(r.ContainerHierarchyTexts ?? []), r.LeafNodeText ?? ''].filter((s) => s !== '').join(' ');
}

export function parseGinkgoReport(path: string): { specs: SpecResult[]; suiteFailure?: string } {
  const reports = JSON.parse(readFileSync(path, 'utf8')) as GinkgoReport[];
  const specs: SpecResult[] = [];
  let suiteFailure: string | undefined;
  for (const report of reports) {
    for (const r of report.SpecReports ?? []) {
      const state = r.State ?? 'unknown';
      if (r.LeafNodeType !== 'It') {
        // Suite-level nodes (BeforeSuite, AfterSuite, reporting): only a failure matters.
        if (state !== 'passed' && state !== 'skipped') suiteFailure ??= `${r.LeafNodeType ?? 'suite node'} ${state}: ${firstLines(r.Failure?.Message ?? '', 6)}`;
        continue;
      }
      const spec: SpecResult = { name: specName(r), state, seconds: Math.round((r.RunTime ?? 0) / 1e9) };
      if (state !== 'passed' && state !== 'skipped' && state !== 'pending') spec.failure = firstLines(r.Failure?.Message ?? '', 8);
      specs.push(spec);
    }
  }
  return suiteFailure === undefined ? { specs } : { specs, suiteFailure };
}

function firstLines(s: string, n: number): string {
  return s.split('\n').slice(0, n).join('\n').slice(0, 1500);
}

/** Runs the chosen tests against one kubeconfig; resolves when ginkgo is done (whatever the outcome). */
export async function runSide(opts: RunOptions): Promise<SideResult> {
  mkdirSync(opts.outDir, { recursive: true });
  const reportPath = join(opts.outDir, 'report.json');
  const logPath = join(opts.outDir, 'ginkgo.log');
  const started = Date.now();
  const proc = startProcess({
    name: `conformance-${opts.side}`,
    command: join(opts.binDir, 'ginkgo'),
    args: [
      'run',
      `--procs=${opts.procs}`,
      `--focus=${opts.focus}`,
      ...(opts.skip ? [`--skip=${opts.skip}`] : []),
      `--seed=${opts.seed}`,
      `--timeout=${opts.timeout}`,
      `--json-report=${reportPath}`,
      '--no-color',
      '-v',
      join(opts.binDir, 'e2e.test'),
      '--',
      `--kubeconfig=${opts.kubeconfig}`,
      // No cloud: the skeleton provider does nothing provider-specific.
      '--provider=skeleton',
      `--kubectl-path=${join(opts.binDir, 'kubectl')}`,
      `--report-dir=${opts.outDir}`,
      // kwok nodes have no kubelet to dump logs from.
      '--disable-log-dump',
    ],
    logPath,
    pidFile: opts.pidFile,
    cwd: opts.outDir,
    // A test cut short by the suite's timeout can leave the kubectl it started running (a
    // port-forward, a log follow): those go with ginkgo's group once ginkgo has exited.
    ownGroup: true,
  });
  // ginkgo runs the interrupted tests' cleanup (namespace deletion) before it writes its report.
  const onStop = () => void stopProcess(proc, 180_000);
  process.once('SIGINT', onStop);
  process.once('SIGTERM', onStop);
  await new Promise<void>((resolve) => {
    if (proc.exited) resolve();
    else proc.child.once('exit', () => resolve());
  });
  process.off('SIGINT', onStop);
  process.off('SIGTERM', onStop);
  killProcessGroup(proc);
  const seconds = Math.round((Date.now() - started) / 1000);
  if (!existsSync(reportPath)) {
    return { side: opts.side, specs: [], passed: [], failed: [], seconds, suiteFailure: `ginkgo exited with ${proc.exitCode} and no report:\n${tailLog(logPath, 40)}`, logPath, reportPath };
  }
  const { specs: all, suiteFailure } = parseGinkgoReport(reportPath);
  // Every spec the binary holds is in ginkgo's report, most of them skipped by the focus; the
  // report keeps those that ran (or were meant to and did not).
  const specs = all.filter((s) => s.state !== 'skipped');
  const ran = specs.filter((s) => s.state !== 'skipped' && s.state !== 'pending');
  const result: SideResult = {
    side: opts.side,
    specs,
    passed: ran.filter((s) => s.state === 'passed').map((s) => s.name).sort(),
    failed: ran.filter((s) => s.state !== 'passed').map((s) => s.name).sort(),
    seconds,
    logPath,
    reportPath,
  };
  if (suiteFailure !== undefined) result.suiteFailure = suiteFailure;
  return result;
}

export interface Comparison {
  /** Passed directly, did not pass through flotilla, and not on the known-failures list: the harness fails on these. */
  regressions: string[];
  /** Passed directly, did not pass through flotilla, on the known-failures list. */
  knownFailures: string[];
  /** On the known-failures list but passed through flotilla this time (the list can shrink). */
  fixed: string[];
  /** Passed through flotilla but not directly (flakes, most likely). */
  flotillaOnly: string[];
  /** Passed both ways. */
  both: string[];
}

export function compareSides(direct: SideResult, flotilla: SideResult, known: Set<string>): Comparison {
  const viaFlotilla = new Set(flotilla.passed);
  const directly = new Set(direct.passed);
  const lost = direct.passed.filter((n) => !viaFlotilla.has(n));
  return {
    regressions: lost.filter((n) => !known.has(n)),
    knownFailures: lost.filter((n) => known.has(n)),
    fixed: [...known].filter((n) => viaFlotilla.has(n)).sort(),
    flotillaOnly: flotilla.passed.filter((n) => !directly.has(n)),
    both: direct.passed.filter((n) => viaFlotilla.has(n)),
  };
}

/** A known-failures file: one full test name a line; blank lines and lines starting with # are ignored. */
export function readKnownFailures(path: string): Set<string> {
  return new Set(
    readFileSync(path, 'utf8')
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l !== '' && !l.startsWith('#')),
  );
}

export interface ConformanceReport {
  when: string;
  subset: string;
  focus: string;
  skip: string;
  seed: number;
  procs: number;
  direct: SideResult;
  flotilla: SideResult;
  comparison: Comparison;
}

/**
 * A first guess at why a test failed through flotilla, from its failure message alone (issue 32's
 * causes); the report groups the regressions by it. A guess: read the log before trusting it.
 */
export function likelyCause(failure: string): string {
  if (/strconv\.ParseUint: parsing "eyJ/.test(failure)) return 'protobuf write carried the global resourceVersion';
  if (/could not find the requested resource|unable to retrieve the complete list of server APIs|no matches for kind|discovery/i.test(failure)) return 'discovery or an API flotilla does not serve';
  if (/(delete|update|patch)\w* [^\n]*not found/i.test(failure)) return 'write right after a create: no cached owner (404)';
  if (/not found/i.test(failure)) return 'read right after a write: 404 (read-your-writes)';
  if (/filtered list should have no|not patched|Expected\s+<int32>/.test(failure)) return 'read right after a write or delete shows the old state (read-your-writes)';
  if (/Timed out waiting for expected watch notification/.test(failure)) return 'watch event differs from the write answer (managedFields) or never came';
  if (/timed out|timeout|Told to stop trying/i.test(failure)) return 'a wait that never ended (watch or cache never showed the change)';
  return 'other';
}

export function renderMarkdown(r: ConformanceReport): string {
  const failureOf = (side: SideResult, name: string): string => side.specs.find((s) => s.name === name)?.failure ?? '';
  const lines = [
    `# Conformance: ${r.subset}`,
    '',
    `${r.when}; seed ${r.seed}, ${r.procs} ginkgo process(es).`,
    '',
    '| | passed | failed | minutes |',
    '|---|---|---|---|',
    `| member directly | ${r.direct.passed.length} | ${r.direct.failed.length} | ${(r.direct.seconds / 60).toFixed(1)} |`,
    `| through flotilla | ${r.flotilla.passed.length} | ${r.flotilla.failed.length} | ${(r.flotilla.seconds / 60).toFixed(1)} |`,
    '',
  ];
  const sigs = [...new Set([...r.direct.specs, ...r.flotilla.specs].filter((s) => s.state !== 'skipped').map((s) => /^\[(sig-[a-z-]+)\]/.exec(s.name)?.[1] ?? 'other'))].sort();
  if (sigs.length > 1) {
    const ran = (side: SideResult, sig: string) => side.specs.filter((s) => s.name.startsWith(`[${sig}]`) && s.state !== 'skipped' && s.state !== 'pending');
    lines.push('| by SIG | ran | pass directly | pass through flotilla |', '|---|---|---|---|');
    for (const sig of sigs) {
      lines.push(`| ${sig} | ${ran(r.direct, sig).length} | ${ran(r.direct, sig).filter((s) => s.state === 'passed').length} | ${ran(r.flotilla, sig).filter((s) => s.state === 'passed').length} |`);
    }
    lines.push('');
  }
  for (const side of [r.direct, r.flotilla]) if (side.suiteFailure) lines.push(`**${side.side}: the suite failed:** ${side.suiteFailure}`, '');
  const section = (title: string, names: string[], side?: SideResult) => {
    lines.push(`## ${title} (${names.length})`, '');
    for (const n of names) {
      lines.push(`- ${n}`);
      const f = side ? failureOf(side, n) : '';
      if (f) lines.push(`  \`${f.split('\n')[0]!.slice(0, 300).replace(/`/g, "'")}\``);
    }
    lines.push('');
  };
  section('Pass directly, fail through flotilla (regressions)', r.comparison.regressions, r.flotilla);
  const byCause = new Map<string, string[]>();
  for (const n of [...r.comparison.regressions, ...r.comparison.knownFailures]) {
    const cause = likelyCause(failureOf(r.flotilla, n));
    byCause.set(cause, [...(byCause.get(cause) ?? []), n]);
  }
  if (byCause.size) {
    lines.push('## Pass directly, fail through flotilla, by likely cause (a guess from the failure message)', '');
    for (const [cause, names] of [...byCause].sort((a, b) => b[1].length - a[1].length)) lines.push(`- ${cause}: ${names.length}`);
    lines.push('');
  }
  section('Pass directly, fail through flotilla (known failures)', r.comparison.knownFailures, r.flotilla);
  section('Known failures that passed through flotilla', r.comparison.fixed);
  section('Fail directly', r.direct.failed, r.direct);
  section('Pass through flotilla only', r.comparison.flotillaOnly);
  section('Pass both ways', r.comparison.both);
  return lines.join('\n');
}

export function writeReport(dir: string, r: ConformanceReport): { json: string; markdown: string } {
  mkdirSync(dir, { recursive: true });
  const json = join(dir, 'conformance.json');
  const markdown = join(dir, 'conformance.md');
  writeFileSync(json, JSON.stringify(r, null, 2));
  writeFileSync(markdown, renderMarkdown(r));
  return { json, markdown };
}
