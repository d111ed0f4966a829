import { describe, expect, it } from 'vitest';
import type { MemberClient } from '../../../src/members/member-client.js';
import { CrdUnreadableError, crdSelectableFields } from '../../../src/resources/crd-selectable-fields.js';

/** A member answering GETs from a table of path → [status, body], remembering what it was asked. */
function memberAnswering(answers: Record<string, [number, unknown]>): { member: MemberClient; asked: string[] } {
  const asked: string[] = [];
  const member = {
    cluster: 'east',
    fetch: async ({ path }: { path: string }) => {
      asked.push(path);
      const [status, body] = answers[path] ?? [404, { kind: 'Status', code: 404 }];
      return { status, headers: {}, body: Buffer.from(JSON.stringify(body)) };
    },
  } as unknown as MemberClient;
  return { member, asked };
}

const CRD_PATH = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gadgets.fieldsel.example.com';
const gadgets = { group: 'fieldsel.example.com', version: 'v1', resource: 'gadgets' };

describe('a CRD\'s selectable fields, read from the member', () => {
  it('the version\'s jsonPaths as field names, sorted; another version\'s are not its', async () => {
    const crd = { spec: { versions: [
      { name: 'v1', selectableFields: [{ jsonPath: '.spec.size' }, { jsonPath: '.spec.color' }, { jsonPath: ".spec['a.b']" }] },
      { name: 'v2', selectableFields: [{ jsonPath: '.spec.shape' }] },
    ] } };
    const { member } = memberAnswering({ [CRD_PATH]: [200, crd] });
    expect(await crdSelectableFields(member, gadgets)).toEqual({ kind: 'declared', fields: ['spec.color', 'spec.size'] });
    expect(await crdSelectableFields(member, { ...gadgets, version: 'v3' })).toEqual({ kind: 'declared', fields: [] });
  });

  it('no CRD by that name is not a custom resource; a group without a dot is not even asked', async () => {
    const { member, asked } = memberAnswering({});
    expect(await crdSelectableFields(member, gadgets)).toEqual({ kind: 'not-custom' });
    expect(await crdSelectableFields(member, { group: 'apps', version: 'v1', resource: 'deployments' })).toEqual({ kind: 'not-custom' });
    expect(asked).toEqual([CRD_PATH]);
  });

  it('a refusal is an error naming the member\'s status, not "no fields"', async () => {
    const { member } = memberAnswering({ [CRD_PATH]: [403, { kind: 'Status', code: 403, message: 'forbidden' }] });
    await expect(crdSelectableFields(member, gadgets)).rejects.toThrow(CrdUnreadableError);
    await expect(crdSelectableFields(member, gadgets)).rejects.toThrow(/east answered 403 to get customresourcedefinition gadgets\.fieldsel\.example\.com/);
  });
});
