import { performance } from 'node:perf_hooks';
import { flotillaStatus, sleep, sumOf } from '../lib/flotilla.js';
import { figureSink, type Scenario } from '../lib/scenario.js';

/**
 * warm-restart: flotilla stopped (SIGTERM, then SIGKILL) and started again on the same data dir.
 * A warm start resumes every cacher's watch from its stored RV: no relist.
 */
export const warmRestart: Scenario = {
  name: 'warm-restart',
  async run(ctx, emit) {
    const seed = await ctx.ensureSeeded();
    await ctx.ensureFlotilla();
    const before = await ctx.cachedObjects();
    const { figures, add } = figureSink('warm_restart', emit);
    const notes: string[] = [];

    const stopStarted = performance.now();
    await ctx.stopFlotilla();
    add('sigterm_stop_s', (performance.now() - stopStarted) / 1000, 's');
    let start = await ctx.startFlotilla({ reuseData: true });
    add('time_to_ready_s', start.readyMs / 1000, 's', { op: '<=', value: 10 });
    let after = await ctx.cachedObjects();
    add('relists', after.relists, 'relists', { op: '=', value: 0 });
    if (after.objects !== before.objects) notes.push(`after SIGTERM restart: ${after.objects} objects, ${before.objects} before`);

    const proc = start.flotilla.proc;
    process.kill(proc.pid, 'SIGKILL');
    const deadline = Date.now() + 30_000;
    while (!proc.exited && Date.now() < deadline) await sleep(20);
    if (!proc.exited) throw new Error('flotilla did not exit after SIGKILL');
    ctx.flotilla = undefined;
    start = await ctx.startFlotilla({ reuseData: true });
    add('after_sigkill_time_to_ready_s', start.readyMs / 1000, 's');
    after = await ctx.cachedObjects();
    add('after_sigkill_relists', after.relists, 'relists', { op: '=', value: 0 });
    if (after.objects !== before.objects) notes.push(`after SIGKILL restart: ${after.objects} objects, ${before.objects} before`);
    const st = await flotillaStatus(start.flotilla.endpoint);
    const relisted = st.cachers.filter((c) => c.relists > 0).map((c) => c.cluster);
    if (relisted.length) notes.push(`relisted after SIGKILL: ${relisted.join(', ')}`);
    notes.push(`${sumOf(st.cachers, 'objects')} cached objects (${seed.pods} pods × ${ctx.profile.names} names) on the same data dir`);
    return { figures, facts: { objects: before.objects, objectBytes: seed.memberBytesAvg, objectBytesAre: 'as the member stores it, managedFields included', notes } };
  },
};
