import { describe, expect, it } from 'vitest';
import { parseLabelSelector } from '../../../src/api/label-selector.js';
import { parseReadRequest } from '../../../src/api/list-options.js';
import { combineSearchTerms, isSearchKey, searchTermsOfQuery, splitSearchTerms, timeBound } from '../../../src/api/search-terms.js';
import { StatusError } from '../../../src/api/status.js';

function statusOf(f: () => unknown): { code: number; message: string } | undefined {
  try {
    f();
  } catch (e) {
    if (e instanceof StatusError) return e.toStatus() as { code: number; message: string };
    throw e;
  }
  return undefined;
}

const split = (s: string) => splitSearchTerms(parseLabelSelector(s));

describe('search terms in a label selector', () => {
  it('are told apart from ordinary requirements by their prefixes', () => {
    expect(isSearchKey('search.flotilla.io/cluster')).toBe(true);
    expect(isSearchKey('cluster.search.flotilla.io/region')).toBe(true);
    expect(isSearchKey('app')).toBe(false);
    expect(isSearchKey('x.search.flotilla.io/region')).toBe(false);
    const { rest, terms } = split('app=web,search.flotilla.io/name-contains=Api,cluster.search.flotilla.io/region in (eu,us),tier');
    expect(rest).toEqual([{ key: 'app', operator: 'Equals', values: ['web'] }, { key: 'tier', operator: 'Exists', values: [] }]);
    expect(terms).toMatchObject({ nameContains: ['api'], clusterLabels: [{ key: 'region', operator: 'In', values: ['eu', 'us'] }] });
    expect(split('app=web').terms).toBeUndefined();
  });

  it('cluster terms take every label-selector operator', () => {
    for (const [text, operator, values] of [
      ['cluster.search.flotilla.io/env=prod', 'Equals', ['prod']],
      ['cluster.search.flotilla.io/env==prod', 'Equals', ['prod']],
      ['cluster.search.flotilla.io/env!=prod', 'NotEquals', ['prod']],
      ['cluster.search.flotilla.io/env in (a,b)', 'In', ['a', 'b']],
      ['cluster.search.flotilla.io/env notin (a)', 'NotIn', ['a']],
      ['cluster.search.flotilla.io/env', 'Exists', []],
      ['!cluster.search.flotilla.io/env', 'DoesNotExist', []],
      ['cluster.search.flotilla.io/tier>2', 'GreaterThan', ['2']],
    ] as const) {
      expect(split(text).terms!.clusterLabels, text).toEqual([{ key: text.replace(/^!/, '').split(/[=!<> ]/)[0]!.slice('cluster.search.flotilla.io/'.length), operator, values }]);
    }
    expect(split('search.flotilla.io/cluster notin (east)').terms!.clusterNames).toEqual([{ key: 'search.flotilla.io/cluster', operator: 'NotIn', values: ['east'] }]);
    expect(split('!search.flotilla.io/cluster').terms!.clusterNames).toEqual([{ key: 'search.flotilla.io/cluster', operator: 'DoesNotExist', values: [] }]);
  });

  it('the other terms take = and == only: anything else is 400 naming the term', () => {
    expect(split('search.flotilla.io/name-prefix==Web').terms!.namePrefixes).toEqual(['web']);
    for (const text of ['search.flotilla.io/name-contains!=a', 'search.flotilla.io/name-prefix in (a)', 'search.flotilla.io/created-after', '!search.flotilla.io/owner-uid', 'search.flotilla.io/owner-depth>1']) {
      const key = text.replace(/^!/, '').split(/[=!<> ]/)[0]!;
      expect(statusOf(() => split(text)), text).toMatchObject({ code: 400, message: `search term "${key}" takes "=" only` });
    }
  });

  it('an unknown term under either prefix is 400 naming it', () => {
    expect(statusOf(() => split('search.flotilla.io/fuzzy-name=a'))).toMatchObject({ code: 400, message: expect.stringContaining('unknown search term "search.flotilla.io/fuzzy-name"') });
    expect(statusOf(() => searchTermsOfQuery([['search.flotilla.io/since', ['1']]]))).toMatchObject({ code: 400, message: expect.stringContaining('"search.flotilla.io/since"') });
  });

  it('times: Unix seconds or a date in a selector, RFC 3339 too as a query parameter; bad values 400 naming the term', () => {
    expect(timeBound('t', '0')).toEqual({ ms: 0, text: '1970-01-01T00:00:00Z' });
    expect(timeBound('t', '1795824000')).toEqual({ ms: 1795824000000, text: '2026-11-28T00:00:00Z' });
    expect(timeBound('t', '2026-11-28')).toEqual({ ms: Date.UTC(2026, 10, 28), text: '2026-11-28T00:00:00Z' });
    expect(timeBound('t', '2026-11-28T10:00:00+01:00')).toMatchObject({ text: '2026-11-28T09:00:00Z' });
    // Inside a second: rounded up, since stored times are whole seconds.
    expect(timeBound('t', '2026-11-28T10:00:00.250Z')).toMatchObject({ text: '2026-11-28T10:00:01Z' });
    expect(split('search.flotilla.io/created-after=2026-11-28,search.flotilla.io/created-after=1700000000').terms!.createdAfter!.text).toBe('2026-11-28T00:00:00Z');
    expect(split('search.flotilla.io/created-before=2026-11-28,search.flotilla.io/created-before=1700000000').terms!.createdBefore!.ms).toBe(1700000000000);
    for (const bad of ['2026-02-30', '2026-13-01', 'yesterday', '-5', '1.5', '99999999999999', '', '2026-11-28T10:00']) {
      expect(statusOf(() => searchTermsOfQuery([['search.flotilla.io/created-before', [bad]]])), bad).toMatchObject({ code: 400, message: expect.stringContaining('search term "search.flotilla.io/created-before"') });
    }
    // A label value cannot hold ':', so RFC 3339 in a selector is refused by the selector itself.
    expect(statusOf(() => split('search.flotilla.io/created-after=2026-11-28T10:00:00Z'))).toMatchObject({ code: 400 });
  });

  it('owners: a uid, or kind with name; a positive depth; each wrong combination 400 naming what is missing', () => {
    expect(split('search.flotilla.io/owner-uid=u1,search.flotilla.io/owner-depth=1').terms).toMatchObject({ owner: { uid: 'u1' }, ownerDepth: 1 });
    expect(split('search.flotilla.io/owner-kind=Deployment,search.flotilla.io/owner-name=web').terms).toMatchObject({ owner: { kind: 'Deployment', name: 'web' } });
    expect(statusOf(() => split('search.flotilla.io/owner-kind=Deployment'))).toMatchObject({ code: 400, message: expect.stringContaining('"search.flotilla.io/owner-kind" needs search.flotilla.io/owner-name') });
    expect(statusOf(() => split('search.flotilla.io/owner-uid=a,search.flotilla.io/owner-name=b,search.flotilla.io/owner-kind=c'))).toMatchObject({ code: 400 });
    for (const bad of ['0', '-1', 'all', '1.5']) {
      expect(statusOf(() => searchTermsOfQuery([['search.flotilla.io/owner-depth', [bad]]])), bad).toMatchObject({ code: 400, message: expect.stringContaining('"search.flotilla.io/owner-depth"') });
    }
    expect(statusOf(() => combineSearchTerms(split('search.flotilla.io/owner-depth=2').terms, undefined))).toMatchObject({ code: 400, message: expect.stringContaining('"search.flotilla.io/owner-depth" needs') });
    expect(statusOf(() => combineSearchTerms(split('search.flotilla.io/owner-uid=a').terms, searchTermsOfQuery([['search.flotilla.io/owner-uid', ['b']]])))).toMatchObject({ code: 400 });
  });

  it('as query parameters, read by parseReadRequest from fastify\'s query and from URL parameters alike', () => {
    const fromFastify = parseReadRequest({ 'search.flotilla.io/name-contains': 'ABC', 'search.flotilla.io/cluster': ['east', 'west'], 'cluster.search.flotilla.io/topology.kubernetes.io/region': 'eu' }, false);
    expect(fromFastify.search).toMatchObject({
      nameContains: ['abc'],
      clusterNames: [{ key: 'search.flotilla.io/cluster', operator: 'In', values: ['east', 'west'] }],
      // A prefixed cluster label: only a query parameter can name it (a selector key holds one '/').
      clusterLabels: [{ key: 'topology.kubernetes.io/region', operator: 'Equals', values: ['eu'] }],
    });
    const fromUrl = parseReadRequest(new URLSearchParams('search.flotilla.io%2Fcreated-after=2026-11-28T10%3A00%3A00Z&limit=5'), false);
    expect(fromUrl.search!.createdAfter!.text).toBe('2026-11-28T10:00:00Z');
    expect(parseReadRequest({ limit: '5' }, false).search).toBeUndefined();
    expect(statusOf(() => parseReadRequest({ 'search.flotilla.io/bogus': 'x' }, false))).toMatchObject({ code: 400, message: expect.stringContaining('"search.flotilla.io/bogus"') });
    // Several values of a term that is not a cluster's: each must hold.
    expect(searchTermsOfQuery([['search.flotilla.io/name-contains', ['a', 'B']]])!.nameContains).toEqual(['a', 'b']);
  });
});
