import { describe, expect, it } from 'vitest';
import { ConfigError, parseFleetConfig } from '../../../src/registry/config.js';
import { LIVE_BUFFER_MIB, LIVE_WATCHES, MEMBER_FAN_OUT, defaultLiveReads } from '../../../src/registry/defaults.js';
import { servedLive } from '../../../src/forward/live/config.js';
import { chooseLiveGet } from '../../../src/forward/live/get.js';
import { shareLimit } from '../../../src/forward/live/list-paging.js';
import { leftOutWarning, settled } from '../../../src/forward/live/member-failures.js';
import { encodeGlobalRV } from '../../../src/api/global-rv.js';
import { decodeContinue, decodeLiveContinue, encodeContinue, encodeLiveContinue } from '../../../src/api/continue-token.js';
import type { StatusError } from '../../../src/api/status.js';

const parse = (options: string) => parseFleetConfig(`clusters: [{ name: east, server: https://10.0.0.1:6443 }]\nresources: [{ version: v1, resource: pods }]\n${options}`, '/etc/flotilla/fleet.yaml');

describe('live reads configuration (options.liveReads)', () => {
  it('is on by default, excluding nothing', () => {
    expect(parse('').options.liveReads).toEqual({ enabled: true, exclude: [], concurrency: MEMBER_FAN_OUT, maxBufferMiB: LIVE_BUFFER_MIB, maxWatches: LIVE_WATCHES });
  });
  it('reads enabled, exclude, concurrency, maxBufferMiB and maxWatches', () => {
    const c = parse('options: { liveReads: { enabled: true, exclude: [secrets, leases.coordination.k8s.io], concurrency: 16, maxBufferMiB: 64, maxWatches: 50 } }');
    expect(c.options.liveReads).toEqual({ enabled: true, exclude: ['secrets', 'leases.coordination.k8s.io'], concurrency: 16, maxBufferMiB: 64, maxWatches: 50 });
    expect(servedLive(c.options.liveReads, '', 'secrets')).toBe(false);
    expect(servedLive(c.options.liveReads, 'coordination.k8s.io', 'leases')).toBe(false);
    expect(servedLive(c.options.liveReads, '', 'events')).toBe(true);
    expect(servedLive(c.options.liveReads, 'events.k8s.io', 'events')).toBe(true);
    expect(servedLive({ ...defaultLiveReads(), enabled: false, exclude: [] }, '', 'events')).toBe(false);
  });
  it('names every mistake with its path', () => {
    const bad = () => parse('options: { liveReads: { enabled: yes please, exclude: [Secrets, 3], other: 1 } }');
    expect(bad).toThrow(ConfigError);
    expect(bad).toThrow(/options\.liveReads\.enabled: must be true or false/);
    expect(bad).toThrow(/options\.liveReads\.exclude\[0\]: must be a resource as kubectl names it/);
    expect(bad).toThrow(/options\.liveReads\.exclude\[1\]: must be a string/);
    expect(bad).toThrow(/options\.liveReads\.other: unknown field/);
    expect(() => parse('options: { liveReads: { exclude: secrets } }')).toThrow(/options\.liveReads\.exclude: must be a list/);
    for (const width of ['0', '2.5', 'many', '10001']) {
      expect(() => parse(`options: { liveReads: { concurrency: ${width} } }`)).toThrow(/options\.liveReads\.concurrency: must be an integer from 1 to 10000/);
    }
    for (const mib of ['0', '1.5', 'lots', '1048577']) {
      expect(() => parse(`options: { liveReads: { maxBufferMiB: ${mib} } }`)).toThrow(/options\.liveReads\.maxBufferMiB: must be an integer from 1 to 1048576/);
    }
    for (const n of ['0', '1.5', 'all', '1000001']) {
      expect(() => parse(`options: { liveReads: { maxWatches: ${n} } }`)).toThrow(/options\.liveReads\.maxWatches: must be an integer from 1 to 1000000/);
    }
  });
});

describe('live continue tokens', () => {
  it('round-trip, each member with its own continue (null: not asked yet)', () => {
    const t = { live: { east: 'eyJ2IjoibWV0YS5rOHMuaW8vdjEifQ', west: null }, rv: { east: '41', north: '7' } };
    expect(decodeLiveContinue(encodeLiveContinue(t))).toEqual(t);
    const k = { ...t, kind: 'ConfigMapList', apiVersion: 'v1' };
    expect(decodeLiveContinue(encodeLiveContinue(k))).toEqual(k);
  });
  it('a cached list token is not a live one, nor the other way round (400)', () => {
    const cached = encodeContinue({ rv: encodeGlobalRV({ east: '1' }), start: 'x' });
    const live = encodeLiveContinue({ live: { east: 'abc' }, rv: { east: '1' } });
    const code = (f: () => unknown) => {
      try {
        f();
      } catch (e) {
        return (e as StatusError).code;
      }
      return 0;
    };
    expect(code(() => decodeLiveContinue(cached))).toBe(400);
    expect(code(() => decodeContinue(live))).toBe(400);
    expect(code(() => decodeLiveContinue('not base64!'))).toBe(400);
    expect(code(() => decodeLiveContinue(Buffer.from(JSON.stringify({ live: { East: 'x' }, rv: {} })).toString('base64url')))).toBe(400);
    expect(code(() => decodeLiveContinue(Buffer.from(JSON.stringify({ live: {}, rv: { east: 'x1' } })).toString('base64url')))).toBe(400);
  });
});

describe('a page limit shared among members', () => {
  it('adds up to the limit, in the members order', () => {
    expect([...shareLimit(10, ['a', 'b', 'c']).values()]).toEqual([4, 3, 3]);
    expect([...shareLimit(2, ['a', 'b', 'c']).values()]).toEqual([1, 1, 0]);
    expect([...shareLimit(1, ['a']).values()]).toEqual([1]);
  });
});

describe('a get several members answer', () => {
  it('is 409 naming them; one answer is that answer', () => {
    const what = { resource: 'events', group: '', namespace: 'default', name: 'x' };
    expect(chooseLiveGet([{ cluster: 'east' }], what)).toEqual({ hit: { cluster: 'east' } });
    const several = chooseLiveGet([{ cluster: 'east' }, { cluster: 'west' }], what);
    expect(several.hit).toEqual({ cluster: 'east' });
    expect(several.warning).toMatch(/events \\"x\\" is in clusters east, west; this is east's/);
  });
});

describe('a member answer flotilla cannot read', () => {
  it('counts as a member that failed: named in a Warning, never passed on', () => {
    const unread = settled({ cluster: 'east', status: 200, headers: { 'content-type': 'application/json' }, body: Buffer.from('{"items":[') }, undefined);
    expect(unread).toEqual({ cluster: 'east', error: 'answered 200 with a body flotilla could not read' });
    expect(leftOutWarning(unread)).toBe('299 - "flotilla: cluster east is left out: answered 200 with a body flotilla could not read"');
  });
  it('leaves every other answer as it was', () => {
    const read = { cluster: 'east', status: 200, body: Buffer.from('{}') };
    expect(settled(read, { cluster: 'east' })).toBe(read);
    const refused = { cluster: 'west', status: 403, body: Buffer.from('{}') };
    expect(settled(refused, undefined)).toBe(refused);
    const failed = { cluster: 'north', error: 'did not answer within 10 s' };
    expect(settled(failed, undefined)).toBe(failed);
  });
});
