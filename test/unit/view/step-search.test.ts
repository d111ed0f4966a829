import { describe, expect, it } from 'vitest';
import { buildReadView, VIEW_STEPS } from '../../../src/view/steps.js';
import { containsFolded, foldedAt } from '../../../src/view/step-search.js';
import type { ViewRequest } from '../../../src/view/view-step.js';
import type { FoundOwner, OwnerSearch } from '../../../src/view/owner-search.js';
import { FULL_ACCESS, NO_ACCESS, type AccessSet } from '../../../src/api/rbac.js';
import { Tenant } from '../../../src/tenancy/tenant.js';
import type { ObjectNaming } from '../../../src/tenancy/naming-direction.js';

const pods = { info: { group: '', resource: 'pods', kind: 'Pod', namespaced: true }, clusters: ['east', 'west', 'north'] };
const LABELS: Record<string, Record<string, string>> = { east: { region: 'us', env: 'prod' }, west: { region: 'us' }, north: { region: 'eu', env: 'prod' } };
const base: ViewRequest = { resource: pods, watching: false, clusterLabels: (c) => LABELS[c] ?? {} };
const o = (cluster: string, name: string, namespace = 'a') => ({ cluster, namespace, name });
const at = (created: string) => () => ({ created });
const view = (labelSelector: string, more: Partial<ViewRequest> = {}) => buildReadView({ ...base, labelSelector, ...more });

