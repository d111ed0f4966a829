import { afterEach, describe, expect, it, vi } from 'vitest';
import type { IncomingMessage } from 'node:http';
import { Authenticator } from '../../../src/auth/authenticator.js';
import { TOKEN_REVIEW_TIMEOUT_MS as REVIEW_TIMEOUT_MS } from '../../../src/registry/defaults.js';
import type { MemberClient, MemberRequest } from '../../../src/members/member-client.js';

/**
 * TokenReviews against a reviewer that answers, refuses, fails or hangs: a verdict the reviewer
 * gave a moment ago outlives it while it cannot answer; nobody else waits on it, nor gets a 500.
 */
type Behaviour = 'accept' | 'reject' | 'fail' | 'hang';

function reviewer() {
  const state = { behaviour: 'accept' as Behaviour, reviews: 0 };
  const fetch = (req: MemberRequest) => {
    state.reviews++;
    const token = (JSON.parse(String(req.body)) as { spec: { token: string } }).spec.token;
    switch (state.behaviour) {
      case 'accept':
        return Promise.resolve({ status: 201, headers: {}, body: Buffer.from(JSON.stringify({ status: { authenticated: true, user: { username: `user-of-${token}`, groups: ['g'] } } })) });
      case 'reject':
        return Promise.resolve({ status: 201, headers: {}, body: Buffer.from(JSON.stringify({ status: { authenticated: false } })) });
      case 'fail':
        return Promise.resolve({ status: 500, headers: {}, body: Buffer.from('etcd is down') });
      case 'hang':
        return new Promise((_resolve, reject) => req.signal?.addEventListener('abort', () => reject(req.signal!.reason as Error)));
    }
  };
  return { state, client: { fetch } as unknown as MemberClient };
}

const req = (token: string) => ({ headers: { authorization: `Bearer ${token}` }, socket: {} }) as unknown as IncomingMessage;

describe('token reviews when the reviewer cannot answer', () => {
  afterEach(() => vi.useRealTimers());

  function setup(staleVerdictSeconds: number, silent = { east: false }) {
    const r = reviewer();
    const auth = new Authenticator({ tokenReviewCluster: 'east', cacheTTLSeconds: 10, staleVerdictSeconds }, (name) => (name === 'east' ? r.client : undefined), (name) => silent[name as 'east']);
    return { ...r, auth };
  }

  it('reuses a positive verdict younger than the bound while the reviewer fails, and 503s for anyone else', async () => {
    vi.useFakeTimers();
    const { state, auth } = setup(120);
    expect(await auth.authenticate(req('a'))).toMatchObject({ user: 'user-of-a' });
    state.behaviour = 'fail';
    vi.setSystemTime(Date.now() + 11_000);
    expect(await auth.authenticate(req('a'))).toMatchObject({ user: 'user-of-a' });
    const refused = await auth.authenticate(req('never-seen')).catch((e: unknown) => e);
    expect(refused).toMatchObject({ code: 503, reason: 'ServiceUnavailable' });
    expect((refused as Error).message).toMatch(/the token reviewer, cluster east, could not review the token \(HTTP 500\)/);
    expect((refused as Error).message).not.toContain('never-seen');
    vi.setSystemTime(Date.now() + 110_000);
    await expect(auth.authenticate(req('a')), 'older than the bound').rejects.toMatchObject({ code: 503 });
  });

  it('gives up on a review after the timeout rather than hang', async () => {
    vi.useFakeTimers();
    const { state, auth } = setup(120);
    state.behaviour = 'hang';
    const pending = auth.authenticate(req('b')).catch((e: unknown) => e);
    await vi.advanceTimersByTimeAsync(REVIEW_TIMEOUT_MS);
    const e = await pending;
    expect(e).toMatchObject({ code: 503 });
    expect((e as Error).message).toContain(`no answer within ${REVIEW_TIMEOUT_MS / 1000} s`);
  });

  it('does not ask a silent reviewer about a caller it vouched for a moment ago', async () => {
    vi.useFakeTimers();
    const silent = { east: false };
    const { state, auth } = setup(120, silent);
    await auth.authenticate(req('a'));
    silent.east = true;
    state.behaviour = 'hang';
    vi.setSystemTime(Date.now() + 11_000);
    expect(await auth.authenticate(req('a'))).toMatchObject({ user: 'user-of-a' });
    expect(state.reviews).toBe(1);
  });

  it('keeps negative verdicts, and reuses nothing when the bound is 0', async () => {
    vi.useFakeTimers();
    const { state, auth } = setup(0);
    state.behaviour = 'reject';
    await expect(auth.authenticate(req('x'))).rejects.toMatchObject({ code: 401 });
    state.behaviour = 'accept';
    await auth.authenticate(req('a'));
    state.behaviour = 'fail';
    vi.setSystemTime(Date.now() + 11_000);
    await expect(auth.authenticate(req('a'))).rejects.toMatchObject({ code: 503 });
    await expect(auth.authenticate(req('x')), 'a refused token is not let in by a failing reviewer').rejects.toMatchObject({ code: 503 });
  });

  it('sends one review for concurrent requests with one token', async () => {
    const { state, auth } = setup(120);
    await Promise.all([auth.authenticate(req('c')), auth.authenticate(req('c')), auth.authenticate(req('c'))]);
    expect(state.reviews).toBe(1);
  });
});
