#!/usr/bin/env node
// Builds the test fleet's member binaries (etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler, kwok) from their published Go modules, once, into a cache directory keyed by
// what goes into them (our go.mod/go.sum files, the Go toolchain, the link flags). A warm run
// finds the directory and returns at once.
//
//   node scripts/build-fleet-binaries.mjs            build if missing, print the directory
//   node scripts/build-fleet-binaries.mjs --print-dir print the directory only (no build)
//   node scripts/build-fleet-binaries.mjs --conformance build the conformance harness's binaries
//   node scripts/build-fleet-binaries.mjs --karmada   karmada-search and karmada-aggregated-apiserver
//   node scripts/build-fleet-binaries.mjs --helm      the Helm CLI (deploy/helm's lint and render tests)
//
// FLOTILLA_CACHE_DIR overrides the cache root (default: $XDG_CACHE_HOME/flotilla or ~/.cache/flotilla).
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const goDir = join(root, 'test', 'fleet', 'go');

// The Kubernetes release the members report. It must match test/fleet/go/k8s/go.mod.
const K8S_VERSION = 'v1.34.4';
const K8S_COMMIT = 'flotilla-test-fleet';

export const BINARIES = ['etcd', 'kube-apiserver', 'kube-controller-manager', 'kube-scheduler', 'kwok'];

function versionLdflags() {
  const [major, minor] = K8S_VERSION.replace(/^v/, '').split('.');
  const vars = {
    gitVersion: K8S_VERSION,
    gitMajor: major,
    gitMinor: minor,
    gitCommit: K8S_COMMIT,
    gitTreeState: 'clean',
    buildDate: '2026-01-01T00:00:00Z',
  };
  const pkgs = ['k8s.io/component-base/version', 'k8s.io/client-go/pkg/version'];
  return pkgs.flatMap((p) => Object.entries(vars).map(([k, v]) => `-X ${p}.${k}=${v}`)).join(' ') + ' -s -w';
}

/** Where every cached test tool lives (fleet binaries, test clients); FLOTILLA_CACHE_DIR moves it. */
export function cacheRoot() {
  if (process.env.FLOTILLA_CACHE_DIR) return resolve(process.env.FLOTILLA_CACHE_DIR);
  const xdg = process.env.XDG_CACHE_HOME || join(homedir(), '.cache');
  return join(xdg, 'flotilla');
}

function goVersion() {
  return execFileSync('go', ['version'], { encoding: 'utf8' }).trim();
}

export function fleetBinDir() {
  const h = createHash('sha256');
  for (const mod of ['k8s', 'kwok']) {
    for (const f of ['go.mod', 'go.sum']) {
      const p = join(goDir, mod, f);
      h.update(`${mod}/${f}\n`);
      if (existsSync(p)) h.update(readFileSync(p));
    }
  }
  h.update(goVersion());
  h.update(versionLdflags());
  return join(cacheRoot(), 'fleet-bin', `${K8S_VERSION}-${h.digest('hex').slice(0, 12)}`);
}

function complete(dir) {
  return BINARIES.every((b) => existsSync(join(dir, b)));
}

