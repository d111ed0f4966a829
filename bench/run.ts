#!/usr/bin/env node
/**
 * The benchmark runner: `npm run bench [-- <scenario>...] [--quick] [--pods N] [--names K] [--cpu-prof] [--results-dir D]` (and the watch load's flags, see usage).
 * `soak` runs only when named (`npm run soak` = `npm run bench -- soak`), for `--minutes N` (default 30, 2 with --quick).
 * Every figure is printed as `BENCH <scenario>.<metric> = <value> <unit> (target <op> <v>: ok|miss)`
 * and the run is recorded in bench/RESULTS.md. Each run starts its own fleet (one etcd and one bare
 * kube-apiserver), seeds it, runs flotilla as its own process, and stops all of it at the end, on
 * error, on SIGINT/SIGTERM and when the run outlives its budget.
 */
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { BenchContext, PROFILES, type Profile } from './lib/context.js';
import { findProjectRoot } from '../test/fleet/fleet.js';
import { benchLine, gitCommit, machine, recordRun, type Figure, type RunRecord, type ScenarioRecord } from './lib/report.js';
import type { Scenario } from './lib/scenario.js';
import { ingest } from './scenarios/ingest.js';
import { list } from './scenarios/list.js';
import { peers } from './scenarios/peers.js';
import { live } from './scenarios/live.js';
import { warmRestart } from './scenarios/warm-restart.js';
import { patch } from './scenarios/patch.js';
import { logs } from './scenarios/logs.js';
import { table } from './scenarios/table.js';
import { watchers } from './scenarios/watchers.js';
import { scaling } from './scenarios/scaling.js';
import { memoryLimit } from './scenarios/memory-limit.js';
import { decode } from './scenarios/decode.js';
import { clientDecode } from './scenarios/client-decode.js';
import { views } from './scenarios/views.js';
import { search } from './scenarios/search.js';
import { hierarchy } from './scenarios/hierarchy.js';
import { tenants } from './scenarios/tenants.js';
import { authz } from './scenarios/authz.js';
import { karmada } from './scenarios/karmada.js';
import { hub } from './scenarios/hub.js';
import { soakScenario } from './scenarios/soak.js';

// watchers adds pods to the member: after the scenarios that count the seeded ones. scaling and
// memory-limit leave flotilla caching everything, as the scenarios after them would start it.
// hub counts the seeded pods too (through a hub of its own, beside the fleet).
// karmada runs last: it stops flotilla, starts its own, then a Karmada control plane beside the fleet.
const SCENARIOS: Scenario[] = [ingest, decode, clientDecode, warmRestart, list, peers, hub, live, scaling, memoryLimit, table, patch, watchers, logs, views, search, hierarchy, tenants, authz, karmada];

// Run only when named: the soak takes its own --minutes, and a whole run need not wait 30 minutes for it.
const OPT_IN = ['soak'];

const usage = `usage: npm run bench -- [${[...SCENARIOS.map((s) => s.name), ...OPT_IN].join('|')} ...] [--quick] [--pods N] [--names K] [--watchers N] [--watch-rate R] [--watch-rate-light R] [--minutes N (soak)] [--cpu-prof] [--results-dir D]`;

function positiveInt(flag: string, text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1) {
    console.error(`${flag}: not a positive integer: ${text}\n${usage}`);
    process.exit(2);
  }
  return n;
}

