import { describe, expect, it } from 'vitest';
import type { FastifyBaseLogger } from 'fastify';
import type { MemberClient, MemberRequest } from '../../../src/members/member-client.js';
import { grantTenantNamespace } from '../../../src/forward/tenant-namespace-grants.js';
import { Tenant } from '../../../src/tenancy/tenant.js';
import type { ResourceTarget } from '../../../src/forward/owner.js';

const ACME = new Tenant({ id: 'acme', users: [], groups: ['acme-admins'], clusterScoped: {}, admins: { users: [], groups: ['acme-admins'] } });
const NAMESPACES = { type: 'resource', group: '', version: 'v1', resource: 'namespaces' } as ResourceTarget;

function fakeMember(status: number, body = '{}'): { member: MemberClient; sent: MemberRequest[] } {
  const sent: MemberRequest[] = [];
  const member = { cluster: 'east', fetch: async (r: MemberRequest) => (sent.push(r), { status, headers: {}, body: Buffer.from(body) }) } as unknown as MemberClient;
  return { member, sent };
}

function fakeLog(): { log: FastifyBaseLogger; lines: unknown[][] } {
  const lines: unknown[][] = [];
  return { log: { warn: (...a: unknown[]) => lines.push(a) } as unknown as FastifyBaseLogger, lines };
}

describe('tenant namespace grants', () => {
  it('binds the admins in a namespace the tenant made, as flotilla, and takes 409 as done', async () => {
    for (const status of [201, 409]) {
      const { member, sent } = fakeMember(status);
      const { log, lines } = fakeLog();
      await grantTenantNamespace(member, ACME, NAMESPACES, 'acme-web', log);
      expect(sent).toHaveLength(1);
      expect(sent[0]!.method).toBe('POST');
      expect(sent[0]!.path).toBe('/apis/rbac.authorization.k8s.io/v1/namespaces/acme-web/rolebindings');
      expect(sent[0]!.headers).not.toHaveProperty('Impersonate-User');
      expect(JSON.parse(String(sent[0]!.body))).toMatchObject({ kind: 'RoleBinding', metadata: { name: 'flotilla-tenant-admins', namespace: 'acme-web' }, roleRef: { name: 'cluster-admin' } });
      expect(lines).toEqual([]);
    }
  });

  it('logs a refusal with the member\'s message, and does not throw', async () => {
    const { member } = fakeMember(403, JSON.stringify({ kind: 'Status', message: 'rolebindings is forbidden: User "flotilla" cannot create' }));
    const { log, lines } = fakeLog();
    await grantTenantNamespace(member, ACME, NAMESPACES, 'acme-web', log);
    expect(lines).toHaveLength(1);
    expect(lines[0]![0]).toMatchObject({ cluster: 'east', tenant: 'acme', namespace: 'acme-web', status: 403, answer: expect.stringContaining('cannot create') });
  });

  it('does nothing for other resources, other tenants\' names, or a tenant without admins', async () => {
    const { member, sent } = fakeMember(201);
    const { log } = fakeLog();
    await grantTenantNamespace(member, ACME, { ...NAMESPACES, resource: 'configmaps' }, 'acme-web', log);
    await grantTenantNamespace(member, ACME, NAMESPACES, 'globex-web', log);
    await grantTenantNamespace(member, new Tenant({ id: 'acme', users: [], groups: ['acme-admins'], clusterScoped: {} }), NAMESPACES, 'acme-web', log);
    expect(sent).toEqual([]);
  });
});
