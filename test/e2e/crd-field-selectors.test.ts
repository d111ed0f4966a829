import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import type { MemberInfo } from '../fleet/fleet.js';
import { memberRequest } from '../fleet/http.js';
import { startFlotillaProcess, writeProxyKubeconfig, type FlotillaProcess } from '../support/flotilla-process.js';
import { expectConverged } from '../support/compare.js';
import { kubectl, kubectlOk, kubectlSession } from '../support/kubectl.js';
import { until } from '../support/poll.js';

/**
 * Field selectors on a custom resource, as each member's CRD declares them (`selectableFields`):
 * flotilla's answers against the members' own. east's and west's CRDs declare spec.color and
 * spec.size, north's spec.color only: spec.color selects fleet-wide, spec.size only where every
 * member addressed declares it, and a field none declares is the apiserver's 400.
 */
const fleet = inject('fleet');
const [east, west, north] = fleet.members as [MemberInfo, MemberInfo, MemberInfo];
const GROUP = 'fieldsel.example.com';
const NS = 'fieldsel';
const PATH = `/apis/${GROUP}/v1/namespaces/${NS}/gadgets`;
let flotilla: FlotillaProcess;

function crd(fields: string[]): object {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `gadgets.${GROUP}` },
    spec: {
      group: GROUP,
      scope: 'Namespaced',
      names: { plural: 'gadgets', singular: 'gadget', kind: 'Gadget' },
      versions: [{
        name: 'v1',
        served: true,
        storage: true,
        schema: { openAPIV3Schema: { type: 'object', properties: { spec: { type: 'object', properties: { color: { type: 'string' }, size: { type: 'integer' } } } } } },
        selectableFields: fields.map((f) => ({ jsonPath: `.spec.${f}` })),
      }],
    },
  };
}

const gadget = (name: string, spec: object) => ({ apiVersion: `${GROUP}/v1`, kind: 'Gadget', metadata: { name }, spec });

async function created(m: MemberInfo, path: string, body: object): Promise<void> {
  // The CRD's endpoint takes a moment to appear after the CRD is made.
  for (let i = 0; i < 80; i++) {
    const res = await memberRequest(m, 'POST', path, body);
    if (res.status === 201 || res.status === 409) return;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`${m.name}: POST ${path} never succeeded`);
}

/** `cluster/namespace/name` of each gadget kubectl lists through flotilla, or from one member. */
const THROUGH_FLOTILLA = `jsonpath={range .items[*]}{.metadata.annotations.search\\.flotilla\\.io/cluster}/{.metadata.namespace}/{.metadata.name}{"\\n"}{end}`;
const FROM_MEMBER = `jsonpath={range .items[*]}{.metadata.namespace}/{.metadata.name}{"\\n"}{end}`;
const lines = (text: string, prefix = '') => text.split('\n').filter(Boolean).map((l) => prefix + l).sort();

