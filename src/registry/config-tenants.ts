import { type Checker, describe, RESOURCE_NAME } from './config-checker.js';
import type { ClusterScopedPolicy, TenantSpec } from './fleet-config.js';

const TENANT_ID = /^[a-z0-9]([-a-z0-9]{0,18}[a-z0-9])?$/;

/**
 * The fleet file's `tenants`: ids short enough that `<id>-<namespace>` stays a DNS label for namespaces of up to 42
 * characters, none another's id plus separator (`ab` and `ab-c` could not be told apart), each
 * user and group in one tenant only.
 */
export function parseTenants(c: Checker, raw: unknown): TenantSpec[] {
  if (raw === undefined || raw === null) return [];
  if (!Array.isArray(raw)) {
    c.fail('tenants', `must be a list, got ${describe(raw)}`);
    return [];
  }
  const tenants: TenantSpec[] = [];
  const members = new Map<string, string>();
  raw.forEach((item, i) => {
    const p = `tenants[${i}]`;
    const o = c.object(item, p);
    if (!o) return;
    const id = c.string(o.id, `${p}.id`, { required: true, pattern: TENANT_ID, patternDesc: 'a DNS-1123 label of at most 20 characters' });
    const users = c.stringList(o.users, `${p}.users`) ?? [];
    const groups = c.stringList(o.groups, `${p}.groups`) ?? [];
    if (users.length + groups.length === 0) c.fail(p, 'names no users and no groups: nobody would see this tenant');
    if (id === undefined) return;
    for (const [kind, list] of [['user', users], ['group', groups]] as const) {
      for (const name of list) {
        const other = members.get(`${kind}:${name}`);
        if (other !== undefined && other !== id) c.fail(`${p}.${kind}s`, `${kind} ${JSON.stringify(name)} is already in tenant ${JSON.stringify(other)}: a caller belongs to one tenant`);
        members.set(`${kind}:${name}`, id);
      }
    }
    const clusterScoped: Record<string, ClusterScopedPolicy> = {};
    if (o.clusterScoped !== undefined) {
      const cs = c.object(o.clusterScoped, `${p}.clusterScoped`);
      for (const [resource, policy] of Object.entries(cs ?? {})) {
        if (!RESOURCE_NAME.test(resource)) c.fail(`${p}.clusterScoped.${resource}`, 'must be a resource as kubectl names it (resource, or resource.group)');
        const v = c.string(policy, `${p}.clusterScoped.${resource}`, { required: true, pattern: /^(owned|shared|hidden)$/, patternDesc: 'owned, shared or hidden' });
        if (v !== undefined) clusterScoped[resource] = v as ClusterScopedPolicy;
      }
    }
    const admins = parseTenantAdmins(c, o.admins, p, users, groups);
    if (tenants.some((t) => t.id === id)) c.fail(`${p}.id`, `duplicate tenant id ${JSON.stringify(id)}`);
    const clash = clashingTenantIds([...tenants.map((t) => t.id), id]);
    if (clash) c.fail(`${p}.id`, `tenant ids ${JSON.stringify(clash[0])} and ${JSON.stringify(clash[1])} clash: names of the second start with the first's id and separator`);
    tenants.push({ id, users, groups, clusterScoped, ...(admins ? { admins } : {}) });
  });
  return tenants;
}

/** A tenant's admins: its own users and groups only, so the member-side policy never binds an outsider. */
function parseTenantAdmins(c: Checker, raw: unknown, p: string, users: readonly string[], groups: readonly string[]): TenantSpec['admins'] {
  if (raw === undefined || raw === null) return undefined;
  const o = c.object(raw, `${p}.admins`);
  if (!o) return undefined;
  const own = (kind: 'user' | 'group', list: readonly string[]) => (s: string, sp: string) => {
    if (!list.includes(s)) c.fail(sp, `${kind} ${JSON.stringify(s)} is not one of this tenant's ${kind}s`);
  };
  const admins = { users: c.stringList(o.users, `${p}.admins.users`, own('user', users)) ?? [], groups: c.stringList(o.groups, `${p}.admins.groups`, own('group', groups)) ?? [] };
  if (admins.users.length + admins.groups.length === 0) c.fail(`${p}.admins`, 'names no users and no groups: leave it out to bind nobody');
  return admins;
}

/**
 * Two tenant ids whose names could not be told apart, or undefined: one is the other's id plus
 * separator (`ab` and `ab-c`: the namespace `ab-c-x` would be both tenants').
 */
export function clashingTenantIds(ids: readonly string[]): [string, string] | undefined {
  for (const a of ids) for (const b of ids) if (a !== b && b.startsWith(`${a}-`)) return [a, b];
  return undefined;
}
