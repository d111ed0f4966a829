#!/usr/bin/env node
// Builds the test fleet's member binaries (etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler, kwok) and the Helm CLI from their published Go modules, once, into a cache
// directory keyed by what goes into them (our go.mod/go.sum, the Go toolchain, the link flags). A
// warm run finds the directory and returns at once. All but kwok share one module graph
// (test/fleet/go/k8s) and one `go build`: the Kubernetes libraries they link are compiled once,
// and one binary links while the next one's packages compile. kwok pins an older Kubernetes
// release it needs (test/fleet/go/kwok) and builds beside them, filling the CPUs they leave idle.
//
//   node scripts/build-fleet-binaries.mjs            build if missing, print the directory
//   node scripts/build-fleet-binaries.mjs --print-dir print the directory only (no build)
//   node scripts/build-fleet-binaries.mjs --conformance build the conformance harness's binaries
//   node scripts/build-fleet-binaries.mjs --karmada   karmada-search and karmada-aggregated-apiserver
//   node scripts/build-fleet-binaries.mjs --helm      the Helm CLI's path (built with the fleet's binaries)
//   node scripts/build-fleet-binaries.mjs --promtool  promtool (the chart's alert rules' checks and tests)
//   node scripts/build-fleet-binaries.mjs --clients   the client-go test program
//   node scripts/build-fleet-binaries.mjs --kubectl   kubectl 1.34 and 1.35 (the e2e tests' kubectl matrix)
//   node scripts/build-fleet-binaries.mjs --k9s       k9s (the terminal UI test/e2e/k9s.test.ts drives in tmux)
//
// Each binary being built is reported on stderr with its elapsed time and what comes next
// (build-progress.mjs); Go's own output shows only when a build fails.
// FLOTILLA_CACHE_DIR overrides the cache root (default: $XDG_CACHE_HOME/flotilla or ~/.cache/flotilla).
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createProgress, formatElapsed, runQuiet } from './build-progress.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const goDir = join(root, 'test', 'fleet', 'go');

// The Kubernetes release the members report. It must match test/fleet/go/k8s/go.mod.
const K8S_VERSION = 'v1.34.4';
const K8S_COMMIT = 'flotilla-test-fleet';

const k8sModDir = join(goDir, 'k8s');

/** The binaries built in test/fleet/go/k8s's module graph, and their packages. */
const K8S_GRAPH_PACKAGES = {
  'kube-apiserver': 'k8s.io/kubernetes/cmd/kube-apiserver',
  'kube-controller-manager': 'k8s.io/kubernetes/cmd/kube-controller-manager',
  'kube-scheduler': 'k8s.io/kubernetes/cmd/kube-scheduler',
  etcd: 'go.etcd.io/etcd/server/v3',
  helm: 'helm.sh/helm/v3/cmd/helm',
};
const kwokModDir = join(goDir, 'kwok');
export const BINARIES = [...Object.keys(K8S_GRAPH_PACKAGES), 'kwok'];

