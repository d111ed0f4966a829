#!/usr/bin/env node
// Makes a fresh clone ready to run: the tools flotilla's build and test fleet need (openssl, Go, Chromium),
// node_modules (installed when missing or stale), the TypeScript build, and the test fleet's Go-built
// binaries, kubectl 1.34 and 1.35, karmada-search, the Helm CLI, promtool and k9s (cached by version, so only the first run pays for them), and a venv with the Python
// Kubernetes client for its e2e test (likewise cached by version).
//
//   node scripts/ensure.mjs            everything `npm test` needs
//   node scripts/ensure.mjs --demo     only what `npm run demo` uses: the fleet's binaries and Helm
//   node scripts/ensure.mjs --no-fleet skip the fleet binaries
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensurePythonClient } from './python-client.mjs';
import { ensureTargets } from './build-fleet-binaries.mjs';
import { formatElapsed, runQuiet } from './build-progress.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
// On a terminal the cold build redraws its progress line in place: a message clears it first.
const say = (msg) => process.stderr.write(`${process.stderr.isTTY ? '\r\x1b[2K' : ''}ensure: ${msg}\n`);

function has(cmd) {
  return spawnSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' }).status === 0;
}

function run(cmd, args, opts = {}) {
  execFileSync(cmd, args, { cwd: root, stdio: ['ignore', 'inherit', 'inherit'], ...opts });
}

function aptInstall(packages) {
  if (!has('apt-get')) throw new Error(`missing ${packages.join(', ')} and no apt-get to install them`);
  const sudo = process.getuid?.() === 0 ? [] : ['sudo'];
  say(`installing Debian packages: ${packages.join(' ')}`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  run(sudo[0] ?? 'apt-get', [...sudo.slice(1), ...(sudo.length ? ['apt-get'] : []), 'update', '-qq'], { env });
  run(sudo[0] ?? 'apt-get', [...sudo.slice(1), ...(sudo.length ? ['apt-get'] : []), 'install', '-y', '-qq', ...packages], { env });
}

function ensureSystemTools(withFleet, withBrowser) {
  const missing = [];
  if (withFleet && !has('openssl')) missing.push('openssl');
  if (!has('git')) missing.push('git');
  // The status page's e2e test drives Debian's Chromium (playwright-core, which brings no browser).
  if (withBrowser && !existsSync('/usr/bin/chromium')) missing.push('chromium');
  if (missing.length) aptInstall(missing);
  if (withFleet && !has('go')) {
    throw new Error('the test fleet is built with Go (1.24 or newer); install the Go toolchain and re-run');
  }
}

async function ensureNodeModules() {
  const marker = join(root, 'node_modules', '.package-lock.json');
  const lock = join(root, 'package-lock.json');
  if (existsSync(marker) && statSync(marker).mtimeMs >= statSync(lock).mtimeMs) return;
  // Not `npm ci`: the registry this runs against lacks some of msgpackr-extract's optional
  // other-platform packages, so no lockfile can list them and `npm ci` refuses the lockfile as out
  // of sync. `npm install` installs the lockfile's versions all the same.
  await timed('npm install (node_modules missing or older than package-lock.json)', () => runQuiet('npm', ['install', '--no-audit', '--no-fund'], { cwd: root }));
}

function build() {
  return timed('the TypeScript build', () => runQuiet(join(root, 'node_modules', '.bin', 'tsc'), ['-p', 'tsconfig.json'], { cwd: root }));
}

/** Runs a step, saying when it starts and how long it took (its output shows only if it fails). */
async function timed(what, step) {
  const started = Date.now();
  say(`${what}…`);
  await step();
  if (Date.now() - started > 5000) say(`${what.replace(/ \(.*\)$/, '')} done in ${formatElapsed(Date.now() - started)}`);
}

const withFleet = !process.argv.includes('--no-fleet');
// The demo (scripts/demo.ts) runs the fleet and installs the chart on its hub with Helm; the tests
// also run the client-go program, karmada-search, promtool, k9s and the Python client.
const demoOnly = process.argv.includes('--demo');
const TEST_TARGETS = ['fleet', 'clients', 'kubectl', 'karmada', 'helm', 'promtool', 'k9s'];
const DEMO_TARGETS = ['fleet', 'helm'];
// The Go builds take longest and start first; npm and the TypeScript build run beside them (the
// Go toolchain spends its first minutes downloading modules, leaving the CPUs free).
const stopBuilds = new AbortController();
try {
  // The demo needs no browser.
  ensureSystemTools(withFleet, withFleet && !demoOnly);
  const started = Date.now();
  const binaries = withFleet ? ensureTargets(demoOnly ? DEMO_TARGETS : TEST_TARGETS, { signal: stopBuilds.signal }) : Promise.resolve([]);
  binaries.catch(() => undefined); // awaited below; a failure meanwhile is not unhandled
  await ensureNodeModules();
  await build();
  if (withFleet) {
    const [dir] = await binaries;
    const python = demoOnly ? undefined : ensurePythonClient();
    const secs = (Date.now() - started) / 1000;
    if (secs > 5) say(`${demoOnly ? 'the demo\'s binaries' : 'fleet binaries and test clients'} ready in ${formatElapsed(secs * 1000)}: ${[dir, python].filter(Boolean).join(', ')}`);
  }
} catch (e) {
  stopBuilds.abort();
  say(`failed: ${e.message}`);
  process.exit(1);
}