function build(dir) {
  const tmp = `${dir}.tmp-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  const env = { ...process.env, CGO_ENABLED: '0', GOFLAGS: '-buildvcs=false -mod=readonly' };
  const ldflags = versionLdflags();
  const started = Date.now();
  const run = (cwd, args) => {
    process.stderr.write(`fleet build: go ${args.join(' ')}\n`);
    execFileSync('go', args, { cwd, env, stdio: ['ignore', 'inherit', 'inherit'] });
  };
  const k8sDir = join(goDir, 'k8s');
  run(k8sDir, ['build', '-trimpath', '-ldflags', ldflags, '-o', tmp,
    'k8s.io/kubernetes/cmd/kube-apiserver', 'k8s.io/kubernetes/cmd/kube-controller-manager', 'k8s.io/kubernetes/cmd/kube-scheduler']);
  run(k8sDir, ['build', '-trimpath', '-ldflags', '-s -w', '-o', join(tmp, 'etcd'), 'go.etcd.io/etcd/server/v3']);
  run(join(goDir, 'kwok'), ['build', '-trimpath', '-ldflags', '-s -w', '-o', join(tmp, 'kwok'), 'sigs.k8s.io/kwok/cmd/kwok']);
  writeFileSync(join(tmp, 'BUILD_INFO'), `${K8S_VERSION}\n${goVersion()}\nbuilt in ${Math.round((Date.now() - started) / 1000)} s\n`);
  mkdirSync(dirname(dir), { recursive: true });
  rmSync(dir, { recursive: true, force: true });
  renameSync(tmp, dir);
}

export function ensureFleetBinaries() {
  const dir = fleetBinDir();
  if (!complete(dir)) build(dir);
  return dir;
}

// The test clients (test/clients/go: a client-go informer program) get a directory of their own,
// keyed by their sources, so changing them rebuilds only them.
const clientsDir = join(root, 'test', 'clients', 'go');

export function testClientsDir() {
  const h = createHash('sha256');
  for (const f of ['go.mod', 'go.sum', 'main.go']) h.update(`${f}\n`).update(readFileSync(join(clientsDir, f)));
  h.update(goVersion());
  return join(cacheRoot(), 'test-clients', h.digest('hex').slice(0, 12));
}

export function ensureTestClients() {
  const dir = testClientsDir();
  if (existsSync(join(dir, 'informer'))) return dir;
  const tmp = `${dir}.tmp-${process.pid}`;
  mkdirSync(tmp, { recursive: true });
  process.stderr.write('test clients: go build informer\n');
  execFileSync('go', ['build', '-trimpath', '-o', join(tmp, 'informer'), '.'], {
    cwd: clientsDir,
    env: { ...process.env, CGO_ENABLED: '0', GOFLAGS: '-buildvcs=false -mod=readonly' },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  rmSync(dir, { recursive: true, force: true });
  renameSync(tmp, dir);
  return dir;
}

// The conformance harness (test/conformance/go): the upstream e2e tests of three SIGs compiled into
// one test binary of ours, kubectl and the ginkgo CLI of the same module graph. Keyed by that
// module's files and the toolchain, like the fleet binaries; a cold build compiles a large part of
// k8s.io/kubernetes, a warm one only hashes three files.
const conformanceGoDir = join(root, 'test', 'conformance', 'go');
export const CONFORMANCE_BINARIES = ['e2e.test', 'kubectl', 'ginkgo'];

export function conformanceBinDir() {
  const h = createHash('sha256');
  for (const f of ['go.mod', 'go.sum', 'conformance_test.go']) h.update(`${f}\n`).update(readFileSync(join(conformanceGoDir, f)));
  h.update(goVersion());
  h.update(versionLdflags());
  return join(cacheRoot(), 'conformance-bin', `${K8S_VERSION}-${h.digest('hex').slice(0, 12)}`);
}

export function ensureConformanceBinaries() {
  const dir = conformanceBinDir();
  if (CONFORMANCE_BINARIES.every((b) => existsSync(join(dir, b)))) return dir;
  return buildInto(dir, K8S_VERSION, (tmp, env) => {
    const ldflags = versionLdflags();
    const run = (args) => {
      process.stderr.write(`conformance build: go ${args.join(' ')}\n`);
      execFileSync('go', args, { cwd: conformanceGoDir, env, stdio: ['ignore', 'inherit', 'inherit'] });
    };
    // -vet=off: vet would first compute facts for every package k8s.io/kubernetes pulls in (minutes).
    // The version variables make the test binary and kubectl report the release they are built from
    // (some sig-cli tests compare client and server versions).
    run(['test', '-c', '-vet=off', '-trimpath', '-ldflags', ldflags, '-o', join(tmp, 'e2e.test'), '.']);
    run(['build', '-trimpath', '-ldflags', ldflags, '-o', join(tmp, 'kubectl'), 'k8s.io/kubernetes/cmd/kubectl']);
    run(['build', '-trimpath', '-ldflags', '-s -w', '-o', join(tmp, 'ginkgo'), 'github.com/onsi/ginkgo/v2/ginkgo']);
  });
}

/**
 * Builds into a fresh directory beside `dir`, then moves it into place: a build that fails or is
 * killed never leaves a half-filled cache directory that looks complete.
 */
function buildInto(dir, version, build) {
  const tmp = `${dir}.tmp-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  const env = { ...process.env, CGO_ENABLED: '0', GOFLAGS: '-buildvcs=false -mod=readonly' };
  const started = Date.now();
  build(tmp, env);
  writeFileSync(join(tmp, 'BUILD_INFO'), `${version}\n${goVersion()}\nbuilt in ${Math.round((Date.now() - started) / 1000)} s\n`);
  mkdirSync(dirname(dir), { recursive: true });
  rmSync(dir, { recursive: true, force: true });
  renameSync(tmp, dir);
  return dir;
}