/** The CRD made, or made to declare `fields` (a run stopped before its cleanup may have left one). */
async function ensureCrd(m: MemberInfo, fields: string[]): Promise<void> {
  const path = `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gadgets.${GROUP}`;
  for (let i = 0; i < 120; i++) {
    const res = await memberRequest(m, 'POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', crd(fields));
    if (res.status === 201) return;
    const old = JSON.parse((await memberRequest(m, 'GET', path)).body) as { metadata?: { resourceVersion?: string; deletionTimestamp?: string } };
    if (old.metadata?.resourceVersion && !old.metadata.deletionTimestamp) {
      const body = crd(fields) as { metadata: Record<string, unknown> };
      body.metadata.resourceVersion = old.metadata.resourceVersion;
      if ((await memberRequest(m, 'PUT', path, body)).status === 200) return;
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`${m.name}: the gadgets CRD could not be made`);
}

beforeAll(async () => {
  for (const [m, fields] of [[east, ['color', 'size']], [west, ['color', 'size']], [north, ['color']]] as const) {
    await ensureCrd(m, [...fields]);
    await created(m, '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
    for (const [name, spec] of [['red-3', { color: 'red', size: 3 }], ['blue-3', { color: 'blue', size: 3 }], ['red-4', { color: 'red', size: 4 }], ['plain', {}]] as const) {
      await created(m, PATH, gadget(`${m.name}-${name}`, spec));
    }
  }
  rmSync(join(fleet.dir, 'crd-field-selectors'), { recursive: true, force: true });
  flotilla = await startFlotillaProcess({ fleet, dir: join(fleet.dir, 'crd-field-selectors'), members: [east, west, north], resources: [{ group: GROUP, version: 'v1', resource: 'gadgets' }] });
}, 120_000);

afterAll(async () => {
  await flotilla?.stop();
  for (const m of [east, west, north]) await memberRequest(m, 'DELETE', `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gadgets.${GROUP}`);
});

describe('kubectl get <custom resource> --field-selector, through flotilla', () => {
  it('equals the members\' own answers merged, for a field every member declares', async () => {
    await expectConverged(flotilla.endpoint, [east, west, north], `${PATH}?fieldSelector=${encodeURIComponent('spec.color=red')}`);
    const through = await kubectlOk(flotilla.kubeconfig, ['get', `gadgets.${GROUP}`, '-n', NS, '--field-selector', 'spec.color=red', '-o', THROUGH_FLOTILLA]);
    const members = await Promise.all([east, west, north].map(async (m) => lines(await kubectlOk(m.kubeconfig, ['get', `gadgets.${GROUP}`, '-n', NS, '--field-selector', 'spec.color=red', '-o', FROM_MEMBER]), `${m.name}/`)));
    expect(lines(through)).toEqual(members.flat().sort());
    expect(lines(through)).toContain(`${north.name}/${NS}/${north.name}-red-3`);
    // An absent field is "" to the apiserver; != and integers as it writes them.
    await expectConverged(flotilla.endpoint, [east, west, north], `${PATH}?fieldSelector=${encodeURIComponent('spec.color=,metadata.name!=x')}`);
  });

  it('a field only some members declare: selected where each member addressed declares it, else 400 naming who does not', async () => {
    const eastOnly = join(fleet.dir, 'crd-field-selectors', 'east.kubeconfig');
    writeProxyKubeconfig(eastOnly, `${flotilla.url}/clusters/${east.name}`, flotilla.endpoint.caFile, flotilla.endpoint.token);
    const through = await kubectlOk(eastOnly, ['get', `gadgets.${GROUP}`, '-n', NS, '--field-selector', 'spec.size=3,spec.color!=blue', '-o', THROUGH_FLOTILLA]);
    const own = await kubectlOk(east.kubeconfig, ['get', `gadgets.${GROUP}`, '-n', NS, '--field-selector', 'spec.size=3,spec.color!=blue', '-o', FROM_MEMBER]);
    expect(lines(through)).toEqual(lines(own, `${east.name}/`));
    expect(lines(through)).toEqual([`${east.name}/${NS}/${east.name}-red-3`]);

    const fleetWide = await memberRequest(flotilla.endpoint, 'GET', `${PATH}?fieldSelector=spec.size%3D3`);
    expect(fleetWide.status).toBe(400);
    expect(JSON.parse(fleetWide.body)).toMatchObject({ kind: 'Status', code: 400, reason: 'BadRequest', message: `field label not supported: spec.size (the CustomResourceDefinition on ${north.name} does not declare it)` });
  });

  it('a field no CRD declares is the member\'s own 400', async () => {
    const path = `${PATH}?fieldSelector=spec.shape%3Dround`;
    const [own, through] = await Promise.all([memberRequest(north, 'GET', path), memberRequest(flotilla.endpoint, 'GET', path)]);
    const pick = (body: string) => {
      const { kind, status, message, reason, code } = JSON.parse(body) as Record<string, unknown>;
      return { kind, status, message, reason, code };
    };
    expect(own.status).toBe(400);
    expect({ http: through.status, ...pick(through.body) }).toEqual({ http: own.status, ...pick(own.body) });
    const kubectlAnswer = await kubectl(flotilla.kubeconfig, ['get', `gadgets.${GROUP}`, '-n', NS, '--field-selector', 'spec.shape=round']);
    expect(kubectlAnswer.code).not.toBe(0);
    expect(kubectlAnswer.stderr).toContain('field label not supported: spec.shape');
  });

  it('a watch with the field selector: objects come in and go out of it as on the member', async () => {
    const args = ['get', `gadgets.${GROUP}`, '-n', NS, '--field-selector', 'spec.color=green', '--watch', '--output-watch-events'];
    const through = kubectlSession(flotilla.kubeconfig, args);
    const own = kubectlSession(west.kubeconfig, args);
    const green = `green-${Date.now()}`;
    try {
      await new Promise((r) => setTimeout(r, 1500));
      await created(west, PATH, gadget(green, { color: 'green', size: 1 }));
      await created(west, PATH, gadget(`yellow-${Date.now()}`, { color: 'yellow', size: 1 }));
      const patch = await memberRequest(west, 'PATCH', `${PATH}/${green}`, { spec: { color: 'yellow' } }, { contentType: 'application/merge-patch+json' });
      expect(patch.status).toBe(200);
      await through.waitForOutput(new RegExp(`DELETED\\s+${green}`));
      await own.waitForOutput(new RegExp(`DELETED\\s+${green}`));
      const events = (out: string) => [...out.matchAll(/^(ADDED|MODIFIED|DELETED)\s+(\S+)/gm)].map((m) => `${m[1]} ${m[2]}`);
      expect(events(through.stdout())).toEqual(events(own.stdout()));
      expect(events(through.stdout())).toEqual([`ADDED ${green}`, `DELETED ${green}`]);
    } finally {
      await through.stop();
      await own.stop();
    }
  });

  it('a CRD edited to declare a field: its member\'s objects are written again with it, without a restart', async () => {
    await ensureCrd(north, ['color', 'size']);
    const path = `${PATH}?fieldSelector=${encodeURIComponent('spec.size=3')}`;
    await until('north\'s CRD edit to be seen', async () => (await memberRequest(flotilla.endpoint, 'GET', path)).status === 200, 60_000);
    await expectConverged(flotilla.endpoint, [east, west, north], path);
    const status = JSON.parse((await memberRequest(flotilla.endpoint, 'GET', '/status')).body) as { cachers: { cluster: string; resource: string; lastHistoryReset?: { reason: string } }[] };
    const northGadgets = status.cachers.find((c) => c.cluster === north.name && c.resource === `${GROUP}/v1/gadgets`);
    expect(northGadgets?.lastHistoryReset?.reason).toBe('the CustomResourceDefinition\'s selectable fields changed from [spec.color] to [spec.color, spec.size]');
  });
});
