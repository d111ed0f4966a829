import { describe, expect, it } from 'vitest';
import { PassThrough } from 'node:stream';
import type { IncomingMessage } from 'node:http';
import type { FleetMembers } from '../../../src/cacher/cache-roles.js';
import { AnswerRefusedError, type MemberClient, type MemberRequest } from '../../../src/members/member-client.js';
import { asCaller, askMembers, openMembers } from '../../../src/forward/member-fan-out.js';
import { leftOutWarning } from '../../../src/forward/live/member-failures.js';

/**
 * The one way members are asked on a caller's behalf (src/forward/member-fan-out.ts): bounded,
 * each within a named timeout, as the caller. Members are in-process fakes whose `fetch` and
 * `send` say how they answer.
 */
type Fetch = (r: MemberRequest, take?: (n: number) => boolean) => Promise<{ status: number; headers: IncomingMessage['headers']; body: Buffer }>;

function fleetOf(members: Record<string, { fetch?: Fetch; send?: (r: MemberRequest) => Promise<IncomingMessage> }>): FleetMembers {
  return {
    clusterNames: () => Object.keys(members),
    member: (name) => (members[name] as unknown as MemberClient | undefined),
    clusterLabels: () => ({}),
  };
}

const ok = (text: string) => ({ status: 200, headers: { 'content-type': 'application/json' }, body: Buffer.from(text) });
/** Never answers: only its signal ends it (as a member that does not answer). */
const silent: Fetch = (r) => new Promise((_, reject) => r.signal!.addEventListener('abort', () => reject(r.signal!.reason as Error)));

describe('member fan-out', () => {
  it('asks at most `concurrency` members at once, and answers in the order asked', async () => {
    let inFlight = 0;
    let most = 0;
    const member = (name: string, ms: number): { fetch: Fetch } => ({
      fetch: async () => {
        most = Math.max(most, ++inFlight);
        await new Promise((r) => setTimeout(r, ms));
        inFlight--;
        return ok(name);
      },
    });
    const names = ['a', 'b', 'c', 'd', 'e'];
    const fleet = fleetOf(Object.fromEntries(names.map((n, i) => [n, member(n, 30 - i * 5)])));
    const results = await askMembers(fleet, names, { concurrency: 2, timeoutMs: 1000 }, (cluster) => ({ cluster, path: '/api/v1/configmaps', headers: {} }));
    expect(most).toBe(2);
    expect(results.map((r) => `${r.cluster}:${r.body!.toString()}`)).toEqual(['a:a', 'b:b', 'c:c', 'd:d', 'e:e']);
  });

  it('a member that does not answer within the timeout is named, with the timeout, and the others still answer', async () => {
    const fleet = fleetOf({ east: { fetch: async () => ok('{}') }, north: { fetch: silent } });
    const results = await askMembers(fleet, ['east', 'north', 'gone'], { concurrency: 3, timeoutMs: 50 }, (cluster) => ({ cluster, path: '/x', headers: {} }));
    expect(results[0]).toMatchObject({ cluster: 'east', status: 200 });
    expect(results[1]).toEqual({ cluster: 'north', error: 'did not answer within 0.05 s', timedOut: true });
    expect(results[2]).toEqual({ cluster: 'gone', error: 'not a member of the fleet' });
    expect(leftOutWarning(results[1]!)).toMatch(/cluster north is left out: did not answer within 0\.05 s/);
  });

  it('asks as the caller: its Impersonate-* headers, the request’s own, its user agent via flotilla', async () => {
    const sent: MemberRequest[] = [];
    const fleet = fleetOf({ east: { fetch: async (r) => (sent.push(r), ok('{}')) } });
    const headers = asCaller({ 'Impersonate-User': 'alice', 'Impersonate-Group': ['team-a', 'system:authenticated'] }, 'kubectl/v1.34', { accept: 'application/json' });
    await askMembers(fleet, ['east'], { concurrency: 1, timeoutMs: 1000 }, (cluster) => ({ cluster, method: 'DELETE', path: '/api/v1/namespaces/shop/configmaps', headers }));
    expect(sent).toHaveLength(1);
    expect(sent[0]!.method).toBe('DELETE');
    expect(sent[0]!.headers).toEqual({ 'Impersonate-User': 'alice', 'Impersonate-Group': ['team-a', 'system:authenticated'], accept: 'application/json', 'user-agent': 'kubectl/v1.34 via flotilla' });
    expect(asCaller({}, undefined)['user-agent']).toBe('unknown via flotilla');
  });

  it('an answer the budget refuses fails the whole fan-out with the budget’s refusal', async () => {
    const refusal = new Error('429: live reads hold too much');
    const budget = { isRefused: false, take: () => false, refusal: () => refusal };
    const fleet = fleetOf({ east: { fetch: async (_r, take) => { if (take && !take(10)) throw new AnswerRefusedError('east'); return ok('{}'); } } });
    await expect(askMembers(fleet, ['east'], { concurrency: 1, timeoutMs: 1000, budget }, (cluster) => ({ cluster, path: '/x', headers: {} }))).rejects.toBe(refusal);
  });

  it('a long-running request: the timeout is its headers’, its stream outlives it; a silent member is named', async () => {
    const stream = Object.assign(new PassThrough(), { statusCode: 200, headers: {} }) as unknown as IncomingMessage;
    let eastSignal: AbortSignal | undefined;
    const fleet = fleetOf({
      east: { send: async (r) => ((eastSignal = r.signal), stream) },
      north: { send: (r) => new Promise((_, reject) => r.signal!.addEventListener('abort', () => reject(new Error('aborted')))) },
    });
    const done = new AbortController();
    const opened = await openMembers(fleet, ['east', 'north'], { concurrency: 2, timeoutMs: 50 }, (cluster) => ({ cluster, path: '/api/v1/events?watch=1', headers: {} }), done.signal);
    expect(opened[0]!.stream).toBe(stream);
    expect(opened[1]).toEqual({ cluster: 'north', error: 'did not answer within 0.05 s', timedOut: true });
    await new Promise((r) => setTimeout(r, 80));
    expect(eastSignal!.aborted).toBe(false);
    done.abort();
    expect(eastSignal!.aborted).toBe(true);
  });
});
