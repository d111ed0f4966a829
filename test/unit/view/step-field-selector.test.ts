import { describe, expect, it } from 'vitest';
import { buildReadView } from '../../../src/view/steps.js';

/** Widgets on three members: east's and west's CRDs declare spec.color, north's declares nothing. */
const DECLARED: Record<string, readonly string[]> = { east: ['spec.color', 'spec.size'], west: ['spec.color'], north: [] };
const widgets = {
  info: { group: 'stable.example.com', resource: 'widgets', kind: 'Widget', namespaced: true },
  clusters: ['east', 'west', 'north'],
  selectableFields: (cluster: string) => DECLARED[cluster] ?? [],
};
const meta = (fields: Record<string, string>) => () => ({ fields });

describe('field selectors on a custom resource, as each member\'s CRD declares them', () => {
  it('selects by a field every member shown declares, from the values ingest stored', () => {
    const view = buildReadView({ resource: widgets, cluster: 'east', fieldSelector: 'spec.color=red,spec.size!=3', watching: false });
    expect(view.admits({ cluster: 'east', namespace: 'a', name: 'w1' }, meta({ 'spec.color': 'red', 'spec.size': '2' }))).toBe(true);
    expect(view.admits({ cluster: 'east', namespace: 'a', name: 'w2' }, meta({ 'spec.color': 'blue', 'spec.size': '2' }))).toBe(false);
    expect(buildReadView({ resource: widgets, fieldSelector: 'spec.color=red', watching: true, cluster: 'west' }).clusters).toEqual(['west']);
  });

  it('refuses (400) a field a member shown does not declare, naming it, rather than leave its objects out', () => {
    expect(() => buildReadView({ resource: widgets, fieldSelector: 'spec.color=red', watching: false })).toThrow(
      expect.objectContaining({ code: 400, message: 'field label not supported: spec.color (the CustomResourceDefinition on north does not declare it)' }),
    );
    expect(() => buildReadView({ resource: widgets, cluster: 'west', fieldSelector: 'spec.size=3', watching: false })).toThrow(
      expect.objectContaining({ code: 400, message: 'field label not supported: spec.size' }),
    );
  });

  it('a field no member declares is the apiserver\'s 400; generic fields need no CRD', () => {
    expect(() => buildReadView({ resource: widgets, fieldSelector: 'spec.shape=round', watching: false })).toThrow(
      expect.objectContaining({ code: 400, message: 'field label not supported: spec.shape' }),
    );
    expect(buildReadView({ resource: widgets, fieldSelector: 'metadata.name=w1', watching: false }).clusters).toEqual(['east', 'west', 'north']);
  });

  it('a member whose fields are not known yet (its CRD unread) declares none: deny by default', () => {
    const unread = { ...widgets, selectableFields: (cluster: string) => (cluster === 'east' ? ['spec.color'] : []) };
    expect(() => buildReadView({ resource: unread, cluster: 'west', fieldSelector: 'spec.color=red', watching: false })).toThrow(expect.objectContaining({ code: 400 }));
  });
});