async function main(): Promise<number> {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      quick: { type: 'boolean', default: false },
      pods: { type: 'string' },
      names: { type: 'string' },
      watchers: { type: 'string' },
      'watch-rate': { type: 'string' },
      'watch-rate-light': { type: 'string' },
      minutes: { type: 'string' },
      'cpu-prof': { type: 'boolean', default: false },
      // Where results.json and RESULTS.md are kept: bench/ by default; the bench's own test records elsewhere.
      'results-dir': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    console.log(usage);
    return 0;
  }
  const soakMinutes = positiveInt('--minutes', values.minutes);
  const all = [...SCENARIOS, soakScenario(soakMinutes !== undefined ? { minutes: soakMinutes } : {})];
  const unknown = positionals.filter((p) => !all.some((s) => s.name === p));
  if (unknown.length) {
    console.error(`unknown scenario(s): ${unknown.join(', ')}\n${usage}`);
    return 2;
  }
  const chosen = positionals.length ? all.filter((s) => positionals.includes(s.name)) : SCENARIOS;
  const base = PROFILES[values.quick ? 'quick' : 'full'];
  const soaking = chosen.some((s) => s.name === 'soak');
  const profile: Profile = {
    ...base,
    pods: positiveInt('--pods', values.pods) ?? base.pods,
    names: positiveInt('--names', values.names) ?? base.names,
    watchers: positiveInt('--watchers', values.watchers) ?? base.watchers,
    watchEventsPerSecond: positiveInt('--watch-rate', values['watch-rate']) ?? base.watchEventsPerSecond,
    watchEventsPerSecondLight: positiveInt('--watch-rate-light', values['watch-rate-light']) ?? base.watchEventsPerSecondLight,
    // The soak's own minutes, with room for its setup, on top of the rest.
    runBudgetMs: base.runBudgetMs + (soaking ? ((soakMinutes ?? (values.quick ? 2 : 30)) + 10) * 60_000 : 0),
  };
  const watchLoadChanged = profile.watchers !== base.watchers || profile.watchEventsPerSecond !== base.watchEventsPerSecond || profile.watchEventsPerSecondLight !== base.watchEventsPerSecondLight;
  const overridden = profile.pods !== base.pods || profile.names !== base.names || watchLoadChanged;

  const root = findProjectRoot();
  // Taken at the start: src/ may be committed to while the run goes on (dist/ is what runs).
  const commit = gitCommit(root);
  const dir = process.env.FLOTILLA_BENCH_DIR ?? join(root, '.cache', 'bench', profile.name);
  const started = performance.now();
  const log = (line: string) => process.stderr.write(`[${((performance.now() - started) / 1000).toFixed(1).padStart(6)} s] ${line}\n`);
  BenchContext.prepareDir(dir);
  const ctx = new BenchContext(profile, dir, log);
  if (values['cpu-prof']) {
    ctx.cpuProfDir = join(dir, 'cpuprof');
    log(`flotilla CPU profiles (main thread and workers) go to ${ctx.cpuProfDir}`);
  }

  // Stop everything we started on a signal or when the run outlives its budget.
  let stopping = false;
  const abort = (why: string, code: number) => {
    if (stopping) {
      log(`${why} again: exiting now (children are killed by PID on exit)`);
      process.exit(code);
    }
    stopping = true;
    log(`${why}: stopping flotilla and the fleet`);
    const force = setTimeout(() => process.exit(code), 30_000);
    ctx.stopAll().catch(() => undefined).finally(() => {
      clearTimeout(force);
      process.exit(code);
    });
  };
  process.on('SIGINT', () => abort('SIGINT', 130));
  process.on('SIGTERM', () => abort('SIGTERM', 143));
  const budget = setTimeout(() => abort(`run budget of ${profile.runBudgetMs / 60_000} min exceeded`, 1), profile.runBudgetMs);
  budget.unref();

  log(`profile ${profile.name}${overridden ? ' (overridden)' : ''}: ${profile.pods} pods × ${profile.names} cluster names = ${profile.pods * profile.names} cached objects; scenarios: ${chosen.map((s) => s.name).join(', ')}; dir ${dir}`);
  const results: ScenarioRecord[] = [];
  let failed = false;
  try {
    for (const scenario of chosen) {
      const t0 = performance.now();
      const emitted: Figure[] = [];
      const emit = (f: Figure) => {
        emitted.push(f);
        console.log(benchLine(f));
      };
      log(`scenario ${scenario.name}`);
      try {
        const r = await scenario.run(ctx, emit);
        results.push({ name: scenario.name, figures: r.figures, facts: r.facts, seconds: (performance.now() - t0) / 1000 });
        log(`scenario ${scenario.name}: ${r.facts.objects} objects, ${r.facts.objectBytes} B each; ${r.facts.notes.join('; ')}`);
      } catch (e) {
        failed = true;
        const message = (e as Error).stack ?? String(e);
        log(`scenario ${scenario.name} failed: ${message}`);
        results.push({ name: scenario.name, figures: emitted, error: (e as Error).message, seconds: (performance.now() - t0) / 1000 });
      }
    }
  } finally {
    await ctx.stopAll();
    clearTimeout(budget);
  }

  const run: RunRecord = {
    profile: profile.name + (overridden ? `-${profile.pods}x${profile.names}` : '') + (soaking && soakMinutes !== undefined ? `-soak${soakMinutes}m` : '') + (watchLoadChanged ? `-w${profile.watchers}x${profile.watchEventsPerSecond}${profile.watchEventsPerSecondLight !== undefined ? `+${profile.watchEventsPerSecondLight}` : ''}` : '') + (ctx.cpuProfDir ? '+cpu-prof' : ''),
    scenarios: chosen.map((s) => s.name),
    date: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
    commit,
    machine: machine(),
    setup: [
      // The soak seeds and registers its own (its notes say what).
      ...(chosen.every((s) => s.name === 'soak') ? [] : [`${profile.pods} pods seeded into one kube-apiserver (etcd on loopback, no controllers), registered in flotilla under ${profile.names} cluster names: ${profile.pods * profile.names} cached objects`]),
      `whole run: ${((performance.now() - started) / 1000).toFixed(0)} s`,
      ...(ctx.cpuProfDir ? [`flotilla ran under the CPU profiler (bench/lib/cpu-profile.ts): times include its overhead`] : []),
    ],
    results,
  };
  const resultsDir = values['results-dir'] ?? join(root, 'bench');
  recordRun(join(resultsDir, 'results.json'), join(resultsDir, 'RESULTS.md'), run);
  log(`wrote ${join(resultsDir, 'RESULTS.md')}`);
  return failed ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (e: unknown) => {
    console.error(`bench: ${(e as Error).stack ?? e}`);
    process.exit(1);
  },
);
