#!/usr/bin/env node
// Makes a fresh clone ready to run: the tools flotilla's build and test fleet need (openssl, Go),
// node_modules (installed when missing or stale), the TypeScript build, and the test fleet's Go-built
// binaries, karmada-search and the Helm CLI (cached by version, so only the first run pays for them), and a venv with the Python
// Kubernetes client for its e2e test (likewise cached by version).
//
//   node scripts/ensure.mjs            everything
//   node scripts/ensure.mjs --no-fleet skip the fleet binaries
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensurePythonClient } from './python-client.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const say = (msg) => process.stderr.write(`ensure: ${msg}\n`);

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

function ensureSystemTools(withFleet) {
  const missing = [];
  if (withFleet && !has('openssl')) missing.push('openssl');
  if (!has('git')) missing.push('git');
  if (missing.length) aptInstall(missing);
  if (withFleet && !has('go')) {
    throw new Error('the test fleet is built with Go (1.24 or newer); install the Go toolchain and re-run');
  }
}

function ensureNodeModules() {
  const marker = join(root, 'node_modules', '.package-lock.json');
  const lock = join(root, 'package-lock.json');
  if (existsSync(marker) && statSync(marker).mtimeMs >= statSync(lock).mtimeMs) return;
  // Not `npm ci`: the registry this runs against lacks some of msgpackr-extract's optional
  // other-platform packages, so no lockfile can list them and `npm ci` refuses the lockfile as out
  // of sync. `npm install` installs the lockfile's versions all the same.
  say('npm install (node_modules missing or older than package-lock.json)');
  run('npm', ['install', '--no-audit', '--no-fund']);
}

function build() {
  run(join(root, 'node_modules', '.bin', 'tsc'), ['-p', 'tsconfig.json']);
}

const withFleet = !process.argv.includes('--no-fleet');
try {
  ensureSystemTools(withFleet);
  ensureNodeModules();
  build();
  if (withFleet) {
    const started = Date.now();
    const build = (arg) => execFileSync('node', [join(root, 'scripts', 'build-fleet-binaries.mjs'), ...arg], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim();
    const dir = build([]);
    build(['--clients']);
    // karmada-search, the live peer of the bench's karmada scenario (and of its test in `npm test`).
    build(['--karmada']);
    // The Helm CLI the deploy tests lint and render deploy/helm/flotilla with.
    build(['--helm']);
    const python = ensurePythonClient();
    const secs = (Date.now() - started) / 1000;
    if (secs > 5) say(`fleet binaries and test clients built in ${secs.toFixed(0)} s: ${dir}, ${python}`);
  }
} catch (e) {
  say(`failed: ${e.message}`);
  process.exit(1);
}
