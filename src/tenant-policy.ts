import { parseArgs } from 'node:util';
import { stringify } from 'yaml';
import { ConfigError, loadFleetConfig } from './registry/config.js';
import type { FleetConfig } from './registry/fleet-config.js';
import { MemberClient } from './members/member-client.js';
import { generateMemberPolicy } from './tenancy/member-policy.js';
import { memberNamespaces } from './tenancy/member-policy-apply.js';
import { TENANT_POLICY_REQUEST_TIMEOUT_MS } from './registry/defaults.js';

const usage = `usage: flotilla tenant-policy --config FLEET.yaml [--tenant ID]... [--cluster NAME]

Prints, as YAML for kubectl apply, the member-side policy of each tenant of the fleet file (or of
the tenants named): the admins' ClusterRole and ClusterRoleBinding, a ValidatingAdmissionPolicy and
its binding. With --cluster, also the admins' RoleBinding in each of the tenants' namespaces that
member holds now (read from it as flotilla); apply that output to that member.`;

/** `flotilla tenant-policy`: the manifests a platform team installs on the members (docs/tenant-member-policy.md). */
export async function runTenantPolicy(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      config: { type: 'string' },
      tenant: { type: 'string', multiple: true },
      cluster: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help || !values.config) {
    console.error(usage);
    return values.help ? 0 : 2;
  }
  let config: FleetConfig;
  try {
    config = await loadFleetConfig(values.config);
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    console.error(e.message);
    return 2;
  }
  const wanted = values.tenant ?? config.tenants.map((t) => t.id);
  const unknown = wanted.filter((id) => !config.tenants.some((t) => t.id === id));
  if (unknown.length > 0) {
    console.error(`--tenant: no such tenant in ${values.config}: ${unknown.join(', ')}`);
    return 2;
  }
  let namespaces: string[] = [];
  if (values.cluster !== undefined) {
    const cluster = config.clusters.find((c) => c.name === values.cluster);
    if (!cluster) {
      console.error(`--cluster: no such cluster in ${values.config}: ${values.cluster}`);
      return 2;
    }
    const member = await MemberClient.create(cluster);
    try {
      namespaces = await memberNamespaces(member, AbortSignal.timeout(TENANT_POLICY_REQUEST_TIMEOUT_MS));
    } finally {
      member.close();
    }
  }
  const docs = config.tenants.filter((t) => wanted.includes(t.id)).flatMap((t) => generateMemberPolicy(t, { namespaces }));
  process.stdout.write(docs.map((d) => stringify(d, { aliasDuplicateObjects: false, lineWidth: 0 })).join('---\n'));
  return 0;
}