function versionLdflags(version = K8S_VERSION) {
  const [major, minor] = version.replace(/^v/, '').split('.');
  const vars = {
    gitVersion: version,
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

let goVersionText;
function goVersion() {
  goVersionText ??= execFileSync('go', ['version'], { encoding: 'utf8' }).trim();
  return goVersionText;
}

export function fleetBinDir() {
  const h = createHash('sha256');
  for (const dir of [k8sModDir, kwokModDir]) for (const f of ['go.mod', 'go.sum']) h.update(`${dir}/${f}\n`.slice(goDir.length)).update(readFileSync(join(dir, f)));
  h.update(goVersion());
  h.update(fleetLdflags());
  return join(cacheRoot(), 'fleet-bin', `${K8S_VERSION}-${h.digest('hex').slice(0, 12)}`);
}

// One `go build` links every fleet binary with the same flags: each takes the -X of the packages it
// links (the Kubernetes version variables, Helm's own) and the linker ignores the rest.
function fleetLdflags() {
  return `${versionLdflags()} ${helmLdflags()}`;
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

// kubectl releases newer than the machine's own kubectl.1.27 … kubectl.1.33 (test/support/kubectl.ts
// looks for kubectl.1.NN there, then here), each from its k8s.io/kubernetes release through a go.mod
// of ours (test/fleet/go/kubectl-1.NN), cached in one directory keyed by those modules.
const KUBECTL_VERSIONS = { '1.34': 'v1.34.4', '1.35': 'v1.35.4' };
export const KUBECTL_BINARIES = Object.keys(KUBECTL_VERSIONS).map((minor) => `kubectl.${minor}`);

export function kubectlBinDir() {
  const h = createHash('sha256');
  for (const [minor, version] of Object.entries(KUBECTL_VERSIONS)) {
    for (const f of ['go.mod', 'go.sum']) h.update(`${minor}/${f}\n`).update(readFileSync(join(goDir, `kubectl-${minor}`, f)));
    h.update(versionLdflags(version));
  }
  h.update(goVersion());
  return join(cacheRoot(), 'kubectl-bin', h.digest('hex').slice(0, 12));
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

// The Helm CLI the deploy tests lint and render the chart with (test/e2e/deploy.test.ts) and the
// demo installs the chart with: a release whose Kubernetes libraries are the fleet's release, so
// it builds in the fleet's module graph (test/fleet/go/k8s names its command as a tool).
const HELM_VERSION = 'v3.19.5';

// Helm's own build (its Makefile) sets its version and the Kubernetes version `helm template` and
// `helm lint` assume (otherwise v1.20) from the client-go it is built with: 0.N is Kubernetes 1.N.
function helmLdflags() {
  const m = /^\s*k8s\.io\/client-go v0\.(\d+)\./m.exec(readFileSync(join(k8sModDir, 'go.mod'), 'utf8'));
  if (!m) throw new Error('test/fleet/go/k8s/go.mod names no k8s.io/client-go v0.N');
  const kube = ['pkg/lint/rules', 'pkg/chartutil'].flatMap((p) => [`-X helm.sh/helm/v3/${p}.k8sVersionMajor=1`, `-X helm.sh/helm/v3/${p}.k8sVersionMinor=${m[1]}`]);
  return [`-X helm.sh/helm/v3/internal/version.version=${HELM_VERSION}`, ...kube].join(' ');
}

// promtool, which checks and unit-tests the chart's alert rules (deploy/helm/flotilla/files/alerts.yaml),
// from Prometheus' published module through test/fleet/go/promtool, cached like Helm. Prometheus 3.N
// publishes its Go module as v0.3NN.
const PROMTOOL_VERSION = 'v0.316.0';
const promtoolModDir = join(goDir, 'promtool');
// Rules are checked and tested, not scraped: Prometheus' service-discovery providers (cloud SDKs, most of
// its build) are left out with its own build tag.
const PROMTOOL_TAGS = 'remove_all_sd';

export function promtoolBinDir() {
  const h = createHash('sha256');
  for (const f of ['go.mod', 'go.sum']) h.update(`${f}\n`).update(readFileSync(join(promtoolModDir, f)));
  h.update(goVersion());
  h.update(PROMTOOL_TAGS);
  return join(cacheRoot(), 'promtool-bin', `${PROMTOOL_VERSION}-${h.digest('hex').slice(0, 12)}`);
}

// k9s, the terminal UI test/e2e/k9s.test.ts drives in tmux, from its published module through
// test/fleet/go/k9s (a go.mod of ours naming its command as a tool), cached like Helm.
const K9S_VERSION = 'v0.50.16';
const k9sModDir = join(goDir, 'k9s');
// k9s's own build sets the version its header and `k9s version` show.
const K9S_LDFLAGS = `-s -w -X github.com/derailed/k9s/cmd.version=${K9S_VERSION}`;

export function k9sBinDir() {
  const h = createHash('sha256');
  for (const f of ['go.mod', 'go.sum']) h.update(`${f}\n`).update(readFileSync(join(k9sModDir, f)));
  h.update(goVersion());
  h.update(K9S_LDFLAGS);
  return join(cacheRoot(), 'k9s-bin', `${K9S_VERSION}-${h.digest('hex').slice(0, 12)}`);
}

// Every binary is linked with -s -w (no symbol table, no DWARF), so the compiler need not write
// DWARF either; that and a compiler GC that runs a quarter as often take about an eighth off a
// cold build's CPU. Neither changes what is linked, so the cache directories' keys leave them out.
const NO_DWARF = '-gcflags=all=-dwarf=false';
const COMPILER_GOGC = '400';

/**
 * A `go build` (or `go test -c`) step: what it builds, in which module, with which arguments, and,
 * for a step that builds several binaries into a directory at once, each binary's name and the file
 * go writes it as (a package's last path element, less a major-version suffix: etcd's is `server`).
 * `alongside`: more builds run at the same time, as part of the step.
 */
const go = (label, cwd, args, lands = [], alongside = []) => ({ label, runs: [{ cwd, args }, ...alongside], lands });

/** What `go build -o DIR/` names the binary of a main package. */
function goOutputName(pkg) {
  const parts = pkg.split('/');
  const last = parts.at(-1);
  return /^v\d+$/.test(last) && parts.length > 1 ? parts.at(-2) : last;
}

/**
 * Every cached set of binaries: its directory, the binaries that make it complete, what the script
 * prints for it, and its build steps (each given the directory being filled).
 */
const TARGETS = {
  fleet: {
    version: K8S_VERSION,
    dir: fleetBinDir,
    binaries: BINARIES,
    result: (dir) => dir,
    steps: (tmp) => {
      const graph = Object.keys(K8S_GRAPH_PACKAGES);
      return [go(`${BINARIES.join(', ')}`, k8sModDir, ['build', '-trimpath', '-ldflags', fleetLdflags(), '-o', `${tmp}/`, ...graph.map((b) => K8S_GRAPH_PACKAGES[b])],
        [...graph.map((name) => ({ name, file: goOutputName(K8S_GRAPH_PACKAGES[name]) })), { name: 'kwok', file: 'kwok' }],
        [{ cwd: kwokModDir, args: ['build', '-trimpath', '-ldflags', '-s -w', '-o', join(tmp, 'kwok'), 'sigs.k8s.io/kwok/cmd/kwok'] }])];
    },
  },
  clients: {
    version: 'test clients',
    dir: testClientsDir,
    binaries: ['informer'],
    result: (dir) => dir,
    steps: (tmp) => [go('informer (client-go test program)', clientsDir, ['build', '-trimpath', '-ldflags', '-s -w', '-o', join(tmp, 'informer'), '.'])],
  },
  conformance: {
    version: K8S_VERSION,
    dir: conformanceBinDir,
    binaries: CONFORMANCE_BINARIES,
    result: (dir) => dir,
    // -vet=off: vet would first compute facts for every package k8s.io/kubernetes pulls in (minutes).
    // The version variables make the test binary and kubectl report the release they are built from
    // (some sig-cli tests compare client and server versions).
    steps: (tmp) => [
      go('e2e.test (conformance)', conformanceGoDir, ['test', '-c', '-vet=off', '-trimpath', '-ldflags', versionLdflags(), '-o', join(tmp, 'e2e.test'), '.']),
      go('kubectl (conformance)', conformanceGoDir, ['build', '-trimpath', '-ldflags', versionLdflags(), '-o', join(tmp, 'kubectl'), 'k8s.io/kubernetes/cmd/kubectl']),
      go('ginkgo', conformanceGoDir, ['build', '-trimpath', '-ldflags', '-s -w', '-o', join(tmp, 'ginkgo'), 'github.com/onsi/ginkgo/v2/ginkgo']),
    ],
  },
  kubectl: {
    version: Object.values(KUBECTL_VERSIONS).join(' '),
    dir: kubectlBinDir,
    binaries: KUBECTL_BINARIES,
    result: (dir) => dir,
    // The version variables make `kubectl version` report the release, as a released kubectl does.
    steps: (tmp) => Object.entries(KUBECTL_VERSIONS).map(([minor, version]) => go(`kubectl ${minor}`, join(goDir, `kubectl-${minor}`),
      ['build', '-trimpath', '-ldflags', versionLdflags(version), '-o', join(tmp, `kubectl.${minor}`), 'k8s.io/kubernetes/cmd/kubectl'])),
  },
  karmada: {
    version: KARMADA_VERSION,
    dir: karmadaBinDir,
    binaries: KARMADA_BINARIES,
    result: (dir) => dir,
    steps: (tmp) => Object.entries({ 'karmada-search': 'karmada-search', 'karmada-aggregated-apiserver': 'aggregated-apiserver' }).map(([binary, cmd]) =>
      go(binary, karmadaDir, ['build', '-trimpath', '-ldflags', '-s -w', '-o', join(tmp, binary), `github.com/karmada-io/karmada/cmd/${cmd}`])),
  },
  // The Helm CLI is one of the fleet's binaries; `--helm` prints its path.
  helm: {
    version: HELM_VERSION,
    dir: fleetBinDir,
    binaries: BINARIES,
    result: (dir) => join(dir, 'helm'),
    steps: (tmp) => TARGETS.fleet.steps(tmp),
  },
  promtool: {
    version: PROMTOOL_VERSION,
    dir: promtoolBinDir,
    binaries: ['promtool'],
    result: (dir) => join(dir, 'promtool'),
    steps: (tmp) => [go('promtool', promtoolModDir, ['build', '-trimpath', '-tags', PROMTOOL_TAGS, '-ldflags', '-s -w', '-o', join(tmp, 'promtool'), 'github.com/prometheus/prometheus/cmd/promtool'])],
  },
  k9s: {
    version: K9S_VERSION,
    dir: k9sBinDir,
    binaries: ['k9s'],
    result: (dir) => join(dir, 'k9s'),
    steps: (tmp) => [go('k9s', k9sModDir, ['build', '-trimpath', '-ldflags', K9S_LDFLAGS, '-o', join(tmp, 'k9s'), 'github.com/derailed/k9s'])],
  },
};

export const TARGET_NAMES = Object.keys(TARGETS);

/**
 * Builds each named target its cache lacks, reporting every step of all of them as one plan
 * (so "next" may name the next target's first binary); resolves with what each target prints
 * (a directory, or the path of its one binary), in the order asked.
 */
export async function ensureTargets(names, { signal } = {}) {
  const missing = names.map((name) => ({ name, target: TARGETS[name], dir: TARGETS[name].dir() }))
    .filter(({ target, dir }) => !target.binaries.every((b) => existsSync(join(dir, b))))
    // Targets sharing a directory (helm and fleet) are built once.
    .filter((m, i, all) => all.findIndex((o) => o.dir === m.dir) === i);
  const plan = missing.map((m) => ({ ...m, tmp: `${m.dir}.tmp-${process.pid}` })).map((m) => ({ ...m, steps: m.target.steps(m.tmp) }));
  const progress = createProgress(plan.flatMap((m) => m.steps.map((s) => s.label)));
  const env = { ...process.env, CGO_ENABLED: '0', GOGC: COMPILER_GOGC, GOFLAGS: `-buildvcs=false -mod=readonly ${NO_DWARF}` };
  for (const { target, dir, tmp, steps } of plan) {
    // Built into a fresh directory beside `dir`, then moved into place: a build that fails or is
    // killed never leaves a half-filled cache directory that looks complete.
    rmSync(tmp, { recursive: true, force: true });
    mkdirSync(tmp, { recursive: true });
    const started = Date.now();
    for (const step of steps) {
      progress.start(step.label);
      const landing = reportLanding(step.lands, tmp, progress);
      try {
        await runTogether(step.runs, env, signal);
      } catch (e) {
        progress.fail();
        throw e;
      } finally {
        landing.stop();
      }
      for (const { name, file } of step.lands) if (file !== name) renameSync(join(tmp, file), join(tmp, name));
      progress.done();
    }
    writeFileSync(join(tmp, 'BUILD_INFO'), `${target.version}\n${goVersion()}\nbuilt in ${Math.round((Date.now() - started) / 1000)} s\n`);
    mkdirSync(dirname(dir), { recursive: true });
    rmSync(dir, { recursive: true, force: true });
    renameSync(tmp, dir);
  }
  return names.map((name) => TARGETS[name].result(TARGETS[name].dir()));
}

/** A step's builds at the same time; the first to fail stops the others (and so does `signal`). */
async function runTogether(runs, env, signal) {
  const stop = new AbortController();
  const stopAll = () => stop.abort();
  signal?.addEventListener('abort', stopAll, { once: true });
  try {
    await Promise.all(runs.map((run) => runQuiet('go', run.args, { cwd: run.cwd, env, signal: stop.signal }).catch((e) => {
      stopAll();
      throw e;
    })));
  } finally {
    signal?.removeEventListener('abort', stopAll);
  }
}

/** Says each of a step's binaries when it appears in `dir` (go build writes each as its link ends). */
function reportLanding(lands, dir, progress) {
  const waiting = new Set(lands);
  const started = Date.now();
  const look = () => {
    for (const b of waiting) {
      if (!existsSync(join(dir, b.file))) continue;
      waiting.delete(b);
      const rest = [...waiting].map((w) => w.name);
      progress.note(`${b.name} linked after ${formatElapsed(Date.now() - started)}${rest.length ? `; still building: ${rest.join(', ')}` : ''}`);
    }
  };
  const timer = waiting.size ? setInterval(look, 1000) : undefined;
  timer?.unref();
  return { stop: () => { if (timer) clearInterval(timer); } };
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  if (process.argv.includes('--print-dir')) {
    console.log(fleetBinDir());
  } else {
    const name = TARGET_NAMES.find((t) => process.argv.includes(`--${t}`)) ?? 'fleet';
    try {
      const [result] = await ensureTargets([name]);
      console.log(result);
    } catch (e) {
      process.stderr.write(`build: ${e.message}\n`);
      process.exit(1);
    }
  }
}
