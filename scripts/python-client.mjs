#!/usr/bin/env node
// The official Python Kubernetes client, for the e2e test that runs it against flotilla
// (test/clients/python): a venv with one pinned `kubernetes` release, made once into the cache
// directory beside the fleet binaries. The venv is keyed by that release, so bumping the pin makes
// a new one and a warm run finds the old one's marker and returns at once.
//
//   node scripts/python-client.mjs            install if missing, print the venv's python
//   node scripts/python-client.mjs --print    print the venv's python only (no install)
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cacheRoot } from './build-fleet-binaries.mjs';

export const KUBERNETES_PY_VERSION = '37.0.2';

export function pythonClientDir() {
  return join(cacheRoot(), 'python-client', `kubernetes-${KUBERNETES_PY_VERSION}`);
}

export function pythonBin() {
  return join(pythonClientDir(), 'bin', 'python');
}

// Written last, so a venv whose pip install was interrupted is never taken for a finished one.
const MARKER = '.installed';

export function ensurePythonClient() {
  const dir = pythonClientDir();
  const bin = pythonBin();
  // A venv links to the interpreter it was made with; if that one went away, make it again.
  if (existsSync(join(dir, MARKER)) && spawnSync(bin, ['-c', ''], { stdio: 'ignore' }).status === 0) return bin;
  const probe = spawnSync('python3', ['-c', 'import sys, venv; print("%d.%d" % sys.version_info[:2])'], { encoding: 'utf8' });
  if (probe.error || probe.status !== 0) {
    throw new Error(
      'the Python client e2e test needs python3 (3.8 or newer) with the venv module ' +
        `(Debian: apt-get install python3-venv); \`python3\` ${probe.error ? 'was not found' : `failed: ${probe.stderr.trim()}`}`,
    );
  }
  process.stderr.write(`python client: venv with kubernetes==${KUBERNETES_PY_VERSION} (python ${probe.stdout.trim()}) in ${dir}\n`);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dirname(dir), { recursive: true });
  // Built in place rather than renamed into place: a venv's scripts carry its absolute path.
  // pip's output goes to stderr so that stdout stays the one line callers read.
  const stdio = ['ignore', 2, 'inherit'];
  execFileSync('python3', ['-m', 'venv', dir], { stdio });
  execFileSync(bin, ['-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', `kubernetes==${KUBERNETES_PY_VERSION}`], { stdio });
  const installed = execFileSync(bin, ['-c', 'import kubernetes; print(kubernetes.__version__)'], { encoding: 'utf8' }).trim();
  if (installed !== KUBERNETES_PY_VERSION) throw new Error(`python client: asked for kubernetes ${KUBERNETES_PY_VERSION}, got ${installed}`);
  writeFileSync(join(dir, MARKER), `kubernetes ${installed}\n`);
  return bin;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  try {
    console.log(process.argv.includes('--print') ? pythonBin() : ensurePythonClient());
  } catch (e) {
    process.stderr.write(`python client: ${e.message}\n`);
    process.exit(1);
  }
}
