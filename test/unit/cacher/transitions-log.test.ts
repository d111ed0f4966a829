import { describe, expect, it } from 'vitest';
import { CacherTransitions, logMemberChange, memberStatusOf } from '../../../src/cacher/transitions-log.js';
import { FirstSync } from '../../../src/cacher/sync-progress.js';
import { peekRemainingItemCount } from '../../../src/cacher/list-metadata.js';
import { LOG_REPEAT_WINDOW_MS, SYNC_PROGRESS_LOG_INTERVAL_MS } from '../../../src/registry/defaults.js';
import type { StructuredLog } from '../../../src/util/structured-log.js';

function captured() {
  const lines: { level: string; fields: Record<string, unknown>; msg: string }[] = [];
  const log: StructuredLog = { info: (fields, msg) => lines.push({ level: 'info', fields, msg }), warn: (fields, msg) => lines.push({ level: 'warn', fields, msg }) };
  return { lines, log };
}
const SCOPE = { cluster: 'east', resource: 'v1/pods' };

describe('cacher transitions', () => {
  it('says a failure once a window per member status, not at every retry; again at once after a recovery', () => {
    let now = 0;
    const { lines, log } = captured();
    const t = new CacherTransitions(log, SCOPE, () => now);
    t.failed('connect ECONNREFUSED 127.0.0.1:1');
    t.failed('socket hang up');
    t.failed('connect ECONNREFUSED 127.0.0.1:1');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: 'warn', fields: { ...SCOPE, event: 'cacher-failed', error: 'connect ECONNREFUSED 127.0.0.1:1' } });
    now = LOG_REPEAT_WINDOW_MS;
    t.failed('connect ECONNREFUSED 127.0.0.1:1');
    expect(lines[1]!.fields).toMatchObject({ repeats: 2 });
    t.recovered();
    t.recovered();
    expect(lines.filter((l) => l.fields.event === 'cacher-recovered')).toHaveLength(1);
    t.failed('socket hang up');
    expect(lines).toHaveLength(4);
  });

  it("names flotilla's own credentials when the member answers 401 or 403", () => {
    const { lines, log } = captured();
    const t = new CacherTransitions(log, SCOPE);
    t.failed('list v1/pods from east: HTTP 403: {"kind":"Status","message":"pods is forbidden: User \\"flotilla\\" cannot list"}');
    expect(lines[0]!.fields).toMatchObject({ memberStatus: 403, flotillaCredentials: true });
    expect(lines[0]!.msg).toContain("refuses flotilla's own credentials (HTTP 403)");
    expect(memberStatusOf('watch v1/pods from east: HTTP 401: Unauthorized')).toBe(401);
    expect(memberStatusOf('aborted')).toBeUndefined();
  });

  it("names the right flotilla's credentials lack when the member refused them (an OwnRightsError: no status in its words), once a window per right", () => {
    const { lines, log } = captured();
    const t = new CacherTransitions(log, SCOPE);
    const refused = { status: 403, missingRight: 'list clusterroles.rbac.authorization.k8s.io' };
    t.failed("flotilla's own credentials for member east cannot list clusterroles.rbac.authorization.k8s.io: forbidden", refused);
    t.failed("flotilla's own credentials for member east cannot list clusterroles.rbac.authorization.k8s.io: forbidden", refused);
    t.failed("flotilla's own credentials for member east cannot watch roles.rbac.authorization.k8s.io: forbidden", { status: 403, missingRight: 'watch roles.rbac.authorization.k8s.io' });
    expect(lines.map((l) => l.fields)).toMatchObject([
      { memberStatus: 403, flotillaCredentials: true, missingRight: 'list clusterroles.rbac.authorization.k8s.io' },
      { memberStatus: 403, flotillaCredentials: true, missingRight: 'watch roles.rbac.authorization.k8s.io' },
    ]);
  });

  it('says a relist loop of expired watches once a window', () => {
    let now = 0;
    const { lines, log } = captured();
    const t = new CacherTransitions(log, SCOPE, () => now);
    for (let i = 0; i < 5; i++) t.expired('too old resource version');
    now = LOG_REPEAT_WINDOW_MS + 1;
    t.expired('too old resource version');
    expect(lines.map((l) => l.fields.repeats)).toEqual([undefined, 4]);
  });

  it('member changes: connected and recovered at info, silent and lost at warn', () => {
    const { lines, log } = captured();
    logMemberChange(log, { cluster: 'east', kind: 'connected' });
    logMemberChange(log, { cluster: 'east', kind: 'silent', forMs: 2001 });
    logMemberChange(log, { cluster: 'east', kind: 'lost', forMs: 3000, error: 'connect ECONNREFUSED' });
    logMemberChange(log, { cluster: 'east', kind: 'recovered', silentForMs: 9000 });
    expect(lines.map((l) => [l.level, l.fields.event])).toEqual([['info', 'member-connected'], ['warn', 'member-silent'], ['warn', 'member-lost'], ['info', 'member-recovered']]);
  });
});

describe('first sync progress', () => {
  it('counts pages and objects, estimates the time left from the rate and remainingItemCount, logs start, a line per interval, and the end', () => {
    let now = 0;
    const { lines, log } = captured();
    const s = new FirstSync(log, SCOPE, () => now);
    s.start();
    now = 2000;
    s.page(500, 1500);
    expect(s.view()).toMatchObject({ objects: 500, pages: 1, remainingItemCount: 1500, estimatedSecondsLeft: 6 });
    now = SYNC_PROGRESS_LOG_INTERVAL_MS;
    s.page(1000, 1000);
    now += 1000;
    s.page(1500, 500);
    s.start();
    expect(s.view()).toMatchObject({ objects: 0, pages: 0 });
    s.page(2000, undefined);
    expect(s.view()!.estimatedSecondsLeft).toBeUndefined();
    s.done(2000);
    expect(s.view()).toBeUndefined();
    expect(lines.map((l) => l.fields.event)).toEqual(['first-sync-started', 'first-sync-progress', 'first-sync-done']);
    expect(lines[2]!.fields).toMatchObject({ objects: 2000, seconds: 11 });
  });

  it("reads remainingItemCount from a page's list metadata", () => {
    expect(peekRemainingItemCount(Buffer.from('{"kind":"Table","metadata":{"resourceVersion":"5","continue":"abc","remainingItemCount":1234},"rows":[]}'))).toBe(1234);
    expect(peekRemainingItemCount(Buffer.from('{"kind":"Table","metadata":{"resourceVersion":"5"},"rows":[{"metadata":{"remainingItemCount":9}}]}'))).toBeUndefined();
  });
});
