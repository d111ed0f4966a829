import { describe, expect, it } from 'vitest';
import { buildReadView, VIEW_STEPS } from '../../../src/view/steps.js';
import type { ViewStep } from '../../../src/view/view-step.js';

const resource = { info: { group: '', resource: 'pods', kind: 'Pod', namespaced: true }, clusters: ['east', 'west', 'north'] };
const o = (cluster: string, namespace = 'a', name = 'x') => ({ cluster, namespace, name });
const blue = { labels: { team: 'blue' } };
const red = { labels: { team: 'red' } };

describe('read views', () => {
  it('keep everything the resource is cached from when the request narrows nothing', () => {
    const v = buildReadView({ resource, watching: false });
    expect(v.clusters).toEqual(['east', 'west', 'north']);
    expect(v.allClusters).toBe(true);
    expect(v.namespaces).toBeUndefined();
    expect(v.narrows).toBe(false);
    expect(v.needsMeta).toBe(false);
    expect(v.lineKey).toBe('');
    expect(v.admits(o('west'), () => undefined)).toBe(true);
    expect(v.admits(o('gone'), () => undefined)).toBe(false);
  });

  it('narrow to an addressed cluster and a namespace, which a count of their range still counts exactly', () => {
    const v = buildReadView({ resource, cluster: 'west', namespace: 'a', watching: false });
    expect(v.clusters).toEqual(['west']);
    expect(v.namespaces).toEqual(['a']);
    expect(v.narrows).toBe(false);
    expect(v.lineKey).toBe('west');
    expect(v.admits(o('west', 'a'), () => undefined)).toBe(true);
    expect(v.admits(o('west', 'b'), () => undefined)).toBe(false);
    expect(v.admits(o('east', 'a'), () => undefined)).toBe(false);
    // A cluster the resource is not cached from shows nothing, whatever the path says.
    expect(buildReadView({ resource, cluster: 'elsewhere', watching: false }).clusters).toEqual([]);
  });

  it('take selectors for lists and watches, not for gets, and read meta only for what needs it', () => {
    const list = buildReadView({ resource, labelSelector: 'team=blue', watching: false });
    expect(list.narrows).toBe(true);
    expect(list.needsMeta).toBe(true);
    expect(list.admits(o('east'), () => blue)).toBe(true);
    expect(list.admits(o('east'), () => red)).toBe(false);
    const get = buildReadView({ resource, name: 'x', labelSelector: 'team=blue', fieldSelector: 'spec.nodeName=n1', watching: false });
    expect(get.narrows).toBe(false);
    expect(get.admits(o('east'), () => red)).toBe(true);
    const byName = buildReadView({ resource, fieldSelector: 'metadata.name=x', watching: true });
    expect(byName.needsMeta).toBe(false);
    expect(byName.admits(o('east', 'a', 'x'), () => { throw new Error('meta read'); })).toBe(true);
    expect(byName.admits(o('east', 'a', 'y'), () => undefined)).toBe(false);
    // The legacy single-object watch URL is a metadata.name selector.
    const single = buildReadView({ resource, name: 'x', watching: true });
    expect(single.admits(o('east', 'a', 'y'), () => undefined)).toBe(false);
  });

  it('refuse a field the kind cannot be selected by with 400', () => {
    expect(() => buildReadView({ resource, fieldSelector: 'spec.nope=1', watching: false })).toThrow(expect.objectContaining({ code: 400 }));
    expect(() => buildReadView({ resource, labelSelector: 'a in (', watching: false })).toThrow(expect.objectContaining({ code: 400 }));
  });

  it('run extra steps in order, each only narrowing: namespace sets, cluster subsets and predicates', () => {
    const tenant: ViewStep = {
      name: 'test-namespaces',
      apply(view) {
        view.keepNamespaces(['b', 'a', 'c']);
        view.keepClusters((c) => c !== 'north');
        view.require({ name: 'not-secret', needsMeta: false, test: (x) => x.name !== 'secret' });
      },
    };
    const v = buildReadView({ resource, namespace: 'b', watching: false }, [...VIEW_STEPS, tenant]);
    expect(v.namespaces).toEqual(['b']);
    expect(v.clusters).toEqual(['east', 'west']);
    expect(v.allClusters).toBe(false);
    expect(v.narrows).toBe(true);
    expect(v.lineKey).toBe('east,west');
    expect(v.admits(o('east', 'b', 'secret'), () => undefined)).toBe(false);
    expect(v.admits(o('east', 'b', 'ok'), () => undefined)).toBe(true);
    const wide = buildReadView({ resource, watching: false }, [tenant]);
    expect(wide.namespaces).toEqual(['a', 'b', 'c']);
  });
});

describe('watch transitions: a watch follows objects into and out of its view', () => {
  const v = buildReadView({ resource, labelSelector: 'team=blue', watching: true });
  const ev = (type: 'ADDED' | 'MODIFIED' | 'DELETED', cluster = 'east') => ({ type, cluster, namespace: 'a', name: 'x' });
  it('MODIFIED becomes ADDED on entering, DELETED on leaving, nothing outside', () => {
    expect(v.eventType(ev('MODIFIED'), () => red, () => blue)).toBe('DELETED');
    expect(v.eventType(ev('MODIFIED'), () => blue, () => red)).toBe('ADDED');
    expect(v.eventType(ev('MODIFIED'), () => blue, () => blue)).toBe('MODIFIED');
    expect(v.eventType(ev('MODIFIED'), () => red, () => red)).toBeUndefined();
  });
  it('without a previous record, or a view that needs none, the new state decides alone', () => {
    expect(v.eventType(ev('MODIFIED'), () => blue, undefined)).toBe('MODIFIED');
    expect(buildReadView({ resource, watching: true }).eventType(ev('MODIFIED'), () => red, () => blue)).toBe('MODIFIED');
    expect(v.eventType(ev('DELETED'), () => blue, () => red)).toBe('DELETED');
    expect(v.eventType(ev('ADDED'), () => red, undefined)).toBeUndefined();
  });
  it('a cluster out of the view sends nothing', () => {
    const west = buildReadView({ resource, cluster: 'west', watching: true });
    expect(west.eventType(ev('ADDED', 'east'), () => blue, undefined)).toBeUndefined();
    expect(west.eventType(ev('ADDED', 'west'), () => blue, undefined)).toBe('ADDED');
  });
});
