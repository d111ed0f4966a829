import { describe, expect, it } from 'vitest';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

/**
 * docs/clients.md's client matrix kept true: every row's client and version is the one the tests
 * run (the version pinned where that client comes from), every test file a row names exists and
 * runs that client (and each of the row's modes), and every kubectl version an e2e test runs has
 * its row naming that test.
 */
const root = resolve(import.meta.dirname, '..', '..', '..');
const read = (path: string) => readFileSync(join(root, path), 'utf8');
const e2e = (name: string) => `test/e2e/${name}.test.ts`;

interface MatrixRow {
  client: string;
  version: string;
  modes: string[];
  tests: string[];
}

const backticked = (cell: string) => [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1]!);

/** The rows of the table under `## The client matrix`. */
function matrixRows(markdown: string): MatrixRow[] {
  const section = markdown.split(/^## /m).find((s) => s.startsWith('The client matrix'));
  if (!section) throw new Error('docs/clients.md has no "## The client matrix" section');
  return section.split('\n').filter((l) => l.startsWith('|')).slice(2).map((l) => {
    const [client, version, modes, tests] = l.split('|').slice(1, -1).map((c) => c.trim());
    return { client: client!, version: version!, modes: backticked(modes ?? ''), tests: backticked(tests ?? '') };
  });
}

const majorMinor = (v: string) => /^v?(\d+\.\d+)/.exec(v)?.[1];

/** Where each client's tested version is pinned, and what shows a test file runs it. */
interface ClientEvidence {
  pinned(): string | undefined;
  runs(text: string, row: MatrixRow): string[];
}

/** A quoted mode or version literal, as the tests pass them (`'informer'`, `'1.35'`). */
const quotes = (text: string, s: string) => text.includes(`'${s}'`);

const CLIENTS: Record<string, ClientEvidence> = {
  kubectl: {
    // The machine's kubectl.1.27 … kubectl.1.33 and the built ones: the version is the test's argument.
    pinned: () => undefined,
    runs: (text, row) => (quotes(text, row.version) && text.includes('support/kubectl.js') ? [] : [`runs no kubectl ${row.version}`]),
  },
  'client-go': {
    pinned: () => majorMinor(/k8s\.io\/client-go (v\S+)/.exec(read('test/clients/go/go.mod'))?.[1] ?? ''),
    runs: (text, row) => [
      ...(text.includes('support/informer.js') || text.includes('clientsDir') ? [] : ['runs no client-go program']),
      ...row.modes.filter((m) => !quotes(text, m)).map((m) => `runs no ${m} mode`),
    ],
  },
  '@kubernetes/client-node': {
    pinned: () => majorMinor((JSON.parse(read('package-lock.json')) as { packages: Record<string, { version: string }> }).packages['node_modules/@kubernetes/client-node']!.version),
    runs: (text) => (/^import \{[^}]*\bKubeConfig\b[^}]*\} from '@kubernetes\/client-node'/m.test(text) ? [] : ['makes no client-node client']),
  },
  'kubernetes (Python)': {
    pinned: () => /KUBERNETES_PY_VERSION = '([^']+)'/.exec(read('scripts/python-client.mjs'))?.[1],
    runs: (text) => (text.includes('support/python.js') ? [] : ['runs no Python client']),
  },
  k9s: {
    pinned: () => /K9S_VERSION = '([^']+)'/.exec(read('scripts/build-fleet-binaries.mjs'))?.[1],
    runs: (text) => (quotes(text, '--k9s') ? [] : ['runs no k9s']),
  },
};

/** What is wrong with the matrix, one line per problem (empty when it is true). */
function matrixProblems(rows: MatrixRow[], fileText: (path: string) => string | undefined, e2eFiles: string[]): string[] {
  const problems: string[] = [];
  for (const row of rows) {
    const evidence = CLIENTS[row.client];
    if (!evidence) {
      problems.push(`${row.client}: a client no check knows`);
      continue;
    }
    const pinned = evidence.pinned();
    if (pinned !== undefined && pinned !== row.version) problems.push(`${row.client} ${row.version}: the tests run ${pinned}`);
    if (row.tests.length === 0) problems.push(`${row.client} ${row.version}: names no test`);
    for (const test of row.tests) {
      const text = fileText(e2e(test));
      if (text === undefined) problems.push(`${row.client} ${row.version}: ${e2e(test)} does not exist`);
      else problems.push(...evidence.runs(text, row).map((p) => `${row.client} ${row.version}: ${e2e(test)} ${p}`));
    }
  }
  // Every kubectl version a test passes to the kubectl helper has a row naming that test.
  for (const file of e2eFiles) {
    const text = fileText(file)!;
    if (!text.includes('support/kubectl.js')) continue;
    for (const version of new Set([...text.matchAll(/'(1\.\d\d)'/g)].map((m) => m[1]!))) {
      const test = /([^/]+)\.test\.ts$/.exec(file)![1]!;
      if (!rows.some((r) => r.client === 'kubectl' && r.version === version && r.tests.includes(test))) problems.push(`${file} runs kubectl ${version}: no row of the matrix says so`);
    }
  }
  return problems;
}

const e2eFiles = () => readdirSync(join(root, 'test', 'e2e')).filter((f) => f.endsWith('.test.ts')).map((f) => `test/e2e/${f}`);
const fromDisk = (path: string) => (existsSync(join(root, path)) ? read(path) : undefined);

describe('docs/clients.md: the client matrix', () => {
  const rows = matrixRows(read('docs/clients.md'));

  it('names every client the tests run', () => {
    expect(new Set(rows.map((r) => r.client))).toEqual(new Set(Object.keys(CLIENTS)));
  });

  it('is what the tests run: each row’s version, test files and modes, and every kubectl version the tests pass', () => {
    expect(matrixProblems(rows, fromDisk, e2eFiles())).toEqual([]);
  });

  it('fails a row naming a kubectl version no test runs, a missing test, a mode a test does not run, a version not pinned', () => {
    const wrong: MatrixRow[] = [
      ...rows,
      { client: 'kubectl', version: '1.31', modes: [], tests: ['slice'] },
      { client: 'k9s', version: 'v0.50.16', modes: [], tests: ['no-such-file'] },
      { client: 'client-go', version: rows.find((r) => r.client === 'client-go')!.version, modes: ['informer-cost'], tests: ['hub'] },
      { client: 'kubernetes (Python)', version: '1.0.0', modes: [], tests: ['python-client'] },
    ];
    // Only what the wrong rows add (the first test holds the matrix itself to account).
    const before = new Set(matrixProblems(rows, fromDisk, e2eFiles()));
    expect(matrixProblems(wrong, fromDisk, e2eFiles()).filter((p) => !before.has(p))).toEqual([
      'kubectl 1.31: test/e2e/slice.test.ts runs no kubectl 1.31',
      'k9s v0.50.16: test/e2e/no-such-file.test.ts does not exist',
      expect.stringMatching(/^client-go 0\.\d+: test\/e2e\/hub\.test\.ts runs no informer-cost mode$/),
      expect.stringMatching(/^kubernetes \(Python\) 1\.0\.0: the tests run /),
    ]);
    // A kubectl version a test runs that the matrix leaves out.
    const withoutSlice135 = rows.map((r) => (r.client === 'kubectl' && r.version === '1.35' ? { ...r, tests: r.tests.filter((t) => t !== 'slice') } : r));
    expect(matrixProblems(withoutSlice135, fromDisk, e2eFiles()).filter((p) => !before.has(p))).toEqual(['test/e2e/slice.test.ts runs kubectl 1.35: no row of the matrix says so']);
  });
});
