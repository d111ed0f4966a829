import { describe, expect, it } from 'vitest';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { compareSides, likelyCause, parseGinkgoReport, type SideResult } from '../../conformance/harness.js';
import { SKIPS, focusOnNames, skipExpression } from '../../conformance/suite.js';

const side = (name: string, passed: string[], failed: string[] = []): SideResult => ({
  side: name,
  specs: [...passed.map((n) => ({ name: n, state: 'passed', seconds: 1 })), ...failed.map((n) => ({ name: n, state: 'failed', seconds: 1, failure: 'x' }))],
  passed,
  failed,
  seconds: 2,
  logPath: '',
  reportPath: '',
});

describe('conformance harness', () => {
  it('reads test names, states and suite failures from a ginkgo JSON report', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ginkgo-report-'));
    const path = join(dir, 'report.json');
    writeFileSync(path, JSON.stringify([{
      SuiteSucceeded: false,
      SpecReports: [
        { LeafNodeType: 'SynchronizedBeforeSuite', State: 'passed' },
        { ContainerHierarchyTexts: ['[sig-apps] Job'], LeafNodeType: 'It', LeafNodeText: 'should delete a job [Conformance]', State: 'passed', RunTime: 3e9 },
        { ContainerHierarchyTexts: ['[sig-cli] Kubectl client', 'Proxy server'], LeafNodeType: 'It', LeafNodeText: 'should x [Conformance]', State: 'failed', Failure: { Message: 'boom\nmore' } },
        { ContainerHierarchyTexts: ['[sig-node] Pods'], LeafNodeType: 'It', LeafNodeText: 'other', State: 'skipped' },
        { LeafNodeType: 'ReportAfterSuite', State: 'failed', Failure: { Message: 'report failed' } },
      ],
    }]));
    const { specs, suiteFailure } = parseGinkgoReport(path);
    expect(specs.map((s) => [s.name, s.state])).toEqual([
      ['[sig-apps] Job should delete a job [Conformance]', 'passed'],
      ['[sig-cli] Kubectl client Proxy server should x [Conformance]', 'failed'],
      ['[sig-node] Pods other', 'skipped'],
    ]);
    expect(specs[0]!.seconds).toBe(3);
    expect(specs[1]!.failure).toBe('boom\nmore');
    expect(suiteFailure).toMatch(/ReportAfterSuite failed: report failed/);
  });

  it('fails on a test that passes directly and not through flotilla, unless it is a known failure', () => {
    const direct = side('direct', ['a', 'b', 'c', 'd'], ['e']);
    const flotilla = side('flotilla', ['a', 'e'], ['b', 'c', 'd']);
    const c = compareSides(direct, flotilla, new Set(['c', 'a']));
    expect(c.regressions).toEqual(['b', 'd']);
    expect(c.knownFailures).toEqual(['c']);
    expect(c.fixed).toEqual(['a']);
    expect(c.flotillaOnly).toEqual(['e']);
    expect(c.both).toEqual(['a']);
  });

  it('focuses on exact names (ginkgo matches "<suite> <name>") and joins the skip patterns', () => {
    const names = ['[sig-cli] Kubectl client Proxy server should support --unix-socket=/path [Conformance]'];
    const focus = new RegExp(focusOnNames(names));
    expect(focus.test(`Kubernetes e2e suite ${names[0]}`)).toBe(true);
    expect(focus.test(`Kubernetes e2e suite ${names[0]} more`)).toBe(false);
    const skip = new RegExp(skipExpression(SKIPS));
    expect(skip.test('[sig-api-machinery] AdmissionWebhook [Privileged:ClusterAdmin] should mutate configmap [Conformance]')).toBe(true);
    expect(skip.test(names[0]!)).toBe(false);
    for (const s of SKIPS) expect(s.reason.length).toBeGreaterThan(10);
  });

  it('guesses a cause from the failure message', () => {
    expect(likelyCause('failed to update x: strconv.ParseUint: parsing "eyJ3ZXN0IjoiNjgzIn0": invalid syntax')).toMatch(/protobuf/);
    expect(likelyCause('Failed to delete configmap cm-0 in namespace watch-5710: configmaps "cm-0" not found')).toMatch(/no cached owner/);
    expect(likelyCause('Unexpected final error while getting *v1.Job: jobs.batch "x" not found')).toMatch(/read-your-writes/);
    expect(likelyCause('something else')).toBe('other');
  });
});
