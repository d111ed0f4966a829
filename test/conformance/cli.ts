#!/usr/bin/env node
import { rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { startFleet } from '../fleet/fleet.js';
import { reapStalePids } from '../fleet/processes.js';
import { startFlotillaProcess } from '../support/flotilla-process.js';
import { CONFORMANCE_RESOURCES, compareSides, conformanceBinDir, readKnownFailures, runSide, writeReport, type ConformanceReport } from './harness.js';
import { CI_TESTS, DEFAULT_SEED, SKIPS, SLOW_SKIP, SUBSETS, focusOnNames, skipExpression } from './suite.js';

/**
 * `npm run conformance -- [--subset all|api-machinery|apps-cli|auth-network-instrumentation|ci] [--seed N] [--procs N]
 * [--known-failures FILE] [--slow] [--one-member] [--out DIR]`
 *
 * Starts a test fleet, runs the chosen upstream conformance tests against a member directly and
 * through flotilla in front of a member (flotilla's fleet is that one member, so every write is
 * forwarded to it), with the same focus, skip list and seed, prints both pass counts and the tests
 * that pass directly but not through flotilla, writes conformance.json and conformance.md, and exits
 * 1 when such a test is not on the known-failures list.
 *
 * By default the two sides run at once, each against a member of its own (same binaries, same
 * fresh state), which halves the wall time; `--one-member` runs them one after the other against
 * the same member instead.
 */
const { values } = parseArgs({
  options: {
    subset: { type: 'string', default: 'all' },
    focus: { type: 'string' },
    seed: { type: 'string', default: String(DEFAULT_SEED) },
    procs: { type: 'string', default: '4' },
    'known-failures': { type: 'string' },
    slow: { type: 'boolean', default: false },
    'one-member': { type: 'boolean', default: false },
    timeout: { type: 'string', default: '4h' },
    out: { type: 'string', default: join('.cache', 'conformance') },
  },
});

const subset = values.subset;
let focus: string;
if (values.focus) focus = values.focus;
else if (subset === 'ci') focus = focusOnNames(CI_TESTS);
else if (SUBSETS[subset]) focus = SUBSETS[subset];
else throw new Error(`--subset: one of ${[...Object.keys(SUBSETS), 'ci'].join(', ')}`);
if (!focus) throw new Error('nothing to run: the subset is empty');
const skip = skipExpression(values.slow ? SKIPS : [...SKIPS, SLOW_SKIP]);
const seed = Number(values.seed);
const procs = Number(values.procs);
const known = values['known-failures'] ? readKnownFailures(values['known-failures']) : new Set<string>();
const out = resolve(values.out);

const say = (msg: string) => process.stderr.write(`conformance: ${msg}\n`);

say('building or finding the conformance binaries');
const binDir = conformanceBinDir();
const fleetDir = join(out, 'fleet');
reapStalePids(join(fleetDir, 'pids'));
for (const d of ['fleet', 'direct', 'flotilla']) rmSync(join(out, d), { recursive: true, force: true });

const names = values['one-member'] ? ['east'] : ['east', 'west'];
say(`starting a test fleet (${names.join(', ')}) in ${fleetDir}`);
const fleet = await startFleet({ names, dir: fleetDir, nodesPerMember: 2 });
let exitCode = 2;
try {
  const directMember = fleet.info.members[0]!;
  const proxiedMember = fleet.info.members[fleet.info.members.length - 1]!;
  const flotilla = await startFlotillaProcess({ fleet: fleet.info, members: [proxiedMember], dir: join(out, 'flotilla', 'proxy'), resources: CONFORMANCE_RESOURCES });
  try {
    const common = { binDir, focus, skip, seed, procs, timeout: values.timeout, pidFile: join(fleetDir, 'pids') };
    const runDirect = () => runSide({ ...common, side: 'direct', kubeconfig: directMember.kubeconfig, outDir: join(out, 'direct') });
    const runFlotilla = () => runSide({ ...common, side: 'flotilla', kubeconfig: flotilla.kubeconfig, outDir: join(out, 'flotilla') });
    say(`running ${subset} against ${directMember.name} directly and through flotilla (${flotilla.url}) in front of ${proxiedMember.name}${values['one-member'] ? ', one after the other' : ', at once'}; logs in ${out}/{direct,flotilla}/ginkgo.log`);
    let direct, viaFlotilla;
    if (values['one-member']) {
      direct = await runDirect();
      viaFlotilla = await runFlotilla();
    } else {
      [direct, viaFlotilla] = await Promise.all([runDirect(), runFlotilla()]);
    }
    const comparison = compareSides(direct, viaFlotilla, known);
    const report: ConformanceReport = { when: new Date().toISOString(), subset, focus, skip, seed, procs, direct, flotilla: viaFlotilla, comparison };
    const files = writeReport(out, report);
    console.log(`member directly:  ${direct.passed.length} passed, ${direct.failed.length} failed (${Math.round(direct.seconds / 60)} min)`);
    console.log(`through flotilla: ${viaFlotilla.passed.length} passed, ${viaFlotilla.failed.length} failed (${Math.round(viaFlotilla.seconds / 60)} min)`);
    for (const side of [direct, viaFlotilla]) if (side.suiteFailure) console.log(`${side.side}: the suite failed: ${side.suiteFailure}`);
    if (comparison.knownFailures.length) console.log(`known failures (pass directly, fail through flotilla, listed): ${comparison.knownFailures.length}`);
    if (comparison.fixed.length) console.log(`known failures that passed through flotilla now:\n${comparison.fixed.map((n) => `  ${n}`).join('\n')}`);
    console.log(`pass directly, fail through flotilla: ${comparison.regressions.length}`);
    for (const n of comparison.regressions) console.log(`  ${n}`);
    console.log(`report: ${files.markdown} (and ${files.json})`);
    const suiteBroken = direct.suiteFailure !== undefined || viaFlotilla.suiteFailure !== undefined || direct.specs.length === 0;
    exitCode = comparison.regressions.length > 0 || suiteBroken ? 1 : 0;
  } finally {
    await flotilla.stop();
  }
} finally {
  await fleet.stop();
}
process.exit(exitCode);
