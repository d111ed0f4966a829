import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startFlotillaProcess, type FlotillaProcess } from '../support/flotilla-process.js';
import { CONFORMANCE_RESOURCES, compareSides, conformanceBinDir, runSide, type SideResult } from '../conformance/harness.js';
import { CI_TESTS, DEFAULT_SEED, SKIPS, focusOnNames, skipExpression } from '../conformance/suite.js';

/**
 * The CI subset of the conformance harness (test/conformance): a few upstream conformance tests
 * that pass against a member directly and through today's flotilla, run both ways with the same
 * seed and skip list; any of them passing directly and failing through flotilla fails CI. The full
 * subsets are `npm run conformance`.
 */
const fleet = inject('fleet');
const member = fleet.members[0]!;
let flotilla: FlotillaProcess;
let binDir: string;
let work: string;

describe.skipIf(CI_TESTS.length === 0)('conformance (CI subset)', () => {
  beforeAll(async () => {
    // Built once into the cache (minutes cold, nothing warm), like the fleet binaries.
    binDir = conformanceBinDir();
    work = mkdtempSync(join(tmpdir(), 'flotilla-conformance-'));
    flotilla = await startFlotillaProcess({ fleet, members: [member], dir: join(work, 'proxy'), resources: CONFORMANCE_RESOURCES });
  }, 1_800_000);

  afterAll(async () => {
    await flotilla?.stop();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('every CI test that passes against the member passes through flotilla', async () => {
    const common = {
      binDir,
      focus: focusOnNames(CI_TESTS),
      skip: skipExpression(SKIPS),
      seed: DEFAULT_SEED,
      procs: 2,
      timeout: '15m',
      pidFile: join(fleet.dir, 'pids'),
    };
    const direct = await runSide({ ...common, side: 'direct', kubeconfig: member.kubeconfig, outDir: join(work, 'direct') });
    const viaFlotilla = await runSide({ ...common, side: 'flotilla', kubeconfig: flotilla.kubeconfig, outDir: join(work, 'flotilla') });
    const describeSide = (s: SideResult) => `${s.side}: ${s.passed.length} passed, failed: ${JSON.stringify(s.specs.filter((x) => x.failure).map((x) => `${x.name}: ${x.failure}`), null, 1)}${s.suiteFailure ? `; suite failed: ${s.suiteFailure}` : ''}`;
    expect(direct.suiteFailure, describeSide(direct)).toBeUndefined();
    expect(viaFlotilla.suiteFailure, describeSide(viaFlotilla)).toBeUndefined();
    // Every CI test ran on the member (a renamed upstream test would otherwise drop out silently).
    expect(direct.specs.filter((s) => s.state !== 'skipped').map((s) => s.name).sort(), describeSide(direct)).toEqual([...CI_TESTS].sort());
    expect(compareSides(direct, viaFlotilla, new Set()).regressions, describeSide(viaFlotilla)).toEqual([]);
  }, 1_800_000);
});
