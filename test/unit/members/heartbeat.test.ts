import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Heartbeat, type HeartbeatChange } from '../../../src/members/heartbeat.js';

/** A member the test answers by hand: each probe waits until the test settles it. */
function handMember() {
  const probes: { signal: AbortSignal; answer: () => void; fail: (e: Error) => void }[] = [];
  const probe = (signal: AbortSignal) =>
    new Promise<void>((resolve, reject) => {
      signal.addEventListener('abort', () => reject(signal.reason as Error));
      probes.push({ signal, answer: resolve, fail: reject });
    });
  return { probes, probe };
}

describe('member heartbeat', () => {
  let heartbeat: Heartbeat;
  beforeEach(() => {
    vi.useFakeTimers();
    heartbeat = new Heartbeat(500);
  });
  afterEach(() => {
    heartbeat.stop();
    vi.useRealTimers();
  });

  it('is not silent while probes are answered within the interval', async () => {
    const m = handMember();
    heartbeat.track('east', m.probe);
    expect(m.probes).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(200);
    m.probes[0]!.answer();
    await vi.advanceTimersByTimeAsync(300);
    expect(m.probes).toHaveLength(2);
    expect(heartbeat.silence('east')).toBeUndefined();
    expect(heartbeat.status()).toEqual([{ cluster: 'east', silent: false, lastAnswerAt: expect.any(String) }]);
  });

  it('calls a member silent once a probe is outstanding longer than the interval, sends no second probe, and ends it on the answer', async () => {
    const m = handMember();
    heartbeat.track('east', m.probe);
    m.probes[0]!.answer();
    await vi.advanceTimersByTimeAsync(500);
    expect(m.probes).toHaveLength(2);
    await vi.advanceTimersByTimeAsync(500);
    expect(heartbeat.silence('east')).toBeUndefined();
    await vi.advanceTimersByTimeAsync(1);
    expect(heartbeat.silence('east')).toEqual({ cluster: 'east', forMs: 501 });
    await vi.advanceTimersByTimeAsync(2000);
    expect(m.probes, 'one probe in flight at most').toHaveLength(2);
    expect(heartbeat.silence('east')?.forMs).toBe(2501);
    expect(heartbeat.status()[0]).toMatchObject({ cluster: 'east', silent: true, silentSince: new Date(Date.now() - 2501).toISOString() });
    m.probes[1]!.answer();
    await vi.advanceTimersByTimeAsync(0);
    expect(heartbeat.silence('east')).toBeUndefined();
  });

  it('calls a member silent at once when a probe fails, until the next good answer', async () => {
    const m = handMember();
    heartbeat.track('east', m.probe);
    m.probes[0]!.fail(new Error('/readyz: HTTP 500: etcd failed'));
    await vi.advanceTimersByTimeAsync(0);
    expect(heartbeat.silence('east')).toEqual({ cluster: 'east', forMs: 0, error: '/readyz: HTTP 500: etcd failed' });
    expect(heartbeat.status()[0]).toMatchObject({ silent: true, lastError: '/readyz: HTTP 500: etcd failed' });
    await vi.advanceTimersByTimeAsync(500);
    expect(m.probes).toHaveLength(2);
    expect(heartbeat.silence('east')?.forMs, 'counted from the first unanswered probe').toBe(500);
    m.probes[1]!.answer();
    await vi.advanceTimersByTimeAsync(0);
    expect(heartbeat.silence('east')).toBeUndefined();
    expect(heartbeat.status()[0]).toEqual({ cluster: 'east', silent: false, lastAnswerAt: expect.any(String) });
  });

  it('abandons a probe that never answers, and sends a new one', async () => {
    const m = handMember();
    heartbeat.track('east', m.probe);
    await vi.advanceTimersByTimeAsync(5_000);
    expect(m.probes[0]!.signal.aborted).toBe(true);
    expect(heartbeat.silence('east')?.error).toBe('no answer within 5 s');
    await vi.advanceTimersByTimeAsync(500);
    expect(m.probes).toHaveLength(2);
  });

  it('sends no probe while the member answers other requests, and still finds it silent within two intervals once it stops', async () => {
    const m = handMember();
    heartbeat.track('east', m.probe);
    m.probes[0]!.answer();
    // A sync: list pages answered every 200 ms for 3 s.
    for (let t = 0; t < 3000; t += 200) {
      heartbeat.heard('east');
      await vi.advanceTimersByTimeAsync(200);
    }
    expect(m.probes, 'no probe while it answers').toHaveLength(1);
    expect(heartbeat.silence('east')).toBeUndefined();
    // It stops answering just after its last answer: a probe goes an interval after that answer,
    // and the member is silent an interval later.
    heartbeat.heard('east');
    await vi.advanceTimersByTimeAsync(499);
    expect(m.probes).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(m.probes).toHaveLength(2);
    await vi.advanceTimersByTimeAsync(500);
    expect(heartbeat.silence('east')).toBeUndefined();
    await vi.advanceTimersByTimeAsync(1);
    expect(heartbeat.silence('east')).toEqual({ cluster: 'east', forMs: 501 });
    // Answers to other requests while a probe is outstanding do not end the silence: the probe does.
    heartbeat.heard('east');
    expect(heartbeat.silence('east')).toBeDefined();
    m.probes[1]!.answer();
    await vi.advanceTimersByTimeAsync(0);
    expect(heartbeat.silence('east')).toBeUndefined();
  });

  it('ends a failed probe\'s silence on the next answer to any request', async () => {
    const m = handMember();
    heartbeat.track('east', m.probe);
    m.probes[0]!.fail(new Error('/readyz: HTTP 500: etcd failed'));
    await vi.advanceTimersByTimeAsync(0);
    expect(heartbeat.silence('east')?.error).toBe('/readyz: HTTP 500: etcd failed');
    heartbeat.heard('east');
    expect(heartbeat.silence('east')).toBeUndefined();
  });

  it('follows a new interval, stops probing a member no longer tracked, and leaves no timer behind', async () => {
    const m = handMember();
    const other = handMember();
    heartbeat.track('east', m.probe);
    heartbeat.track('west', other.probe);
    heartbeat.setInterval(100);
    m.probes[0]!.answer();
    other.probes[0]!.answer();
    await vi.advanceTimersByTimeAsync(500);
    m.probes[1]!.answer();
    await vi.advanceTimersByTimeAsync(100);
    expect(m.probes).toHaveLength(3);
    heartbeat.untrack('west');
    expect(other.probes[1]!.signal.aborted).toBe(true);
    expect(heartbeat.silence('west')).toBeUndefined();
    expect(heartbeat.tracked()).toEqual(['east']);
    heartbeat.stop();
    expect(m.probes[2]!.signal.aborted).toBe(true);
    expect(vi.getTimerCount()).toBe(0);
    heartbeat.track('north', handMember().probe);
    expect(heartbeat.tracked(), 'a stopped heartbeat starts nothing').toEqual([]);
  });
});