// The live peer the bench compares flotilla with (bench/scenarios/karmada.ts): Karmada's search
// proxy and the aggregated apiserver that serves its Cluster objects, from Karmada's published
// module through test/fleet/go/karmada (a go.mod of ours naming the two commands as tools). A
// directory of their own, keyed like the fleet's, so the fleet's binaries do not rebuild for them.
const KARMADA_VERSION = 'v1.18.2';
const karmadaDir = join(goDir, 'karmada');
export const KARMADA_BINARIES = ['karmada-search', 'karmada-aggregated-apiserver'];

export function karmadaBinDir() {
  const h = createHash('sha256');
  for (const f of ['go.mod', 'go.sum']) h.update(`${f}\n`).update(readFileSync(join(karmadaDir, f)));
  h.update(goVersion());
  return join(cacheRoot(), 'karmada-bin', `${KARMADA_VERSION}-${h.digest('hex').slice(0, 12)}`);
}

export function ensureKarmadaBinaries() {
  const dir = karmadaBinDir();
  if (KARMADA_BINARIES.every((b) => existsSync(join(dir, b)))) return dir;
  return buildInto(dir, KARMADA_VERSION, (tmp, env) => {
    const pkgs = { 'karmada-search': 'karmada-search', 'karmada-aggregated-apiserver': 'aggregated-apiserver' };
    for (const [binary, cmd] of Object.entries(pkgs)) {
      process.stderr.write(`karmada build: go build ${cmd}\n`);
      execFileSync('go', ['build', '-trimpath', '-ldflags', '-s -w', '-o', join(tmp, binary), `github.com/karmada-io/karmada/cmd/${cmd}`], { cwd: karmadaDir, env, stdio: ['ignore', 'inherit', 'inherit'] });
    }
  });
}

// The Helm CLI the deploy tests lint and render the chart with (test/e2e/deploy.test.ts), from
// Helm's published module through test/fleet/go/helm (a go.mod of ours naming helm's command as a
// tool), cached like Karmada's: by version, our go.mod/go.sum and the toolchain.
const HELM_VERSION = 'v3.22.0';
const helmModDir = join(goDir, 'helm');

// Helm's own build (its Makefile) sets its version and the Kubernetes version `helm template` and
// `helm lint` assume (otherwise v1.20) from the client-go it is built with: 0.N is Kubernetes 1.N.
function helmLdflags() {
  const m = /^\s*k8s\.io\/client-go v0\.(\d+)\./m.exec(readFileSync(join(helmModDir, 'go.mod'), 'utf8'));
  if (!m) throw new Error('test/fleet/go/helm/go.mod names no k8s.io/client-go v0.N');
  const kube = ['pkg/lint/rules', 'pkg/chartutil'].flatMap((p) => [`-X helm.sh/helm/v3/${p}.k8sVersionMajor=1`, `-X helm.sh/helm/v3/${p}.k8sVersionMinor=${m[1]}`]);
  return ['-s -w', `-X helm.sh/helm/v3/internal/version.version=${HELM_VERSION}`, ...kube].join(' ');
}

export function helmBinDir() {
  const h = createHash('sha256');
  for (const f of ['go.mod', 'go.sum']) h.update(`${f}\n`).update(readFileSync(join(helmModDir, f)));
  h.update(goVersion());
  h.update(helmLdflags());
  return join(cacheRoot(), 'helm-bin', `${HELM_VERSION}-${h.digest('hex').slice(0, 12)}`);
}

/** Builds the Helm CLI if its cache directory lacks it; returns the path of the `helm` binary. */
export function ensureHelm() {
  const dir = helmBinDir();
  const binary = join(dir, 'helm');
  if (existsSync(binary)) return binary;
  buildInto(dir, HELM_VERSION, (tmp, env) => {
    process.stderr.write('helm build: go build helm.sh/helm/v3/cmd/helm\n');
    execFileSync('go', ['build', '-trimpath', '-ldflags', helmLdflags(), '-o', join(tmp, 'helm'), 'helm.sh/helm/v3/cmd/helm'], { cwd: helmModDir, env, stdio: ['ignore', 'inherit', 'inherit'] });
  });
  return binary;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  if (process.argv.includes('--karmada')) {
    console.log(ensureKarmadaBinaries());
  } else if (process.argv.includes('--helm')) {
    console.log(ensureHelm());
  } else if (process.argv.includes('--print-dir')) {
    console.log(fleetBinDir());
  } else if (process.argv.includes('--conformance')) {
    console.log(ensureConformanceBinaries());
  } else if (process.argv.includes('--clients')) {
    console.log(ensureTestClients());
  } else {
    console.log(ensureFleetBinaries());
  }
}
