import type { FastifyBaseLogger } from 'fastify';
import type { MemberClient } from '../members/member-client.js';
import { answerMessage } from '../api/status.js';
import { hasAdmins, makeNamespaceGrant } from '../tenancy/member-policy.js';
import type { Tenant } from '../tenancy/tenant.js';
import type { ResourceTarget } from './owner.js';
import { TENANT_GRANT_TIMEOUT_MS } from '../registry/defaults.js';

/**
 * A namespace a tenant made through flotilla gets its admins' RoleBinding (member-policy.ts)
 * before the tenant hears of it, so the admins can work in it at once: the member-side policy gives
 * them nothing in a namespace without it, and refuses them the binding itself. Made as flotilla,
 * which the policy does not confine; one already there (409) is as good. A failure is logged, not
 * the tenant's error: the namespace exists, and a platform can apply `flotilla tenant-policy` again.
 */
export async function grantTenantNamespace(member: MemberClient | undefined, tenant: Tenant, target: ResourceTarget, namespace: string, log: FastifyBaseLogger): Promise<void> {
  if (target.group !== '' || target.resource !== 'namespaces' || target.subresource !== undefined || !hasAdmins(tenant.spec) || !member || !tenant.ownsNamespace(namespace)) return;
  const grant = makeNamespaceGrant(tenant.spec, namespace);
  const where = { cluster: member.cluster, tenant: tenant.id, namespace };
  try {
    const res = await member.fetch({
      method: 'POST',
      path: `/apis/rbac.authorization.k8s.io/v1/namespaces/${encodeURIComponent(namespace)}/rolebindings`,
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify(grant),
      signal: AbortSignal.timeout(TENANT_GRANT_TIMEOUT_MS),
    });
    if (res.status < 300 || res.status === 409) return;
    log.warn({ ...where, status: res.status, answer: answerMessage(res.body, 500) }, 'the tenant admins\' RoleBinding was not made in the new namespace');
  } catch (e) {
    log.warn({ ...where, error: (e as Error).message }, 'the tenant admins\' RoleBinding was not made in the new namespace');
  }
}