describe('member heartbeat changes', () => {
  let heartbeat: Heartbeat;
  beforeEach(() => {
    vi.useFakeTimers();
    heartbeat = new Heartbeat(500);
  });
  afterEach(() => {
    heartbeat.stop();
    vi.useRealTimers();
  });

  it('tells each change once: connected, silent when a probe is overdue (not an interval later), lost when it fails, recovered', async () => {
    const changes: HeartbeatChange[] = [];
    heartbeat.onChange = (c) => changes.push(c);
    const m = handMember();
    heartbeat.track('east', m.probe);
    m.probes[0]!.answer();
    await vi.advanceTimersByTimeAsync(500);
    expect(changes).toEqual([{ cluster: 'east', kind: 'connected' }]);
    await vi.advanceTimersByTimeAsync(501);
    expect(changes[1]).toEqual({ cluster: 'east', kind: 'silent', forMs: 501 });
    await vi.advanceTimersByTimeAsync(3000);
    expect(changes).toHaveLength(2);
    m.probes[1]!.fail(new Error('connect ECONNREFUSED'));
    await vi.advanceTimersByTimeAsync(0);
    expect(changes[2]).toMatchObject({ cluster: 'east', kind: 'lost', error: 'connect ECONNREFUSED' });
    await vi.advanceTimersByTimeAsync(500);
    m.probes[2]!.fail(new Error('connect ECONNREFUSED'));
    await vi.advanceTimersByTimeAsync(500);
    expect(changes).toHaveLength(3);
    m.probes[3]!.answer();
    await vi.advanceTimersByTimeAsync(0);
    expect(changes[3]).toMatchObject({ cluster: 'east', kind: 'recovered', silentForMs: 4501 });
    expect(changes).toHaveLength(4);
  });
});
