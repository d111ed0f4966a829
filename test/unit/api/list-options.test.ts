import { describe, expect, it } from 'vitest';
import { defaultLiveReads } from '../../../src/registry/defaults.js';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { int64Param, refuseVersionWithContinue, watchRequested } from '../../../src/api/list-options.js';
import { StatusError } from '../../../src/api/status.js';
import { liveRead } from '../../../src/forward/live/live-read.js';
import type { LiveReadDeps } from '../../../src/forward/live/config.js';
import { encodeLiveContinue } from '../../../src/api/continue-token.js';
import type { ResourceTarget } from '../../../src/forward/owner.js';

/** What a call threw, as the client reads it (a Status), or undefined when it threw none. */
function statusOf(f: () => unknown): object | undefined {
  try {
    f();
  } catch (e) {
    if (e instanceof StatusError) return e.toStatus();
    throw e;
  }
  return undefined;
}

describe('list options, read once for every read path', () => {
  it('an int64 parameter: digits up to 2^63-1, anything else 400 naming the value', () => {
    expect(int64Param('limit', undefined)).toBeUndefined();
    expect(int64Param('limit', null)).toBeUndefined();
    expect(int64Param('limit', '0')).toBe(0);
    expect(int64Param('limit', '500')).toBe(500);
    // 2^63-1 read as a double is 2^63.
    expect(int64Param('limit', '9223372036854775807')).toBe(2 ** 63);
    for (const text of ['9223372036854775808', '9999999999999999999', '99999999999999999999', '', '-1', '+1', '1.5', ' 1', '1e3', '0x10']) {
      expect(statusOf(() => int64Param('limit', text)), text).toMatchObject({ code: 400, reason: 'BadRequest', message: `invalid limit: ${JSON.stringify(text)}` });
    }
  });

  it('watch: true or 1', () => {
    expect(watchRequested('true')).toBe(true);
    expect(watchRequested('1')).toBe(true);
    for (const text of [undefined, null, '', 'false', '0', 'True', 'yes']) expect(watchRequested(text), String(text)).toBe(false);
  });

  it('a resourceVersion with a continue token is 422 Invalid, but "0" or none passes', () => {
    expect(statusOf(() => refuseVersionWithContinue('42'))).toEqual({
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: 'ListOptions.meta.k8s.io "" is invalid: resourceVersion: specifying resource version is not allowed when using continue',
      reason: 'Invalid',
      details: { causes: [{ reason: 'FieldValueInvalid', field: 'resourceVersion', message: 'specifying resource version is not allowed when using continue' }] },
      code: 422,
    });
    for (const rv of [undefined, null, '', '0']) expect(statusOf(() => refuseVersionWithContinue(rv)), String(rv)).toBeUndefined();
  });
});

describe('a live read answers list options as a cached read does', () => {
  /** A live read of configmaps from one member, `east`, which is not there: a read that gets as far as asking it is a 503. */
  async function liveAnswer(query: string, target: Partial<ResourceTarget> = {}): Promise<{ status: object | undefined; asked: string[] }> {
    const asked: string[] = [];
    const deps: LiveReadDeps = {
      fleet: { clusterNames: () => ['east'], member: (c) => void asked.push(c), clusterLabels: () => ({}) },
      config: { ...defaultLiveReads(), enabled: true, exclude: [] },
      callerHeaders: async () => ({}),
    };
    const req = { url: `/api/v1/configmaps?${query}`, headers: {}, raw: {} } as unknown as FastifyRequest;
    try {
      await liveRead(req, {} as FastifyReply, deps, { type: 'resource', group: '', version: 'v1', resource: 'configmaps', ...target });
    } catch (e) {
      if (e instanceof StatusError) return { status: e.toStatus(), asked };
      throw e;
    }
    return { status: undefined, asked };
  }

  it('a limit past int64 is the same 400, before any member is asked', async () => {
    for (const limit of ['9999999999999999999', '99999999999999999999', '', '-1']) {
      const live = await liveAnswer(`limit=${limit}`);
      expect(live.asked, limit).toEqual([]);
      expect(live.status, limit).toEqual(statusOf(() => int64Param('limit', limit)));
    }
    // A limit that reads goes on to the members.
    expect(await liveAnswer('limit=9223372036854775807')).toMatchObject({ status: { code: 503 }, asked: ['east'] });
  });

  it('a resourceVersion with a continue token is the same 422, before any member is asked', async () => {
    const token = encodeLiveContinue({ live: { east: 'abc' }, rv: { east: '1' } });
    const live = await liveAnswer(`continue=${token}&resourceVersion=42`);
    expect(live.asked).toEqual([]);
    expect(live.status).toEqual(statusOf(() => refuseVersionWithContinue('42')));
    expect(await liveAnswer(`continue=${token}&resourceVersion=0`)).toMatchObject({ status: { code: 503 }, asked: ['east'] });
  });

  it('reads watch as the cached path does (a watch of a subresource is not served live)', async () => {
    const status = { name: 'x', namespace: 'default', subresource: 'status' };
    for (const watch of ['true', '1']) expect((await liveAnswer(`watch=${watch}`, status)).status, watch).toMatchObject({ code: 404 });
    for (const watch of ['false', '0', 'yes']) expect((await liveAnswer(`watch=${watch}`, status)).asked, watch).toEqual(['east']);
  });
});