describe('the search step', () => {
  it('selects members by their fleet-file labels with every operator, and by name', () => {
    expect(view('cluster.search.flotilla.io/region=us').clusters).toEqual(['east', 'west']);
    expect(view('cluster.search.flotilla.io/region!=us').clusters).toEqual(['north']);
    expect(view('cluster.search.flotilla.io/region in (eu)').clusters).toEqual(['north']);
    expect(view('cluster.search.flotilla.io/region notin (eu)').clusters).toEqual(['east', 'west']);
    expect(view('cluster.search.flotilla.io/env').clusters).toEqual(['east', 'north']);
    expect(view('!cluster.search.flotilla.io/env').clusters).toEqual(['west']);
    expect(view('search.flotilla.io/cluster in (west,north)').clusters).toEqual(['west', 'north']);
    expect(view('search.flotilla.io/cluster!=west,cluster.search.flotilla.io/region=us').clusters).toEqual(['east']);
    // The labels asked each time: a reload's labels count at the next request.
    let region = 'us';
    expect(buildReadView({ ...base, labelSelector: 'cluster.search.flotilla.io/region=eu', clusterLabels: () => ({ region }) }).clusters).toEqual([]);
    region = 'eu';
    expect(buildReadView({ ...base, labelSelector: 'cluster.search.flotilla.io/region=eu', clusterLabels: () => ({ region }) }).clusters).toEqual(['east', 'west', 'north']);
    // The search keys are not label requirements on the objects.
    expect(view('search.flotilla.io/cluster=east').labelSelector).toEqual([]);
  });

  it('matches names case-insensitively, as contained and as a prefix, without reading meta', () => {
    const v = view('search.flotilla.io/name-contains=API,app=web');
    expect(v.labelSelector).toEqual([{ key: 'app', operator: 'Equals', values: ['web'] }]);
    const noMeta = view('search.flotilla.io/name-contains=API,search.flotilla.io/name-prefix=Check');
    expect(noMeta.needsMeta).toBe(false);
    const never = () => { throw new Error('meta read'); };
    expect(noMeta.admits(o('east', 'checkout-api-1'), never)).toBe(true);
    expect(noMeta.admits(o('east', 'CheckOut-Api'), never)).toBe(true);
    expect(noMeta.admits(o('east', 'api-checkout'), never)).toBe(false);
    expect(noMeta.admits(o('east', 'checkout'), never)).toBe(false);
    expect(containsFolded('abcABC', 3, 'abc')).toBe(true);
    expect(containsFolded('abcAB', 1, 'abc')).toBe(false);
    expect(foldedAt('xxWeb', 2, 'web')).toBe(true);
    expect(containsFolded('Ärger-x', 0, 'ärger')).toBe(true);
    expect(containsFolded('ab', 0, '')).toBe(true);
  });

  it('selects by creation time: at or after, and before, on whole seconds', () => {
    const v = view('search.flotilla.io/created-after=2026-11-28,search.flotilla.io/created-before=1796000000');
    expect(v.needsMeta).toBe(true);
    expect(v.admits(o('east', 'x'), at('2026-11-28T00:00:00Z'))).toBe(true);
    expect(v.admits(o('east', 'x'), at('2026-11-27T23:59:59Z'))).toBe(false);
    // 1796000000 is 2026-11-30T00:53:20Z.
    expect(v.admits(o('east', 'x'), at('2026-11-30T00:53:19Z'))).toBe(true);
    expect(v.admits(o('east', 'x'), at('2026-11-30T00:53:20Z'))).toBe(false);
    // Another spelling of a time is parsed.
    expect(v.admits(o('east', 'x'), at('2026-11-28T01:00:00+02:00'))).toBe(false);
    expect(v.admits(o('east', 'x'), at('2026-11-28T03:00:00+02:00'))).toBe(true);
    expect(v.admits(o('east', 'x'), () => ({}))).toBe(false);
    // The watch fan-out tells views apart by their predicates' names: the parameters are in them.
    expect(v.key).not.toBe(view('search.flotilla.io/created-after=2026-11-29').key);
    expect(view('search.flotilla.io/name-contains=a').key).not.toBe(view('search.flotilla.io/name-contains=b').key);
  });

  it('runs after authorization: a member the caller may not read stays out whatever the search names, and only owners the caller may read own anything', () => {
    const access = new Map<string, AccessSet>([['east', FULL_ACCESS], ['west', NO_ACCESS], ['north', FULL_ACCESS]]);
    const given: (readonly FoundOwner[])[] = [];
    const owners: OwnerSearch = {
      find: () => [],
      ownedBy(found) {
        given.push(found);
        return { name: `owned-by:${found.map((f) => f.cluster).join(',')}`, needsMeta: false, test: (x) => x.name.startsWith('web-') && found.some((f) => f.cluster === x.cluster) };
      },
    };
    const web = (cluster: string): FoundOwner => ({ cluster, namespace: 'shop', group: 'apps', resource: 'deployments', namespaced: true, name: 'web', owner: `apps/Deployment/${cluster}-u1` });
    // The router found (and the caller may read) the owner on every member; the view keeps north's only.
    const ownersFound = [web('east'), web('west'), web('north')];
    const v = buildReadView({ ...base, access, owners, ownersFound, labelSelector: 'search.flotilla.io/cluster in (west,north),search.flotilla.io/owner-uid=u1' });
    expect(v.clusters).toEqual(['north']);
    expect(given.map((g) => g.map((f) => f.cluster))).toEqual([['north']]);
    expect(v.admits(o('north', 'web-1'), () => undefined)).toBe(true);
    expect(v.admits(o('north', 'db-1'), () => undefined)).toBe(false);
    expect(v.admits(o('west', 'web-1'), () => undefined)).toBe(false);
    // No owner found (or none the caller may read), or no owner search at all: nothing is owned.
    expect(buildReadView({ ...base, owners, labelSelector: 'search.flotilla.io/owner-uid=nope' }).admits(o('east', 'web-1'), () => undefined)).toBe(false);
    expect(buildReadView({ ...base, owners, ownersFound: [], labelSelector: 'search.flotilla.io/owner-uid=u1' }).admits(o('east', 'web-1'), () => undefined)).toBe(false);
    expect(view('search.flotilla.io/owner-kind=Deployment,search.flotilla.io/owner-name=web').admits(o('east', 'web-1'), () => undefined)).toBe(false);
    // The step comes after every step deciding what the caller may read.
    const names = VIEW_STEPS.map((s) => s.name);
    for (const before of ['authorization', 'tenant', 'namespace', 'hierarchy']) expect(names.indexOf(before)).toBeLessThan(names.indexOf('search'));
    expect(names.indexOf('search')).toBeLessThan(names.indexOf('label-selector'));
  });

  it('a get ignores the label selector, search terms and all, and applies the query parameters\' terms', () => {
    const get = view('search.flotilla.io/name-contains=zzz', { name: 'web-1' });
    expect(get.admits(o('east', 'web-1'), () => undefined)).toBe(true);
    const getSearched = buildReadView({ ...base, name: 'web-1', search: { clusterNames: [{ key: 'search.flotilla.io/cluster', operator: 'Equals', values: ['west'] }], clusterLabels: [], nameContains: [], namePrefixes: [] } });
    expect(getSearched.clusters).toEqual(['west']);
    // Unknown terms are 400 once the view is built (after authorization), for lists and watches.
    expect(() => view('search.flotilla.io/nope=1')).toThrow(expect.objectContaining({ code: 400 }));
    expect(() => view('search.flotilla.io/nope=1', { watching: true })).toThrow(expect.objectContaining({ code: 400 }));
  });

  it('matches a tenant\'s owned cluster-scoped names as the tenant is shown them, without its prefix', () => {
    const tenant = new Tenant({ id: 'acme', users: [], groups: [], clusterScoped: {} });
    const naming = { tenant, kinds: () => undefined, memberGroups: () => false } as ObjectNaming;
    const namespaces = { info: { group: '', resource: 'namespaces', kind: 'Namespace', namespaced: false }, clusters: ['east'] };
    const v = buildReadView({ resource: namespaces, watching: false, tenant: naming, labelSelector: 'search.flotilla.io/name-prefix=web' });
    expect(v.admits(o('east', 'acme-web', ''), () => undefined)).toBe(true);
    // `acme-` is not part of the name the tenant sees.
    const p = buildReadView({ resource: namespaces, watching: false, tenant: naming, labelSelector: 'search.flotilla.io/name-contains=acme' });
    expect(p.admits(o('east', 'acme-web', ''), () => undefined)).toBe(false);
    expect(p.admits(o('east', 'acme-acme-db', ''), () => undefined)).toBe(true);
    // Namespaced objects keep their names: matched as stored.
    const podsOfTenant = buildReadView({ resource: pods, watching: false, tenant: naming, labelSelector: 'search.flotilla.io/name-prefix=web' });
    expect(podsOfTenant.admits(o('east', 'web-1', 'acme-shop'), () => undefined)).toBe(true);
  });
});
