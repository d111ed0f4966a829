import type { MemberClient } from '../members/member-client.js';
import { answerMessage } from '../api/status.js';
import { TENANT_POLICY_REAPPLY_MS, TENANT_POLICY_REQUEST_TIMEOUT_MS, TENANT_POLICY_RETRY_MS } from '../registry/defaults.js';
import { generateMemberPolicy, manifestPath, type Manifest } from './member-policy.js';
import type { TenantSpec } from './tenant.js';
import type { StructuredLog } from '../util/structured-log.js';

/**
 * Keeps each tenant's member-side policy (member-policy.ts) on every member, as flotilla
 * (`--apply-tenant-policy`): at start, when the tenants change, and again every few minutes, so a
 * namespace made on a member directly gets its admins' RoleBinding and a policy someone edited is
 * put back. Server-side apply, so what flotilla owns is set and anything else on the objects is
 * left alone; a tenant removed from the configuration keeps its policy until it is deleted
 * (`kubectl delete … -l search.flotilla.io/tenant=<id>`).
 */

/** Flotilla's field manager for the policy's objects on the members. */
export const POLICY_FIELD_MANAGER = 'flotilla-tenant-policy';

export interface PolicyFleet {
  clusterNames(): string[];
  member(name: string): MemberClient | undefined;
}

/** Applies the tenants' policy to one member: its namespaces read first, for the admins' RoleBindings. */
export async function applyMemberPolicy(member: MemberClient, tenants: readonly TenantSpec[], signal?: AbortSignal): Promise<Manifest[]> {
  const timeout = () => (signal ? AbortSignal.any([signal, AbortSignal.timeout(TENANT_POLICY_REQUEST_TIMEOUT_MS)]) : AbortSignal.timeout(TENANT_POLICY_REQUEST_TIMEOUT_MS));
  const namespaces = await memberNamespaces(member, timeout());
  const manifests = tenants.flatMap((t) => generateMemberPolicy(t, { namespaces }));
  for (const m of manifests) {
    const path = `${manifestPath(m, true)}?fieldManager=${POLICY_FIELD_MANAGER}&force=true`;
    const res = await member.fetch({ method: 'PATCH', path, headers: { 'content-type': 'application/apply-patch+yaml', accept: 'application/json' }, body: JSON.stringify(m), signal: timeout() });
    if (res.status >= 300) throw new Error(`${member.cluster}: applying ${m.kind} ${m.metadata.namespace ? `${m.metadata.namespace}/` : ''}${m.metadata.name}: HTTP ${res.status}: ${answerMessage(res.body, 300)}`);
  }
  return manifests;
}

/** The namespaces a member holds now, read as flotilla: those the admins' RoleBindings go in. */
export async function memberNamespaces(member: MemberClient, signal: AbortSignal): Promise<string[]> {
  const list = await member.getJson<{ items: { metadata: { name: string } }[] }>('/api/v1/namespaces', signal);
  return list.items.map((n) => n.metadata.name);
}

export class MemberPolicyApplier {
  private tenants: readonly TenantSpec[] = [];
  private timer: NodeJS.Timeout | undefined;
  private running = false;
  private again = false;
  private readonly abort = new AbortController();

  constructor(private readonly fleet: PolicyFleet, private readonly log: StructuredLog) {}

  /** The tenants to keep the policy of; applied at once. */
  setTenants(tenants: readonly TenantSpec[]): void {
    this.tenants = tenants;
    this.schedule(0);
  }

  close(): void {
    this.abort.abort();
    clearTimeout(this.timer);
  }

  private schedule(ms: number): void {
    if (this.abort.signal.aborted) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.round(), ms);
    this.timer.unref();
  }

  /** One pass over every member; one that failed is tried again sooner. */
  private async round(): Promise<void> {
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = true;
    const tenants = this.tenants;
    let failed = false;
    try {
      await Promise.all(this.fleet.clusterNames().map(async (cluster) => {
        const member = this.fleet.member(cluster);
        if (!member || tenants.length === 0) return;
        try {
          const applied = await applyMemberPolicy(member, tenants, this.abort.signal);
          this.log.info({ cluster, tenants: tenants.map((t) => t.id), objects: applied.length }, 'tenant policy applied');
        } catch (e) {
          if (this.abort.signal.aborted) return;
          failed = true;
          this.log.warn({ cluster, error: (e as Error).message }, 'tenant policy not applied; trying again');
        }
      }));
    } finally {
      this.running = false;
    }
    const again = this.again;
    this.again = false;
    this.schedule(again ? 0 : failed ? TENANT_POLICY_RETRY_MS : TENANT_POLICY_REAPPLY_MS);
  }
}
