import { describe, expect, it } from 'vitest';
import Fastify from 'fastify';
import { IncomingMessage } from 'node:http';
import { Socket } from 'node:net';
import type { FleetMembers } from '../../../src/cacher/cache-roles.js';
import type { Authenticator } from '../../../src/auth/authenticator.js';
import type { Identity } from '../../../src/auth/identity.js';
import { Callers } from '../../../src/router/callers.js';
import { stateOf } from '../../../src/router/request-state.js';
import { requestStatePlugin } from '../../../src/router/plugins/request-state.js';
import { targetOf } from '../../../src/router/target.js';

const fleet = { clusterNames: () => ['a'], member: () => undefined } as unknown as FleetMembers;

/** An authenticator that counts its calls: callers are asked once per request. */
function countingAuthenticator(): { authenticator: Authenticator; calls: () => number } {
  let calls = 0;
  const alice: Identity = { user: 'alice', groups: ['system:authenticated'], extra: {} };
  const authenticator = {
    enabled: true,
    frontProxied: () => false,
    authenticate: async () => {
      calls++;
      return alice;
    },
  } as unknown as Authenticator;
  return { authenticator, calls: () => calls };
}

describe('per-request state, kept on the request', () => {
  it('a fastify request: the caller is asked once, and req.flotilla holds what was decided', async () => {
    const { authenticator, calls } = countingAuthenticator();
    const callers = new Callers(fleet, authenticator);
    const app = Fastify();
    await app.register(requestStatePlugin);
    app.get('/api/v1/pods', async (req) => {
      await callers.identify(req.raw);
      await callers.reader(req.raw);
      await callers.headersFor(req.raw);
      const target = targetOf(req.raw, fleet);
      return { user: req.flotilla.identity?.user, key: callers.key(req.raw), same: targetOf(req.raw, fleet) === target && req.flotilla.target?.target === target };
    });
    expect((await app.inject({ url: '/api/v1/pods' })).json()).toEqual({ user: 'alice', key: 'user:alice', same: true });
    expect(calls()).toBe(1);
    // A new request starts from nothing.
    await app.inject({ url: '/api/v1/pods' });
    expect(calls()).toBe(2);
    await app.close();
  });

  it('a raw request (an upgrade, which fastify never sees) gets one state object of its own', async () => {
    const { authenticator, calls } = countingAuthenticator();
    const callers = new Callers(fleet, authenticator);
    const req = new IncomingMessage(new Socket());
    req.url = '/api/v1/namespaces/ns/pods/p/exec';
    expect(await callers.tenantOf(req)).toBeUndefined();
    expect((await callers.headersFor(req))['impersonate-user']).toBe('alice');
    expect(calls()).toBe(1);
    expect(stateOf(req)).toBe(stateOf(req));
    expect(stateOf(req)).toMatchObject({ identity: { user: 'alice' }, tenant: null });
    expect(stateOf(new IncomingMessage(new Socket()))).toEqual({});
  });

  it('a path is read again once the URL changes (a tenant request rewritten into its member names)', () => {
    const req = new IncomingMessage(new Socket());
    req.url = '/api/v1/namespaces/one/pods';
    expect(targetOf(req, fleet)).toMatchObject({ namespace: 'one' });
    req.url = '/api/v1/namespaces/two/pods';
    expect(targetOf(req, fleet)).toMatchObject({ namespace: 'two' });
  });
});
