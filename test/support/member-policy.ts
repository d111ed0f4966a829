import type { MemberInfo } from '../fleet/fleet.js';
import { memberRequest } from '../fleet/http.js';
import { until } from './poll.js';
import { admissionPolicyName, generateMemberPolicy, manifestPath, type Manifest } from '../../src/tenancy/member-policy.js';
import type { TenantSpec } from '../../src/tenancy/tenant.js';

/** Creates (or replaces) each manifest on the member as its admin. */
export async function applyManifests(member: MemberInfo, manifests: readonly Manifest[]): Promise<void> {
  for (const m of manifests) {
    const res = await memberRequest(member, 'POST', manifestPath(m), m);
    if (res.status === 201) continue;
    if (res.status !== 409) throw new Error(`${member.name}: POST ${m.kind} ${m.metadata.name}: ${res.status} ${res.body}`);
    const current = JSON.parse((await memberRequest(member, 'GET', manifestPath(m, true))).body) as Manifest;
    const put = await memberRequest(member, 'PUT', manifestPath(m, true), { ...m, metadata: { ...m.metadata, resourceVersion: (current.metadata as { resourceVersion?: string }).resourceVersion } });
    if (put.status !== 200) throw new Error(`${member.name}: PUT ${m.kind} ${m.metadata.name}: ${put.status} ${put.body}`);
  }
}

export async function deleteManifests(member: MemberInfo, manifests: readonly Manifest[]): Promise<void> {
  for (const m of [...manifests].reverse()) {
    const res = await memberRequest(member, 'DELETE', manifestPath(m, true));
    if (res.status !== 200 && res.status !== 404) throw new Error(`${member.name}: DELETE ${m.kind} ${m.metadata.name}: ${res.status} ${res.body}`);
  }
}

/**
 * Installs each tenant's member-side policy and waits until the member enforces it: a dry-run
 * write by one of the tenant's service accounts (as system:masters too, so RBAC lets it through)
 * that only the admission policy refuses.
 */
export async function installMemberPolicy(member: MemberInfo, tenants: readonly TenantSpec[], namespaces: readonly string[] = []): Promise<Manifest[]> {
  const manifests = tenants.flatMap((t) => generateMemberPolicy(t, { namespaces }));
  await applyManifests(member, manifests);
  await memberEnforces(member, tenants);
  return manifests;
}

/** Waits until the member enforces each tenant's admission policy (however it was installed). */
export async function memberEnforces(member: MemberInfo, tenants: readonly TenantSpec[], timeoutMs = 30_000): Promise<void> {
  for (const t of tenants) await until(`${member.name} enforces ${admissionPolicyName(t)}`, async () => (await policyProbe(member, t)).includes(admissionPolicyName(t)), timeoutMs);
}

/** Removes the policy and waits until the member no longer enforces it. */
export async function removeMemberPolicy(member: MemberInfo, tenants: readonly TenantSpec[], manifests: readonly Manifest[]): Promise<void> {
  await deleteManifests(member, manifests);
  for (const t of tenants) await until(`${member.name} dropped ${admissionPolicyName(t)}`, async () => !(await policyProbe(member, t)).includes(admissionPolicyName(t)), 30_000);
}

async function policyProbe(member: MemberInfo, t: TenantSpec): Promise<string> {
  const res = await memberRequest(member, 'POST', '/apis/rbac.authorization.k8s.io/v1/clusterroles?dryRun=All', {
    apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: 'flotilla-policy-probe' }, rules: [],
  }, { headers: { 'Impersonate-User': `system:serviceaccount:${t.id}-probe:probe`, 'Impersonate-Group': 'system:masters' } });
  return res.status === 403 ? res.body : '';
}
