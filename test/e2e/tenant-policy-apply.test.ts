import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { MemberInfo } from '../fleet/fleet.js';
import { memberRequest } from '../fleet/http.js';
import { startFlotillaProcess, type FlotillaProcess } from '../support/flotilla-process.js';
import { until } from '../support/poll.js';
import { deleteManifests } from '../support/member-policy.js';
import { POLICY_FIELD_MANAGER } from '../../src/tenancy/member-policy-apply.js';
import { admissionPolicyName, clusterRoleName, generateMemberPolicy, manifestPath, NAMESPACE_ADMINS_BINDING, type Manifest } from '../../src/tenancy/member-policy.js';
import type { TenantSpec } from '../../src/tenancy/tenant.js';

/**
 * `flotilla --apply-tenant-policy`: flotilla itself puts each tenant's member-side policy on every
 * member (server-side apply, as flotilla), the admins' RoleBinding in each of the tenant's
 * namespaces a member already holds, and the members then enforce it: initech's admins may work in
 * initech's namespace and nowhere else, and its identities' writes outside its names are refused
 * by the admission policy even where RBAC would allow them.
 */
const fleet = inject('fleet');
const TENANT = { id: 'initech', groups: ['initech-admins'], admins: { groups: ['initech-admins'] } };
const SPEC: TenantSpec = { id: 'initech', users: [], groups: ['initech-admins'], clusterScoped: {}, admins: { users: [], groups: ['initech-admins'] } };
const OWN_NS = 'initech-pa';
const OTHER_NS = 'pa-fleet';
const ADMIN = { 'Impersonate-User': 'peter@initech', 'Impersonate-Group': 'initech-admins' };
let flotilla: FlotillaProcess | undefined;

const exists = async (m: MemberInfo, manifest: Manifest) => (await memberRequest(m, 'GET', manifestPath(manifest, true))).status === 200;
const configMap = (name: string) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name } });

beforeAll(async () => {
  for (const m of fleet.members) {
    for (const ns of [OWN_NS, OTHER_NS]) {
      const res = await memberRequest(m, 'POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
      if (res.status !== 201 && res.status !== 409) throw new Error(`${m.name}: ${res.status} ${res.body}`);
    }
  }
}, 60_000);

afterAll(async () => {
  await flotilla?.stop();
  for (const m of fleet.members) {
    await deleteManifests(m, generateMemberPolicy(SPEC, { namespaces: [OWN_NS] }));
    for (const ns of [OWN_NS, OTHER_NS]) await memberRequest(m, 'DELETE', `/api/v1/namespaces/${ns}`);
  }
}, 60_000);

describe('flotilla --apply-tenant-policy', () => {
  it('puts each tenant’s policy on every member, and the members enforce it', async () => {
    const manifests = generateMemberPolicy(SPEC, { namespaces: [OWN_NS] });
    // Nothing of it before: what the members hold next is flotilla's doing.
    for (const m of fleet.members) for (const manifest of manifests) expect(await exists(m, manifest), `${m.name}: ${manifest.kind} ${manifest.metadata.name}`).toBe(false);
    expect((await memberRequest(fleet.members[0]!, 'POST', `/api/v1/namespaces/${OWN_NS}/configmaps?dryRun=All`, configMap('before'), { headers: ADMIN })).status).toBe(403);

    flotilla = await startFlotillaProcess({
      fleet, dir: join(fleet.dir, 'flotilla-tenant-policy-apply'),
      resources: [{ version: 'v1', resource: 'namespaces' }],
      tenants: [TENANT],
      args: ['--apply-tenant-policy'],
    });
    for (const m of fleet.members) {
      await until(`${m.name} holds initech's policy`, async () => (await Promise.all(manifests.map((x) => exists(m, x)))).every(Boolean), 60_000);
      const role = JSON.parse((await memberRequest(m, 'GET', manifestPath(manifests.find((x) => x.kind === 'ClusterRole')!, true))).body) as { metadata: { managedFields: { manager: string; operation: string }[] } };
      expect(role.metadata.managedFields.map((f) => `${f.manager}/${f.operation}`)).toEqual([`${POLICY_FIELD_MANAGER}/Apply`]);
      expect(manifests.map((x) => x.metadata.name)).toEqual(expect.arrayContaining([clusterRoleName(SPEC), admissionPolicyName(SPEC), NAMESPACE_ADMINS_BINDING]));

      // RBAC: an admin of initech works in its namespace and nowhere else.
      expect((await memberRequest(m, 'POST', `/api/v1/namespaces/${OWN_NS}/configmaps?dryRun=All`, configMap('own'), { headers: ADMIN })).status).toBe(201);
      const elsewhere = await memberRequest(m, 'POST', `/api/v1/namespaces/${OTHER_NS}/configmaps?dryRun=All`, configMap('planted'), { headers: ADMIN });
      expect(elsewhere.status, elsewhere.body).toBe(403);
      // Admission: even as system:masters, initech's identities write nothing outside its names.
      await until(`${m.name} enforces ${admissionPolicyName(SPEC)}`, async () => {
        const res = await memberRequest(m, 'POST', `/api/v1/namespaces/${OTHER_NS}/configmaps?dryRun=All`, configMap('planted'), { headers: { ...ADMIN, 'Impersonate-Group': ['initech-admins', 'system:masters'] } });
        return res.status === 403 && res.body.includes(`ValidatingAdmissionPolicy '${admissionPolicyName(SPEC)}'`);
      }, 30_000);
    }
    expect(readFileSync(flotilla.proc.logPath, 'utf8')).not.toMatch(/tenant policy not applied/);
  });
});
